/**
 * Poison cycles end (issue 29 item 1), with mocked activities on the Temporal test server: a
 * cycle that fails on every attempt for something that is not a service's trouble is isolated by
 * bisection and only its failing records are dead-lettered, exactly once, also when the worker
 * restarts in the middle; a service's trouble is retried with backoff and shows `stalled`, never
 * dead-letters; a failure of every record alone stalls instead of dead-lettering on.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, type Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { FailureType } from '../../contract';
import type { CommitInput, CommitResult, CyclePlan, PollInput, PollResult, TableRef } from '../../ingest/types';
import { ingestWorkflowId, statusQuery, type IngestStatus } from '../../workflows';
import { MAX_ISOLATED_IN_A_ROW } from '../../workflows/isolation';
import { createWorkflowEnv, drainFromStart, testWorkflowBundle, uniqueId, withWorker } from '../support/workflow-env';

type Offsets = Record<string, string>;

interface TopicOptions {
  high: Offsets;
  groups: number[][];
  /** Records whose write fails, by partition:offset; `why` says how. */
  poison: Set<string>;
  /** A failure of every record (a table-wide trouble). */
  failAll?: boolean;
  /** Fails the first `n` polls as a service would (Kafka down). */
  serviceDownFor?: number;
  isolateAfterAttempts: number;
  perPoll?: number;
  /** Called when a poll begins. */
  onPoll?: (input: PollInput) => Promise<void> | void;
}

/**
 * A topic and a table in memory behind the three ingest activities: the table records each
 * offset's fate (row or dead letter) at commit, so a test sees "every offset exactly once".
 */
function fakeTopic(o: TopicOptions) {
  const cursor: Offsets = {};
  let snapshot: string | null = null;
  const landed = new Map<string, 'row' | 'dead'>();
  const duplicates: string[] = [];
  const polls: { input: PollInput; attempt: number; failed: boolean }[] = [];
  let loads = 0;
  const pending = new Map<string, { rows: string[]; dead: string[] }>();
  const activities = {
    async loadCursor(ref: TableRef): Promise<CyclePlan> {
      void ref;
      loads++;
      const startOffsets: Offsets = {};
      for (const p of Object.keys(o.high)) startOffsets[p] = cursor[p] ?? '0';
      return {
        baseSnapshotId: snapshot,
        startOffsets,
        highWatermarks: { ...o.high },
        deadLetterFloor: {},
        deadLetterBaseCommitId: null,
        groups: o.groups,
        commitIntervalMs: 1000,
        maxRecordsPerCycle: 10_000,
        maxBytesPerCycle: 1 << 20,
        cyclesPerRun: 1000,
        isolateAfterAttempts: o.isolateAfterAttempts,
      };
    },
    async pollAndWrite(input: PollInput): Promise<PollResult> {
      const attempt = Context.current().info.attempt;
      const call = { input, attempt, failed: false };
      polls.push(call);
      await o.onPoll?.(input);
      if (polls.length <= (o.serviceDownFor ?? 0))
        throw ApplicationFailure.create({ message: 'connect ECONNREFUSED 127.0.0.1:9092', type: FailureType.ServiceUnavailable });
      const rows: string[] = [];
      const dead: string[] = [];
      const endOffsets: Offsets = {};
      for (const p of input.partitions.map(String)) {
        let end = BigInt(o.high[p] ?? '0');
        if (input.limit?.[p] !== undefined && BigInt(input.limit[p]) < end) end = BigInt(input.limit[p]);
        const start = BigInt(input.startOffsets[p] ?? '0');
        if (end > start + BigInt(o.perPoll ?? 1000)) end = start + BigInt(o.perPoll ?? 1000);
        for (let off = start; off < end; off++) {
          const id = `${p}:${off}`;
          if (input.deadLetterReason !== undefined) dead.push(id);
          else if (o.failAll || o.poison.has(id)) {
            call.failed = true;
            // A plain, retryable failure no classifier knows (a bug, a library's limit).
            throw ApplicationFailure.retryable(`cannot write record ${id}`, 'Error');
          } else rows.push(id);
        }
        endOffsets[p] = (end > start ? end : start).toString();
      }
      pending.set(`${input.commitId}/${input.groupIndex}`, { rows, dead });
      return {
        groupIndex: input.groupIndex,
        files: rows.length
          ? [{ 'file-path': `data/${input.commitId}-${input.groupIndex}-${attempt}.parquet`, 'record-count': rows.length }]
          : [],
        deadLetterFiles: dead.length
          ? [{ 'file-path': `dl/${input.commitId}-${input.groupIndex}.parquet`, 'record-count': dead.length }]
          : [],
        endOffsets,
        highWatermarks: Object.fromEntries(input.partitions.map((p) => [String(p), o.high[String(p)] ?? '0'])),
        records: rows.length,
        deadLetters: dead.length,
        bytes: rows.length * 10,
      };
    },
    async commit(input: CommitInput): Promise<CommitResult> {
      if (input.baseSnapshotId !== snapshot) throw ApplicationFailure.nonRetryable('fenced', FailureType.StaleCursor);
      for (const [p, s] of Object.entries(input.startOffsets))
        if ((cursor[p] ?? '0') !== s) throw ApplicationFailure.nonRetryable(`cursor of ${p} moved`, FailureType.StaleCursor);
      for (const [key, w] of pending) {
        if (!key.startsWith(`${input.commitId}/`)) continue;
        const land = (id: string, as: 'row' | 'dead') => {
          if (landed.has(id)) duplicates.push(id);
          landed.set(id, as);
        };
        for (const id of w.rows) land(id, 'row');
        for (const id of w.dead) land(id, 'dead');
        pending.delete(key);
      }
      Object.assign(cursor, input.endOffsets);
      snapshot = String(Number(snapshot ?? '0') + 1);
      return { snapshotId: snapshot, alreadyCommitted: false, committedAtMs: Date.now(), totalRecords: String(landed.size) };
    },
  };
  /** Every offset below the high watermark landed once: as a dead letter when poisoned, else as a row. */
  const check = () => {
    assert.deepEqual(duplicates, [], 'no offset landed twice');
    for (const [p, h] of Object.entries(o.high))
      for (let off = 0; off < Number(h); off++) {
        const id = `${p}:${off}`;
        assert.equal(landed.get(id), o.poison.has(id) ? 'dead' : 'row', `offset ${id}`);
      }
  };
  return { activities, cursor, landed, polls, check, loads: () => loads };
}

