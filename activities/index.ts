/**
 * Activities: every side effect of floe (Kafka, Parquet, S3, catalog). Built by a factory so
 * tests can inject a different catalog, FileIO or Kafka client (DESIGN "Layout").
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import type { FloeConfig, TableConfig } from '../config';
import { findTable } from '../config';
import { parseIdentifier } from '../iceberg/catalog/catalog';
import { dataFileFromWire, dataFileToWire } from '../iceberg/spec/data-file';
import {
  SUMMARY_COMMIT_ID, SUMMARY_DEAD_LETTERS, SUMMARY_INGEST_ID, SUMMARY_OFFSETS, SUMMARY_TOPIC,
  SUMMARY_RANGE, findCommit, formatOffsets, readCursor, type Offsets,
} from './cursor';
import { DecodeError, decodeRecord, type Row } from './decode';
import { crashPoint } from './hooks';
import { pollPartitions, topicWatermarks } from './kafka';
import { openTables, type Tables } from './tables';
import {
  INVALID_DATA, STALE_CURSOR, type CommitInput, type CommitResult, type CyclePlan, type PollInput,
  type PollResult, type TableRef,
} from './types';
import { createMaintenanceActivities } from './maintenance';
import { createBackfillActivities } from './backfill';

export interface Deps {
  cfg: FloeConfig;
  tables: Tables;
  kafka: Kafka;
  admin: Admin;
  close(): Promise<void>;
}

export async function createDeps(cfg: FloeConfig): Promise<Deps> {
  const tables = await openTables(cfg);
  const kafka = new Kafka({ clientId: cfg.kafka.clientId, brokers: cfg.kafka.brokers, logLevel: logLevel.NOTHING, retry: { retries: 8 } });
  const admin = kafka.admin();
  await admin.connect();
  return {
    cfg, tables, kafka, admin,
    close: async () => {
      await admin.disconnect().catch(() => undefined);
      await tables.close();
    },
  };
}

const DEAD_LETTER_COLUMNS = ['topic', 'partition', 'offset', 'key', 'value', 'error', 'kafka_timestamp'] as const;

/** Heartbeats every 2 s while `fn` runs: a live worker never times out, a dead one does fast. */
async function heartbeating<T>(fn: () => Promise<T>): Promise<T> {
  const ctx = Context.current();
  ctx.heartbeat();
  const beat = setInterval(() => ctx.heartbeat(), 2000);
  try {
    return await fn();
  } finally {
    clearInterval(beat);
  }
}

