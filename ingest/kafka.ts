/**
 * Reading a bounded slice of a topic with kafkajs.
 *
 * Correctness never depends on Kafka consumer-group offsets (the table holds the cursor): each poll uses
 * a fresh, throwaway group id (so a killed worker's zombie member cannot delay a rebalance), seeks
 * every partition to the offset the *table* says is next, and never commits offsets.
 */
import { randomUUID } from 'node:crypto';
import { AssignerProtocol, type Admin, type Kafka, type PartitionAssigner } from 'kafkajs';
import type { KafkaRecord } from './decode';
import type { Offsets } from './cursor';

export interface Watermarks {
  low: Offsets;
  high: Offsets;
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
export function onlyPartitions(topic: string, partitions: number[]): PartitionAssigner {
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
}

export interface PollOutcome {
  /** next offset per partition after the last record handed to `onRecord` */
  next: Offsets;
  records: number;
  bytes: number;
}

/**
 * Delivers records of `partitions` from `start` (inclusive) in offset order per partition until a
 * bound is hit. Records past the bound are not delivered and stay for the next cycle.
 */
export async function pollPartitions(
  kafka: Kafka,
  topic: string,
  partitions: number[],
  allPartitions: number[],
  start: Offsets,
  bounds: PollBounds,
  onRecord: (r: KafkaRecord) => void,
  onProgress?: (o: PollOutcome) => void,
): Promise<PollOutcome> {
  const next: Offsets = { ...start };
  const outcome: PollOutcome = { next, records: 0, bytes: 0 };
  const caughtUp = () =>
    bounds.stopAt !== undefined && partitions.every((p) => BigInt(next[String(p)] ?? '0') >= BigInt(bounds.stopAt![String(p)] ?? '0'));
  if (caughtUp()) return outcome;

  const consumer = kafka.consumer({
    groupId: `floe-poll-${randomUUID()}`,
    sessionTimeout: 10_000,
    heartbeatInterval: 1000,
    maxWaitTimeInMs: 250,
    retry: { retries: 10 },
    partitionAssigners: [onlyPartitions(topic, partitions)],
  });
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => {
    finish = resolve;
  });
  let done = false;
  const stop = () => {
    if (!done) {
      done = true;
      finish();
    }
  };
  const timer = setTimeout(stop, bounds.maxWaitMs);
  bounds.signal?.addEventListener('abort', stop, { once: true });
  const progress = setInterval(() => onProgress?.(outcome), 2000);
  const mine = new Set(partitions);
  try {
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    let crashed: Error | undefined;
    consumer.on(consumer.events.CRASH, (e) => {
      if (!(e.payload as { restart?: boolean }).restart) {
        crashed = e.payload.error;
        stop();
      }
    });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
        if (!mine.has(batch.partition)) return;
        const key = String(batch.partition);
        for (const m of batch.messages) {
          if (done || !isRunning() || isStale()) return;
          // A fetch issued before our seek took effect may start earlier: skip what the table has.
          if (BigInt(m.offset) < BigInt(next[key] ?? '0')) continue;
          if (bounds.limit?.[key] !== undefined && BigInt(m.offset) >= BigInt(bounds.limit[key]!)) break;
          const size = (m.value?.length ?? 0) + (m.key?.length ?? 0);
          if (outcome.records >= bounds.maxRecords || (outcome.records > 0 && outcome.bytes + size > bounds.maxBytes)) {
            stop();
            return;
          }
          onRecord({ partition: batch.partition, offset: m.offset, timestamp: m.timestamp, key: m.key, value: m.value });
          outcome.records++;
          outcome.bytes += size;
          next[key] = (BigInt(m.offset) + 1n).toString();
          resolveOffset(m.offset);
          // A full cycle ends now, not when the next record happens to arrive (a backlog that ends
          // exactly at the bound would otherwise wait out the whole commit interval).
          if (outcome.records >= bounds.maxRecords || outcome.bytes >= bounds.maxBytes) {
            stop();
            return;
          }
        }
        // Transaction markers and compacted gaps: the batch tells where the partition continues.
        if (!done && batch.messages.length > 0) {
          let last = BigInt(batch.lastOffset()) + 1n;
          if (bounds.limit?.[key] !== undefined && last > BigInt(bounds.limit[key]!)) last = BigInt(bounds.limit[key]!);
          if (last > BigInt(next[key] ?? '0') && outcome.records < bounds.maxRecords) next[key] = last.toString();
        }
        await heartbeat();
        if (caughtUp()) stop();
      },
    });
    // A batch of only control records (transaction markers) or aborted records never reaches
    // eachBatch (kafkajs resolves it internally), yet the partition continues after it: without
    // this, a range or cursor ending on a marker never advances and a backfill never finishes.
    consumer.on(consumer.events.END_BATCH_PROCESS, (e) => {
      const b = e.payload as { topic: string; partition: number; batchSize: number; firstOffset: string | null; lastOffset: string };
      // firstOffset null: nothing at or past the fetch offset came back (kafkajs then reports the
      // fetch offset itself as last): no evidence the partition continues, so do not move.
      if (done || b.topic !== topic || b.batchSize !== 0 || b.firstOffset === null || !mine.has(b.partition)) return;
      const key = String(b.partition);
      let last = BigInt(b.lastOffset) + 1n;
      if (bounds.limit?.[key] !== undefined && last > BigInt(bounds.limit[key]!)) last = BigInt(bounds.limit[key]!);
      if (last > BigInt(next[key] ?? '0')) next[key] = last.toString();
      if (caughtUp()) stop();
    });
    for (const p of partitions) consumer.seek({ topic, partition: p, offset: next[String(p)] ?? '0' });
    const others = allPartitions.filter((p) => !mine.has(p));
    if (others.length > 0) consumer.pause([{ topic, partitions: others }]);
    await finished;
    if (crashed) throw crashed;
    return outcome;
  } finally {
    clearTimeout(timer);
    clearInterval(progress);
    await consumer.disconnect().catch(() => undefined);
  }
}
