/**
 * Records one finished history per workflow scenario into test/fixtures/histories/<name>.json,
 * which test/unit/workflows-replay.test.ts replays against the current workflows bundle: a change
 * to workflows/ that would break executions already in flight (nondeterminism) fails that test.
 *
 *   npm run record-histories                  # every scenario
 *   npm run record-histories -- compact ingest  # only these (names as below)
 *
 * The workflows run against mocked activities (test/support/workflow-env.ts) on an ephemeral dev
 * server started from the stack's Temporal binary (no Kafka, S3 or catalog needed).
 *
 * When to re-record: NOT to make a failing replay test pass. A failing replay means the change
 * would break running ingests and maintenance runs; make it compatible instead (`patched()` /
 * `deprecatePatch()` from @temporalio/workflow, or a new workflow type). Re-record a scenario only
 * when a change is deliberately incompatible and that decision is made together with a versioning
 * plan (patch, new workflow type or worker versioning, drained task queue), and say so in the commit.
 * Recording a scenario for a new workflow (or a new path worth guarding) is always fine: name it.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApplicationFailure, type Client, type WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { FailureType } from '../contract';
import {
  backfillWorkflow,
  compactWorkflow,
  drainAndStopSignal,
  expireWorkflow,
  ingestTopicsWorkflow,
  ingestWorkflow,
  ingestWorkflowId,
  maintainWorkflow,
  orphansWorkflow,
  pauseSignal,
  resumeSignal,
  SCHEDULED_START_TIME,
  scheduledMaintenanceWorkflow,
  statusQuery,
  topicIngestWorkflowId,
  topicsQuery,
} from '../workflows';
import {
  createWorkflowEnv,
  fakeIngest,
  fakeMaintenance,
  fakeRoute,
  fakeTopics,
  historyToJson,
  testWorkflowBundle,
  uniqueId,
  withWorker,
} from '../test/support/workflow-env';

export const HISTORIES_DIR = resolve(__dirname, '../test/fixtures/histories');

async function until(what: string, probe: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await probe()) return;
    await sleep(20);
  }
  throw new Error(`record-histories: expected ${what} within 10 s`);
}

/** A scenario runs its workflow(s) to the end and returns the handles whose histories to keep, by file name. */
type Scenario = (env: TestWorkflowEnvironment, client: Client) => Promise<Record<string, WorkflowHandle>>;

const WINDOW = '2026-01-01T03:00:00Z';

