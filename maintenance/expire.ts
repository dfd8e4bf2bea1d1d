/**
 * Snapshot expiry in two crash-safe steps:
 * 1. `expireSnapshotsCommit`: choose snapshots (older-than, retain-last, never a ref head) and
 *    commit `remove-snapshots`. Ingest cursors are table properties, so no snapshot needs keeping
 *    for them (keeping one would pin the files compaction replaced, forever). The commit records the
 *    workflow's expire id and the metadata it was based on in the table properties, so a retry
 *    that lost the response finds its own commit.
 * 2. `deleteExpiredFiles`: from the two immutable metadata.json files (before, after) recompute
 *    what only the expired snapshots reached and delete it, a few at a time; deleting a missing
 *    file is a no-op, so a retried attempt just finishes the job.
 *
 * Concurrency: the commit asserts main unchanged (a concurrent ingest commit makes it reload and
 * re-plan); deletions never touch anything a snapshot of `after`, or of anything newer, reaches.
 */
import {
  parseIdentifier,
  IcebergError,
  isIcebergError,
  MAIN_BRANCH,
  parseTableMetadata,
  snapshotsToExpire,
  unreachableFiles,
  ALREADY_COMMITTED,
  Transaction,
  mapConcurrent,
  type TableMetadata,
  type PendingCommit,
  type TableAction,
  type TableUpdate,
} from '../iceberg';
import { CURSOR_PROPERTY_PREFIX, DETACHED_RUN, nonRetryable, type StepRun } from '../contract';
import { carryLegacyCursors } from '../table/cursor';
import type { Tables } from '../table/tables';
import { checkAsOf } from './window';
import { crashPoint } from '../table/crash-points';
import type { DeleteExpiredInput, DeleteExpiredResult, DeletedCounts, ExpireCommitInput, ExpireCommitResult } from './types';

const PROP_EXPIRE_ID = 'floe.maintenance.expire-id';
const PROP_EXPIRE_BEFORE = 'floe.maintenance.expire-base-metadata';

/**
 * `remove-snapshots` for what is old enough, plus the table properties that make the commit
 * findable by a retry. Tables written before ingest cursors were properties have their cursors
 * only in summaries; this commit carries them into properties first, so no cursor depends on
 * history that it cuts (table/cursor.ts).
 */
class ExpireAction implements TableAction {
  baseLocation = '';
  result: ExpireCommitResult | null = null;
  constructor(
    private readonly input: ExpireCommitInput,
    private readonly cutoff: bigint,
  ) {}
  writtenFiles(): string[] {
    return [];
  }
  async prepare(base: TableMetadata): Promise<PendingCommit> {
    const { expire, retain } = snapshotsToExpire(
      base,
      { olderThanMs: this.cutoff, retainLast: this.input.retainLast },
      BigInt(this.input.asOfMs),
    );
    const carried = carryLegacyCursors(base);
    this.result = {
      expiredSnapshotIds: expire.map((s) => s['snapshot-id'].toString()),
      carriedCursors: Object.keys(carried).map((k) => k.slice(CURSOR_PROPERTY_PREFIX.length)),
      retainedSnapshots: retain.length,
      beforeMetadataLocation: this.baseLocation,
      afterMetadataLocation: null,
      alreadyCommitted: false,
    };
    const updates: TableUpdate[] =
      expire.length === 0 || this.input.dryRun
        ? []
        : [
            { action: 'remove-snapshots', 'snapshot-ids': expire.map((s) => s['snapshot-id']) },
            {
              action: 'set-properties',
              updates: { ...carried, [PROP_EXPIRE_ID]: this.input.expireId, [PROP_EXPIRE_BEFORE]: this.baseLocation },
            },
          ];
    return {
      updates,
      attemptFiles: [],
      referencedFiles: [],
      requirements: [
        { type: 'assert-table-uuid', uuid: base['table-uuid'] },
        { type: 'assert-ref-snapshot-id', ref: MAIN_BRANCH, 'snapshot-id': base.refs[MAIN_BRANCH]?.['snapshot-id'] ?? null },
      ],
    };
  }
}

