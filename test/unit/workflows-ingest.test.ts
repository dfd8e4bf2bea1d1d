/**
 * The ingest and backfill workflows over mocked activities (test/support/workflow-env.ts): fenced
 * commits reload the cursor, drains end on a cycle that reads nothing, status survives
 * continue-as-new, non-retryable failures fail the workflow after one attempt, a finished backfill
 * range returns at once. The activities' own behaviour is tested against the real stack in
 * test/integration/ingest*.test.ts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ActivityFailure, ApplicationFailure, WorkflowFailedError, type Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { FailureType, INGEST_NON_RETRYABLE, INGEST_RELOAD } from '../../contract';
import {
  backfillWorkflow,
  backfillWorkflowId,
  drainAndStopSignal,
  ingestWorkflow,
  ingestWorkflowId,
  statusQuery,
  type IngestStatus,
} from '../../workflows';
import { createWorkflowEnv, drainFromStart, fakeIngest, testWorkflowBundle, uniqueId, withWorker } from '../support/workflow-env';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `probe` until it holds (10 s at most). */
async function until(what: string, probe: () => Promise<boolean> | boolean): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await probe()) return;
    await sleep(20);
  }
  throw new Error(`expected ${what} within 10 s`);
}

/** The ApplicationFailure type under a WorkflowFailedError <- ActivityFailure chain, or undefined. */
function activityFailureType(e: unknown): string | undefined {
  if (!(e instanceof WorkflowFailedError) || !(e.cause instanceof ActivityFailure)) return undefined;
  return e.cause.cause instanceof ApplicationFailure ? (e.cause.cause.type ?? undefined) : undefined;
}

