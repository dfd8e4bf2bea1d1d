/**
 * The ingest loop for one (table, ingest id): loadCursor -> pollAndWrite per partition group (in
 * parallel) -> one idempotent, fenced commit. Deterministic orchestration only; every side effect
 * is an activity. See DESIGN "Exactly-once protocol".
 */
import {
  ActivityFailure, ApplicationFailure, condition, continueAsNew, defineQuery, defineSignal, log,
  patched, proxyActivities, setHandler, uuid4, workflowInfo,
} from '@temporalio/workflow';
import type { createActivities } from '../activities';
import type { Offsets } from '../ingest/cursor';
import type { CyclePlan, OffsetRange, PollResult } from '../activities/types';
import { INGEST_NON_RETRYABLE, INGEST_RELOAD, ingestWorkflowId } from '../contract';

export { ingestWorkflowId };

// Behaviour changes that running workflows must replay without (Temporal patching).
const PATCH_REFUSED_CYCLES_CONTINUE_AS_NEW = 'floe-refused-cycles-continue-as-new';
const PATCH_DRAIN_NEEDS_DRAINING_CYCLE = 'floe-drain-needs-draining-cycle';

type Activities = ReturnType<typeof createActivities>;

// Every activity heartbeats so that a SIGKILLed worker's attempt is retried within seconds,
// not after a start-to-close timeout.
const { loadCursor } = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1s', maximumInterval: '30s', nonRetryableErrorTypes: INGEST_NON_RETRYABLE },
});
// Polls run for a commit interval; heartbeats let a killed worker's attempt be retried quickly.
const { pollAndWrite } = proxyActivities<Activities>({
  startToCloseTimeout: '15 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1s', maximumInterval: '20s', nonRetryableErrorTypes: INGEST_NON_RETRYABLE },
});
const { commit } = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '500ms', maximumInterval: '20s', nonRetryableErrorTypes: INGEST_NON_RETRYABLE },
});

export interface IngestInput {
  table: string;
  ingestId: string;
  /** Backfill: load exactly [from, to) and stop. */
  range?: OffsetRange;
  /** Start even though another live ingest id already holds the table's topic. */
  force?: boolean;
  /** carried across continueAsNew */
  carry?: IngestStatus;
}

/** `failed` is never reported by the workflow itself: the client derives it from a failed run. */
export type IngestState = 'running' | 'paused' | 'draining' | 'stopped' | 'failed';

export interface IngestStatus {
  table: string;
  ingestId: string;
  state: IngestState;
  cursor: Offsets;
  /** high watermark - cursor, per partition (decimal strings) */
  lag: Record<string, string>;
  lastCommitId: string | null;
  lastSnapshotId: string | null;
  lastCommitTimeMs: number | null;
  cycles: number;
  commits: number;
  fencedCommits: number;
  totalRows: number;
  totalDeadLetters: number;
  /** rows/s over the last committed cycle */
  rowsPerSecond: number;
  filesPerCommit: number;
  /** failed runs: the innermost failure, `Type: message` */
  error?: string;
}

export const pauseSignal = defineSignal('pause');
export const resumeSignal = defineSignal('resume');
export const drainAndStopSignal = defineSignal('drainAndStop');
export const statusQuery = defineQuery<IngestStatus>('status');


const lagOf = (cursor: Offsets, high: Offsets): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const [p, h] of Object.entries(high)) {
    const c = BigInt(cursor[p] ?? '0');
    const d = BigInt(h) - c;
    out[p] = (d > 0n ? d : 0n).toString();
  }
  return out;
};

const rangeDone = (cursor: Offsets, range: OffsetRange): boolean =>
  Object.keys(range.to).every((p) => BigInt(cursor[p] ?? '0') >= BigInt(range.to[p]!));