export async function expireSnapshotsCommit(tables: Tables, input: ExpireCommitInput): Promise<ExpireCommitResult> {
  checkAsOf(input.asOfMs, Date.now(), 'expiry asOf');
  const id = parseIdentifier(input.table);
  const action = new ExpireAction(input, BigInt(input.asOfMs - input.olderThanMs));
  // Ingest commits every few seconds: losing the CAS is normal, so allow many re-plans.
  const r = await new Transaction(id).add(action).commit(tables.catalog, tables.io, {
    maxAttempts: 50,
    minWaitMs: 20,
    maxWaitMs: 2000,
    validate: (t) => {
      if (t.metadata.properties[PROP_EXPIRE_ID] === input.expireId) return ALREADY_COMMITTED;
      action.baseLocation = t.metadataLocation;
    },
  });
  if (r.alreadyCommitted) {
    // An earlier attempt landed and its response was lost (the worker died after the CAS): report
    // what that commit expired, read from the metadata it was based on, so the workflow's result
    // and metrics do not say 0. No later expiry committed since (it would have replaced the id).
    const m = r.table.metadata;
    const beforeLocation = m.properties[PROP_EXPIRE_BEFORE] ?? null;
    const kept = new Set(m.snapshots.map((s) => s['snapshot-id']));
    const before = beforeLocation ? await readMetadata(tables, beforeLocation).catch(() => null) : null;
    const expired = (before?.snapshots ?? []).filter((s) => !kept.has(s['snapshot-id']));
    return {
      expiredSnapshotIds: expired.map((s) => s['snapshot-id'].toString()),
      carriedCursors: [],
      retainedSnapshots: m.snapshots.length,
      beforeMetadataLocation: beforeLocation,
      afterMetadataLocation: r.table.metadataLocation,
      alreadyCommitted: true,
    };
  }
  const result = action.result!;
  if (result.expiredSnapshotIds.length > 0 && !input.dryRun) crashPoint('expire-after-commit');
  if (result.expiredSnapshotIds.length === 0 || input.dryRun) return { ...result, beforeMetadataLocation: null };
  return { ...result, afterMetadataLocation: r.table.metadataLocation };
}

async function readMetadata(tables: Tables, location: string): Promise<TableMetadata> {
  try {
    return parseTableMetadata(new TextDecoder().decode(await tables.io.read(location)));
  } catch (e) {
    if (isIcebergError(e, 'NotFound') || /NoSuchKey|not found|ENOENT/i.test(String((e as Error).message))) {
      throw nonRetryable(
        'MetadataGone',
        `expiry base metadata ${location} is gone: expected it to exist until expiry finished, found nothing; leftovers will be removed by orphan removal`,
      );
    }
    throw e;
  }
}

const emptyCounts = (): DeletedCounts => ({ dataFiles: 0, manifests: 0, manifestLists: 0, metadataFiles: 0, other: 0 });

