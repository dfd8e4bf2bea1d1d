/**
 * ingestTopicsWorkflow (an entry of several topics) over mocked activities
 * (test/support/workflow-env.ts fakeTopics): one ingest workflow per topic, each with its own
 * ingest id and cursor; a topic that appears later is found at the next refresh; pause, resume
 * and drain reach every topic's ingest; a restarted entry workflow does not start a second ingest
 * of a topic. The activities against the real stack: test/integration/topics.test.ts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createWorkflowEnv, fakeTopics, testWorkflowBundle, uniqueId, withWorker } from '../support/workflow-env';
import {
  drainAndStopSignal,
  ingestTopicsWorkflow,
  ingestWorkflowId,
  pauseSignal,
  resumeSignal,
  statusQuery,
  topicIngestWorkflowId,
  topicsQuery,
  type ingestWorkflow,
} from '../../workflows';

async function until(what: string, probe: () => boolean | Promise<boolean>, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await probe()) return;
    await sleep(25);
  }
  assert.fail(`expected ${what} within ${ms / 1000} s`);
}

const HIGH = { 0: '7', 1: '5' };

describe('ingestTopicsWorkflow, with mocked activities', () => {
  let env: TestWorkflowEnvironment;
  let client: Client;
  before(async () => {
    env = await createWorkflowEnv();
    client = env.client;
    await testWorkflowBundle();
  });
  after(async () => {
    await env?.teardown();
  });
  /** The entry's workflow of (table, ingest id main), and the ingest of one of its topics. */
  const startEntry = (taskQueue: string, table: string) =>
    client.workflow.start(ingestTopicsWorkflow, {
      taskQueue,
      workflowId: ingestWorkflowId(table, 'main'),
      args: [{ table, ingestId: 'main' }],
    });
  const topicIngest = (table: string, topic: string) =>
    client.workflow.getHandle<typeof ingestWorkflow>(topicIngestWorkflowId(table, 'main', topic));

  it('one ingest per topic (found later too), signals forwarded to each, drain stops them all with every cursor at its end', async () => {
    const fake = fakeTopics({ topics: ['orders', 'refunds'], high: HIGH, perPoll: 3 });
    const table = uniqueId('shop.events');
    await withWorker(env, fake.activities, async (taskQueue) => {
      const handle = await startEntry(taskQueue, table);
      const child = (topic: string) => topicIngest(table, topic);
      const atEnd = (topic: string) =>
        fake.started().includes(topic) && JSON.stringify(fake.topic(topic).state.cursor) === JSON.stringify(HIGH);
      await until('both topics ingested to their end', () => atEnd('orders') && atEnd('refunds'));
      assert.equal((await child('orders').query(statusQuery)).ingestId, 'main@orders');

      // A topic that appears is found at the next refresh, and ingested by an ingest of its own.
      fake.state.topics.push('shipments');
      await until('the new topic ingested', () => atEnd('shipments'));
      assert.deepEqual((await handle.query(topicsQuery)).topics, ['orders', 'refunds', 'shipments']);

      // pause reaches every topic's ingest; new records wait until resume.
      await handle.signal(pauseSignal);
      for (const t of ['orders', 'refunds', 'shipments'])
        await until(`${t} paused`, async () => (await child(t).query(statusQuery)).state === 'paused');
      assert.equal((await handle.query(topicsQuery)).state, 'paused');
      for (const t of ['orders', 'refunds', 'shipments']) fake.topic(t).state.high = { 0: '9', 1: '5' };
      await sleep(300);
      assert.deepEqual(fake.topic('orders').state.cursor, HIGH, 'paused: nothing committed');
      await handle.signal(resumeSignal);
      await handle.signal(drainAndStopSignal);
      const set = await handle.result();
      assert.deepEqual(set, { table, ingestId: 'main', state: 'stopped', topics: ['orders', 'refunds', 'shipments'], missing: [] });
      for (const t of set.topics) {
        const final = await child(t).result();
        assert.equal(final.state, 'stopped');
        assert.deepEqual(fake.topic(t).state.cursor, { 0: '9', 1: '5' }, `${t}: drained to its end`);
        // Every activity of a topic's ingest named its topic (fakeTopics fails one that does not).
        assert.ok(fake.topic(t).calls.commit.every((c) => c.input.topic === t && c.input.ingestId === `main@${t}`));
      }
    });
  });

  it('a deleted topic: its ingest ends stopped (TopicGone), the others go on; recreated, it is started again', async () => {
    const fake = fakeTopics({ topics: ['a', 'b'], high: { 0: '4' }, perPoll: 1 });
    const table = uniqueId('shop.gone');
    await withWorker(env, fake.activities, async (taskQueue) => {
      const handle = await startEntry(taskQueue, table);
      const child = (topic: string) => topicIngest(table, topic);
      await until('both topics ingested', () => fake.started().length === 2 && fake.topic('b').state.cursor['0'] === '4');
      fake.state.topics = ['a'];
      fake.state.gone.add('b');
      const ended = await child('b').result();
      assert.equal(ended.state, 'stopped');
      assert.match(ended.topicGone ?? '', /topic b does not exist/);
      await until('the entry lists b as gone', async () => (await handle.query(topicsQuery)).gone?.includes('b') === true);
      assert.deepEqual((await handle.query(topicsQuery)).topics, ['a']);
      // The other topic goes on.
      fake.topic('a').state.high = { 0: '6' };
      await until('a goes on', () => fake.topic('a').state.cursor['0'] === '6');
      assert.equal((await child('a').describe()).status.name, 'RUNNING');

      // Recreated: found again at a refresh and started again (a new run of its workflow id).
      const firstRun = (await child('b').describe()).runId;
      fake.state.gone.delete('b');
      fake.state.topics = ['a', 'b'];
      await until('b started again', async () => (await child('b').describe()).runId !== firstRun);
      await handle.signal(drainAndStopSignal);
      const set = await handle.result();
      assert.deepEqual(set.topics, ['a', 'b']);
      assert.equal(set.gone, undefined, 'b is no longer gone');
      for (const t of ['a', 'b']) assert.equal((await child(t).result()).state, 'stopped');
    });
  });

  it('a restarted entry workflow finds its topics ingests running and starts none twice', async () => {
    const fake = fakeTopics({ topics: ['a', 'b'], high: { 0: '4' }, perPoll: 1 });
    const table = uniqueId('shop.more');
    await withWorker(env, fake.activities, async (taskQueue) => {
      const start = () => startEntry(taskQueue, table);
      const first = await start();
      await until('both topic ingests started', async () => (await first.query(topicsQuery)).topics.length === 2);
      const runs = async () => Promise.all(['a', 'b'].map(async (t) => (await topicIngest(table, t).describe()).runId));
      const before = await runs();
      // The entry's workflow is lost; its topics' ingests (ABANDON) go on, and a new start adopts them.
      await first.terminate('test: lose the entry workflow');
      const second = await start();
      await until('the new run lists both topics', async () => (await second.query(topicsQuery)).topics.length === 2);
      assert.deepEqual(await runs(), before, 'the same topic ingest runs: none started twice');
      await second.signal(drainAndStopSignal);
      await second.result();
      for (const t of ['a', 'b']) {
        await topicIngest(table, t).result();
        assert.deepEqual(fake.topic(t).state.cursor, { 0: '4' });
      }
    });
  });

  it('a drain or pause that arrives while a refresh runs survives the continue-as-new that follows it', async () => {
    // The second refresh of each run is its last (refreshesPerRun 2): signals sent while it runs
    // reach the workflow between its loop's check and continue-as-new.
    let release: (() => void) | undefined;
    const signalled: string[] = [];
    const fake = fakeTopics({
      topics: ['a', 'b'],
      high: { 0: '4' },
      perPoll: 1,
      duringList: async (n) => {
        if (n === 2 || n === 4) await new Promise<void>((r) => (release = r));
      },
    });
    const table = uniqueId('shop.carry');
    await withWorker(env, fake.activities, async (taskQueue) => {
      const handle = await client.workflow.start(ingestTopicsWorkflow, {
        taskQueue,
        workflowId: ingestWorkflowId(table, 'main'),
        args: [{ table, ingestId: 'main', refreshesPerRun: 2 }],
      });
      const child = (topic: string) => topicIngest(table, topic);
      const firstRun = handle.firstExecutionRunId;
      // Run 1, refresh 2: pause arrives mid-refresh; the run continues as new right after.
      await until('the second refresh runs', () => release !== undefined);
      await handle.signal(pauseSignal);
      signalled.push('pause');
      release!();
      release = undefined;
      // The next run forwards the pause it was handed: both topics' ingests pause.
      for (const t of ['a', 'b']) await until(`${t} paused`, async () => (await child(t).query(statusQuery)).state === 'paused');
      assert.notEqual((await handle.describe()).runId, firstRun, 'the entry continued as new');
      // Run 2, refresh 2 (call 4): drain arrives mid-refresh; continue-as-new follows.
      await until('the next run refreshes', () => release !== undefined);
      await handle.signal(resumeSignal);
      await handle.signal(drainAndStopSignal);
      signalled.push('resume', 'drain');
      release!();
      // Without the carried drain the new run would refresh forever and `ingest stop --wait` hang.
      const set = await handle.result();
      assert.equal(set.state, 'stopped');
      for (const t of ['a', 'b']) {
        assert.equal((await child(t).result()).state, 'stopped');
        assert.deepEqual(fake.topic(t).state.cursor, { 0: '4' }, `${t}: drained to its end`);
      }
      assert.deepEqual(signalled, ['pause', 'resume', 'drain']);
    });
  });
});
