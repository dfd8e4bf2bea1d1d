/**
 * Transactional producers (real Kafka): aborted records never land (read_committed), and a
 * partition whose cursor or range ends on a transaction marker or an aborted batch still advances.
 * kafkajs never hands a batch of only control/aborted records to eachBatch; before the poll read
 * them from the consumer's batch events, a backfill ending past an aborted transaction never
 * finished and a drained ingest kept a lag it could never close.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { MockActivityEnvironment } from '@temporalio/testing';
import { Kafka, logLevel, type Producer } from 'kafkajs';
import { ensureStack } from '../../stack/stack';
import { scenarioConfig } from '../../demo/scenario';
import { loadConfig, type FloeConfig } from '../../config';
import { createActivities, createDeps, type Deps } from '../../activities';
import type { CyclePlan, OffsetRange, PollResult } from '../../ingest/types';
import { readColumnValues } from '../../client/tables';
import { orderEvents } from '../../demo/generator';
import { readCursor } from '../../table/cursor';
import { createTopicsReady } from '../../demo/topics';

const env = new MockActivityEnvironment();

describe('Kafka transactions (real stack)', { timeout: 10 * 60_000 }, () => {
  let cfg: FloeConfig;
  let deps: Deps;
  let table: string;
  let topic: string;
  let producer: Producer;
  const ev = orderEvents();
  const aborted = new Set<string>();
  const next = () => {
    const e = ev.next().value!;
    return { key: String(e.order_id), value: JSON.stringify(e), id: e.event_id };
  };

  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3']);
    const c = scenarioConfig(`it_txn_${Date.now().toString(36)}`, 1, '2s');
    ({ table, topic } = c);
    cfg = loadConfig(c.path);
    const kafka = new Kafka({ clientId: 'test', brokers: cfg.kafka.brokers, logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await createTopicsReady(admin, [{ topic, numPartitions: 1 }]);
    await admin.disconnect();
    producer = kafka.producer({ transactionalId: `floe-test-${topic}`, idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    deps = await createDeps(cfg);
  });
  after(async () => {
    await producer?.disconnect();
    await deps?.close();
  });

  const sendTxn = async (n: number, commit: boolean) => {
    const txn = await producer.transaction();
    const msgs = Array.from({ length: n }, next);
    await txn.send({ topic, messages: msgs.map(({ key, value }) => ({ key, value })) });
    if (commit) await txn.commit();
    else {
      await txn.abort();
      for (const m of msgs) aborted.add(m.id);
    }
  };

  /** One cycle through the activities; drains (reads until the high watermark of the poll's start). */
  const cycle = async (ingestId: string, range?: OffsetRange): Promise<{ plan: CyclePlan; poll: PollResult }> => {
    const acts = createActivities(deps);
    const plan = (await env.run(acts.loadCursor, { table, ingestId, range, force: true })) as CyclePlan;
    const commitId = `${ingestId}-${Date.now()}-${Math.random()}`;
    const poll = (await env.run(acts.pollAndWrite, {
      table,
      ingestId,
      commitId,
      groupIndex: 0,
      partitions: plan.groups[0]!,
      startOffsets: plan.startOffsets,
      // a bound, not a wait: the poll ends once caught up (4 s was too short for a fetch on a loaded machine)
      maxWaitMs: 20_000,
      maxRecords: 10_000,
      maxBytes: 1 << 26,
      deadLetterFloor: plan.deadLetterFloor,
      ...(range ? { stopAt: range.to, limit: range.to } : { untilCaughtUp: true }),
    })) as PollResult;
    if (Object.keys(poll.endOffsets).some((p) => poll.endOffsets[p] !== plan.startOffsets[p])) {
      await env.run(acts.commit, {
        table,
        ingestId,
        commitId,
        baseSnapshotId: plan.baseSnapshotId,
        deadLetterFloor: plan.deadLetterFloor,
        deadLetterBaseCommitId: plan.deadLetterBaseCommitId,
        startOffsets: plan.startOffsets,
        endOffsets: poll.endOffsets,
        files: poll.files,
        deadLetterFiles: poll.deadLetterFiles,
        records: poll.records,
        deadLetters: poll.deadLetters,
        range,
      });
    }
    return { plan, poll };
  };
  const cursorOf = async (ingestId: string) => readCursor((await deps.tables.load(table)).metadata, ingestId).offsets['0'];

  it('a cursor that ends where an aborted transaction begins advances past it; aborted records never land', async () => {
    await sendTxn(20, true); // offsets 0..19, commit marker 20
    await cycle('main');
    assert.equal(await cursorOf('main'), '21');

    await sendTxn(5, false); // offsets 21..25 aborted, abort marker 26
    const { poll } = await cycle('main');
    assert.equal(poll.records, 0);
    assert.deepEqual(poll.endOffsets, { 0: '27' }, 'the poll moved past the aborted batch and its marker');
    assert.equal(await cursorOf('main'), '27');

    await sendTxn(5, true); // 27..31, marker 32
    await cycle('main');
    assert.equal(await cursorOf('main'), '33');
    const ids = (await readColumnValues(deps.tables, table, 'event_id')).map(String);
    assert.equal(ids.length, 25);
    assert.equal(ids.filter((id) => aborted.has(id)).length, 0, 'no aborted record landed');
  });

  it('a backfill whose range ends on an aborted transaction finishes', async () => {
    await sendTxn(3, false); // 33..35 aborted, marker 36: the range ends right after it
    const range: OffsetRange = { from: { 0: '21' }, to: { 0: '37' } };
    const { poll } = await cycle('backfill-txn', range);
    assert.deepEqual(poll.endOffsets, { 0: '37' });
    assert.equal(poll.records, 5, 'only the committed transaction 27..31 is in the range');
    assert.equal(await cursorOf('backfill-txn'), '37', 'range done: the backfill stops');
  });

  it('a poll reports progress in heartbeats and honours cancellation instead of waiting out its interval', async () => {
    const acts = createActivities(deps);
    const plan = (await env.run(acts.loadCursor, { table, ingestId: 'main' })) as CyclePlan;
    const cancellable = new MockActivityEnvironment();
    const beats: unknown[] = [];
    cancellable.on('heartbeat', (d: unknown) => beats.push(d));
    const run = cancellable.run(acts.pollAndWrite, {
      table,
      ingestId: 'main',
      commitId: 'cancel-me',
      groupIndex: 0,
      partitions: plan.groups[0]!,
      startOffsets: plan.startOffsets,
      // Longer than the test's own timeout: a poll that ignored its cancellation would fail the test.
      maxWaitMs: 30 * 60_000,
      maxRecords: 10_000,
      maxBytes: 1 << 26,
      deadLetterFloor: plan.deadLetterFloor,
    });
    await sleep(5000);
    cancellable.cancel();
    await assert.rejects(run, (e: Error) => e.name === 'CancelledFailure');
    assert.ok(
      beats.some((b) => typeof b === 'object' && b !== null && 'records' in b && 'bytes' in b),
      JSON.stringify(beats),
    );
  });
});