describe('poison cycles end: isolation by bisection, stalled on a service (mocked activities)', () => {
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

  it('a record that fails every attempt is isolated by bisection and dead-lettered; every other record lands once', async () => {
    const fake = fakeTopic({
      high: { 0: '100', 1: '40' },
      groups: [[0], [1]],
      poison: new Set(['0:37', '0:38', '1:5']),
      isolateAfterAttempts: 2,
    });
    const table = uniqueId('db.poison');
    const status = await withWorker(env, fake.activities, async (taskQueue) =>
      (await drainFromStart(client, taskQueue, { table, ingestId: 'live' })).result(),
    );
    fake.check();
    assert.equal(status.state, 'stopped');
    assert.equal(status.isolation, undefined, 'the isolation finished');
    assert.deepEqual(fake.cursor, { 0: '100', 1: '40' });
    // The first cycle's failing group was tried K = 2 times before isolation began.
    const first = fake.polls.filter((c) => c.input.groupIndex === 0 && c.input.startOffsets['0'] === '0' && !c.input.limit);
    assert.deepEqual(
      first.map((c) => c.attempt),
      [1, 2],
    );
    // Each poisoned record was dead-lettered by a poll of that record alone, after failing alone K times.
    const deadPolls = fake.polls.filter((c) => c.input.deadLetterReason !== undefined);
    assert.deepEqual(deadPolls.map((c) => Object.entries(c.input.startOffsets)[0]!.join(':')).sort(), ['0:37', '0:38', '1:5']);
    for (const d of deadPolls) assert.match(d.input.deadLetterReason!, /cannot write record/);
    for (const id of ['0:37', '0:38', '1:5']) {
      const [p, off] = id.split(':');
      const alone = fake.polls.filter(
        (c) => !c.input.deadLetterReason && c.input.startOffsets[p!] === off && c.input.limit?.[p!] === String(Number(off) + 1),
      );
      assert.deepEqual(
        alone.map((c) => c.attempt),
        [1, 2],
        `${id} failed alone K times`,
      );
    }
    // Bisection: isolating 100 records costs a logarithmic number of polls, not one per record.
    const isolationPolls = fake.polls.filter((c) => c.input.limit !== undefined).length;
    assert.ok(isolationPolls < 45, `${isolationPolls} isolation polls`);
    assert.equal(status.totalDeadLetters, 3);
    assert.equal(status.totalRows, 137);

    // The recorded history replays with today's code (the split is deterministic).
    const history = await client.workflow.getHandle(ingestWorkflowId(table, 'live')).fetchHistory();
    await Worker.runReplayHistory({ workflowBundle: await testWorkflowBundle(), replayName: 'floe-poison' }, history);
  });

  it('a worker lost in the middle of an isolation: the next worker resumes the same split from history', async () => {
    let holding = false;
    let held = 0;
    const fake = fakeTopic({
      high: { 0: '64' },
      groups: [[0]],
      poison: new Set(['0:21']),
      isolateAfterAttempts: 2,
      onPoll: async (input) => {
        // The first dead-letter poll is in flight when the first worker shuts down (which cancels it).
        if (input.deadLetterReason !== undefined && held++ === 0) {
          const signal = Context.current().cancellationSignal;
          await new Promise<void>((_, reject) => {
            holding = true;
            signal.addEventListener('abort', () => reject(new Error('worker shut down')));
          });
        }
      },
    });
    const table = uniqueId('db.poison-restart');
    const taskQueue = uniqueId('wf-poison');
    const mk = () =>
      testWorkflowBundle().then((workflowBundle) =>
        Worker.create({
          connection: env.nativeConnection,
          namespace: env.namespace ?? 'default',
          taskQueue,
          workflowBundle,
          activities: fake.activities,
          debugMode: true,
        }),
      );
    const first = await mk();
    const handle = await first.runUntil(async () => {
      const h = await drainFromStart(client, taskQueue, { table, ingestId: 'live' });
      while (!holding) await new Promise((r) => setTimeout(r, 50));
      return h;
    });
    // The first worker is shut down, its workflow cache with it: the second replays the history
    // (the split included) and carries on from the dead letter it was writing.
    const status = await (
      await mk()
    ).runUntil(async () => {
      const resumed = (await handle.query(statusQuery)) as IngestStatus;
      assert.deepEqual(resumed.isolation?.ranges[0], {
        partition: '0',
        from: '21',
        to: '22',
        deadLetter: 'Error: cannot write record 0:21',
      });
      return handle.result();
    });
    fake.check();
    assert.equal(status.totalDeadLetters, 1);
    assert.equal(status.totalRows, 63);
  });

  it('a service that is down is retried with backoff and shows stalled (error, attempts, since), then recovers; nothing is dead-lettered', async () => {
    const fake = fakeTopic({ high: { 0: '10' }, groups: [[0]], poison: new Set(), isolateAfterAttempts: 2, serviceDownFor: 4 });
    const table = uniqueId('db.stalled');
    const seen: IngestStatus[] = [];
    const status = await withWorker(env, fake.activities, async (taskQueue) => {
      const handle = await drainFromStart(client, taskQueue, { table, ingestId: 'live' });
      for (let i = 0; i < 600; i++) {
        const s = (await handle.query(statusQuery)) as IngestStatus;
        seen.push(s);
        if (s.state === 'stalled' || s.state === 'stopped') break;
        await new Promise((r) => setTimeout(r, 100));
      }
      return handle.result();
    });
    const stalled = seen.find((s) => s.state === 'stalled');
    assert.ok(stalled, `stalled was shown: ${seen.map((s) => s.state).join(',')}`);
    assert.match(stalled.failing!.error, /ServiceUnavailable: connect ECONNREFUSED/);
    assert.ok(stalled.failing!.attempts >= 2);
    assert.ok(stalled.failing!.sinceMs > 0);
    assert.equal(stalled.isolation, undefined, 'a service is never blamed on records');
    assert.equal(status.state, 'stopped');
    assert.equal(status.failing, undefined, 'cleared by the cycle that completed');
    assert.ok(fake.polls.length >= 5, 'polled again after the service came back');
    fake.check();
    assert.equal(status.totalDeadLetters, 0);
  });

  it(`records that all fail alone (a table-wide trouble) stall after ${MAX_ISOLATED_IN_A_ROW} dead letters instead of dead-lettering on`, async () => {
    const fake = fakeTopic({ high: { 0: '200' }, groups: [[0]], poison: new Set(), failAll: true, isolateAfterAttempts: 1 });
    const table = uniqueId('db.fail-all');
    const s = await withWorker(env, fake.activities, async (taskQueue) => {
      const handle = await drainFromStart(client, taskQueue, { table, ingestId: 'live' });
      for (let i = 0; ; i++) {
        const q = (await handle.query(statusQuery)) as IngestStatus;
        if (q.state === 'stalled' || i === 600) {
          await handle.terminate('test done');
          return q;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    });
    assert.equal(s.isolation?.deadLettered, MAX_ISOLATED_IN_A_ROW);
    assert.equal(s.totalDeadLetters, MAX_ISOLATED_IN_A_ROW);
    assert.match(s.failing!.error, /cannot write record 0:20/);
    assert.equal([...fake.landed.values()].filter((v) => v === 'row').length, 0);
  });
});