describe('ingestWorkflow with mocked activities', () => {
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

  for (const reason of INGEST_RELOAD) {
    it(`a commit refused with ${reason} reloads the cursor and the next cycle commits`, async () => {
      const fake = fakeIngest({
        high: { 0: '10', 1: '6' },
        groups: [[0], [1]],
        beforeCommit: (_input, n, state) => {
          if (n !== 1) return;
          // StaleCursor: another writer moved this ingest's cursor; FilesMissing: our files are gone, cursor unchanged.
          if (reason === FailureType.StaleCursor) {
            state.cursor = { 0: '3', 1: '2' };
            state.snapshotId = String(++state.snapshots);
          }
          throw ApplicationFailure.nonRetryable(`commit refused (${reason})`, reason);
        },
      });
      const table = uniqueId('db.fenced');
      const status = await withWorker(env, fake.activities, async (taskQueue) => {
        const handle = await drainFromStart(client, taskQueue, { table, ingestId: 'live' });
        return handle.result();
      });

      assert.equal(status.state, 'stopped');
      assert.equal(status.fencedCommits, 1);
      assert.equal(status.commits, 1);
      assert.deepEqual(status.cursor, { 0: '10', 1: '6' });
      // The refused commit is not retried (non-retryable), the cycle starts over from the table.
      assert.deepEqual(
        fake.calls.commit.map((c) => c.attempt),
        [1, 1],
      );
      assert.equal(fake.calls.loadCursor.length, 3, 'load, reload after the refusal, load of the final empty cycle');
      const [refused, landed] = fake.calls.commit.map((c) => c.input);
      assert.notEqual(refused!.commitId, landed!.commitId, 'the re-polled batch has its own commit id');
      assert.equal(refused!.baseSnapshotId, null);
      if (reason === FailureType.StaleCursor) {
        assert.equal(landed!.baseSnapshotId, '1', "fenced against the other writer's snapshot");
        assert.deepEqual(landed!.startOffsets, { 0: '3', 1: '2' }, "re-polled from the table's cursor, not the refused batch's");
        assert.equal(status.totalRows, 7 + 4);
      } else {
        assert.equal(landed!.baseSnapshotId, null);
        assert.deepEqual(landed!.startOffsets, { 0: '0', 1: '0' });
        assert.equal(status.totalRows, 16);
      }
      // No file of the refused batch is committed by the next one.
      const refusedFiles = new Set(refused!.files.map((f) => f['file-path']));
      assert.ok(landed!.files.every((f) => !refusedFiles.has(f['file-path'])));
    });
  }

  it('a cycle that stopped short of records already waiting is followed by polls until caught up, then live polls again', async () => {
    const fake = fakeIngest({ high: { 0: '6' }, perPoll: 2, holdIdlePolls: { reread: true } });
    const table = uniqueId('db.behind');
    await withWorker(env, fake.activities, async (taskQueue) => {
      const handle = await client.workflow.start(ingestWorkflow, {
        taskQueue,
        workflowId: ingestWorkflowId(table, 'live'),
        args: [{ table, ingestId: 'live' }],
      });
      await until('an idle live poll at 6', () => fake.state.cursor['0'] === '6' && fake.idle.held === 1);
      await handle.terminate('test done');
      fake.idle.release(); // the held activity returns, so the worker can shut down
    });
    assert.deepEqual(
      fake.calls.pollAndWrite.map((c) => [c.input.startOffsets['0'], c.input.untilCaughtUp]),
      [
        ['0', false], // 6 waiting, below a quarter of the 10,000-record bound: a live poll (it reads 2)
        ['2', true], // the last cycle left records that were already there behind: catch up
        ['4', true],
        ['6', false], // caught up: live again, waiting out the interval
      ],
    );
  });

  it('drainAndStop ends the loop on the first cycle that reads nothing, with state stopped', async () => {
    const fake = fakeIngest({ high: { 0: '5' }, perPoll: 2, holdIdlePolls: { reread: true } });
    const table = uniqueId('db.drain');
    const { status, queried } = await withWorker(env, fake.activities, async (taskQueue) => {
      const handle = await client.workflow.start(ingestWorkflow, {
        taskQueue,
        workflowId: ingestWorkflowId(table, 'live'),
        args: [{ table, ingestId: 'live' }],
      });
      await until('an idle poll past the cursor at 5', () => fake.state.cursor['0'] === '5' && fake.idle.held === 1);
      assert.equal((await handle.query(statusQuery)).state, 'running');
      // More arrives while the poll waits; the drain must load it (two records per cycle) before it stops.
      fake.state.high = { 0: '8' };
      await handle.signal(drainAndStopSignal);
      const queried = await handle.query(statusQuery);
      fake.idle.release();
      return { status: await handle.result(), queried };
    });
    assert.equal(queried.state, 'draining');
    assert.equal(status.state, 'stopped');
    assert.deepEqual(status.cursor, { 0: '8' });
    assert.equal(status.totalRows, 8);
    assert.deepEqual(status.lag, { 0: '0' });
    const last = fake.calls.pollAndWrite.at(-1)!.input;
    assert.equal(last.untilCaughtUp, true, 'the last cycle polled as a drain');
    assert.deepEqual(last.startOffsets, { 0: '8' }, 'the last cycle found nothing past the drained cursor');
    const drainCommits = fake.calls.commit.filter((c) => BigInt(c.input.startOffsets['0']!) >= 5n);
    assert.deepEqual(
      drainCommits.map((c) => c.input.endOffsets['0']),
      ['7', '8'],
      'a cycle that read something never ends the drain',
    );
  });

  // The loop used to end on `draining && !advanced`, so a poll that began before drainAndStop (not
  // untilCaughtUp) and found nothing ended the drain, although records arrived before the signal.
  it('records produced before drainAndStop are loaded even when the poll in flight missed them', async () => {
    const fake = fakeIngest({ high: { 0: '5' }, holdIdlePolls: { reread: false } });
    const table = uniqueId('db.drain-race');
    const status = await withWorker(env, fake.activities, async (taskQueue) => {
      const handle = await client.workflow.start(ingestWorkflow, {
        taskQueue,
        workflowId: ingestWorkflowId(table, 'live'),
        args: [{ table, ingestId: 'live' }],
      });
      await until('an idle poll past the cursor at 5', () => fake.state.cursor['0'] === '5' && fake.idle.held === 1);
      fake.state.high = { 0: '8' };
      await handle.signal(drainAndStopSignal);
      // Queries are consistent: 'draining' means the workflow has seen the signal.
      assert.equal((await handle.query(statusQuery)).state, 'draining');
      fake.idle.release();
      return handle.result();
    });
    assert.deepEqual(status.cursor, { 0: '8' }, 'the drain stopped before loading what was in the topic when it was asked to stop');
  });

  it('continue-as-new carries the status: counters keep growing across runs (cyclesPerRun 1)', async () => {
    const fake = fakeIngest({ high: { 0: '6' }, perPoll: 2, cyclesPerRun: 1 });
    const table = uniqueId('db.can');
    const { status, queried, firstRun } = await withWorker(env, fake.activities, async (taskQueue) => {
      const handle = await client.workflow.start(ingestWorkflow, {
        taskQueue,
        workflowId: ingestWorkflowId(table, 'live'),
        args: [{ table, ingestId: 'live' }],
      });
      await until('three commits', () => fake.calls.commit.length === 3);
      // Without a run id the handle follows the chain: the query reaches the newest run.
      let queried: IngestStatus | undefined;
      await until('the status of the newest run to show three commits', async () => {
        queried = await handle.query(statusQuery);
        return queried.commits === 3;
      });
      await handle.signal(drainAndStopSignal);
      const status = await handle.result();
      const firstRun = await client.workflow.getHandle(handle.workflowId, handle.firstExecutionRunId).describe();
      return { status, queried: queried!, firstRun };
    });
    assert.equal(firstRun.status.name, 'CONTINUED_AS_NEW');
    const runs = new Set(fake.calls.loadCursor.map((c) => c.runId));
    assert.ok(runs.size >= 4, `expected a run per cycle, found ${runs.size} runs for ${fake.calls.loadCursor.length} cycles`);
    assert.equal(queried.totalRows, 6);
    assert.deepEqual(queried.cursor, { 0: '6' });
    assert.ok(queried.cycles >= 3);
    assert.equal(status.state, 'stopped');
    assert.equal(status.commits, 3);
    assert.equal(status.totalRows, 6);
    assert.equal(status.cycles, fake.calls.loadCursor.length, 'one cycle per loadCursor, counted across every run');
    assert.ok(status.lastCommitId !== null && status.lastCommitId === fake.calls.commit.at(-1)!.input.commitId);
  });

  it('a drain signalled before continue-as-new keeps draining in the next run', async () => {
    const fake = fakeIngest({ high: { 0: '6' }, perPoll: 2, cyclesPerRun: 1 });
    const table = uniqueId('db.can-drain');
    const status = await withWorker(env, fake.activities, async (taskQueue) =>
      (await drainFromStart(client, taskQueue, { table, ingestId: 'live' })).result(),
    );
    assert.equal(status.state, 'stopped');
    assert.equal(status.commits, 3);
    assert.equal(status.cycles, 4);
    assert.equal(new Set(fake.calls.loadCursor.map((c) => c.runId)).size, 4, 'one run per cycle');
    assert.ok(
      fake.calls.pollAndWrite.every((c) => c.input.untilCaughtUp === true),
      'every run polled as a drain',
    );
  });

  const failing = INGEST_NON_RETRYABLE.filter((t) => !INGEST_RELOAD.includes(t));
  for (const type of failing) {
    it(`pollAndWrite failing with ${type} fails the workflow with that type after one attempt`, async () => {
      const fake = fakeIngest({
        high: { 0: '10', 1: '10' },
        groups: [[0], [1]],
        beforePoll: (input) => {
          if (input.groupIndex === 1) throw ApplicationFailure.nonRetryable(`group 1: ${type}`, type);
        },
      });
      const table = uniqueId('db.fail');
      const err = await withWorker(env, fake.activities, async (taskQueue) =>
        (await drainFromStart(client, taskQueue, { table, ingestId: 'live' })).result().then(
          () => undefined,
          (e: unknown) => e,
        ),
      );
      assert.equal(activityFailureType(err), type, `expected a WorkflowFailedError caused by ${type}, found ${String(err)}`);
      assert.deepEqual(
        fake.calls.pollAndWrite.filter((c) => c.input.groupIndex === 1).map((c) => c.attempt),
        [1],
      );
      assert.equal(fake.calls.loadCursor.length, 1, 'no reload loop');
      assert.equal(fake.calls.commit.length, 0);
    });
  }

  it(`loadCursor failing with ${FailureType.CursorTopicMismatch} fails the workflow after one attempt`, async () => {
    const fake = fakeIngest({
      high: { 0: '10' },
      beforeLoad: () => {
        throw ApplicationFailure.nonRetryable('cursor written for topic other', FailureType.CursorTopicMismatch);
      },
    });
    const table = uniqueId('db.fail-load');
    const err = await withWorker(env, fake.activities, async (taskQueue) =>
      (await drainFromStart(client, taskQueue, { table, ingestId: 'live' })).result().then(
        () => undefined,
        (e: unknown) => e,
      ),
    );
    assert.equal(activityFailureType(err), FailureType.CursorTopicMismatch);
    assert.deepEqual(
      fake.calls.loadCursor.map((c) => c.attempt),
      [1],
    );
    assert.equal(fake.calls.pollAndWrite.length, 0);
  });

  it(`commit failing with ${FailureType.DataInvalid} fails the workflow (only ${INGEST_RELOAD.join('/')} reload)`, async () => {
    const fake = fakeIngest({
      high: { 0: '10' },
      beforeCommit: () => {
        throw ApplicationFailure.nonRetryable('file violates the schema', FailureType.DataInvalid);
      },
    });
    const table = uniqueId('db.fail-commit');
    const err = await withWorker(env, fake.activities, async (taskQueue) =>
      (await drainFromStart(client, taskQueue, { table, ingestId: 'live' })).result().then(
        () => undefined,
        (e: unknown) => e,
      ),
    );
    assert.equal(activityFailureType(err), FailureType.DataInvalid);
    assert.deepEqual(
      fake.calls.commit.map((c) => c.attempt),
      [1],
    );
    assert.equal(fake.calls.loadCursor.length, 1);
  });

  it('a retryable pollAndWrite failure is retried and the cycle commits', async () => {
    const fake = fakeIngest({
      high: { 0: '4' },
      beforePoll: (_input, n) => {
        if (n === 1) throw new Error('broker connection reset');
      },
    });
    const table = uniqueId('db.retry');
    const status = await withWorker(env, fake.activities, async (taskQueue) =>
      (await drainFromStart(client, taskQueue, { table, ingestId: 'live' })).result(),
    );
    assert.deepEqual(
      fake.calls.pollAndWrite.slice(0, 2).map((c) => c.attempt),
      [1, 2],
    );
    assert.equal(status.state, 'stopped');
    assert.equal(status.commits, 1);
    assert.equal(status.fencedCommits, 0);
    assert.equal(status.totalRows, 4);
  });

  it('a backfill whose range is already loaded returns at once: no poll, no commit', async () => {
    const range = { from: { 0: '0', 1: '0' }, to: { 0: '4', 1: '4' } };
    const fake = fakeIngest({ high: { 0: '9', 1: '9' }, cursor: { 0: '4', 1: '5' } });
    const table = uniqueId('db.backfill-done');
    const status = await withWorker(env, fake.activities, async (taskQueue) =>
      client.workflow.execute(ingestWorkflow, {
        taskQueue,
        workflowId: ingestWorkflowId(table, 'backfill-x'),
        args: [{ table, ingestId: 'backfill-x', range }],
      }),
    );
    assert.equal(status.state, 'stopped');
    assert.equal(status.cycles, 0);
    assert.equal(status.commits, 0);
    assert.deepEqual(status.cursor, { 0: '4', 1: '5' });
    assert.equal(fake.calls.loadCursor.length, 1);
    assert.equal(fake.calls.pollAndWrite.length, 0);
    assert.equal(fake.calls.commit.length, 0);
  });

  it('backfillWorkflow loads [from, to) in chunks under the prepared ingest id, then stops; re-running it adds nothing', async () => {
    const range = { from: { 0: '2', 1: '0' }, to: { 0: '6', 1: '3' } };
    const fake = fakeIngest({ high: { 0: '9', 1: '9' }, cursor: { 0: '2', 1: '0' }, perPoll: 2 });
    const prepared = { ingestId: 'backfill-0123456789abcdef', range, records: '7' };
    let prepares = 0;
    const activities = {
      ...fake.activities,
      prepareBackfill: async () => {
        prepares++;
        return prepared;
      },
    };
    const table = uniqueId('db.backfill');
    const from = { offsets: range.from },
      to = { offsets: range.to };
    const run = (taskQueue: string, n: number) =>
      client.workflow.execute(backfillWorkflow, {
        taskQueue,
        workflowId: `${backfillWorkflowId(table, from, to)}#${n}`,
        args: [{ table, from, to }],
      });
    const [first, second] = await withWorker(env, activities, async (taskQueue) => [await run(taskQueue, 1), await run(taskQueue, 2)]);

    assert.equal(prepares, 2);
    assert.deepEqual(first!.prepared, prepared);
    assert.equal(first!.status.ingestId, prepared.ingestId);
    assert.equal(first!.status.state, 'stopped');
    assert.deepEqual(fake.state.cursor, { 0: '6', 1: '3' });
    assert.equal(first!.status.totalRows, 7);
    assert.equal(first!.status.commits, 2, 'two chunks of at most two records per partition');
    for (const c of fake.calls.pollAndWrite) {
      assert.deepEqual(c.input.limit, range.to, 'never reads past the range');
      assert.deepEqual(c.input.stopAt, range.to);
    }
    assert.ok(fake.calls.commit.every((c) => c.input.ingestId === prepared.ingestId && c.input.range !== undefined));
    // The second run finds the range loaded.
    assert.equal(second!.status.commits, 0);
    assert.equal(second!.status.cycles, 0);
    assert.equal(fake.calls.commit.length, 2);
  });

  // A refused commit used to `continue` the loop before the cyclesPerRun / continueAsNewSuggested
  // check, so an ingest whose commits kept being refused never continued as new.
  it('an ingest whose commits keep being refused still continues as new', async () => {
    const fake = fakeIngest({
      high: { 0: '4' },
      cyclesPerRun: 2,
      beforeCommit: (_input, n) => {
        if (n <= 4) throw ApplicationFailure.nonRetryable('a written file is gone', FailureType.FilesMissing);
      },
    });
    const table = uniqueId('db.refused');
    const status = await withWorker(env, fake.activities, async (taskQueue) =>
      (await drainFromStart(client, taskQueue, { table, ingestId: 'live' })).result(),
    );
    assert.equal(status.fencedCommits, 4);
    const refusedRuns = new Set(fake.calls.commit.slice(0, 4).map((c) => c.runId));
    assert.ok(refusedRuns.size >= 2, `expected 4 refused cycles with cyclesPerRun 2 to span 2 runs, found ${refusedRuns.size}`);
  });
});
