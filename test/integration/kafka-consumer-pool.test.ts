/**
 * The worker's kept Kafka consumers (ingest/kafka.ts ConsumerPool) against a real broker: one
 * reader serves cycle after cycle of a partition group, and whatever offset the table says is next
 * (forwards after a commit, backwards after a fenced cycle re-reads, far ahead after a reset), each
 * poll delivers exactly the records from there, in order, never one skipped or repeated, even
 * though the reader's consumer has batches fetched for an earlier position in flight. The second
 * suite (on a broker of its own, restarted) asks the same across broker restarts, between polls and during
 * one, and that a poll right after a restart does not come back empty while records wait (an
 * ingest drain would end on it).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Kafka, logLevel } from 'kafkajs';
import { ensureStack } from '../../stack/stack';
import {
  ConsumerPool,
  KafkaGroupJoinTimeout,
  KafkaNothingServed,
  pollPartitions,
  topicWatermarks,
  type PollBounds,
} from '../../ingest/kafka';
import { serviceTrouble } from '../../activities/failures';
import type { Offsets } from '../../table/cursor';
import { startScratchBroker, type ScratchBroker } from '../support/scratch-broker';
import { createTopicIds } from '../../ingest/topic-ids';
import type { KafkaConfig } from '../../config';
import { createTopicsReady } from '../../demo/topics';

const BROKERS = [process.env.FLOE_KAFKA_BROKERS ?? '127.0.0.1:9092'];
const N = 3000;

type Got = Array<{ p: number; o: bigint }>;

/** Every partition's records are exactly [start, next), in order. */
function assertContiguous(got: Got, start: Offsets, next: Offsets): void {
  for (const p of Object.keys(next)) {
    const offs = got.filter((g) => String(g.p) === p).map((g) => g.o);
    const want = Array.from({ length: Number(BigInt(next[p]!) - BigInt(start[p] ?? '0')) }, (_, i) => BigInt(start[p] ?? '0') + BigInt(i));
    assert.deepEqual(offs, want, `partition ${p}: records [${start[p]}, ${next[p]})`);
  }
}

describe('kept Kafka consumers (real broker)', { timeout: 5 * 60_000 }, () => {
  const topic = `it_pool_${Date.now().toString(36)}`;
  const kafka = new Kafka({ clientId: 'floe-test', brokers: BROKERS, logLevel: logLevel.NOTHING });
  let pool: ConsumerPool;

  before(async () => {
    await ensureStack(['kafka']);
    const admin = kafka.admin();
    await admin.connect();
    await createTopicsReady(admin, [{ topic, numPartitions: 2 }]);
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
      (r) => {
        got.push({ p: r.partition, o: BigInt(r.offset) });
      },
    );
    return { got, next: out.next };
  };
  /** Every partition's records are exactly [start, next), in order. */

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

  it("a join past its bound fails the poll as the broker's trouble, never as an empty poll", async () => {
    const admin = kafka.admin();
    await admin.connect();
    const h = (await topicWatermarks(admin, topic)).high;
    await admin.disconnect();
    const bounds = { maxWaitMs: 60_000, maxRecords: 1_000_000, maxBytes: 1 << 30, joinTimeoutMs: 1 };
    // Unbounded or bounded by what is there (a drain), a poll that read nothing because it never
    // joined must not look like a caught-up or empty one: it fails, and the ingest retries it with
    // backoff (a KafkaJS* error: activities/failures.ts serviceTrouble).
    for (const stopAt of [undefined, h]) {
      const e = await pollPartitions(kafka, topic, [0, 1], {}, { ...bounds, stopAt }, () => assert.fail('no record before the join')).then(
        () => assert.fail('a poll that never joined returned'),
        (err: unknown) => err,
      );
      assert.ok(e instanceof KafkaGroupJoinTimeout, String(e));
      assert.match(e.message, /had not joined its consumer group after 1 ms.*the poll is retried/);
      assert.equal(serviceTrouble(e), 'KafkaJSGroupJoinTimeout');
    }
  });

  it('a poll bounded by what is there that Kafka does not serve fails, instead of looking caught up (a drain would end on it)', async () => {
    const admin = kafka.admin();
    await admin.connect();
    const h = (await topicWatermarks(admin, topic)).high;
    await admin.disconnect();
    // A bound past what the broker will serve stands for records it does not hand out in time.
    const stopAt = { 0: String(BigInt(h[0]!) + 5n), 1: String(BigInt(h[1]!) + 5n) };
    const size = pool.size;
    await assert.rejects(
      pool.poll('db.unserved', topic, [0, 1], h, { maxWaitMs: 1000, maxRecords: 1e6, maxBytes: 1 << 30, stopAt }, () =>
        assert.fail('nothing past the high watermark'),
      ),
      (e: Error) => e instanceof KafkaNothingServed && serviceTrouble(e) === 'KafkaJSNothingServed',
    );
    assert.equal(pool.size, size, 'the reader that was not served is not kept');
  });

  it('a poll whose activity was already cancelled reads nothing (an aborted signal never fires its listener again)', async () => {
    // Records wait from offset 0; before the fix the poll read them all and then its whole interval.
    const { got } = await poll({ 0: '0', 1: '0' }, { signal: AbortSignal.abort(), maxWaitMs: 3000 });
    assert.equal(got.length, 0);
  });

  it('a group of one partition reads only it', async () => {
    const { got, next } = await poll({ 1: '10' }, { maxRecords: 50 }, [1]);
    assert.ok(got.every((g) => g.p === 1));
    assertContiguous(got, { 1: '10' }, next);
    assert.equal(got.length, 50);
  });

  it('an error thrown for a record fails the poll with it (not swallowed by a kafkajs batch retry); the record stays unread', async () => {
    let seen = 0;
    // A poll that swallowed the error would wait out its 30 minutes: the suite's timeout fails it.
    await assert.rejects(
      pollPartitions(kafka, topic, [0], { 0: '10' }, { maxWaitMs: 30 * 60_000, maxRecords: 1_000_000, maxBytes: 1 << 30 }, (r) => {
        if (++seen === 3) throw new Error(`config error at offset ${r.offset}`);
      }),
      /config error at offset 12/,
    );
    assert.equal(seen, 3, 'no record after the failing one is handed over, none again');
  });
});

