/**
 * The worker's kept Kafka consumers (ingest/kafka.ts ConsumerPool) against a real broker: one
 * reader serves cycle after cycle of a partition group, and whatever offset the table says is next
 * (forwards after a commit, backwards after a fenced cycle re-reads, far ahead after a reset), each
 * poll delivers exactly the records from there, in order, never one skipped or repeated, even
 * though the reader's consumer has batches fetched for an earlier position in flight.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Kafka, logLevel } from 'kafkajs';
import { ensureStack } from '../../stack/stack';
import { ConsumerPool, type PollBounds } from '../../ingest/kafka';
import type { Offsets } from '../../ingest/cursor';

const BROKERS = [process.env.FLOE_KAFKA_BROKERS ?? '127.0.0.1:9092'];
const N = 3000;

describe('kept Kafka consumers (real broker)', { timeout: 5 * 60_000 }, () => {
  const topic = `it_pool_${Date.now().toString(36)}`;
  const kafka = new Kafka({ clientId: 'floe-test', brokers: BROKERS, logLevel: logLevel.NOTHING });
  let pool: ConsumerPool;

  before(async () => {
    await ensureStack(['kafka']);
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true });
    await admin.disconnect();
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    for (let i = 0; i < N; i += 500) {
      await producer.send({
        topic,
        messages: Array.from({ length: 500 }, (_, j) => ({ partition: (i + j) % 2, value: String(i + j) })),
      });
    }
    await producer.disconnect();
    pool = new ConsumerPool(kafka);
  });
  after(async () => {
    await pool?.close();
  });

  const poll = async (start: Offsets, bounds: Partial<PollBounds> = {}, partitions = [0, 1]) => {
    const got: Array<{ p: number; o: bigint }> = [];
    const out = await pool.poll(
      'db.t',
      topic,
      partitions,
      start,
      { maxWaitMs: 5000, maxRecords: 1_000_000, maxBytes: 1 << 30, ...bounds },
      (r) => got.push({ p: r.partition, o: BigInt(r.offset) }),
    );
    return { got, next: out.next };
  };
  /** Every partition's records are exactly [start, next), in order. */
  const assertContiguous = (got: Array<{ p: number; o: bigint }>, start: Offsets, next: Offsets) => {
    for (const p of Object.keys(next)) {
      const offs = got.filter((g) => String(g.p) === p).map((g) => g.o);
      const want = Array.from(
        { length: Number(BigInt(next[p]!) - BigInt(start[p] ?? '0')) },
        (_, i) => BigInt(start[p] ?? '0') + BigInt(i),
      );
      assert.deepEqual(offs, want, `partition ${p}: records [${start[p]}, ${next[p]})`);
    }
  };

  it('one reader serves forward, backward and far-ahead positions without a gap or a repeat', async () => {
    const half = String(N / 2);
    const cycles: Offsets[] = [
      { 0: '0', 1: '0' }, // first cycle
      { 0: '100', 1: '0' }, // after a commit (bounded below: see maxRecords)
      { 0: '20', 1: '5' }, // backwards: a fenced cycle re-reads from the table's cursor
      { 0: '1400', 1: '1490' }, // far ahead: a reset
      { 0: '0', 1: '0' }, // back to the start
    ];
    for (const start of cycles) {
      const { got, next } = await poll(start, { maxRecords: 200, stopAt: { 0: half, 1: half } });
      assert.equal(got.length, Math.min(200, (2 * N) / 2 - Number(start[0]) - Number(start[1])), `records from ${JSON.stringify(start)}`);
      assertContiguous(got, start, next);
    }
    // caught up: the whole rest, up to the end of both partitions
    const start = { 0: '1000', 1: '1200' };
    const { got, next } = await poll(start, { stopAt: { 0: half, 1: half } });
    assert.deepEqual(next, { 0: half, 1: half });
    assertContiguous(got, start, next);
    assert.equal(pool.size, 1, 'every poll of this group used the one kept reader');
  });

  it('a second poll of the same group while one runs gets a reader of its own; both are exact', async () => {
    const a = poll({ 0: '0', 1: '0' }, { maxRecords: 400, stopAt: { 0: '1500', 1: '1500' } });
    const b = poll({ 0: '700', 1: '900' }, { maxRecords: 400, stopAt: { 0: '1500', 1: '1500' } });
    const [ra, rb] = await Promise.all([a, b]);
    assertContiguous(ra.got, { 0: '0', 1: '0' }, ra.next);
    assertContiguous(rb.got, { 0: '700', 1: '900' }, rb.next);
    assert.equal(ra.got.length + rb.got.length, 800);
    assert.equal(pool.size, 1, 'the extra reader was closed, not kept');
  });

  it('a group of one partition reads only it', async () => {
    const { got, next } = await poll({ 1: '10' }, { maxRecords: 50 }, [1]);
    assert.ok(got.every((g) => g.p === 1));
    assertContiguous(got, { 1: '10' }, next);
    assert.equal(got.length, 50);
  });
});
