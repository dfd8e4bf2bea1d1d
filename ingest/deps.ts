/**
 * The resources every ingest and maintenance step of a worker uses: the config, the catalog +
 * FileIO (`Tables`) and Kafka. Created once per worker process; tests inject their own. No Temporal.
 */
import { availableParallelism } from 'node:os';
import type { Admin, Kafka } from 'kafkajs';
import { EncoderPool } from '../iceberg';
import { findTable, topicEntry, topicSetLabel, type FloeConfig, type TableConfig } from '../config';
import { FailureType, nonRetryable } from '../contract';
import type { BufferBudget } from './buffer-budget';
import { ConsumerPool } from './kafka';
import { connectKafka } from './kafka-security';
import { createTopicIds, type TopicIds } from './topic-ids';
import { awaitMirrors } from './mirror';
import { checkStorageCredentials } from '../table/storage';
import { openTables, type Tables } from '../table/tables';

export interface Deps {
  cfg: FloeConfig;
  /** Bytes all poll activities of this process may buffer at once (default: FLOE_WORKER_BUFFER_BYTES). */
  bufferBudget?: BufferBudget;
  tables: Tables;
  kafka: Kafka;
  /** The worker's Kafka admin client; `renewAdmin` may replace it, so read it at each use. */
  admin: Admin;
  /**
   * Replaces `admin` by a freshly connected client, if it still is `stale` (concurrent callers
   * renew once). kafkajs asks every metadata request about each topic that client was ever asked
   * about, so once one of them is deleted every call fails (UNKNOWN_TOPIC_OR_PARTITION), whatever
   * its own topic: a fresh client knows none. Absent in test deps that bring their own admin.
   */
  renewAdmin?(stale: Admin): Promise<void>;
  /** Kafka's topic ids (ingest/topic-ids.ts): cursors are bound to them. Absent in test deps that bring their own Kafka. */
  topicIds?: TopicIds;
  /** Kafka consumers kept across cycles, one per (table, partition group). */
  consumers: ConsumerPool;
  /** Threads that encode the Parquet of ingest cycles; none: encode on the activity's thread. */
  encoders?: EncoderPool;
  close(): Promise<void>;
}

/**
 * Opens everything a worker needs. Object-storage credentials are resolved first, so a worker
 * without any fails at start naming the sources the AWS chain tried, not at its first write.
 */
export async function createDeps(cfg: FloeConfig): Promise<Deps> {
  await checkStorageCredentials(cfg);
  // First: a wrong Kafka password or certificate fails the worker (or CLI) at once, naming the broker.
  const kafka = await connectKafka(cfg.kafka);
  const tables = await openTables(cfg);
  // Few client-side retries: an activity's own retries (with heartbeats and backoff) do that job,
  // and a call kafkajs retries for a minute (a deleted topic, below) would outlive its activity.
  const newAdmin = () => kafka.admin({ retry: { retries: 2 } });
  let admin = newAdmin();
  await admin.connect();
  let renewing: Promise<void> | undefined;
  const consumers = new ConsumerPool(kafka);
  const topicIds = createTopicIds(cfg.kafka);
  const threads = encoderThreadsFromEnv();
  const encoders = threads > 0 ? new EncoderPool(threads) : undefined;
  return {
    cfg,
    tables,
    kafka,
    get admin() {
      return admin;
    },
    renewAdmin(stale: Admin): Promise<void> {
      // Already replaced, or being replaced: wait for that one.
      if (stale !== admin || renewing) return renewing ?? Promise.resolve();
      const fresh = newAdmin();
      renewing = fresh
        .connect()
        .then(() => {
          admin = fresh;
          // Calls still running on the old client fail and are retried by their activity.
          void stale.disconnect().catch(() => undefined);
        })
        .finally(() => {
          renewing = undefined;
        });
      return renewing;
    },
    consumers,
    topicIds,
    ...(encoders ? { encoders } : {}),
    close: async () => {
      await encoders?.close();
      // A cursor mirror still running holds a kafkajs consumer: let it finish before disconnecting.
      await awaitMirrors();
      await consumers.close();
      await topicIds.close();
      await admin.disconnect().catch(() => undefined);
      await tables.close();
    },
  };
}

/** The configured table, or a non-retryable ConfigError (a workflow names a table the worker's config lacks). */
/**
 * The entry an ingest activity works for: the table's, or (an entry of several topics) the
 * single-topic entry of `topic` (config/topics.ts). An entry of several topics is never read
 * without its topic: its `topic` is only a label.
 */
export function ingestTableConfig(cfg: FloeConfig, table: string, topic?: string): TableConfig {
  try {
    const t = findTable(cfg, table);
    if (topic !== undefined) return topicEntry(t, topic);
    if (t.topics)
      throw new Error(
        `table ${t.table} reads ${topicSetLabel(t)}: each topic is ingested on its own (ingest start runs them all); this operation needs one topic`,
      );
    return t;
  } catch (e) {
    throw nonRetryable(FailureType.ConfigError, (e as Error).message);
  }
}

/** Owner of an ingest id's pending-file markers (table/pending.ts). */
export const pendingOwner = (ingestId: string): string => `ingest-${ingestId}`;

// A table's location never changes under floe (set-location is not used): cache it per Tables.
const locations = new WeakMap<Tables, Map<string, string>>();

export async function tableLocation(tables: Tables, table: string): Promise<string> {
  let byName = locations.get(tables);
  if (!byName) locations.set(tables, (byName = new Map()));
  let l = byName.get(table);
  if (l === undefined) byName.set(table, (l = (await tables.load(table)).metadata.location));
  return l;
}

/**
 * FLOE_PARQUET_THREADS: threads that encode Parquet beside the thread that reads Kafka (0: encode
 * on that thread). Default: one per core beyond the first, at most 4 (1 on a 2-core machine).
 */
export function encoderThreadsFromEnv(env: NodeJS.ProcessEnv = process.env, cores = availableParallelism()): number {
  const v = env.FLOE_PARQUET_THREADS;
  if (v === undefined || v === '') return Math.max(1, Math.min(4, cores - 1));
  if (!/^\d+$/.test(v.trim()))
    throw new Error(
      `FLOE_PARQUET_THREADS: expected a whole number of threads (0 encodes on the reading thread), found ${JSON.stringify(v)}`,
    );
  return Number(v.trim());
}
