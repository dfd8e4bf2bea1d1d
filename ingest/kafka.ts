/**
 * Reading a bounded slice of a topic with kafkajs.
 *
 * Correctness never depends on Kafka consumer-group offsets (the table holds the cursor): every
 * poll seeks each partition to the offset the *table* says is next, and no offset is ever
 * committed. A `PartitionReader` is one consumer in a group of its own (random id, so a killed
 * worker's zombie member can never delay anyone's rebalance), assigned exactly its partitions.
 * The worker keeps one reader per (table, partition group) alive across cycles (`ConsumerPool`):
 * a group join costs `group.initial.rebalance.delay.ms` (3 s on a default broker) and is paid
 * once per worker, not once per cycle.
 *
 * A kept consumer may deliver a batch fetched before the current poll's seek. Two guards make
 * such a batch harmless: its records are used only when it was fetched from at or before the
 * poll's position (`batch.fetchedOffset <= next`: Kafka returned everything from there on, so no
 * record between `next` and the batch is missing), and a batch of only control or aborted records
 * moves the position only when it starts at or before it.
 */
import { randomUUID } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { AssignerProtocol, type Admin, type Consumer, type EachBatchPayload, type Kafka, type PartitionAssigner } from 'kafkajs';
import type { KafkaRecord } from './decode';
import type { Offsets } from '../table/cursor';

export interface Watermarks {
  low: Offsets;
  high: Offsets;
}

/** Whether `e`, or an error it was caused by (kafkajs wraps retried errors), is Kafka's UNKNOWN_TOPIC_OR_PARTITION. */
export function isUnknownTopic(e: unknown): boolean {
  for (let cur = e as { type?: unknown; cause?: unknown } | undefined, depth = 0; cur && depth < 8; cur = cur.cause as typeof cur, depth++)
    if (cur.type === 'UNKNOWN_TOPIC_OR_PARTITION') return true;
  return false;
}

export async function topicWatermarks(admin: Admin, topic: string): Promise<Watermarks> {
  const parts = await admin.fetchTopicOffsets(topic);
  const low: Offsets = {},
    high: Offsets = {};
  for (const p of parts) {
    low[String(p.partition)] = p.low;
    high[String(p.partition)] = p.high;
  }
  return { low, high };
}

/**
 * Assigns exactly `partitions` of `topic` to the group's member (a poll's group is its own, with
 * one member). The default round-robin assigner hands every partition to that member: each of a
 * cycle's N group polls then fetched and CRC-checked the whole topic to use 1/N of it.
 */
function onlyPartitions(topic: string, partitions: number[]): PartitionAssigner {
  const name = 'FloeOnlyPartitions';
  return () => ({
    name,
    version: 1,
    async assign({ members }) {
      return members.map(({ memberId }, i) => ({
        memberId,
        memberAssignment: AssignerProtocol.MemberAssignment.encode({
          version: 1,
          assignment: i === 0 ? { [topic]: partitions } : {},
          userData: Buffer.alloc(0),
        }),
      }));
    },
    protocol({ topics }) {
      return { name, metadata: AssignerProtocol.MemberMetadata.encode({ version: 1, topics, userData: Buffer.alloc(0) }) };
    },
  });
}

export interface PollBounds {
  maxWaitMs: number;
  maxRecords: number;
  maxBytes: number;
  /** End as soon as every partition reached `stopAt` (the high watermark when the poll began). */
  stopAt?: Offsets;
  /** Exclusive upper bound per partition: records at or past it are never delivered (backfills). */
  limit?: Offsets;
  /** Stops the poll early (activity cancellation); the caller decides what that means. */
  signal?: AbortSignal;
  /** How long a new reader may take to join its group (default GROUP_JOIN_TIMEOUT_MS); the wait above counts from the join. */
  joinTimeoutMs?: number;
}

interface PollOutcome {
  /** next offset per partition after the last record handed to `onRecord` */
  next: Offsets;
  records: number;
  bytes: number;
}

