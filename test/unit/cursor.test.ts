import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cursorSnapshotIds, findCommit, formatOffsets, parseOffsets, readCursor } from '../../activities/cursor';
import type { Snapshot, TableMetadata } from '../../iceberg/spec/types';

const snap = (id: bigint, parent: bigint | undefined, summary: Record<string, string>): Snapshot => ({
  'snapshot-id': id, ...(parent === undefined ? {} : { 'parent-snapshot-id': parent }), 'sequence-number': id,
  'timestamp-ms': 1000n + id, 'manifest-list': `s3://b/m/${id}.avro`, summary: { operation: 'append', ...summary },
});
const BIG = 2n ** 62n + 12345n; // beyond 2^53: must survive as bigint

const meta = (snapshots: Snapshot[], head: bigint): TableMetadata => ({
  'format-version': 2, 'table-uuid': 'u', location: 's3://b/t', 'last-sequence-number': 10n, 'last-updated-ms': 0n,
  'last-column-id': 1, schemas: [], 'current-schema-id': 0, 'partition-specs': [], 'default-spec-id': 0, 'last-partition-id': 999,
  properties: {}, 'current-snapshot-id': head, snapshots, 'snapshot-log': [], 'metadata-log': [], 'sort-orders': [],
  'default-sort-order-id': 0, refs: { main: { 'snapshot-id': head, type: 'branch' } },
});

describe('ingest cursor in snapshot summaries', () => {
  const m = meta([
    snap(1n, undefined, { 'floe.ingest-id': 'main', 'floe.offsets': '{"0":"10"}', 'floe.commit-id': 'c1' }),
    snap(2n, 1n, { 'floe.ingest-id': 'other', 'floe.offsets': '{"0":"5"}', 'floe.commit-id': 'c2' }),
    snap(BIG, 2n, { 'floe.ingest-id': 'main', 'floe.offsets': '{"0":"20","1":"9007199254740993"}', 'floe.commit-id': 'c3' }),
    snap(4n, BIG, { operation: 'replace' }),
    snap(5n, 4n, { 'floe.ingest-id': 'main', 'floe.offsets': '{"0":"99"}', 'floe.commit-id': 'dangling' }), // not on main
  ], 4n);

  it('reads the newest cursor of an ingest id across a compaction snapshot', () => {
    assert.deepEqual(readCursor(m, 'main'), { snapshotId: BIG.toString(), offsets: { 0: '20', 1: '9007199254740993' } });
    assert.deepEqual(readCursor(m, 'other'), { snapshotId: '2', offsets: { 0: '5' } });
    assert.deepEqual(readCursor(m, 'new'), { snapshotId: null, offsets: {} });
  });
  it('finds commits only on the main ancestry', () => {
    assert.equal(findCommit(m, 'c1')?.['snapshot-id'], 1n);
    assert.equal(findCommit(m, 'dangling'), undefined);
  });
  it('protects the newest cursor snapshot of each ingest id', () => {
    assert.deepEqual(cursorSnapshotIds(m).sort(), [2n, BIG].sort());
  });
  it('formats offsets stably and rejects bad ones', () => {
    assert.equal(formatOffsets({ 10: '1', 2: '3' }), '{"2":"3","10":"1"}');
    assert.throws(() => parseOffsets('{"0": 5}'), /bad entry 0/);
    assert.throws(() => parseOffsets('[]'), /not a JSON object/);
  });
});
