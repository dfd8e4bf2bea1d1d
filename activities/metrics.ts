/**
 * Feeds the worker's metrics (observability/metrics.ts) from the activities' own inputs and
 * results: each success goes to the recorder of its activity, each failure counts by activity and
 * failure type. Wraps the outside of the failure mapping (activities/failures.ts), so a failure is
 * counted with the Temporal type a workflow sees (StaleCursor, FilesMissing, DataInvalid, ...).
 */
import type {
  CommitInput,
  CommitResult,
  CyclePlan,
  PollInput,
  PollResult,
  RouteCommitInput,
  RouteCommitResult,
  TableRef,
} from '../ingest/types';
import type {
  CommitRewriteInput,
  CommitRewriteResult,
  CompactionPlan,
  DeleteExpiredInput,
  DeleteExpiredResult,
  ExpireCommitInput,
  ExpireCommitResult,
  FileStats,
  OrphansInput,
  OrphansResult,
  RewriteGroupInput,
  RewriteGroupResult,
} from '../maintenance/types';
import { record, recordStall } from '../observability/metrics';

type Acts = Record<string, (...args: any[]) => Promise<unknown>>;

/** The recorder of each measured activity: (input, result, start time) -> metrics. */
const RECORDERS: Record<string, (input: any, res: any, startedMs: number) => void> = {
  loadCursor: (i: TableRef, r: CyclePlan, t) => record.loadCursor(i, r, t),
  pollAndWrite: (i: PollInput, r: PollResult) => record.pollAndWrite(i, r),
  commit: (i: CommitInput, r: CommitResult, t) => record.commit(i, r, t),
  commitRoute: (i: RouteCommitInput, r: RouteCommitResult, t) => record.commit({ ...i, files: [] }, r, t),
  tableFileStats: (i: { table: string }, r: FileStats) => record.fileStats(i.table, r),
  planCompaction: (_: unknown, r: CompactionPlan) => record.planCompaction(r),
  rewriteFileGroup: (i: RewriteGroupInput, r: RewriteGroupResult) => record.rewriteFileGroup(i, r),
  commitRewrite: (i: CommitRewriteInput, r: CommitRewriteResult) => record.commitRewrite(i, r),
  expireSnapshotsCommit: (i: ExpireCommitInput, r: ExpireCommitResult) => record.expireSnapshotsCommit(i, r),
  deleteExpiredFiles: (i: DeleteExpiredInput, r: DeleteExpiredResult) => record.deleteExpiredFiles(i, r),
  removeOrphanFiles: (i: OrphansInput, r: Omit<OrphansResult, 'window' | 'durationMs'>) =>
    record.removeOrphanFiles({ ...r, table: i.table }),
};

export function withMetrics<A extends Acts>(acts: A): A {
  const out: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(acts)) {
    const recorder = RECORDERS[name];
    out[name] = async (...args: unknown[]) => {
      const started = Date.now();
      const input = args[0] as { table?: unknown } | undefined;
      // A stalled ingest's steps say so in their inputs (workflows/ingest.ts): the stall gauges.
      if (input && typeof input.table === 'string' && 'stalled' in input) recordStall(input as TableRef);
      try {
        const res = await fn(...args);
        try {
          recorder?.(input, res, started);
        } catch {
          // Metrics never fail an activity.
        }
        return res;
      } catch (e) {
        record.failure(name, typeof input?.table === 'string' ? input.table : '', e);
        throw e;
      }
    };
  }
  return out as A;
}