const SCENARIOS: Record<string, Scenario> = {
  /** Running -> a fenced commit (reload) -> commits -> pause/resume -> drain until a cycle reads nothing. */
  async ingest(env, client) {
    const fake = fakeIngest({
      high: { 0: '6', 1: '4' },
      groups: [[0], [1]],
      perPoll: 3,
      beforeCommit: (_i, n) => {
        if (n === 1) throw ApplicationFailure.nonRetryable('a written file is gone', FailureType.FilesMissing);
      },
    });
    const table = 'db.orders';
    const handle = await withWorker(env, fake.activities, async (taskQueue) => {
      const handle = await client.workflow.start(ingestWorkflow, {
        taskQueue,
        workflowId: ingestWorkflowId(table, uniqueId('live')),
        args: [{ table, ingestId: 'live' }],
      });
      await until('the cursor at the end of the topic', () => fake.state.cursor['0'] === '6' && fake.state.cursor['1'] === '4');
      await handle.signal(pauseSignal);
      await until('the ingest paused', async () => (await handle.query(statusQuery)).state === 'paused');
      fake.state.high = { 0: '8', 1: '4' };
      await handle.signal(resumeSignal);
      await handle.signal(drainAndStopSignal);
      await handle.result();
      return handle;
    });
    return { ingest: handle };
  },

  /** The first run of an ingest that continues as new after every cycle (cyclesPerRun 1), carrying its status. */
  async 'ingest-continue-as-new'(env, client) {
    const fake = fakeIngest({ high: { 0: '4' }, perPoll: 2, cyclesPerRun: 1 });
    const table = 'db.orders';
    const first = await withWorker(env, fake.activities, async (taskQueue) => {
      const handle = await client.workflow.signalWithStart(ingestWorkflow, {
        taskQueue,
        workflowId: ingestWorkflowId(table, uniqueId('live')),
        args: [{ table, ingestId: 'live' }],
        signal: drainAndStopSignal,
        signalArgs: [],
      });
      await handle.result();
      return client.workflow.getHandle(handle.workflowId, handle.signaledRunId);
    });
    return { 'ingest-continue-as-new': first };
  },

  /**
   * A route (three tables and its base): one poll from the minimum of the tables' cursors (one
   * table behind), one commit per table, the last one's first attempt lost (a worker dying
   * between two tables' commits), then a drain cycle that reads nothing.
   */
  async 'ingest-route'(env, client) {
    const fake = fakeRoute({
      tables: ['db.events', 'db.orders', 'db.refunds', 'db.events_shipment'],
      high: { 0: '9', 1: '6' },
      cursors: { 'db.events': { 0: '3', 1: '3' }, 'db.orders': { 0: '3', 1: '3' } },
      beforeCommit: (input) => {
        if (
          input.routeIndex === input.routeCount! - 1 &&
          fake.calls.commit.filter((c) => c.input.routeTable === input.routeTable).length === 1
        )
          throw ApplicationFailure.retryable('worker lost', 'WorkerLost');
      },
    });
    const table = 'db.events';
    const handle = await withWorker(env, fake.activities, async (taskQueue) => {
      const handle = await client.workflow.signalWithStart(ingestWorkflow, {
        taskQueue,
        workflowId: ingestWorkflowId(table, uniqueId('live')),
        args: [{ table, ingestId: 'live' }],
        signal: drainAndStopSignal,
        signalArgs: [],
      });
      await handle.result();
      return client.workflow.getHandle(handle.workflowId, handle.signaledRunId);
    });
    return { 'ingest-route': handle };
  },

  /**
   * A route after patch floe-route-bulk: the plan carries the route cursor, one commitRoute per
   * cycle (the tables with rows, the base table last), its first attempt lost at the base table,
   * then a drain cycle that reads nothing.
   */
  async 'ingest-route-bulk'(env, client) {
    const fake = fakeRoute({
      tables: ['db.events', 'db.orders', 'db.refunds', 'db.events_shipment'],
      high: { 0: '9', 1: '6' },
      cursors: { 'db.events': { 0: '3', 1: '3' }, 'db.orders': { 0: '3', 1: '3' } },
      beforeCommit: (input) => {
        if (input.routeTable === 'db.events' && fake.calls.commit.filter((c) => c.input.routeTable === 'db.events').length === 1)
          throw ApplicationFailure.retryable('worker lost', 'WorkerLost');
      },
    });
    const table = 'db.events';
    const handle = await withWorker(env, fake.activities, async (taskQueue) => {
      const handle = await client.workflow.signalWithStart(ingestWorkflow, {
        taskQueue,
        workflowId: ingestWorkflowId(table, uniqueId('bulk')),
        args: [{ table, ingestId: 'bulk' }],
        signal: drainAndStopSignal,
        signalArgs: [],
      });
      await handle.result();
      return client.workflow.getHandle(handle.workflowId, handle.signaledRunId);
    });
    return { 'ingest-route-bulk': handle };
  },

  /** prepareBackfill, then the ingest child that loads [from, to) in chunks and stops at the range's end. */
  async backfill(env, client) {
    const range = { from: { 0: '0', 1: '0' }, to: { 0: '4', 1: '3' } };
    const fake = fakeIngest({ high: { 0: '9', 1: '9' }, groups: [[0], [1]], perPoll: 2 });
    const prepared = { ingestId: 'backfill-0123456789abcdef', range, records: '7' };
    const activities = { ...fake.activities, prepareBackfill: async () => prepared };
    const table = uniqueId('db.orders');
    return withWorker(env, activities, async (taskQueue) => {
      const handle = await client.workflow.start(backfillWorkflow, {
        taskQueue,
        workflowId: uniqueId('floe-backfill'),
        args: [{ table, from: { offsets: range.from }, to: { offsets: range.to } }],
      });
      await handle.result();
      return { backfill: handle, 'ingest-backfill-range': client.workflow.getHandle(ingestWorkflowId(table, prepared.ingestId)) };
    });
  },

  /** Partial progress over 4 groups: one rewrite fails non-retryably, one group is skipped at commit. */
  async compact(env, client) {
    const fake = fakeMaintenance({
      groups: 4,
      beforeRewrite: (input) => {
        if (input.group.index === 1) throw ApplicationFailure.nonRetryable('input gone', FailureType.InputsVanished);
      },
      beforeCommitRewrite: (input) =>
        input.groups.some((g) => g.group.index === 3) ? [{ index: 3, reason: 'rewritten concurrently' }] : [],
    });
    return withWorker(env, fake.activities, async (taskQueue) => {
      const handle = await client.workflow.start(compactWorkflow, {
        taskQueue,
        workflowId: uniqueId('floe-compact'),
        args: [
          { table: 'db.orders', window: WINDOW, options: { partialProgress: true, maxCommits: 2, maxConcurrentFileGroupRewrites: 2 } },
        ],
      });
      await handle.result();
      return { compact: handle };
    });
  },

  async expire(env, client) {
    const fake = fakeMaintenance();
    return withWorker(env, fake.activities, async (taskQueue) => {
      const handle = await client.workflow.start(expireWorkflow, {
        taskQueue,
        workflowId: uniqueId('floe-expire'),
        args: [{ table: 'db.orders', window: WINDOW }],
      });
      await handle.result();
      return { expire: handle };
    });
  },

  /**
   * An entry of several topics: two topics' ingests started, a third found at a later refresh,
   * pause and resume forwarded, then drain-and-stop forwarded and the entry's workflow ended.
   */
  async 'ingest-topics'(env, client) {
    const fake = fakeTopics({ topics: ['orders', 'refunds'], high: { 0: '4' }, perPoll: 2 });
    const table = 'db.events';
    return withWorker(env, fake.activities, async (taskQueue) => {
      const handle = await client.workflow.start(ingestTopicsWorkflow, {
        taskQueue,
        workflowId: ingestWorkflowId(table, uniqueId('topics')),
        args: [{ table, ingestId: 'topics' }],
      });
      await until('both topics started', async () => (await handle.query(topicsQuery)).topics.length === 2);
      fake.state.topics.push('shipments');
      await until('the third topic started', async () => (await handle.query(topicsQuery)).topics.length === 3);
      await handle.signal(pauseSignal);
      await handle.signal(resumeSignal);
      await handle.signal(drainAndStopSignal);
      const set = await handle.result();
      for (const t of set.topics) await client.workflow.getHandle(topicIngestWorkflowId(table, 'topics', t)).result();
      return { 'ingest-topics': handle };
    });
  },

  async orphans(env, client) {
    const fake = fakeMaintenance();
    return withWorker(env, fake.activities, async (taskQueue) => {
      const handle = await client.workflow.start(orphansWorkflow, {
        taskQueue,
        workflowId: uniqueId('floe-orphans'),
        args: [{ table: 'db.orders', window: WINDOW }],
      });
      await handle.result();
      return { orphans: handle };
    });
  },

  async maintain(env, client) {
    const fake = fakeMaintenance({ groups: 2 });
    return withWorker(env, fake.activities, async (taskQueue) => {
      const handle = await client.workflow.start(maintainWorkflow, {
        taskQueue,
        workflowId: uniqueId('floe-maintain'),
        args: [{ table: 'db.orders', window: WINDOW }],
      });
      await handle.result();
      return { maintain: handle };
    });
  },

  /** A scheduled window run twice: the first runs its child, the second finds the window done. */
  async 'scheduled-maintenance'(env, client) {
    const fake = fakeMaintenance({ groups: 2 });
    const table = uniqueId('db.orders');
    return withWorker(env, fake.activities, async (taskQueue) => {
      const start = async () => {
        const handle = await client.workflow.start(scheduledMaintenanceWorkflow, {
          taskQueue,
          workflowId: uniqueId('floe-scheduled-expire'),
          args: [{ table, kind: 'expire' }],
          typedSearchAttributes: [{ key: SCHEDULED_START_TIME, value: new Date(WINDOW) }],
        });
        await handle.result();
        return handle;
      };
      return { 'scheduled-maintenance': await start(), 'scheduled-maintenance-repeat': await start() };
    });
  },
};

async function main(names: string[]): Promise<void> {
  const unknown = names.filter((n) => !(n in SCENARIOS));
  if (unknown.length > 0)
    throw new Error(`record-histories: unknown scenario(s) ${unknown.join(', ')}; expected some of ${Object.keys(SCENARIOS).join(', ')}`);
  const chosen = names.length > 0 ? names : Object.keys(SCENARIOS);
  mkdirSync(HISTORIES_DIR, { recursive: true });
  const env = await createWorkflowEnv();
  try {
    await testWorkflowBundle();
    for (const name of chosen) {
      const handles = await SCENARIOS[name]!(env, env.client);
      for (const [file, handle] of Object.entries(handles)) {
        const history = await handle.fetchHistory();
        const path = join(HISTORIES_DIR, `${file}.json`);
        writeFileSync(path, historyToJson(history));
        console.log(`${path}: ${history.events?.length ?? 0} events`);
      }
    }
  } finally {
    await env.teardown();
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((e: unknown) => {
    console.error(e instanceof Error ? e.stack : e);
    process.exit(1);
  });
}