// A new broker creates __consumer_offsets on its first group's FindCoordinator, and the join that
// follows meets "The coordinator is loading": kafkajs' `run` returns with no group and restarts the
// consumer 300 ms later. A poll must wait for that join, not seek into no group (an activity
// failure, retried with a growing backoff: a CI run's first ingest stayed invisible past 60 s).
describe('a fresh broker (its own, started for this test)', { timeout: 5 * 60_000 }, () => {
  let broker: ScratchBroker | undefined;
  before(async () => {
    await ensureStack(['kafka']); // the stack's jars
    broker = await startScratchBroker();
  });
  after(async () => {
    await broker?.stop();
  });

  it("a reader's first poll waits out the group coordinator's loading and delivers every record", async () => {
    const topic = 'fresh';
    const crashes: string[] = [];
    const kafka = new Kafka({
      clientId: 'floe-test',
      brokers: broker!.brokers,
      logCreator: () => (e) => {
        if (/^Crash/.test(e.log.message)) crashes.push(e.log.message);
      },
    });
    const admin = kafka.admin();
    await admin.connect();
    await createTopicsReady(admin, [{ topic, numPartitions: 2 }]);
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic, messages: Array.from({ length: 200 }, (_, i) => ({ partition: i % 2, value: String(i) })) });
    await producer.disconnect();
    const h = (await topicWatermarks(admin, topic)).high;
    await admin.disconnect();
    // Twelve readers at once, twelve groups: their coordinators (partitions of __consumer_offsets)
    // are still loading when the joins arrive.
    const pollAll = async () => {
      const got: Got = [];
      const out = await pollPartitions(
        kafka,
        topic,
        [0, 1],
        {},
        { maxWaitMs: 60_000, maxRecords: 1e6, maxBytes: 1 << 30, stopAt: h },
        (r) => {
          got.push({ p: r.partition, o: BigInt(r.offset) });
        },
      );
      assert.deepEqual(out.next, h);
      assertContiguous(got, {}, h);
    };
    await Promise.all(Array.from({ length: 12 }, pollAll));
    await pollAll();
    if (process.env.FLOE_TEST_VERBOSE) console.log(`consumer crashes on the fresh broker: ${JSON.stringify(crashes)}`);
  });

  // Issue 29 item 2: the broker keeps its default group.initial.rebalance.delay.ms (3 s before a
  // new group's first assignment). Before, the poll's wait started before the join: a 2 s commit
  // interval read nothing, cycle after cycle.
  it('on a stock broker a 2 s poll reads what is there, and a kept reader joins its group once for many polls', async () => {
    const topic = 'stock';
    let joins = 0;
    const kafka = new Kafka({
      clientId: 'floe-test',
      brokers: broker!.brokers,
      logCreator: () => (e) => {
        if (e.log.message === 'Consumer has joined the group') joins++;
      },
    });
    const admin = kafka.admin();
    await admin.connect();
    await createTopicsReady(admin, [{ topic, numPartitions: 2 }]);
    const producer = kafka.producer();
    await producer.connect();
    const produce = (from: number, n: number) =>
      producer.send({ topic, messages: Array.from({ length: n }, (_, i) => ({ partition: (from + i) % 2, value: String(from + i) })) });
    await produce(0, 100);
    const bounds = { maxWaitMs: 2000, maxRecords: 1e6, maxBytes: 1 << 30 };
    const got: Got = [];
    const one = await pollPartitions(kafka, topic, [0, 1], {}, bounds, (r) => {
      got.push({ p: r.partition, o: BigInt(r.offset) });
    });
    assertContiguous(got, {}, one.next);
    assert.equal(one.records, 100, 'a 2 s poll of a new group read what was there');
    assert.equal(joins, 1);

    const pool = new ConsumerPool(kafka);
    try {
      let next: Offsets = {};
      const all: Got = [];
      for (let cycle = 0; cycle < 4; cycle++) {
        await produce(100 + cycle * 10, 10);
        const out = await pool.poll('db.stock', topic, [0, 1], next, bounds, (r) => {
          all.push({ p: r.partition, o: BigInt(r.offset) });
        });
        next = out.next;
      }
      assertContiguous(all, {}, next);
      assert.equal(all.length, 140, 'four 2 s cycles read every record once');
      assert.equal(joins, 2, 'the kept reader joined its group once for four cycles');
    } finally {
      await pool.close();
      await producer.disconnect();
      await admin.disconnect();
    }
  });
});