export const createActivities = (deps: Deps) => {
  const tableCfg = (table: string): TableConfig => {
    try {
      return findTable(deps.cfg, table);
    } catch (e) {
      throw ApplicationFailure.nonRetryable((e as Error).message, 'ConfigError');
    }
  };

  return {
    /** Reads the cursor from the table (never from Kafka) and plans the next cycle. Creates missing tables. */
    loadCursor: (ref: TableRef): Promise<CyclePlan> => heartbeating(async () => {
      const t = tableCfg(ref.table);
      await deps.tables.ensureIngestTables(t);
      const loaded = await deps.tables.load(t.table);
      const cursor = readCursor(loaded.metadata, ref.ingestId);
      const wm = await topicWatermarks(deps.admin, t.topic);
      // A backfill covers exactly its range's partitions; a live ingest every partition of the topic.
      const partitions = Object.keys(ref.range?.to ?? wm.high).map(Number).sort((a, b) => a - b);
      const startOffsets: Offsets = {};
      for (const p of partitions) {
        const k = String(p);
        // A partition the cursor lacks starts at the range start, or else the earliest retained offset.
        startOffsets[k] = cursor.offsets[k] ?? ref.range?.from[k] ?? wm.low[k] ?? '0';
        if (BigInt(startOffsets[k]!) < BigInt(wm.low[k] ?? '0')) {
          // Retention deleted records the table never got: that is data loss upstream, not ours to hide.
          Context.current().log.warn(`partition ${k}: cursor ${startOffsets[k]} is below the earliest retained offset ${wm.low[k]}; records were lost to retention`);
          startOffsets[k] = wm.low[k]!;
        }
      }
      const highWatermarks = ref.range ? ref.range.to : wm.high;
      const groups: number[][] = Array.from({ length: Math.min(t.parallelism, partitions.length) || 1 }, () => []);
      partitions.forEach((p, i) => groups[i % groups.length]!.push(p));
      return {
        baseSnapshotId: cursor.snapshotId, startOffsets, highWatermarks, groups,
        commitIntervalMs: t.commitIntervalMs, maxRecordsPerCycle: t.maxRecordsPerCycle,
        maxBytesPerCycle: t.maxBytesPerCycle, cyclesPerRun: t.cyclesPerRun,
      };
    }),

    /**
     * Polls one partition group from the given offsets and writes Parquet data files (one per table
     * partition, rolled at the target size) plus dead-letter files. Idempotent by construction:
     * a retry re-reads the same offsets and writes new files; the dead attempt's files are orphans.
     */
    async pollAndWrite(input: PollInput): Promise<PollResult> {
      const t = tableCfg(input.table);
      const ctx = Context.current();
      const attempt = ctx.info.attempt;
      const wm = await topicWatermarks(deps.admin, t.topic);
      const allPartitions = Object.keys(wm.high).map(Number);
      const rows: Row[] = [];
      const deadRows: Row[] = [];
      const outcome = await pollPartitions(
        deps.kafka, t.topic, input.partitions, allPartitions, input.startOffsets,
        {
          maxWaitMs: input.maxWaitMs, maxRecords: input.maxRecords, maxBytes: input.maxBytes,
          stopAt: input.stopAt ?? (input.untilCaughtUp ? wm.high : undefined),
          limit: input.limit,
        },
        (rec) => {
          try {
            rows.push(decodeRecord(t.columns, rec));
          } catch (e) {
            if (!(e instanceof DecodeError)) throw e;
            deadRows.push({
              topic: t.topic, partition: rec.partition, offset: BigInt(rec.offset),
              key: rec.key === null ? null : new Uint8Array(rec.key),
              value: rec.value === null ? null : new Uint8Array(rec.value),
              error: e.message, kafka_timestamp: BigInt(rec.timestamp) * 1000n,
            });
          }
          if (rows.length + deadRows.length === 1) crashPoint('poll');
        },
        (o) => ctx.heartbeat({ records: o.records }),
      );
      const prefix = `${input.commitId}-g${input.groupIndex}-a${attempt}`;
      // Writing a large cycle takes a while: keep heartbeating so only a dead worker times out.
      const beat = setInterval(() => ctx.heartbeat({ records: outcome.records, phase: 'write' }), 2000);
      let files, deadLetterFiles;
      try {
        files = rows.length === 0 ? [] : await deps.tables.writeDataFiles(t.table, rows, prefix, t.targetFileSizeBytes);
        deadLetterFiles = deadRows.length === 0 ? [] : await deps.tables.writeDataFiles(t.deadLetterTable, deadRows, prefix, t.targetFileSizeBytes);
      } finally {
        clearInterval(beat);
      }
      if (files.length > 0) crashPoint('after-write');
      const highWatermarks: Offsets = {};
      for (const p of input.partitions) highWatermarks[String(p)] = wm.high[String(p)] ?? '0';
      return {
        groupIndex: input.groupIndex,
        files: files.map(dataFileToWire),
        deadLetterFiles: deadLetterFiles.map(dataFileToWire),
        endOffsets: outcome.next, highWatermarks,
        records: rows.length, deadLetters: deadRows.length, bytes: outcome.bytes,
      };
    },

    /**
     * Commits one cycle: dead letters first, then the data with the new cursor, each keyed by the
     * workflow-made commit id. Idempotent (a retry finds its commit id and returns that snapshot)
     * and fenced (lands only if this ingest's cursor is still the one the cycle started from).
     * Concurrency: CAS on the catalog; concurrent compaction/other ingests cause a reload + retry.
     */
    commit: (input: CommitInput): Promise<CommitResult> => heartbeating(async () => {
      const t = tableCfg(input.table);
      const summary = {
        [SUMMARY_INGEST_ID]: input.ingestId,
        [SUMMARY_OFFSETS]: formatOffsets(input.endOffsets),
        [SUMMARY_COMMIT_ID]: input.commitId,
        [SUMMARY_TOPIC]: t.topic,
        [SUMMARY_DEAD_LETTERS]: String(input.deadLetters),
        ...(input.range ? { [SUMMARY_RANGE]: JSON.stringify(input.range) } : {}),
      };
      const fence = (metadata: Parameters<typeof readCursor>[0]) => {
        const cur = readCursor(metadata, input.ingestId);
        if (cur.snapshotId !== input.baseSnapshotId) {
          throw ApplicationFailure.nonRetryable(
            `stale cursor for ${t.table}/${input.ingestId}: expected cursor snapshot ${input.baseSnapshotId ?? 'none'}, found ${cur.snapshotId ?? 'none'} (${formatOffsets(cur.offsets)})`,
            STALE_CURSOR,
          );
        }
      };
      if (input.deadLetterFiles.length > 0) {
        // Dead letters carry the same commit id: a retry after this point finds them and skips.
        await deps.tables.appendOnce(t.deadLetterTable, input.commitId, input.deadLetterFiles.map(dataFileFromWire),
          { [SUMMARY_COMMIT_ID]: input.commitId, [SUMMARY_TOPIC]: t.topic, [SUMMARY_INGEST_ID + '.source']: input.ingestId },
          // The dead-letter commit is only valid while the main table has not moved past our base cursor.
          async () => fence((await deps.tables.load(t.table)).metadata));
      }
      const res = await deps.tables.appendOnce(t.table, input.commitId, input.files.map(dataFileFromWire), summary,
        async (metadata) => fence(metadata));
      crashPoint('after-cas');
      if (!res.alreadyCommitted) {
        // For lag tooling only: mirror the table's cursor into a consumer group after the commit.
        await mirrorOffsets(deps, t, input.endOffsets).catch(() => undefined);
      }
      return {
        snapshotId: res.snapshot['snapshot-id'].toString(),
        alreadyCommitted: res.alreadyCommitted,
        committedAtMs: Number(res.snapshot['timestamp-ms']),
        totalRecords: res.snapshot.summary['total-records'] ?? '0',
      };
    }),

    ...createBackfillActivities(deps),
    ...createMaintenanceActivities(deps),
  };
};

async function mirrorOffsets(deps: Deps, t: TableConfig, offsets: Offsets): Promise<void> {
  await deps.admin.setOffsets({
    groupId: `floe.${t.table}.${t.ingestId}`,
    topic: t.topic,
    partitions: Object.entries(offsets).map(([p, o]) => ({ partition: Number(p), offset: o })),
  });
}

export { DEAD_LETTER_COLUMNS, INVALID_DATA, parseIdentifier, findCommit };