export async function deleteExpiredFiles(
  tables: Tables,
  input: DeleteExpiredInput,
  run: StepRun = DETACHED_RUN,
): Promise<DeleteExpiredResult> {
  const before = await readMetadata(tables, input.beforeMetadataLocation);
  const after = await readMetadata(tables, input.afterMetadataLocation);
  if (before['table-uuid'] !== after['table-uuid']) {
    throw IcebergError.mismatch('DataInvalid', 'expiry before/after table uuid', before['table-uuid'], after['table-uuid'], false);
  }
  const afterIds = new Set(after.snapshots.map((s) => s['snapshot-id']));
  // Retained = what `after` keeps; anything newer than `after` was built on it and adds only new files.
  const expired = before.snapshots.filter((s) => !afterIds.has(s['snapshot-id']));
  // A retry after a killed attempt finds some of these gone: deletion below goes in phases, so a
  // missing manifest or manifest list of an expired snapshot means its contents are gone too.
  const files = await unreachableFiles(tables.io, expired, after.snapshots, { missingExpiredAreDeleted: true });
  const phases: Array<{ kind: keyof DeletedCounts; locations: string[] }> = [
    { kind: 'dataFiles', locations: files.dataFiles },
    { kind: 'manifests', locations: files.manifests },
    { kind: 'manifestLists', locations: files.manifestLists },
    { kind: 'metadataFiles', locations: [] },
  ];
  // Old metadata.json: only versions this table's own metadata log names (`before`'s) that fell off
  // `after`'s and are older than the cutoff. Never a listing of the metadata directory: another
  // table may keep its metadata there (a nested table `a.b.metadata`, a shared
  // `write.metadata.path`), and a version number says nothing about whose file it is. Never
  // `before`/`after` themselves: retries need them. Versions no log names any more are orphans.
  const keep = new Set([
    input.afterMetadataLocation,
    input.beforeMetadataLocation,
    ...after['metadata-log'].map((e) => e['metadata-file']),
  ]);
  for (const e of before['metadata-log']) {
    if (!keep.has(e['metadata-file']) && Number(e['timestamp-ms']) < input.metadataOlderThanMs)
      phases[3]!.locations.push(e['metadata-file']);
  }
  const total = phases.reduce((n, p) => n + p.locations.length, 0);
  const deleted = emptyCounts();
  let done = 0;
  for (const { kind, locations } of phases) {
    // One phase completes before the next starts: that ordering is what makes a retry sound.
    if (!input.dryRun) {
      await mapConcurrent(locations, 16, async (location) => {
        await tables.io.delete(location);
        if (++done % 100 === 0) run.heartbeat({ done, total });
      });
      if (kind === 'manifests' && locations.length > 0) crashPoint('expire-delete');
    }
    deleted[kind] += locations.length;
  }
  return { deleted, sample: phases.flatMap((p) => p.locations).slice(0, 100) };
}

/**
 * Expirable snapshots a table gathers before the ingest that commits to it expires them itself
 * (a route's dynamic tables, which no schedule names): one expiry per this many commits at most,
 * so a table holds at most `olderThan` worth of snapshots plus this many.
 */
export const INGEST_EXPIRE_BATCH = 16;

/** True when `m` holds at least INGEST_EXPIRE_BATCH snapshots that an expiry as of `nowMs` would remove. */
export function expiryDue(m: TableMetadata, nowMs: number, policy: { olderThanMs: number; retainLast: number }): boolean {
  const { expire } = snapshotsToExpire(
    m,
    { olderThanMs: BigInt(nowMs - policy.olderThanMs), retainLast: policy.retainLast },
    BigInt(nowMs),
  );
  return expire.length >= INGEST_EXPIRE_BATCH;
}

/**
 * Expires `table` as of `asOfMs` (commit, then delete what only the expired snapshots reached):
 * the scheduled expiry's two steps in one call, for the ingest of a route's dynamic tables.
 * Returns how many snapshots it removed. A crash between the steps leaves files that orphan
 * removal finds; a second call expires what is still due.
 */
export async function expireNow(
  tables: Tables,
  input: { table: string; asOfMs: number; olderThanMs: number; retainLast: number; expireId: string },
): Promise<number> {
  const commit = await expireSnapshotsCommit(tables, input);
  if (commit.beforeMetadataLocation && commit.afterMetadataLocation)
    await deleteExpiredFiles(tables, {
      table: input.table,
      beforeMetadataLocation: commit.beforeMetadataLocation,
      afterMetadataLocation: commit.afterMetadataLocation,
      metadataOlderThanMs: input.asOfMs - input.olderThanMs,
    });
  return commit.expiredSnapshotIds.length;
}
