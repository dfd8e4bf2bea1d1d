/**
 * Snapshot expiry of one table (Spark expire_snapshots): commit `remove-snapshots` for snapshots
 * older than the cutoff beyond the newest `retainLast` (never a ref head; ingest cursors are table
 * properties and need no snapshot), then delete everything only those snapshots reached. The cutoff comes from
 * the run's window (its scheduled start time), so re-running a past window expires nothing new.
 */
import { defineQuery, proxyActivities, setHandler, uuid4 } from '@temporalio/workflow';
import type { createActivities } from '../activities';
import type { DeletedCounts, ExpireResult, Progress } from '../maintenance/types';
import { INVALID_WINDOW } from '../maintenance/window';
import { workflowWindowMs } from './orphans';

type Activities = ReturnType<typeof createActivities>;

// Heartbeat timeouts: a SIGKILLed worker's attempt is retried within them (activities/heartbeat.ts).
const { expireSnapshotsCommit, maintenanceSettings } = proxyActivities<Activities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '1s', maximumInterval: '30s', maximumAttempts: 10, nonRetryableErrorTypes: [INVALID_WINDOW] },
});
const { deleteExpiredFiles } = proxyActivities<Activities>({
  startToCloseTimeout: '1 hour',
  heartbeatTimeout: '30 seconds',
  retry: {
    initialInterval: '2s',
    maximumInterval: '1 minute',
    maximumAttempts: 10,
    nonRetryableErrorTypes: ['MetadataGone', 'DataInvalid', INVALID_WINDOW],
  },
});

export interface ExpireInput {
  table: string;
  /** Defaults: the table's maintenance.expire config. */
  olderThanMs?: number;
  retainLast?: number;
  /** Scheduled start time (ISO); the cutoff is window - olderThan. Null: now. */
  window?: string | null;
  /** Report what would expire; commit and delete nothing. */
  dryRun?: boolean;
}

export const expireProgressQuery = defineQuery<Progress>('expireProgress');

export async function expireWorkflow(input: ExpireInput): Promise<ExpireResult> {
  const started = Date.now();
  const progress: Progress = { phase: 'planning', done: 0, total: 2, unit: 'steps' };
  setHandler(expireProgressQuery, () => progress);
  const windowMs = workflowWindowMs(input.window);
  let { olderThanMs, retainLast } = input;
  if (olderThanMs === undefined || retainLast === undefined) {
    const s = await maintenanceSettings({ table: input.table });
    olderThanMs ??= s?.expire.olderThanMs ?? 5 * 86_400_000;
    retainLast ??= s?.expire.retainLast ?? 1;
  }
  const asOfMs = windowMs ?? Date.now();
  const commit = await expireSnapshotsCommit({
    table: input.table,
    expireId: uuid4(),
    olderThanMs,
    retainLast,
    asOfMs,
    dryRun: input.dryRun ?? false,
  });
  progress.phase = 'deleting';
  progress.done = 1;
  let deleted: DeletedCounts = { dataFiles: 0, manifests: 0, manifestLists: 0, metadataFiles: 0, other: 0 };
  if (commit.beforeMetadataLocation && commit.afterMetadataLocation && !input.dryRun) {
    deleted = (
      await deleteExpiredFiles({
        table: input.table,
        beforeMetadataLocation: commit.beforeMetadataLocation,
        afterMetadataLocation: commit.afterMetadataLocation,
        metadataOlderThanMs: asOfMs - olderThanMs,
      })
    ).deleted;
  }
  progress.phase = 'done';
  progress.done = 2;
  return {
    table: input.table,
    window: input.window ?? null,
    cutoffMs: asOfMs - olderThanMs,
    expiredSnapshots: commit.expiredSnapshotIds.length,
    carriedCursors: commit.carriedCursors,
    retainedSnapshots: commit.retainedSnapshots,
    deleted,
    dryRun: input.dryRun ?? false,
    durationMs: Date.now() - started,
  };
}
