/**
 * The commit's check of an upsert cycle (ingest/commit-cycle.ts checkNoRowsAddedSince): the rows
 * its key index did not see may only have come from a compaction's `replace`.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { checkNoRowsAddedSince } from '../../ingest/commit-cycle';
import type { Snapshot, TableMetadata } from '../../iceberg';

const snap = (id: bigint, parent: bigint | undefined, operation: string, addedDataFiles: number): Snapshot =>
  ({
    'snapshot-id': id,
    ...(parent === undefined ? {} : { 'parent-snapshot-id': parent }),
    'sequence-number': id,
    'timestamp-ms': 0n,
    'manifest-list': `m${id}`,
    summary: { operation, 'added-data-files': String(addedDataFiles) },
  }) as unknown as Snapshot;

const meta = (snapshots: Snapshot[]): TableMetadata =>
  ({ snapshots, 'current-snapshot-id': snapshots.at(-1)?.['snapshot-id'] ?? null }) as unknown as TableMetadata;

describe('checkNoRowsAddedSince', () => {
  const chain = [snap(1n, undefined, 'append', 2), snap(2n, 1n, 'overwrite', 1), snap(3n, 2n, 'replace', 3)];

  it('passes when the index is at the current snapshot, or only compactions came after it', () => {
    checkNoRowsAddedSince('t', meta(chain), ['3']);
    checkNoRowsAddedSince('t', meta(chain), ['2']);
    checkNoRowsAddedSince('t', meta(chain), ['2', '3']);
  });

  it('refuses with DeleteConflict when another snapshot added data files after the index', () => {
    assert.throws(
      () => checkNoRowsAddedSince('t', meta(chain), ['1']),
      (e: Error & { type?: string }) => e.type === 'DeleteConflict' && /snapshot 2 \(overwrite\) added 1 data files/.test(e.message),
    );
    // a table that had no snapshot when the index was built
    assert.throws(
      () => checkNoRowsAddedSince('t', meta(chain), ['']),
      (e: Error & { type?: string }) => e.type === 'DeleteConflict',
    );
  });

  it('passes for an index of an empty table when nothing added data since, and refuses a snapshot off the ancestry', () => {
    checkNoRowsAddedSince('t', meta([snap(5n, undefined, 'delete', 0)]), ['']);
    assert.throws(
      () => checkNoRowsAddedSince('t', meta([snap(1n, undefined, 'replace', 1), snap(2n, 1n, 'replace', 1)]), ['99']),
      (e: Error & { type?: string }) => e.type === 'DeleteConflict' && /no longer an ancestor/.test(e.message),
    );
  });
});