/** One poll's state: where each partition stands, its bounds, and how it ends. */
export class PollSink {
  readonly next: Offsets;
  readonly outcome: PollOutcome;
  done = false;
  failure: Error | undefined;
  readonly finished: Promise<void>;
  private finish!: () => void;

  constructor(
    readonly topic: string,
    readonly partitions: number[],
    start: Offsets,
    readonly bounds: PollBounds,
    readonly onRecord: (r: KafkaRecord) => void | Promise<void>,
  ) {
    this.next = { ...start };
    this.outcome = { next: this.next, records: 0, bytes: 0 };
    this.finished = new Promise<void>((resolve) => {
      this.finish = resolve;
    });
  }

  /** The record being handled asynchronously, if any. */
  inflight: Promise<void> | undefined;

  /** Resolves once no record is being handled (a stopped poll's outcome is final only then). */
  async settled(): Promise<void> {
    while (this.inflight) await this.inflight.catch(() => undefined);
  }

  stop(failure?: Error): void {
    if (this.done) return;
    this.done = true;
    this.failure = failure;
    this.finish();
  }

  /** Whether any partition's position moved from `start` (a record, or control records passed). */
  moved(start: Offsets): boolean {
    return this.partitions.some((p) => (this.next[String(p)] ?? '0') !== (start[String(p)] ?? '0'));
  }

  caughtUp(): boolean {
    const stopAt = this.bounds.stopAt;
    return stopAt !== undefined && this.partitions.every((p) => BigInt(this.next[String(p)] ?? '0') >= BigInt(stopAt[String(p)] ?? '0'));
  }

  private limitOf(key: string): bigint | undefined {
    const l = this.bounds.limit?.[key];
    return l === undefined ? undefined : BigInt(l);
  }

  async batch({ batch, resolveOffset, heartbeat, isRunning, isStale }: EachBatchPayload): Promise<void> {
    const key = String(batch.partition);
    if (batch.topic !== this.topic || !this.partitions.includes(batch.partition)) return;
    // Fetched from beyond this poll's position (before its seek took effect): records between the
    // position and this batch would be missing. The seek makes the next fetch start right.
    // kafkajs' Batch carries the offset it was fetched from; its typings omit it (kafkajs 2.2.4).
    const fetchedOffset = (batch as unknown as { fetchedOffset?: string }).fetchedOffset;
    if (fetchedOffset === undefined)
      throw new Error('kafkajs batch without fetchedOffset: the stale-fetch guard cannot work with this kafkajs');
    if (BigInt(fetchedOffset) > BigInt(this.next[key] ?? '0')) return;
    const limit = this.limitOf(key);
    // kafkajs keeps only the last offset resolved (its next fetch starts after it), so the loop
    // resolves the last record handled once, before each await and on the way out, instead of
    // after every record (a Long parsed, added and printed per record).
    let handled: string | undefined;
    const resolveHandled = (): void => {
      if (handled !== undefined) resolveOffset(handled);
      handled = undefined;
    };
    try {
      for (const m of batch.messages) {
        if (this.done || !isRunning() || isStale()) return;
        const offset = BigInt(m.offset);
        // A fetch issued before our seek took effect may start earlier: skip what the table has.
        if (offset < BigInt(this.next[key] ?? '0')) continue;
        if (limit !== undefined && offset >= limit) break;
        const size = (m.value?.length ?? 0) + (m.key?.length ?? 0);
        const o = this.outcome;
        if (o.records >= this.bounds.maxRecords || (o.records > 0 && o.bytes + size > this.bounds.maxBytes)) {
          this.stop();
          return;
        }
        try {
          // A promise only when the record needed something first (its schema fetched, the table evolved).
          const pending = this.onRecord({
            partition: batch.partition,
            offset: m.offset,
            timestamp: m.timestamp,
            key: m.key,
            value: m.value,
            topic: batch.topic,
            headers: m.headers,
          });
          if (pending) {
            // The poll's outcome waits for it (`settled`): the record is handled, so it counts below
            // even when the poll was stopped meanwhile.
            this.inflight = pending;
            resolveHandled();
            try {
              await pending;
            } finally {
              this.inflight = undefined;
            }
          }
        } catch (e) {
          // Thrown out of eachBatch, kafkajs would retry the batch and then drop the error: the poll
          // would just time out. The poll fails with it instead (this record stays unread).
          this.stop(e instanceof Error ? e : new Error(String(e)));
          return;
        }
        o.records++;
        o.bytes += size;
        this.next[key] = (offset + 1n).toString();
        handled = m.offset;
        // A full cycle ends now, not when the next record happens to arrive (a backlog that ends
        // exactly at the bound would otherwise wait out the whole commit interval).
        if (o.records >= this.bounds.maxRecords || o.bytes >= this.bounds.maxBytes) {
          this.stop();
          return;
        }
      }
    } finally {
      resolveHandled();
    }
    // Transaction markers and compacted gaps: the batch tells where the partition continues.
    if (!this.done && !isStale() && batch.messages.length > 0) {
      let last = BigInt(batch.lastOffset()) + 1n;
      if (limit !== undefined && last > limit) last = limit;
      if (last > BigInt(this.next[key] ?? '0') && this.outcome.records < this.bounds.maxRecords) this.next[key] = last.toString();
    }
    await heartbeat();
    if (this.caughtUp()) this.stop();
  }

