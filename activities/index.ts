/**
 * Activities: the Temporal bindings of floe's steps. The steps themselves live in ingest/ and
 * maintenance/ and never import Temporal; an activity here adds what only Temporal knows: the
 * attempt, heartbeats, cancellation (`currentRun`) and the mapping of domain failures onto
 * Temporal failure types (activities/failures.ts). Built by a factory over `Deps` so tests can
 * inject a different catalog, FileIO or Kafka client.
 */
import { Context } from '@temporalio/activity';
import { BufferBudget, bufferBudgetFromEnv } from '../ingest/buffer-budget';
import { prepareBackfill, type PrepareBackfillInput, type PreparedBackfill } from '../ingest/backfill';
import { commitCycle } from '../ingest/commit-cycle';
import type { Deps } from '../ingest/deps';
import { planCycle } from '../ingest/plan-cycle';
import { pollAndWrite } from '../ingest/poll-write';
import { listEntryTopics, type EntryTopics } from '../ingest/topic-set';
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
import { currentRun, withFailureMapping } from './failures';
import { heartbeating } from './heartbeat';
import { withMetrics } from './metrics';
import { createMaintenanceActivities, ingestExpiry } from './maintenance';
import { commitRoute } from '../ingest/route-commit';
import { ingestTableConfig } from '../ingest/deps';

export { createDeps, type Deps } from '../ingest/deps';

export const createActivities = (deps: Deps) =>
  withMetrics(withFailureMapping(withBufferBudget(createIngestActivities(deps), budgetOf(deps))));

/** One budget per worker process (module scope): every activity set created in it shares it. */
let workerBudget: BufferBudget | undefined;
const budgetOf = (deps: Deps): BufferBudget => deps.bufferBudget ?? (workerBudget ??= bufferBudgetFromEnv());

/** pollAndWrite reserves its byte bound from the worker's budget for the whole poll + write. */
function withBufferBudget<T extends { pollAndWrite: (input: PollInput) => Promise<PollResult> }>(acts: T, budget: BufferBudget): T {
  return {
    ...acts,
    pollAndWrite: async (input: PollInput) => {
      const lease = await budget.acquire(
        input.maxBytes,
        () => Context.current().heartbeat({ phase: 'waiting-for-buffer', inUse: budget.inUse }),
        Context.current().cancellationSignal,
      );
      try {
        return await acts.pollAndWrite({ ...input, maxBytes: lease.granted });
      } finally {
        lease.release();
      }
    },
  };
}

const createIngestActivities = (deps: Deps) => ({
  /** Reads the cursor from the table (never from Kafka) and plans the next cycle. Creates missing tables. */
  loadCursor: (ref: TableRef): Promise<CyclePlan> => heartbeating(() => planCycle(deps, ref, currentRun())),
  /** Polls one partition group and writes its data and dead-letter files (ingest/poll-write.ts). Heartbeats progress. */
  pollAndWrite: (input: PollInput): Promise<PollResult> => pollAndWrite(deps, input, currentRun()),
  /**
   * Commits one cycle, exactly once and fenced (ingest/commit-cycle.ts); then expires the
   * dead-letter table when it committed to it and it needs it (activities/maintenance.ts).
   */
  commit: (input: CommitInput): Promise<CommitResult> =>
    heartbeating(async () => {
      const res = await commitCycle(deps, input);
      if (input.deadLetterFiles.length > 0) await expireDeadLetters(deps, input);
      return res;
    }),
  /**
   * Commits a routed cycle in bulk: the tables that changed, then the base table with the route
   * cursor (ingest/route-commit.ts); expires the dynamic tables that need it. Heartbeats progress.
   */
  commitRoute: (input: RouteCommitInput): Promise<RouteCommitResult> =>
    heartbeating(() =>
      commitRoute(deps, input, {
        beat: (done, of) => Context.current().heartbeat({ phase: 'commit', done, of }),
        afterTable: ingestExpiry(deps, ingestTableConfig(deps.cfg, input.table, input.topic), (m) => currentRun().warn(m)),
      }),
    ),
  /** Resolves and validates a backfill's range (ingest/backfill.ts). Read-only. */
  prepareBackfill: (input: PrepareBackfillInput): Promise<PreparedBackfill> => prepareBackfill(deps, input),
  /** The topics an entry of several topics reads now, from the cluster (ingest/topic-set.ts). Read-only. */
  listEntryTopics: (input: { table: string }): Promise<EntryTopics> => heartbeating(() => listEntryTopics(deps, input.table)),
  ...createMaintenanceActivities(deps),
});

/** The dead-letter table after a commit that added dead letters: expired by the ingest when due. */
async function expireDeadLetters(deps: Deps, input: CommitInput): Promise<void> {
  const t = ingestTableConfig(deps.cfg, input.table, input.topic);
  const warn = (m: string) => currentRun().warn(m);
  const loaded = await deps.tables.load(t.deadLetterTable).catch(() => undefined);
  if (loaded) await ingestExpiry(deps, t, warn)(t.deadLetterTable, loaded.metadata);
}
