/**
 * Compaction of one table (Spark rewrite_data_files): plan file groups, rewrite each group in its
 * own activity (at most `maxConcurrentFileGroupRewrites` at once), commit finished groups as
 * Iceberg `replace` snapshots (one at the end, or up to `maxCommits` with partial progress).
 * A group that fails or whose inputs vanished is reported, never fatal to the others.
 * Deterministic orchestration only; see maintenance/compact.ts for the side effects and
 * workflows/compact-state.ts for the run's pure state.
 */
import {
  ActivityFailure,
  CancellationScope,
  defineQuery,
  log,
  proxyActivities,
  setHandler,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { createActivities } from '../activities';
import type { CompactOptions, CompactProgress, CompactResult, FileGroup } from '../maintenance/types';
import { INVALID_WINDOW } from '../maintenance/window';
import { workflowWindowMs } from './orphans';
import {
  commitBatchSize,
  commitInput,
  emptyResult,
  initialProgress,
  recordCommit,
  recordFailed,
  type RewrittenGroup,
} from './compact-state';

type Activities = ReturnType<typeof createActivities>;

// Every activity that may run for minutes has a heartbeat timeout (and heartbeats, see
// activities/heartbeat.ts): a SIGKILLed worker's attempt is retried within 30 s, not after the
// start-to-close timeout.
const { planCompaction, tableFileStats } = proxyActivities<Activities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '30 seconds',
  retry: {
    initialInterval: '1s',
    maximumInterval: '30s',
    maximumAttempts: 10,
    nonRetryableErrorTypes: ['FeatureUnsupported', 'ConfigError', INVALID_WINDOW],
  },
});
// Pending markers keep the outputs of this run from the orphan sweep until the run ends.
const { markPendingFiles, clearPendingFiles } = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1s', maximumInterval: '10s', maximumAttempts: 10 },
});
// A rewrite streams its inputs and heartbeats per batch: a killed worker's attempt is retried
// within the heartbeat timeout, under a new attempt number (new output names).
const { rewriteFileGroup } = proxyActivities<Activities>({
  startToCloseTimeout: '2 hours',
  heartbeatTimeout: '30 seconds',
  retry: {
    initialInterval: '2s',
    maximumInterval: '1 minute',
    maximumAttempts: 4,
    nonRetryableErrorTypes: ['InputsVanished', 'DataInvalid'],
  },
});
const { commitRewrite } = proxyActivities<Activities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '1s', maximumInterval: '30s', maximumAttempts: 10, nonRetryableErrorTypes: ['DataInvalid'] },
});

export interface CompactInput {
  table: string;
  options?: Partial<CompactOptions>;
  /** Scheduled start time (ISO) of a scheduled run; null for a run started by hand. */
  window?: string | null;
}

export const compactProgressQuery = defineQuery<CompactProgress>('compactProgress');

const failureMessage = (e: unknown): string => {
  if (e instanceof ActivityFailure && e.cause) return e.cause.message;
  return e instanceof Error ? e.message : String(e);
};

export async function compactWorkflow(input: CompactInput): Promise<CompactResult> {
  const started = Date.now();
  const progress = initialProgress();
  setHandler(compactProgressQuery, () => progress);
  workflowWindowMs(input.window); // refuses an unparsable or future window before any work

  // Output names carry the run id (and group + attempt): no two runs or attempts collide. The
  // planner stages the plan's file lists under it too, so history holds group summaries only.
  const runId = `compact-${workflowInfo().runId}`;
  const plan = await planCompaction({ table: input.table, options: input.options, window: input.window ?? null, runId });
  progress.phase = 'rewriting';
  progress.groupsTotal = plan.groups.length;
  progress.bytesTotal = plan.groups.reduce((a, g) => a + g.bytes, 0);

  const result = emptyResult(input.table, input.window ?? null, plan);
  const failed = (g: FileGroup, reason: string) => recordFailed(result, progress, g, reason);
  if (plan.groups.length === 0) {
    progress.phase = 'done';
    return { ...result, durationMs: Date.now() - started };
  }

  const marker = { location: plan.location, owner: runId };
  // Before any output is written: the sweep keeps `<runId>-*` files while this run may commit them.
  await markPendingFiles({ ...marker, filePrefix: `${runId}-` });
  try {
    return await rewriteAndCommit(input, plan, runId, result, progress, failed, started);
  } finally {
    // Committed outputs are reachable now, uncommitted ones orphans: either way the marker goes,
    // also when the run is cancelled. Best effort: a leftover marker only delays the sweep.
    await CancellationScope.nonCancellable(() => clearPendingFiles(marker)).catch((e: unknown) => {
      log.warn('could not clear the pending marker of this compaction run', { runId, error: String(e) });
    });
  }
}

async function rewriteAndCommit(
  input: CompactInput,
  plan: Awaited<ReturnType<typeof planCompaction>>,
  runId: string,
  result: CompactResult,
  progress: CompactProgress,
  failed: (g: FileGroup, reason: string) => void,
  started: number,
): Promise<CompactResult> {
  const o = plan.options;
  const commit = async (batch: RewrittenGroup[]) => {
    if (batch.length === 0) return;
    try {
      const r = await commitRewrite(commitInput(input.table, plan, batch, uuid4()));
      recordCommit(result, progress, plan, batch, r);
    } catch (e) {
      // Outputs of a failed commit are unreferenced: orphan removal collects them.
      for (const { group } of batch) failed(group, `commit failed: ${failureMessage(e)}`);
    }
  };

  // Partial progress: commit every `batchSize` finished groups, one commit at a time, in order.
  const batchSize = commitBatchSize(plan);
  let queue: RewrittenGroup[] = [];
  let commits: Promise<void> = Promise.resolve();
  const enqueue = (batch: typeof queue) => {
    commits = commits.then(() => commit(batch));
  };

  let next = 0;
  const rewriter = async () => {
    for (;;) {
      const g = plan.groups[next++];
      if (!g) return;
      try {
        const r = await rewriteFileGroup({
          table: input.table,
          location: plan.location,
          runId,
          group: g,
          targetFileSizeBytes: o.targetFileSizeBytes,
          ...(plan.staged ? { staged: plan.staged } : {}),
        });
        queue.push({ group: g, result: r });
        if (queue.length >= batchSize && o.partialProgress) {
          enqueue(queue);
          queue = [];
        }
      } catch (e) {
        if (!(e instanceof ActivityFailure)) throw e;
        failed(g, failureMessage(e));
      }
      progress.groupsDone++;
      progress.bytesDone += g.bytes;
    }
  };
  await Promise.all(Array.from({ length: Math.min(o.maxConcurrentFileGroupRewrites, plan.groups.length) }, rewriter));
  progress.phase = 'committing';
  enqueue(queue);
  queue = [];
  await commits;

  result.after = await tableFileStats({ table: input.table });
  result.failed_data_file_groups.sort((a, b) => a.index - b.index);
  progress.phase = 'done';
  return { ...result, durationMs: Date.now() - started };
}