  /**
   * A batch of only control records (transaction markers) or aborted records never reaches
   * eachBatch (kafkajs resolves it internally), yet the partition continues after it: without
   * this, a range or cursor ending on a marker never advances and a backfill never finishes.
   */
  controlBatch(b: { topic: string; partition: number; batchSize: number; firstOffset: string | null; lastOffset: string }): void {
    // firstOffset null: nothing at or past the fetch offset came back (kafkajs then reports the
    // fetch offset itself as last): no evidence the partition continues, so do not move.
    if (this.done || b.topic !== this.topic || b.batchSize !== 0 || b.firstOffset === null || !this.partitions.includes(b.partition))
      return;
    const key = String(b.partition);
    // Only a batch that covers the position proves every offset from it to its end is filtered.
    if (BigInt(b.firstOffset) > BigInt(this.next[key] ?? '0')) return;
    let last = BigInt(b.lastOffset) + 1n;
    const limit = this.limitOf(key);
    if (limit !== undefined && last > limit) last = limit;
    if (last > BigInt(this.next[key] ?? '0')) this.next[key] = last.toString();
    if (this.caughtUp()) this.stop();
  }
}

/**
 * How long a reader waits for its group's join before the poll fails: a join takes the broker's
 * `group.initial.rebalance.delay.ms` (3 s by default), plus a coordinator's loading after a broker
 * start (seconds); a minute is a broker in trouble.
 */
const GROUP_JOIN_TIMEOUT_MS = 60_000;

/**
 * A reader's group join did not complete in time. The name makes it a service's trouble
 * (activities/failures.ts: every `KafkaJS*` error), so the ingest retries it with backoff and shows
 * `stalled`; it never bisects the records it did not read.
 */
export class KafkaGroupJoinTimeout extends Error {
  override readonly name = 'KafkaJSGroupJoinTimeout';
  constructor(topic: string, partitions: number[], ms: number) {
    super(
      `kafka: the reader of ${topic} partitions ${partitions.join(',')} had not joined its consumer group after ${ms} ms (a group coordinator loading or unreachable); nothing was read, the poll is retried`,
    );
  }
}

/** A poll bounded by what is there read nothing in its whole wait (a service's trouble, like the class above). */
export class KafkaNothingServed extends Error {
  override readonly name = 'KafkaJSNothingServed';
  constructor(topic: string, partitions: number[], ms: number) {
    super(
      `kafka: nothing of ${topic} partitions ${partitions.join(',')} was served in ${ms} ms although records were there (a consumer reconnecting after a broker restart?); the poll is retried`,
    );
  }
}

