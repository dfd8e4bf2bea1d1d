/**
 * The ingest loop for one (table, ingest id): loadCursor -> pollAndWrite per partition group (in
 * parallel) -> one idempotent, fenced commit. Deterministic orchestration only; every side effect
 * is an activity. The protocol is in the README, "Exactly-once protocol".
 */
import {
  ActivityFailure,
  ApplicationFailure,
  condition,
  continueAsNew,
  defineQuery,
  defineSignal,
  log,
  patched,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { createActivities } from '../activities';
import type { CommitResult, CyclePlan, PollResult } from '../ingest/types';
import { FailureType, INGEST_NON_RETRYABLE, INGEST_RELOAD, ingestWorkflowId } from '../contract';
import {
  currentDetails,
  initialStatus,
  lagOf,
  mergeCycle,
  pollInputs,
  leftBehind,
  rangeDone,
  recordCommit,
  recordRouteCommit,
  recordRoutePlan,
  reportedState,
  routeCommits,
  topicOf,
  cycleRef,
  type IngestInput,
  type IngestStatus,
  type MergedCycle,
} from './ingest-state';

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

export type { IngestInput, IngestState, IngestStatus } from './ingest-state';

export const pauseSignal = defineSignal('pause');
export const resumeSignal = defineSignal('resume');
export const drainAndStopSignal = defineSignal('drainAndStop');
export const statusQuery = defineQuery<IngestStatus>('status');

/** The commit line, through the worker's sink (not during replay); the SDK adds workflowId/runId. */
function logCommit(input: IngestInput, commitId: string, res: { snapshotId: string; alreadyCommitted: boolean }, cycle: MergedCycle): void {
  log.info('committed', {
    table: input.table,
    ingestId: input.ingestId,
    commitId,
    snapshotId: res.snapshotId,
    alreadyCommitted: res.alreadyCommitted,
    rows: cycle.records,
    deadLetters: cycle.deadLetters,
    files: cycle.files.length,
  });
}

/**
 * The commits of a routed cycle (routeCommits), one per table, in order: each is the existing
 * idempotent, fenced commit on that table with the cycle's commit id and end offsets; the dead
 * letters go with the first. A refusal stops the rest: the tables not committed stay behind and
 * the next plan starts the poll from their cursors (nothing lost, nothing written twice).
 */
async function commitRoute(
  input: IngestInput,
  plan: CyclePlan,
  cycle: MergedCycle,
  commitId: string,
  status: IngestStatus,
): Promise<CommitResult> {
  const commits = routeCommits(plan, cycle);
  let last: CommitResult | undefined;
  for (const [i, c] of commits.entries()) {
    last = await commit({
      table: input.table,
      ingestId: input.ingestId,
      ...topicOf(input),
      commitId,
      baseSnapshotId: c.baseSnapshotId,
      deadLetterFloor: plan.deadLetterFloor,
      deadLetterBaseCommitId: plan.deadLetterBaseCommitId,
      startOffsets: c.startOffsets,
      endOffsets: c.endOffsets,
      files: c.files,
      deadLetterFiles: i === 0 ? cycle.deadLetterFiles : [],
      records: c.records,
      deadLetters: i === 0 ? cycle.deadLetters : 0,
      routeTable: c.table,
      routeIndex: i,
      routeCount: commits.length,
    });
    recordRouteCommit(status, c, last);
  }
  if (!last) throw ApplicationFailure.nonRetryable(`route ${input.table}: a cycle that moved has no table to commit`, 'RouteEmptyCycle');
  return last;
}

/**
 * The ingest of one topic of an entry of several topics ends, stopped, when that topic is deleted
 * (TopicGone from its plan or poll): the table keeps the rows and the cursor; nothing after the
 * cursor can be read any more. Whatever else fails an ingest still fails it.
 */
async function unlessTopicGone<T>(
  input: IngestInput,
  status: IngestStatus,
  step: () => Promise<T>,
): Promise<{ done: T; gone?: undefined } | { gone: IngestStatus }> {
  try {
    return { done: await step() };
  } catch (err) {
    if (input.topic === undefined || !(err instanceof ActivityFailure) || !(err.cause instanceof ApplicationFailure)) throw err;
    if (err.cause.type !== FailureType.TopicGone) throw err;
    log.warn('topic deleted: its ingest ends', { table: input.table, ingestId: input.ingestId, topic: input.topic });
    status.state = 'stopped';
    status.topicGone = err.cause.message;
    return { gone: status };
  }
}

/**
 * Commits a cycle that advanced: a route (the plan lists its tables) commits each table in turn;
 * plans of a plain table, and every history recorded before routes existed, take the one commit.
 * Fenced (another writer moved this ingest's cursor) or files gone: the cycle's files are orphans
 * and the next cycle starts over from the table ('refused'; 'reload' before the patch that counts
 * refused cycles towards continue-as-new).
 */
async function commitCycle(
  input: IngestInput,
  plan: CyclePlan,
  cycle: ReturnType<typeof mergeCycle>,
  commitId: string,
  status: IngestStatus,
  started: number,
): Promise<'committed' | 'refused' | 'reload'> {
  try {
    const res = plan.routeTables
      ? await commitRoute(input, plan, cycle, commitId, status)
      : await commit({
          table: input.table,
          ingestId: input.ingestId,
          ...topicOf(input),
          commitId,
          baseSnapshotId: plan.baseSnapshotId,
          deadLetterFloor: plan.deadLetterFloor,
          deadLetterBaseCommitId: plan.deadLetterBaseCommitId,
          startOffsets: plan.startOffsets,
          endOffsets: cycle.endOffsets,
          files: cycle.files,
          deadLetterFiles: cycle.deadLetterFiles,
          records: cycle.records,
          deadLetters: cycle.deadLetters,
          range: input.range,
        });
    recordCommit(status, cycle, commitId, res, Date.now() - started);
    logCommit(input, commitId, res, cycle);
    return 'committed';
  } catch (err) {
    if (!(err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && INGEST_RELOAD.includes(err.cause.type ?? '')))
      throw err;
    status.fencedCommits++;
    log.warn('commit refused; reloading the cursor from the table', {
      table: input.table,
      ingestId: input.ingestId,
      commitId,
      reason: err.cause.type,
    });
    // Refused cycles still count towards continue-as-new, or history would grow unbounded.
    return patched(PATCH_REFUSED_CYCLES_CONTINUE_AS_NEW) ? 'refused' : 'reload';
  }
}

export async function ingestWorkflow(input: IngestInput): Promise<IngestStatus> {
  const status = initialStatus(input);
  let paused = status.state === 'paused';
  let draining = status.state === 'draining';
  setHandler(pauseSignal, () => {
    paused = true;
  });
  setHandler(resumeSignal, () => {
    paused = false;
  });
  setHandler(drainAndStopSignal, () => {
    draining = true;
  });
  setHandler(statusQuery, () => ({ ...status, state: reportedState(status, paused, draining) }));

  let cyclesThisRun = 0;
  // The last cycle stopped short of records that were already waiting: the next one catches up.
  let behind = false;
  for (;;) {
    if (paused && !draining) {
      status.state = 'paused';
      await condition(() => !paused || draining);
    }
    status.state = draining ? 'draining' : 'running';

    const planned = await unlessTopicGone(input, status, () => loadCursor(cycleRef(input)));
    if (planned.gone) return planned.gone;
    const plan: CyclePlan = planned.done;
    status.cursor = plan.startOffsets;
    recordRoutePlan(status, plan);
    status.lag = lagOf(plan.startOffsets, plan.highWatermarks);
    // The UI's current details (no command, nothing in history: replay-safe).
    setCurrentDetails(currentDetails(status, reportedState(status, paused, draining)));
    if (input.range && rangeDone(plan.startOffsets, input.range)) {
      status.state = 'stopped';
      return status;
    }

    const commitId = uuid4();
    const started = Date.now();
    // Only a cycle that polled in drain mode (until caught up with the topic) may end the drain.
    const drainingCycle = draining;
    const polled = await unlessTopicGone(input, status, () =>
      Promise.all(pollInputs(input, plan, commitId, draining, behind).map((p) => pollAndWrite(p))),
    );
    if (polled.gone) return polled.gone;
    const results: PollResult[] = polled.done;
    status.cycles++;
    cyclesThisRun++;
    const cycle = mergeCycle(plan, results);

    // 'reload': refused before the patch that counts refused cycles; the loop starts over at once.
    const outcome = cycle.advanced ? await commitCycle(input, plan, cycle, commitId, status, started) : 'committed';
    if (outcome === 'reload') continue;
    const refused = outcome === 'refused';
    if (!refused) status.lag = lagOf(status.cursor, cycle.highWatermarks);
    setCurrentDetails(currentDetails(status, reportedState(status, paused, draining)));
    behind = !refused && leftBehind(cycle);

    // Drain finishes when a cycle that polled until caught up finds nothing more to read. (Before the
    // patch, an idle poll begun before the signal could end it and leave records behind.)
    const endsDrain = patched(PATCH_DRAIN_NEEDS_DRAINING_CYCLE) ? drainingCycle : draining;
    if (!refused && endsDrain && !cycle.advanced) {
      status.state = 'stopped';
      return status;
    }
    if (cyclesThisRun >= plan.cyclesPerRun || workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof ingestWorkflow>({
        table: input.table,
        ingestId: input.ingestId,
        range: input.range,
        force: input.force,
        ...topicOf(input),
        carry: { ...status, state: reportedState(status, paused, draining) },
      });
    }
  }
}