// Kafka restarts, on a broker of the test's own (the stack's broker serves other test files).
describe('kept Kafka consumers across broker restarts (a broker of its own)', { timeout: 10 * 60_000 }, () => {
  const topic = `it_pool_restart_${Date.now().toString(36)}`;
  let broker: ScratchBroker;
  let kafka: Kafka;
  let admin: ReturnType<Kafka['admin']>;
  let producer: ReturnType<Kafka['producer']>;
  let pool: ConsumerPool;
  let next: Offsets = { 0: '0', 1: '0' };
  const quiet = (m: string) => {
    if (process.env.FLOE_TEST_VERBOSE) console.log(m);
  };

  before(async () => {
    await ensureStack(['kafka']); // the stack's jars
    broker = await startScratchBroker();
    kafka = new Kafka({ clientId: 'floe-test', brokers: broker.brokers, logLevel: logLevel.NOTHING, retry: { retries: 8 } });
    admin = kafka.admin();
    producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, retry: { retries: 30, maxRetryTime: 5000 } });
    await admin.connect();
    await createTopicsReady(admin, [{ topic, numPartitions: 2 }]);
    await producer.connect();
    pool = new ConsumerPool(kafka);
  });
  after(async () => {
    await pool?.close();
    await producer?.disconnect().catch(() => undefined);
    await admin?.disconnect().catch(() => undefined);
    await broker?.stop();
  });

  const produce = async (n: number) => {
    for (let i = 0; i < n; i += 100)
      await producer.send({
        topic,
        messages: Array.from({ length: Math.min(100, n - i) }, (_, j) => ({ partition: j % 2, value: `v${i + j}` })),
      });
  };
  const high = async () => (await topicWatermarks(admin, topic)).high;
  const restartKafka = async () => {
    const t0 = Date.now();
    await broker.restart();
    quiet(`kafka restarted in ${Date.now() - t0} ms`);
  };
  /** One poll of the kept reader from `next` (as an ingest cycle polls: it knows what is there). */
  const poll = async (bounds: Partial<PollBounds>, onRecord?: (n: number) => void) => {
    const got: Got = [];
    const start = { ...next };
    const t0 = Date.now();
    const out = await pool.poll(
      'db.r',
      topic,
      [0, 1],
      start,
      { maxWaitMs: 5000, maxRecords: 1_000_000, maxBytes: 1 << 30, ...bounds },
      (r) => {
        got.push({ p: r.partition, o: BigInt(r.offset) });
        onRecord?.(got.length);
      },
    );
    assertContiguous(got, start, out.next);
    next = out.next;
    return { got, next: out.next, ms: Date.now() - t0 };
  };
  /**
   * A cycle bounded by what is there (a drain), retried as the ingest retries a failed poll: it
   * either catches up or fails as the broker's trouble (a kept consumer still reconnecting after a
   * restart is not served in time), never an empty poll that looks caught up.
   */
  const drainPoll = async (stopAt: Offsets) => {
    for (let attempt = 1; ; attempt++) {
      try {
        const r = await poll({ stopAt });
        assert.deepEqual(r.next, stopAt, `caught up (${r.got.length} records in ${r.ms} ms)`);
        return { ...r, attempt };
      } catch (e) {
        assert.ok(serviceTrouble(e), `a failed poll is the broker's trouble: ${String(e)}`);
        quiet(`poll attempt ${attempt} failed: ${String(e)}`);
        if (attempt >= 10) throw e;
      }
    }
  };

  /** `f` retried as an activity would be (a few attempts a second apart). */
  const retried = async <T>(f: () => Promise<T>): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await f();
      } catch (e) {
        if (attempt >= 10) throw e;
        quiet(`attempt ${attempt} failed: ${String(e)}`);
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  };

  it('a poll right after a restart delivers everything there from the cursor, or fails to be retried: never an empty poll', async () => {
    await produce(400);
    let h = await high();
    const first = await poll({ stopAt: h });
    assert.deepEqual(first.next, h);
    assert.equal(pool.size, 1);

    const ids = createTopicIds({ clientId: 'floe-test', brokers: broker.brokers } as KafkaConfig);
    try {
      const id = await ids.of(topic);
      assert.match(id ?? '', /^[0-9a-f-]{36}$/);
      await restartKafka(); // the reader was idle (paused) throughout
      await produce(200);
      h = await high();
      // A draining ingest cycle (5 s to catch up with what is there): an empty poll would end the drain.
      const after = await drainPoll(h);
      assert.equal(after.got.length, 200);
      // The topic-id client of the worker (each poll asks it) reconnects as kafkajs does: same topic, same id.
      assert.equal(await retried(() => ids.of(topic)), id);
    } finally {
      await ids.close();
    }

    // and the reader kept from now on serves the next cycle as before
    await produce(100);
    h = await high();
    const again = await poll({ stopAt: h });
    assert.deepEqual(again.next, h);
    assert.equal(pool.size, 1);
  });

  it("a new reader's first poll right after a restart waits out the group coordinator's loading", async () => {
    await produce(100);
    const h = await high();
    await restartKafka();
    // Every poll a new group (new coordinator partitions of __consumer_offsets, loading after
    // the start): a join that crashes is restarted by kafkajs, and the poll waits for it.
    for (let i = 0; i < 5; i++) {
      const got: Got = [];
      const out = await pollPartitions(
        kafka,
        topic,
        [0, 1],
        {},
        { maxWaitMs: 60_000, maxRecords: 1_000_000, maxBytes: 1 << 30, stopAt: h },
        (r) => {
          got.push({ p: r.partition, o: BigInt(r.offset) });
        },
      );
      assert.deepEqual(out.next, h);
      assertContiguous(got, {}, h);
    }
  });

  it('a restart during a poll: the poll goes on from exactly where it was', async () => {
    const h = await high();
    const stopAt = { 0: String(BigInt(h[0]!) + 150n), 1: String(BigInt(h[1]!) + 150n) };
    const lag = Number(BigInt(h[0]!) - BigInt(next[0]!) + BigInt(h[1]!) - BigInt(next[1]!));
    let reachedHead!: () => void;
    const atHead = new Promise<void>((resolve) => (reachedHead = resolve));
    const polling = poll({ stopAt, maxWaitMs: 180_000 }, (n) => {
      if (n >= lag) reachedHead();
    });
    await Promise.race([atHead, polling]);
    await restartKafka();
    await produce(300);
    const r = await polling;
    assert.deepEqual(r.next, stopAt, `reached ${JSON.stringify(stopAt)} (${r.got.length} records in ${r.ms} ms)`);
    assert.equal(r.got.length, lag + 300);
  });

  it('cycles every 3 s straight through a restart: no gap, no repeat, every record once', async () => {
    const from = { ...next };
    const all: Got = [];
    let producing = true;
    const producerLoop = (async () => {
      while (producing) {
        await produce(4);
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    const t0 = Date.now();
    let restarted: Promise<void> | undefined;
    while (Date.now() - t0 < 35_000) {
      if (!restarted && Date.now() - t0 > 8000) restarted = restartKafka();
      const h = await high().catch(() => undefined);
      if (!h) continue; // the broker is down: a cycle's plan fails and is retried
      const r = await poll({ maxWaitMs: 3000 }).catch((e: Error) => {
        quiet(`poll failed: ${e.message}`);
        return { got: [] as Got };
      });
      all.push(...r.got);
    }
    await restarted;
    producing = false;
    await producerLoop;
    const h = await high();
    const last = await drainPoll(h);
    all.push(...last.got);
    assertContiguous(all, from, h);
  });
});