/** One kafkajs consumer, in a group of its own, reading a fixed set of partitions poll after poll. */
class PartitionReader {
  private readonly consumer: Consumer;
  private sink: PollSink | null = null;
  private running: Promise<void> | null = null;
  /** Set by any consumer crash: a reader that crashed is not reused. */
  broken = false;
  busy = false;
  idleSince = Date.now();

  constructor(
    kafka: Kafka,
    readonly topic: string,
    readonly partitions: number[],
  ) {
    this.consumer = kafka.consumer({
      groupId: `floe-poll-${randomUUID()}`,
      // A reader never creates a topic: on a broker with auto.create.topics.enable, a kept consumer
      // of a deleted topic would otherwise recreate it (empty, behind the table's cursor).
      allowAutoTopicCreation: false,
      sessionTimeout: 10_000,
      heartbeatInterval: 1000,
      // Also how long a paused (idle) consumer sleeps between checks: the wake-up delay of the next poll.
      maxWaitTimeInMs: 100,
      retry: { retries: 10 },
      partitionAssigners: [onlyPartitions(topic, partitions)],
    });
  }

  /**
   * Connects and runs the consumer, resolving once it has joined its group. kafkajs' `run` also
   * resolves when the join crashed (a coordinator still loading after a broker start: its
   * `restart` comes 300 ms later, with no group meanwhile, so a seek would throw "Consumer group
   * was not initialized"): the reader waits for the join its restart makes. A crash kafkajs does
   * not restart from fails the wait with its error. The poll's timer and signal still end a wait
   * that never ends (the activity retries).
   */
  private start(): Promise<void> {
    if (this.running) return this.running;
    this.running = (async () => {
      const c = this.consumer;
      let joined!: () => void;
      let failed!: (e: Error) => void;
      const join = new Promise<void>((resolve, reject) => {
        joined = resolve;
        failed = reject;
      });
      let hasJoined = false;
      c.on(c.events.GROUP_JOIN, () => {
        if (hasJoined) {
          // A rejoin (the broker restarted, the session expired): kafkajs drops the positions it
          // resolved and would fetch from the earliest offset again. A poll under way goes on
          // from where it is; the reader is not kept after it.
          this.broken = true;
          const sink = this.sink;
          if (sink) for (const p of this.partitions) c.seek({ topic: this.topic, partition: p, offset: sink.next[String(p)] ?? '0' });
          return;
        }
        hasJoined = true;
        joined();
      });
      c.on(c.events.CRASH, (e) => {
        const restart = (e.payload as { restart?: boolean }).restart === true;
        // Restarted before its first join, the consumer lost nothing (no seek, no pause yet).
        if (hasJoined || !restart) this.broken = true;
        if (!restart) {
          failed(e.payload.error);
          this.sink?.stop(e.payload.error);
        }
      });
      c.on(c.events.END_BATCH_PROCESS, (e) => this.sink?.controlBatch(e.payload as Parameters<PollSink['controlBatch']>[0]));
      await c.connect();
      await c.subscribe({ topics: [this.topic], fromBeginning: true });
      await c.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        eachBatch: async (payload) => {
          await this.sink?.batch(payload);
        },
      });
      await join;
      // kafkajs' runner goes on from the join to its fetch loop in the ticks after the event: a
      // close from here on stops a running consumer, not one that starts after it (and runs on).
      await nextTurn();
    })();
    // A failed start is not retried on this reader: the pool hands out a new one.
    this.running.catch(() => (this.broken = true));
    return this.running;
  }

  /**
   * Delivers records of the reader's partitions from `start` (inclusive) in offset order per
   * partition until a bound is hit. Records past the bound are not delivered and stay for the
   * next cycle. One poll at a time.
   */
  async poll(
    start: Offsets,
    bounds: PollBounds,
    onRecord: (r: KafkaRecord) => void | Promise<void>,
    onProgress?: (o: PollOutcome) => void,
  ): Promise<PollOutcome> {
    if (this.sink) throw new Error('PartitionReader.poll: a poll is already running');
    const sink = new PollSink(this.topic, this.partitions, start, bounds, onRecord);
    if (sink.caughtUp()) return sink.outcome;
    const onAbort = () => sink.stop();
    // An already-aborted signal never fires 'abort' again: stop now, or the poll reads a whole interval.
    if (bounds.signal?.aborted) sink.stop();
    else bounds.signal?.addEventListener('abort', onAbort, { once: true });
    const progress = setInterval(() => onProgress?.(sink.outcome), 2000);
    // The poll's wait (one commit interval) counts from the join, not from the poll's start: a
    // new group's join takes the broker's group.initial.rebalance.delay.ms (3 s by default), and a
    // timer started before it would end an interval of 2 s having read nothing, every cycle. The
    // join has a bound of its own; missing it is the broker's trouble, never the records'.
    let timer: NodeJS.Timeout | undefined;
    let joinTimer: NodeJS.Timeout | undefined;
    const joinTimeoutMs = bounds.joinTimeoutMs ?? GROUP_JOIN_TIMEOUT_MS;
    const joinBound = new Promise<'late'>((resolve) => (joinTimer = setTimeout(() => resolve('late'), joinTimeoutMs)));
    try {
      const joining = this.start().then(() => 'joined' as const);
      // A join that fails after the race was decided (late, or the poll stopped) must not surface
      // as an unhandled rejection: the reader is broken then, and the pool drops it.
      joining.catch(() => undefined);
      const joined = await Promise.race([joining, sink.finished.then(() => 'stopped' as const), joinBound]);
      clearTimeout(joinTimer);
      if (joined === 'late') {
        // This reader may still join later; it is not kept (the pool hands out a new one).
        this.broken = true;
        throw new KafkaGroupJoinTimeout(this.topic, this.partitions, joinTimeoutMs);
      }
      if (sink.done) {
        if (sink.failure) throw sink.failure;
        return sink.outcome;
      }
      timer = setTimeout(() => sink.stop(), bounds.maxWaitMs);
      this.sink = sink;
      const mine = [{ topic: this.topic, partitions: this.partitions }];
      for (const p of this.partitions) this.consumer.seek({ topic: this.topic, partition: p, offset: sink.next[String(p)] ?? '0' });
      this.consumer.resume(mine);
      await sink.finished;
      await sink.settled();
      // A consumer restarting after a crash has no group to pause; the broken reader is not kept.
      if (!this.broken) this.consumer.pause(mine);
      if (sink.failure) throw sink.failure;
      // Bounded by what is there (a drain, a retried attempt), a poll whose wait ran out without
      // moving at all was not served by Kafka (a consumer still reconnecting after a broker
      // restart): returned, it would look caught up and end a drain with records left. It fails,
      // as the broker's trouble, and the reader is not kept.
      if (bounds.stopAt !== undefined && !bounds.signal?.aborted && !sink.caughtUp() && !sink.moved(start)) {
        this.broken = true;
        throw new KafkaNothingServed(this.topic, this.partitions, bounds.maxWaitMs);
      }
      return sink.outcome;
    } finally {
      this.sink = null;
      this.idleSince = Date.now();
      clearTimeout(timer);
      clearTimeout(joinTimer);
      clearInterval(progress);
      bounds.signal?.removeEventListener('abort', onAbort);
    }
  }

  /**
   * Stops the consumer. One still joining its group (its poll's wait ended first) is stopped once
   * joined: kafkajs' stop during a join lets the runner start afterwards, never to stop.
   */
  async close(): Promise<void> {
    this.broken = true;
    if (this.running) {
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, READER_JOIN_CLOSE_WAIT_MS)));
      await Promise.race([this.running.catch(() => undefined), bound]);
      clearTimeout(timer);
    }
    await this.consumer.disconnect().catch(() => undefined);
  }
}

