/**
 * The ingest loop for one (table, ingest id): loadCursor -> pollAndWrite per partition group (in
 * parallel) -> one idempotent, fenced commit. Deterministic orchestration only; every side effect
 * is an activity. The protocol is in the README, "Exactly-once protocol".
 */
import {
  ActivityFailure,
  ApplicationFailure,
  TimeoutFailure,
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
import type { Duration, RetryPolicy } from '@temporalio/common';
import type { createActivities } from '../activities';
import type { CommitResult, CyclePlan, PollInput, PollResult, StallReport } from '../ingest/types';
import { FailureType, INGEST_NON_RETRYABLE, INGEST_RELOAD, ingestWorkflowId } from '../contract';
import {
  backoffMs,
  nextRange,
  pollCoverage,
  rangeCommitted,
  rangeFailed,
  rangeSize,
  recordFailure,
  startIsolation,
  type IsolationRange,
} from './isolation';
import {
  currentDetails,
  initialStatus,
  lagOf,
  mergeCycle,
  pollInputs,
  topicIdOf,
  leftBehind,
  rangeDone,
  recordCommit,
  recordRouteBulkCommit,
  recordRouteCommit,
  recordRoutePlan,
  reportedState,
  routeCommits,
  shownState,
  stalled,
  isolateAfter,
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
// A step failing K times is isolated or shown stalled, instead of retried by the server forever.
const PATCH_BOUNDED_ATTEMPTS = 'floe-bounded-attempts';
// Routes into many tables: plans in bulk (staged past a budget), one commitRoute per cycle that
// commits only the tables that changed and the base table last with the route cursor.
const PATCH_ROUTE_BULK = 'floe-route-bulk';

type Activities = ReturnType<typeof createActivities>;

/**
 * The ingest activities with at most `attempts` attempts each (0: unbounded, as before the patch).
 * Every activity heartbeats so that a SIGKILLed worker's attempt is retried within seconds, not
 * after a start-to-close timeout; polls run for a commit interval.
 */
function ingestActivities(attempts: number) {
  const retry = (initialInterval: Duration, maximumInterval: Duration): RetryPolicy => ({
    initialInterval,
    maximumInterval,
    nonRetryableErrorTypes: INGEST_NON_RETRYABLE,
    ...(attempts > 0 ? { maximumAttempts: attempts } : {}),
  });
  const { loadCursor } = proxyActivities<Activities>({
    startToCloseTimeout: '1 minute',
    heartbeatTimeout: '10 seconds',
    retry: retry('1s', '30s'),
  });
  const { pollAndWrite } = proxyActivities<Activities>({
    startToCloseTimeout: '15 minutes',
    heartbeatTimeout: '10 seconds',
    retry: retry('1s', '20s'),
  });
  const { commit } = proxyActivities<Activities>({
    startToCloseTimeout: '2 minutes',
    heartbeatTimeout: '10 seconds',
    retry: retry('500ms', '20s'),
  });
  // A bulk route plans and commits thousands of tables in one activity: longer, still heartbeating.
  const { loadCursor: loadRoute } = proxyActivities<Activities>({
    startToCloseTimeout: '10 minutes',
    heartbeatTimeout: '10 seconds',
    retry: retry('1s', '30s'),
  });
  const { commitRoute } = proxyActivities<Activities>({
    startToCloseTimeout: '30 minutes',
    heartbeatTimeout: '10 seconds',
    retry: retry('500ms', '20s'),
  });
  return { loadCursor, pollAndWrite, commit, loadRoute, commitRoute };
}
const proxies = new Map<number, ReturnType<typeof ingestActivities>>();
/** The proxies for `attempts`, made once each (deterministic: proxies issue no commands). */
const acts = (attempts: number) => {
  let a = proxies.get(attempts);
  if (!a) proxies.set(attempts, (a = ingestActivities(attempts)));
  return a;
};

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
  commit: Activities['commit'],
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
      ...stallOf(status),
      table: input.table,
      ingestId: input.ingestId,
      ...topicOf(input),
      ...topicIdOf(plan),
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
 * The bulk commit of a routed cycle (patch PATCH_ROUTE_BULK): one activity commits the tables that
 * got rows, then the base table with the route cursor (ingest/route-commit.ts). A refusal of any
 * table leaves the base table, and so the route cursor, where it was.
 */
async function commitRouteBulk(
  commitRoute: Activities['commitRoute'],
  input: IngestInput,
  plan: CyclePlan,
  cycle: MergedCycle,
  commitId: string,
  status: IngestStatus,
): Promise<CommitResult> {
  const res = await commitRoute({
    ...stallOf(status),
    table: input.table,
    ingestId: input.ingestId,
    ...topicOf(input),
    ...topicIdOf(plan),
    commitId,
    routeTables: plan.routeTables ?? [],
    ...(plan.routeStaged ? { routeStaged: plan.routeStaged } : {}),
    routeCursor: plan.routeCursor ?? {},
    startOffsets: plan.startOffsets,
    endOffsets: cycle.endOffsets,
    deadLetterFloor: plan.deadLetterFloor,
    deadLetterBaseCommitId: plan.deadLetterBaseCommitId,
    deadLetterFiles: cycle.deadLetterFiles,
    deadLetters: cycle.deadLetters,
    records: cycle.records,
    routed: cycle.routed ?? [],
    routedStaged: cycle.routedStaged ?? [],
  });
  recordRouteBulkCommit(status, plan, cycle, res);
  return res;
}

/**
 * The ingest of one topic of an entry of several topics ends, stopped, when that topic is deleted
 * (TopicGone from its plan or poll): the table keeps the rows and the cursor; nothing after the
 * cursor can be read any more. Returns the final status then, else undefined.
 */
function topicGone(input: IngestInput, status: IngestStatus, err: unknown): IngestStatus | undefined {
  if (input.topic === undefined || !(err instanceof ActivityFailure) || !(err.cause instanceof ApplicationFailure)) return undefined;
  if (err.cause.type !== FailureType.TopicGone) return undefined;
  log.warn('topic deleted: its ingest ends', { table: input.table, ingestId: input.ingestId, topic: input.topic });
  status.state = 'stopped';
  status.topicGone = err.cause.message;
  return status;
}

/** A cycle's polls failed: the first failure, and the partitions of every group that failed. */
class PollsFailed extends Error {
  constructor(
    readonly failure: unknown,
    readonly partitions: number[],
  ) {
    super('polls failed');
  }
}

/**
 * Every poll of the cycle, settled: the results, or PollsFailed naming the groups that failed (the
 * isolation checks only their partitions). Before PATCH_BOUNDED_ATTEMPTS, the first failure as is.
 */
async function pollAll(pollAndWrite: Activities['pollAndWrite'], inputs: PollInput[], bounded: boolean): Promise<PollResult[]> {
  if (!bounded) return Promise.all(inputs.map((p) => pollAndWrite(p)));
  const settled = await Promise.allSettled(inputs.map((p) => pollAndWrite(p)));
  const failed = settled.flatMap((r, i) => (r.status === 'rejected' ? [{ reason: r.reason as unknown, input: inputs[i]! }] : []));
  if (failed.length > 0)
    throw new PollsFailed(
      failed[0]!.reason,
      failed.flatMap((f) => f.input.partitions),
    );
  return settled.map((r) => (r as PromiseFulfilledResult<PollResult>).value);
}

/**
 * Catalog outcomes that no subset of the records changes (contention with another writer, a commit
 * of unknown outcome, a table or file not found): retried and shown `stalled` like a service's
 * trouble, never bisected.
 */
const NOT_THE_RECORDS = new Set(['CommitConflict', 'CommitStateUnknown', 'CommitFailed', 'NotFound', 'AlreadyExists']);

/**
 * How the loop takes a step's failure: a service's trouble (retry with backoff, `stalled`), or the
 * records' (isolate them). Undefined: it ends the workflow as before (a non-retryable type, a
 * cancellation): the caller rethrows.
 */
function classify(err: unknown): { service: boolean; error: string } | undefined {
  if (!(err instanceof ActivityFailure)) return undefined;
  const cause = err.cause;
  if (cause instanceof ApplicationFailure) {
    const type = cause.type ?? cause.name;
    if (INGEST_NON_RETRYABLE.includes(type)) return undefined;
    return { service: type === FailureType.ServiceUnavailable || NOT_THE_RECORDS.has(type), error: `${type}: ${cause.message}` };
  }
  // A worker that died or hung (heartbeat / start-to-close timeout): never the records' fault.
  if (cause instanceof TimeoutFailure) return { service: true, error: `worker lost: ${cause.message}` };
  return undefined;
}

/** The stall report every activity input carries while the ingest is stalled (the worker's metrics). */
function stallOf(status: IngestStatus): { stalled?: StallReport } {
  const f = status.failing;
  return f && stalled(status) ? { stalled: { sinceMs: f.sinceMs, attempts: f.attempts } } : {};
}

/** The one poll of an isolation cycle: the range's partition alone, from the range's start to its end (never past it). */
function isolationInputs(input: IngestInput, plan: CyclePlan, commitId: string, r: IsolationRange): PollInput[] {
  const p = Number(r.partition);
  const base = pollInputs(input, plan, commitId, true).find((g) => g.partitions.includes(p));
  if (!base) throw ApplicationFailure.nonRetryable(`isolation: partition ${p} is in no group of the plan`, 'IsolationUnplanned');
  let to = BigInt(r.to);
  const rangeTo = input.range?.to[r.partition];
  if (rangeTo !== undefined && BigInt(rangeTo) < to) to = BigInt(rangeTo);
  const size = to - BigInt(r.from);
  return [
    {
      ...base,
      partitions: [p],
      startOffsets: { [r.partition]: r.from },
      stopAt: { [r.partition]: to.toString() },
      limit: { [r.partition]: to.toString() },
      untilCaughtUp: true,
      maxRecords: Number(size < BigInt(plan.maxRecordsPerCycle) ? size : BigInt(plan.maxRecordsPerCycle)),
      maxBytes: plan.maxBytesPerCycle,
      ...(r.deadLetter !== undefined ? { deadLetterReason: r.deadLetter } : {}),
    },
  ];
}

/**
 * Commits a cycle that advanced: a route (the plan lists its tables) commits each table in turn;
 * plans of a plain table, and every history recorded before routes existed, take the one commit.
 * Fenced (another writer moved this ingest's cursor) or files gone: the cycle's files are orphans
 * and the next cycle starts over from the table ('refused'; 'reload' before the patch that counts
 * refused cycles towards continue-as-new).
 */
async function commitCycle(
  steps: Pick<Activities, 'commit' | 'commitRoute'>,
  input: IngestInput,
  plan: CyclePlan,
  cycle: ReturnType<typeof mergeCycle>,
  commitId: string,
  status: IngestStatus,
  started: number,
): Promise<'committed' | 'refused' | 'reload'> {
  const { commit } = steps;
  try {
    // A bulk plan (it carries the route cursor) is committed in bulk; older plans table by table.
    const res = plan.routeTables
      ? plan.routeCursor
        ? await commitRouteBulk(steps.commitRoute, input, plan, cycle, commitId, status)
        : await commitRoute(commit, input, plan, cycle, commitId, status)
      : await commit({
          ...stallOf(status),
          table: input.table,
          ingestId: input.ingestId,
          ...topicOf(input),
          ...topicIdOf(plan),
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
          ...(cycle.upsert ? { upsert: cycle.upsert } : {}),
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

/** What a cycle whose commit failed covered: each partition from its start to the cycle's end. */
const movedRanges = (plan: CyclePlan, cycle: MergedCycle): Record<string, { from: string; to: string }> =>
  Object.fromEntries(Object.keys(cycle.endOffsets).map((p) => [p, { from: plan.startOffsets[p] ?? '0', to: cycle.endOffsets[p]! }]));

/** Continue-as-new with the status carried (history stays bounded). */
async function carryOn(input: IngestInput, carry: IngestStatus): Promise<never> {
  return continueAsNew<typeof ingestWorkflow>({
    table: input.table,
    ingestId: input.ingestId,
    range: input.range,
    force: input.force,
    ...topicOf(input),
    carry,
  });
}

/** The range an isolation checks next (undefined: none runs; one that has no range left is over). */
function isolationRange(input: IngestInput, status: IngestStatus, plan: CyclePlan): IsolationRange | undefined {
  if (!status.isolation) return undefined;
  const range = nextRange(status.isolation, plan.startOffsets);
  if (!range) {
    log.info('isolation done', { table: input.table, ingestId: input.ingestId, deadLettered: status.isolation.deadLettered });
    delete status.isolation;
  }
  return range;
}

/** The status as a cycle is planned: cursor, route tables, lag, K. */
function recordPlan(status: IngestStatus, plan: CyclePlan): void {
  if (plan.isolateAfterAttempts !== undefined) status.isolateAfter = plan.isolateAfterAttempts;
  status.cursor = plan.startOffsets;
  recordRoutePlan(status, plan);
  status.lag = lagOf(plan.startOffsets, plan.highWatermarks);
}

/** What stepFailed needs of the running loop. */
interface LoopView {
  input: IngestInput;
  status: IngestStatus;
  shown: () => IngestStatus['state'];
  paused: () => boolean;
}

/**
 * A step failed (after its attempts) and the loop goes on: a service's trouble is counted
 * (`stalled` once it reaches K attempts) and waited out with backoff; the records' trouble starts
 * an isolation of what the cycle covered (`covered`; a failed plan covers nothing and waits), or
 * moves the running one on (workflows/isolation.ts). Anything else ends the workflow as before.
 */
async function stepFailed(
  loop: LoopView,
  err: unknown,
  attempts: number,
  covered: Record<string, { from: string; to: string }> | undefined,
): Promise<void> {
  const { input, status } = loop;
  const c = classify(err);
  if (!c) throw err;
  const now = Date.now();
  const where = { table: input.table, ingestId: input.ingestId };
  let wait = c.service || covered === undefined;
  if (!wait && status.isolation?.ranges.length) {
    const step = rangeFailed(status.isolation, c.error);
    log.warn('isolation: a range failed', { ...where, step, range: status.isolation.ranges[0], error: c.error });
    wait = step === 'stall';
  } else if (!wait) {
    const iso = startIsolation(covered!, c.error, now);
    if (iso) {
      status.isolation = iso;
      log.warn('a cycle failed on every attempt: isolating its records', { ...where, error: c.error, ranges: iso.ranges });
    } else wait = true;
  }
  if (!wait) return;
  status.failing = recordFailure(status.failing, c.error, attempts, now);
  log.warn('ingest step failing', { ...where, ...status.failing });
  setCurrentDetails(currentDetails(status, loop.shown()));
  await condition(() => loop.paused(), backoffMs(status.failing, isolateAfter(status)));
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
  setHandler(statusQuery, () => ({ ...status, state: shownState(status, paused, draining) }));

  let cyclesThisRun = 0;
  // The last cycle stopped short of records that were already waiting: the next one catches up.
  let behind = false;
  let plan: CyclePlan | undefined;
  // Where the loop used to check for continue-as-new: after a cycle or a failed step (not after a pre-patch 'reload').
  let checkContinueAsNew = false;
  const failed = async (err: unknown, attempts: number, covered?: Record<string, { from: string; to: string }>): Promise<void> => {
    cyclesThisRun++;
    checkContinueAsNew = true;
    await stepFailed({ input, status, shown: () => shownState(status, paused, draining), paused: () => paused }, err, attempts, covered);
  };

  for (;;) {
    if (plan && checkContinueAsNew && (cyclesThisRun >= plan.cyclesPerRun || workflowInfo().continueAsNewSuggested))
      await carryOn(input, { ...status, state: reportedState(status, paused, draining) });
    if (paused && !draining) {
      status.state = 'paused';
      await condition(() => !paused || draining);
    }
    status.state = draining ? 'draining' : 'running';
    const bounded = patched(PATCH_BOUNDED_ATTEMPTS);
    const k0 = bounded ? isolateAfter(status) : 0;
    const { loadCursor, loadRoute } = acts(k0);

    try {
      plan = patched(PATCH_ROUTE_BULK)
        ? await loadRoute({ ...cycleRef(input), ...stallOf(status), bulk: true })
        : await loadCursor({ ...cycleRef(input), ...stallOf(status) });
    } catch (err) {
      const gone = topicGone(input, status, err);
      if (gone) return gone;
      if (!bounded) throw err;
      await failed(err, k0, undefined);
      continue;
    }
    recordPlan(status, plan);
    // The UI's current details (no command, nothing in history: replay-safe).
    setCurrentDetails(currentDetails(status, shownState(status, paused, draining)));
    // This cycle's steps take the plan's K.
    const k = bounded ? isolateAfter(status) : 0;
    const { pollAndWrite, commit, commitRoute } = acts(k);
    if (input.range && rangeDone(plan.startOffsets, input.range)) {
      status.state = 'stopped';
      return status;
    }
    const range = isolationRange(input, status, plan);

    const commitId = uuid4();
    const started = Date.now();
    // Only a cycle that polled in drain mode (until caught up with the topic) may end the drain.
    const drainingCycle = draining && !range;
    // A range of several records gets one attempt (a failure splits it at once); one record K.
    const pollAttempts = range && rangeSize(range) > 1n && range.deadLetter === undefined ? 1 : k;
    const inputs = range ? isolationInputs(input, plan, commitId, range) : pollInputs(input, plan, commitId, draining, behind);
    let results: PollResult[];
    try {
      const polls = inputs.map((p) => ({ ...p, ...stallOf(status) }));
      results = await pollAll(pollAttempts === k ? pollAndWrite : acts(pollAttempts).pollAndWrite, polls, bounded);
    } catch (e) {
      const err = e instanceof PollsFailed ? e.failure : e;
      const gone = topicGone(input, status, err);
      if (gone) return gone;
      if (!bounded) throw err;
      const groups = e instanceof PollsFailed ? e.partitions : plan.groups.flat();
      await failed(err, pollAttempts, pollCoverage(groups, plan.startOffsets, plan.highWatermarks, plan.maxRecordsPerCycle));
      continue;
    }
    status.cycles++;
    cyclesThisRun++;
    const cycle = mergeCycle(plan, results);

    // 'reload': refused before the patch that counts refused cycles; the loop starts over at once.
    let outcome: Awaited<ReturnType<typeof commitCycle>>;
    try {
      outcome = cycle.advanced ? await commitCycle({ commit, commitRoute }, input, plan, cycle, commitId, status, started) : 'committed';
    } catch (err) {
      if (!bounded) throw err;
      await failed(err, k, movedRanges(plan, cycle));
      continue;
    }
    checkContinueAsNew = outcome !== 'reload';
    if (outcome === 'reload') continue;
    const refused = outcome === 'refused';
    if (!refused) {
      delete status.failing;
      if (range && status.isolation) rangeCommitted(status.isolation, cycle.endOffsets);
      status.lag = lagOf(status.cursor, cycle.highWatermarks);
    }
    setCurrentDetails(currentDetails(status, shownState(status, paused, draining)));
    behind = !refused && leftBehind(cycle);

    // Drain finishes when a cycle that polled until caught up finds nothing more to read. (Before the
    // patch, an idle poll begun before the signal could end it and leave records behind.)
    const endsDrain = patched(PATCH_DRAIN_NEEDS_DRAINING_CYCLE) ? drainingCycle : draining;
    if (!refused && endsDrain && !cycle.advanced && !status.isolation) {
      status.state = 'stopped';
      return status;
    }
  }
}
