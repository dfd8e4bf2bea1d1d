/**
 * Snapshot expiry in two crash-safe steps:
 * 1. `expireSnapshotsCommit`: choose snapshots (older-than, retain-last, never a ref head nor the
 *    newest snapshot of any ingest cursor) and commit `remove-snapshots`. The commit records the
 *    workflow's expire id and the metadata it was based on in the table properties, so a retry
 *    that lost the response finds its own commit.
 * 2. `deleteExpiredFiles`: from the two immutable metadata.json files (before, after) recompute
 *    what only the expired snapshots reached and delete it, a few at a time; deleting a missing
 *    file is a no-op, so a retried attempt just finishes the job.
 *
 * Concurrency: the commit asserts main unchanged (a concurrent ingest commit makes it reload and
 * re-plan); deletions never touch anything a snapshot of `after`, or of anything newer, reaches.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { parseIdentifier } from '../../iceberg/catalog/catalog';
import { IcebergError, isIcebergError } from '../../iceberg/errors';
import { MAIN_BRANCH, parseMetadataVersion, parseTableMetadata } from '../../iceberg/spec/metadata';
import type { TableMetadata } from '../../iceberg/spec/types';
import { snapshotsToExpire, unreachableFiles } from '../../iceberg/transaction/expire';
import { cursorSnapshotIds } from '../cursor';
import type { Tables } from '../tables';
import { pool } from './reachable';
import type { DeleteExpiredInput, DeleteExpiredResult, DeletedCounts, ExpireCommitInput, ExpireCommitResult } from './types';

export const PROP_EXPIRE_ID = 'floe.maintenance.expire-id';
export const PROP_EXPIRE_BEFORE = 'floe.maintenance.expire-base-metadata';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function expireSnapshotsCommit(tables: Tables, input: ExpireCommitInput): Promise<ExpireCommitResult> {
  const id = parseIdentifier(input.table);
  const cutoff = BigInt(input.asOfMs - input.olderThanMs);
  for (let attempt = 1; ; attempt++) {
    const loaded = await tables.catalog.loadTable(id);
    const m = loaded.metadata;
    if (m.properties[PROP_EXPIRE_ID] === input.expireId) {
      return {
        expiredSnapshotIds: [], protectedCursorSnapshotIds: [], retainedSnapshots: m.snapshots.length,
        beforeMetadataLocation: m.properties[PROP_EXPIRE_BEFORE] ?? null, afterMetadataLocation: loaded.metadataLocation,
        alreadyCommitted: true,
      };
    }
    const cursors = cursorSnapshotIds(m);
    const { expire, retain } = snapshotsToExpire(m, { olderThanMs: cutoff, retainLast: input.retainLast, protect: cursors });
    const wouldExpireWithoutProtection = snapshotsToExpire(m, { olderThanMs: cutoff, retainLast: input.retainLast }).expire;
    const protectedIds = wouldExpireWithoutProtection.filter((s) => cursors.includes(s['snapshot-id'])).map((s) => s['snapshot-id'].toString());
    const result: ExpireCommitResult = {
      expiredSnapshotIds: expire.map((s) => s['snapshot-id'].toString()), protectedCursorSnapshotIds: protectedIds,
      retainedSnapshots: retain.length, beforeMetadataLocation: null, afterMetadataLocation: null, alreadyCommitted: false,
    };
    if (expire.length === 0 || input.dryRun) return result;
    try {
      const after = await tables.catalog.commitTable(id, [
        { type: 'assert-table-uuid', uuid: m['table-uuid'] },
        { type: 'assert-ref-snapshot-id', ref: MAIN_BRANCH, 'snapshot-id': m.refs[MAIN_BRANCH]?.['snapshot-id'] ?? null },
      ], [
        { action: 'remove-snapshots', 'snapshot-ids': expire.map((s) => s['snapshot-id']) },
        { action: 'set-properties', updates: { [PROP_EXPIRE_ID]: input.expireId, [PROP_EXPIRE_BEFORE]: loaded.metadataLocation } },
      ]);
      return { ...result, beforeMetadataLocation: loaded.metadataLocation, afterMetadataLocation: after.metadataLocation };
    } catch (e) {
      // Ingest commits every few seconds: losing the CAS is normal, re-plan on the new head.
      if (isIcebergError(e, 'CommitConflict') && attempt < 50) {
        await sleep(Math.min(2000, 20 * 2 ** Math.min(attempt, 7)) * (0.5 + Math.random() / 2));
        continue;
      }
      throw e;
    }
  }
}

async function readMetadata(tables: Tables, location: string): Promise<TableMetadata> {
  try {
    return parseTableMetadata(new TextDecoder().decode(await tables.io.read(location)));
  } catch (e) {
    if (isIcebergError(e, 'NotFound') || /NoSuchKey|not found|ENOENT/i.test(String((e as Error).message))) {
      throw ApplicationFailure.nonRetryable(`expiry base metadata ${location} is gone: expected it to exist until expiry finished, found nothing; leftovers will be removed by orphan removal`, 'MetadataGone');
    }
    throw e;
  }
}

const emptyCounts = (): DeletedCounts => ({ dataFiles: 0, manifests: 0, manifestLists: 0, metadataFiles: 0, other: 0 });

export async function deleteExpiredFiles(tables: Tables, input: DeleteExpiredInput): Promise<DeleteExpiredResult> {
  const ctx = Context.current();
  const before = await readMetadata(tables, input.beforeMetadataLocation);
  const after = await readMetadata(tables, input.afterMetadataLocation);
  if (before['table-uuid'] !== after['table-uuid']) {
    throw IcebergError.mismatch('DataInvalid', 'expiry before/after table uuid', before['table-uuid'], after['table-uuid'], false);
  }
  const afterIds = new Set(after.snapshots.map((s) => s['snapshot-id']));
  // Retained = what `after` keeps; anything newer than `after` was built on it and adds only new files.
  const expired = before.snapshots.filter((s) => !afterIds.has(s['snapshot-id']));
  const files = await unreachableFiles(tables.io, expired, after.snapshots);
  const todo: Array<{ location: string; kind: keyof DeletedCounts }> = [
    ...files.dataFiles.map((location) => ({ location, kind: 'dataFiles' as const })),
    ...files.manifests.map((location) => ({ location, kind: 'manifests' as const })),
    ...files.manifestLists.map((location) => ({ location, kind: 'manifestLists' as const })),
  ];
  // Old metadata.json: versions that fell off the metadata log of `after` (older than its oldest
  // entry) and are older than the cutoff. Never `before`/`after` themselves: retries need them.
  const kept = [input.afterMetadataLocation, input.beforeMetadataLocation, ...after['metadata-log'].map((e) => e['metadata-file'])];
  const minVersion = Math.min(...kept.map(parseMetadataVersion).filter((v) => v >= 0));
  const keep = new Set(kept);
  const metaDir = (after.properties['write.metadata.path'] ?? `${after.location}/metadata`).replace(/\/+$/, '');
  for await (const f of tables.io.list(`${metaDir}/`)) {
    if (!f.location.endsWith('.metadata.json') || keep.has(f.location)) continue;
    const v = parseMetadataVersion(f.location);
    if (v >= 0 && v < minVersion && f.lastModified < input.metadataOlderThanMs) todo.push({ location: f.location, kind: 'metadataFiles' });
  }
  const deleted = emptyCounts();
  let done = 0;
  if (!input.dryRun) {
    await pool(todo, 16, async (f) => {
      await tables.io.delete(f.location);
      deleted[f.kind]++;
      if (++done % 100 === 0) ctx.heartbeat({ done, total: todo.length });
    });
  } else {
    for (const f of todo) deleted[f.kind]++;
  }
  return { deleted, sample: todo.slice(0, 100).map((f) => f.location) };
}