export async function ingestWorkflow(input: IngestInput): Promise<IngestStatus> {
  const status: IngestStatus = input.carry ?? {
    table: input.table, ingestId: input.ingestId, state: 'running', cursor: {}, lag: {},
    lastCommitId: null, lastSnapshotId: null, lastCommitTimeMs: null, cycles: 0, commits: 0,
    fencedCommits: 0, totalRows: 0, totalDeadLetters: 0, rowsPerSecond: 0, filesPerCommit: 0,
  };
  let paused = status.state === 'paused';
  let draining = status.state === 'draining';
  setHandler(pauseSignal, () => { paused = true; });
  setHandler(resumeSignal, () => { paused = false; });
  setHandler(drainAndStopSignal, () => { draining = true; });
  setHandler(statusQuery, () => ({ ...status, state: draining ? 'draining' : paused ? 'paused' : status.state }));

  let cyclesThisRun = 0;
  for (;;) {
    if (paused && !draining) {
      status.state = 'paused';
      await condition(() => !paused || draining);
    }
    status.state = draining ? 'draining' : 'running';

    const plan: CyclePlan = await loadCursor({ table: input.table, ingestId: input.ingestId, range: input.range, force: input.force });
    if (input.range && rangeDone(plan.startOffsets, input.range)) {
      status.state = 'stopped';
      status.cursor = plan.startOffsets;
      status.lag = lagOf(plan.startOffsets, plan.highWatermarks);
      return status;
    }
    status.cursor = plan.startOffsets;
    status.lag = lagOf(plan.startOffsets, plan.highWatermarks);

    const commitId = uuid4();
    const started = Date.now();
    // Only a cycle that polled in drain mode (until caught up with the topic) may end the drain.
    const drainingCycle = draining;
    const results: PollResult[] = await Promise.all(
      plan.groups.map((partitions, groupIndex) =>
        pollAndWrite({
          table: input.table, ingestId: input.ingestId, commitId, groupIndex, partitions,
          startOffsets: Object.fromEntries(partitions.map((p) => [String(p), plan.startOffsets[String(p)] ?? '0'])),
          // Draining: take what is there now without waiting out a full interval.
          maxWaitMs: draining ? Math.max(5000, plan.commitIntervalMs) : plan.commitIntervalMs,
          untilCaughtUp: draining,
          ...(input.range ? { stopAt: input.range.to, limit: input.range.to } : {}),
          maxRecords: Math.max(1, Math.floor(plan.maxRecordsPerCycle / plan.groups.length)),
          maxBytes: Math.max(1, Math.floor(plan.maxBytesPerCycle / plan.groups.length)),
          deadLetterFloor: plan.deadLetterFloor,
        })),
    );
    status.cycles++;
    cyclesThisRun++;

    const endOffsets: Offsets = { ...plan.startOffsets };
    const high: Offsets = { ...plan.highWatermarks };
    let records = 0, deadLetters = 0;
    const files = results.flatMap((r) => r.files);
    const deadLetterFiles = results.flatMap((r) => r.deadLetterFiles);
    for (const r of results) {
      Object.assign(endOffsets, r.endOffsets);
      Object.assign(high, r.highWatermarks);
      records += r.records;
      deadLetters += r.deadLetters;
    }

    const advanced = Object.keys(endOffsets).some((p) => endOffsets[p] !== plan.startOffsets[p]);
    let refused = false;
    if (advanced) {
      try {
        const res = await commit({
          table: input.table, ingestId: input.ingestId, commitId, baseSnapshotId: plan.baseSnapshotId,
          deadLetterFloor: plan.deadLetterFloor, deadLetterBaseCommitId: plan.deadLetterBaseCommitId,
          startOffsets: plan.startOffsets, endOffsets, files, deadLetterFiles, records, deadLetters, range: input.range,
        });
        status.commits++;
        status.lastCommitId = commitId;
        status.lastSnapshotId = res.snapshotId;
        status.lastCommitTimeMs = res.committedAtMs;
        status.totalRows += records;
        status.totalDeadLetters += deadLetters;
        status.filesPerCommit = files.length;
        status.rowsPerSecond = Math.round((records * 1000) / Math.max(1, Date.now() - started));
        status.cursor = endOffsets;
      } catch (err) {
        // Fenced (another writer moved this ingest's cursor) or files gone: our files are orphans;
        // start over from the table.
        if (err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && INGEST_RELOAD.includes(err.cause.type ?? '')) {
          status.fencedCommits++;
          log.warn('commit refused; reloading the cursor from the table', { commitId, reason: err.cause.type });
          // Refused cycles still count towards continue-as-new, or history would grow unbounded.
          if (!patched(PATCH_REFUSED_CYCLES_CONTINUE_AS_NEW)) continue;
          refused = true;
        } else {
          throw err;
        }
      }
    }
    if (!refused) status.lag = lagOf(status.cursor, high);

    // Drain finishes when a cycle that polled until caught up finds nothing more to read. (Before the
    // patch, an idle poll begun before the signal could end it and leave records behind.)
    const endsDrain = patched(PATCH_DRAIN_NEEDS_DRAINING_CYCLE) ? drainingCycle : draining;
    if (!refused && endsDrain && !advanced) {
      status.state = 'stopped';
      return status;
    }
    if (cyclesThisRun >= plan.cyclesPerRun || workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof ingestWorkflow>({
        table: input.table, ingestId: input.ingestId, range: input.range, force: input.force,
        carry: { ...status, state: draining ? 'draining' : paused ? 'paused' : 'running' },
      });
    }
  }
}