/** How long a reader's close waits for a join under way before it disconnects anyway. */
const READER_JOIN_CLOSE_WAIT_MS = 30_000;

/**
 * The worker's readers, one per (table, topic, partition group), kept across cycles. A reader
 * that is busy (a retried attempt while the old one still runs here) or broken is not handed out:
 * that poll gets a reader of its own, closed after it. Readers idle past `idleMs` are closed.
 */
export class ConsumerPool {
  private readonly readers = new Map<string, PartitionReader>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly kafka: Kafka,
    private readonly idleMs = 5 * 60_000,
  ) {
    this.sweeper = setInterval(() => void this.closeIdle(), Math.min(60_000, idleMs)).unref();
  }

  async poll(
    owner: string,
    topic: string,
    partitions: number[],
    start: Offsets,
    bounds: PollBounds,
    onRecord: (r: KafkaRecord) => void | Promise<void>,
    onProgress?: (o: PollOutcome) => void,
  ): Promise<PollOutcome> {
    const key = `${owner}|${topic}|${partitions.join(',')}`;
    let reader = this.readers.get(key);
    if (reader?.broken) {
      this.readers.delete(key);
      void reader.close();
      reader = undefined;
    }
    const pooled = reader === undefined || !reader.busy;
    if (reader === undefined) this.readers.set(key, (reader = new PartitionReader(this.kafka, topic, partitions)));
    const r = pooled ? reader : new PartitionReader(this.kafka, topic, partitions);
    r.busy = true;
    try {
      return await r.poll(start, bounds, onRecord, onProgress);
    } finally {
      r.busy = false;
      if (!pooled) await r.close();
      else if (r.broken) {
        this.readers.delete(key);
        await r.close();
      }
    }
  }

  /** Closes the idle readers of `topic` (it was deleted); a busy one is closed by its poll's end when it broke. */
  async closeTopic(topic: string): Promise<void> {
    for (const [key, r] of this.readers) {
      if (r.topic === topic && !r.busy) {
        this.readers.delete(key);
        await r.close();
      }
    }
  }

  /** Readers kept (for tests and diagnostics). */
  get size(): number {
    return this.readers.size;
  }

  private async closeIdle(): Promise<void> {
    const now = Date.now();
    for (const [key, r] of this.readers) {
      if (!r.busy && now - r.idleSince > this.idleMs) {
        this.readers.delete(key);
        await r.close();
      }
    }
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    const all = [...this.readers.values()];
    this.readers.clear();
    await Promise.all(all.map((r) => r.close()));
  }
}

/**
 * One poll with a reader of its own, closed afterwards (tools and tests; the worker polls through
 * its `ConsumerPool`).
 */
export async function pollPartitions(
  kafka: Kafka,
  topic: string,
  partitions: number[],
  start: Offsets,
  bounds: PollBounds,
  onRecord: (r: KafkaRecord) => void | Promise<void>,
  onProgress?: (o: PollOutcome) => void,
): Promise<PollOutcome> {
  const r = new PartitionReader(kafka, topic, partitions);
  try {
    return await r.poll(start, bounds, onRecord, onProgress);
  } finally {
    // The outcome is complete here and the reader commits no offsets, so its leaving the group
    // cannot matter for correctness: wait a moment for a clean close, not for a slow LeaveGroup
    // (cycles were seen to stall ~10 s, the session timeout, after their polls were done).
    await closeWithin(r, READER_CLOSE_WAIT_MS);
  }
}

/** How long a finished poll waits for its reader's close before leaving it to finish alone. */
const READER_CLOSE_WAIT_MS = 1000;

export async function closeWithin(r: { close(): Promise<void> }, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const closing = r.close().catch(() => undefined);
  await Promise.race([closing, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
