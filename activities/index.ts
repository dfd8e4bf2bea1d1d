/**
 * Activities: every side effect of floe (Kafka, Parquet, S3, catalog). Built by a factory so
 * tests can inject a different catalog, FileIO or Kafka client (DESIGN "Layout").
 */
import { Context } from '@temporalio/activity';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import type { FloeConfig, TableConfig } from '../config';
import { findTable } from '../config';
import { CancelledFailure } from '@temporalio/common';
import { FailureType } from '../contract';
import { ALREADY_COMMITTED } from '../iceberg/transaction/transaction';
import type { TableMetadata } from '../iceberg/spec/types';
import {
  SUMMARY_COMMIT_ID, SUMMARY_DEAD_LETTERS, SUMMARY_INGEST_ID, SUMMARY_OFFSETS, SUMMARY_TOPIC,
  SUMMARY_RANGE, allCursors, cursorProperty, deadLetterCursorProperty, formatOffsets, landedCommit,
  maxOffsets, readCursor, readDeadLetterCursor, type Offsets,
} from '../ingest/cursor';
import { nonRetryable, withFailureMapping } from './failures';
import { clearPending, markPending } from '../maintenance/pending';
import { BufferBudget, bufferBudgetFromEnv } from '../ingest/buffer-budget';
import { INLINE_FILE_LIST_BUDGET_BYTES, deleteStaged, expandFileList, fileListForHistory, stagedLocations } from '../maintenance/staged-files';
import { isIcebergError } from '../iceberg/errors';
import { mapConcurrent } from '../iceberg/scan/parallel';
import { DecoderConfigError, deadLetterRow, decodeRecord, type Row } from '../ingest/decode';
import { crashPoint } from '../ingest/crash-points';
import { heartbeating } from './heartbeat';
import { pollPartitions, topicWatermarks } from '../ingest/kafka';
import { deadLetterColumns, openTables, type Tables } from '../ingest/tables';
import { checkIngestTablesDrift, tableDriftMessage } from '../ingest/drift';
import {
  type CommitInput, type CommitResult, type CyclePlan, type PollInput,
  type PollResult, type TableRef,
} from './types';
import { createMaintenanceActivities } from './maintenance';
import { createBackfillActivities } from './backfill';

export interface Deps {
  cfg: FloeConfig;
  /** Bytes all poll activities of this process may buffer at once (default: FLOE_WORKER_BUFFER_BYTES). */
  bufferBudget?: BufferBudget;
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
      // A cursor mirror still running holds a kafkajs consumer: let it finish before disconnecting.
      await Promise.allSettled(mirrorsInFlight.values());
      await admin.disconnect().catch(() => undefined);
      await tables.close();
    },
  };
}

/** What a commit reports; the snapshot may already be expired when a retry finds its commit via the cursor. */
function commitResult(m: TableMetadata, snapshotId: string, alreadyCommitted: boolean): CommitResult {
  const snap = m.snapshots.find((s) => s['snapshot-id'].toString() === snapshotId);
  return {
    snapshotId, alreadyCommitted,
    committedAtMs: snap ? Number(snap['timestamp-ms']) : Number(m['last-updated-ms']),
    totalRecords: (snap ?? m.snapshots.at(-1))?.summary['total-records'] ?? '0',
  };
}

/** Refuses to start a second live ingest id on a table that already holds the topic (it would re-read it all). */
function refuseSecondLiveIngest(t: TableConfig, ingestId: string, m: TableMetadata): void {
  for (const [other, c] of allCursors(m)) {
    if (other === ingestId || c.range || (c.topic !== null && c.topic !== t.topic)) continue;
    throw nonRetryable(FailureType.IngestOverlap,
      `table ${t.table} already holds topic ${t.topic} through ingest id "${other}" (cursor ${formatOffsets(c.offsets)}); starting ingest id "${ingestId}" would load the topic again; start it with force to do that anyway, or keep ingestId "${other}"`);
  }
}

/** Every path must exist; a missing one fails the cycle as FilesMissing (the loop re-reads). */
async function requireFilesExist(deps: Deps, paths: string[], what: string): Promise<void> {
  const exists = await mapConcurrent(paths, 16, (p) => deps.tables.io.exists(p));
  const missing = paths.filter((_, i) => !exists[i]);
  if (missing.length > 0) {
    throw nonRetryable(FailureType.FilesMissing,
      `${what}: ${missing.length} of ${paths.length} files written for it no longer exist (e.g. ${missing[0]}); the cycle will re-read its offsets`);
  }
}

export const createActivities = (deps: Deps) => withFailureMapping(withBufferBudget(createIngestActivities(deps), budgetOf(deps)));

/** One budget per worker process (module scope): every activity set created in it shares it. */
let workerBudget: BufferBudget | undefined;
const budgetOf = (deps: Deps): BufferBudget => deps.bufferBudget ?? (workerBudget ??= bufferBudgetFromEnv());

/** pollAndWrite reserves its byte bound from the worker's budget for the whole poll + write. */
function withBufferBudget<T extends { pollAndWrite: (input: PollInput) => Promise<PollResult> }>(acts: T, budget: BufferBudget): T {
  return {
    ...acts,
    pollAndWrite: async (input: PollInput) => {
      const lease = await budget.acquire(input.maxBytes, () => Context.current().heartbeat({ phase: 'waiting-for-buffer', inUse: budget.inUse }));
      try {
        return await acts.pollAndWrite({ ...input, maxBytes: lease.granted });
      } finally {
        lease.release();
      }
    },
  };
}

/** Pending-file markers of an ingest id (maintenance/pending.ts). */
const pendingOwner = (ingestId: string): string => `ingest-${ingestId}`;

const createIngestActivities = (deps: Deps) => {
  // A table's location never changes under floe (set-location is not used): cache it.
  const locations = new Map<string, string>();
  const locationOf = async (table: string): Promise<string> => {
    let l = locations.get(table);
    if (l === undefined) locations.set(table, (l = (await deps.tables.load(table)).metadata.location));
    return l;
  };
  const tableCfg = (table: string): TableConfig => {
    try {
      return findTable(deps.cfg, table);
    } catch (e) {
      throw nonRetryable(FailureType.ConfigError, (e as Error).message);
    }
  };

  return {
    /** Reads the cursor from the table (never from Kafka) and plans the next cycle. Creates missing tables. */
    loadCursor: (ref: TableRef): Promise<CyclePlan> => heartbeating(async () => {
      const t = tableCfg(ref.table);
      await deps.tables.ensureIngestTables(t);
      const loaded = await deps.tables.load(t.table);
      // Another engine changed the table (or its dead-letter table) under the config: fail visibly, never write.
      const deadLetterMetadata = (await deps.tables.load(t.deadLetterTable)).metadata;
      const drift = checkIngestTablesDrift(t, loaded.metadata, deadLetterMetadata, deadLetterColumns);
      if (drift.length > 0) throw nonRetryable(FailureType.TableDrift, tableDriftMessage(drift));
      const cursor = readCursor(loaded.metadata, ref.ingestId);
      // The cursor is bound to its topic: offsets of another topic (renamed in the config, recreated,
      // a failover cluster) would silently skip or re-read records.
      if (cursor.topic !== null && cursor.topic !== t.topic) {
        throw nonRetryable(FailureType.CursorTopicMismatch,
          `table ${t.table}: the cursor of ingest id "${ref.ingestId}" belongs to topic "${cursor.topic}", the config says "${t.topic}"; move it explicitly with: floe ingest reset ${t.table} --to earliest|latest|<time>|<p:offset,...>`);
      }
      if (cursor.snapshotId === null && !ref.range && !ref.force) refuseSecondLiveIngest(t, ref.ingestId, loaded.metadata);
      const wm = await topicWatermarks(deps.admin, t.topic);
      for (const [p, o] of Object.entries(cursor.offsets)) {
        const high = wm.high[p];
        if (high === undefined || BigInt(o) > BigInt(high)) {
          throw nonRetryable(FailureType.CursorAheadOfTopic,
            `table ${t.table}: the cursor of ingest id "${ref.ingestId}" is at ${p}:${o} but topic ${t.topic} ${high === undefined ? `has no partition ${p}` : `partition ${p} ends at ${high}`}; the topic was recreated or failed over; move the cursor with: floe ingest reset ${t.table} --to earliest|latest|<time>|<p:offset,...>`);
        }
      }
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
      const deadLetters = readDeadLetterCursor(deadLetterMetadata, ref.ingestId);
      const highWatermarks = ref.range ? ref.range.to : wm.high;
      const groups: number[][] = Array.from({ length: Math.min(t.parallelism, partitions.length) || 1 }, () => []);
      partitions.forEach((p, i) => groups[i % groups.length]!.push(p));
      return {
        baseSnapshotId: cursor.snapshotId, startOffsets, highWatermarks, groups,
        deadLetterFloor: deadLetters.offsets, deadLetterBaseCommitId: deadLetters.commitId,
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
          signal: ctx.cancellationSignal,
        },
        (rec) => {
          try {
            // compiled once per table config: every row it returns is writable under t's partition spec
            rows.push(decodeRecord(t, rec));
          } catch (e) {
            // A config no record can decode is not this record's fault: fail the cycle, visibly.
            if (e instanceof DecoderConfigError) throw nonRetryable(FailureType.ConfigError, `table ${t.table}: ${e.message}`);
            // Anything else thrown for this one record, even unforeseen, dead-letters it with its reason.
            deadRows.push(deadLetterRow(t.topic, rec, e));
          }
          if (rows.length + deadRows.length === 1) crashPoint('poll');
        },
        // Progress in every heartbeat: a hung poll (no progress, still beating) is visible in the UI.
        (o) => ctx.heartbeat({ phase: 'poll', records: o.records, bytes: o.bytes }),
      );
      // Cancelled (workflow cancelled or timed out): stop here; nothing written, nothing to undo.
      if (ctx.cancellationSignal.aborted) throw new CancelledFailure('pollAndWrite cancelled');
      // Dead letters below the dead-letter cursor were recorded by an earlier batch whose main commit
      // did not land (fenced, or its worker died): recording them again would duplicate them.
      const floor = input.deadLetterFloor ?? {};
      const freshDeadRows = deadRows.filter((r) => floor[String(r.partition)] === undefined || (r.offset as bigint) >= BigInt(floor[String(r.partition)]!));
      const prefix = `${input.commitId}-g${input.groupIndex}-a${attempt}`;
      // Until this cycle commits, its files are unreachable: markers keep the orphan sweep off them
      // however long the cycle takes (another group stuck, a paused worker). The commit clears them.
      if (rows.length > 0) await markPending(deps.tables.io, await locationOf(t.table), pendingOwner(input.ingestId), `${input.commitId}-`);
      if (freshDeadRows.length > 0) await markPending(deps.tables.io, await locationOf(t.deadLetterTable), pendingOwner(input.ingestId), `${input.commitId}-`);
      // Writing a large cycle takes a while: keep heartbeating so only a dead worker times out.
      const beat = setInterval(() => ctx.heartbeat({ phase: 'write', records: outcome.records, bytes: outcome.bytes }), 2000);
      let files, deadLetterFiles;
      try {
        files = rows.length === 0 ? [] : await deps.tables.writeDataFiles(t.table, rows, prefix, t.targetFileSizeBytes);
        deadLetterFiles = freshDeadRows.length === 0 ? [] : await deps.tables.writeDataFiles(t.deadLetterTable, freshDeadRows, prefix, t.targetFileSizeBytes);
      } finally {
        clearInterval(beat);
      }
      if (files.length > 0) crashPoint('after-write');
      const highWatermarks: Offsets = {};
      for (const p of input.partitions) highWatermarks[String(p)] = wm.high[String(p)] ?? '0';
      // A list past its group's share of the inline budget (thousands of files: a wide partition
      // spec, a backlog) would not fit Temporal's payload limit: it is staged as a manifest named
      // `<prefix>.avro` (marked pending above) and history carries the reference (maintenance/staged-files.ts).
      const budget = Math.floor(INLINE_FILE_LIST_BUDGET_BYTES / Math.max(1, Math.min(t.parallelism, allPartitions.length)));
      const stage = (table: string) => ({ metadata: async () => (await deps.tables.load(table)).metadata, baseName: prefix });
      return {
        groupIndex: input.groupIndex,
        files: await fileListForHistory(deps.tables.io, files, budget, stage(t.table)),
        deadLetterFiles: await fileListForHistory(deps.tables.io, deadLetterFiles, budget, stage(t.deadLetterTable)),
        endOffsets: outcome.next, highWatermarks,
        records: rows.length, deadLetters: freshDeadRows.length, bytes: outcome.bytes,
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
      const staged = [...stagedLocations(input.files), ...stagedLocations(input.deadLetterFiles)];
      const before = await deps.tables.load(t.table);
      const landed = landedCommit(before.metadata, input.ingestId, input.commitId);
      if (landed !== null) {
        await deleteStaged(deps.tables.io, staged);
        return commitResult(before.metadata, landed, true);
      }
      // Large cycles staged their file lists (pollAndWrite); one swept while the cycle waited is
      // missing files like any other: the loop reloads and re-reads the same offsets.
      let files, deadLetterFiles;
      try {
        [files, deadLetterFiles] = await Promise.all([expandFileList(deps.tables.io, input.files), expandFileList(deps.tables.io, input.deadLetterFiles)]);
      } catch (e) {
        if (!isIcebergError(e, 'NotFound')) throw e;
        throw nonRetryable(FailureType.FilesMissing, `${t.table} commit ${input.commitId}: a staged file list written for it no longer exists (${(e as Error).message}); the cycle will re-read its offsets`);
      }

      // A cycle that waited long (a stuck group, a paused worker) may find its files swept; never
      // commit a dangling reference: the loop reloads and re-reads the same offsets instead.
      await requireFilesExist(deps, [...files, ...deadLetterFiles].map((f) => f.filePath), `${t.table} commit ${input.commitId}`);

      const fence = (m: TableMetadata) => {
        const cur = readCursor(m, input.ingestId);
        if (cur.snapshotId !== input.baseSnapshotId) {
          throw nonRetryable(FailureType.StaleCursor,
            `stale cursor for ${t.table}/${input.ingestId}: expected cursor snapshot ${input.baseSnapshotId ?? 'none'}, found ${cur.snapshotId ?? 'none'} (${formatOffsets(cur.offsets)})`);
        }
      };
      if (deadLetterFiles.length > 0) {
        // Dead letters have their own fenced cursor in the dead-letter table: offsets below it are
        // recorded. It lands before the main commit; a batch that re-reads those offsets later
        // (after the main commit was fenced or the worker died) skips them at poll time.
        await deps.tables.appendOnce(t.deadLetterTable, {
          files: deadLetterFiles,
          summary: { [SUMMARY_COMMIT_ID]: input.commitId, [SUMMARY_TOPIC]: t.topic, [SUMMARY_INGEST_ID + '.source']: input.ingestId },
          properties: () => deadLetterCursorProperty(input.ingestId, t.topic,
            { offsets: maxOffsets(input.deadLetterFloor, input.endOffsets), commitId: input.commitId }),
          validate: (m) => {
            const dl = readDeadLetterCursor(m, input.ingestId);
            if (dl.commitId === input.commitId) return ALREADY_COMMITTED;
            if (dl.commitId !== input.deadLetterBaseCommitId) {
              throw nonRetryable(FailureType.StaleCursor,
                `stale dead-letter cursor for ${t.deadLetterTable}/${input.ingestId}: expected commit ${input.deadLetterBaseCommitId ?? 'none'}, found ${dl.commitId ?? 'none'}`);
            }
          },
        });
      }
      const summary = {
        [SUMMARY_INGEST_ID]: input.ingestId,
        [SUMMARY_OFFSETS]: formatOffsets(input.endOffsets),
        [SUMMARY_COMMIT_ID]: input.commitId,
        [SUMMARY_TOPIC]: t.topic,
        [SUMMARY_DEAD_LETTERS]: String(input.deadLetters),
        ...(input.range ? { [SUMMARY_RANGE]: JSON.stringify(input.range) } : {}),
      };
      const res = await deps.tables.appendOnce(t.table, {
        files, summary, base: before,
        // The cursor is a table property written in the same atomic commit: it survives any expiry.
        properties: (snapshotId) => cursorProperty(input.ingestId, {
          snapshotId: snapshotId.toString(), commitId: input.commitId, offsets: input.endOffsets, topic: t.topic,
          ...(input.range ? { range: input.range } : {}),
        }),
        validate: (m) => {
          if (landedCommit(m, input.ingestId, input.commitId) !== null) return ALREADY_COMMITTED;
          fence(m);
        },
      });
      crashPoint('after-cas');
      // Every earlier cycle of this ingest is now either committed or abandoned (fenced): its files
      // are referenced or true orphans, so none needs protecting any more.
      await Promise.all([t.table, t.deadLetterTable].map(async (n) => clearPending(deps.tables.io, await locationOf(n), pendingOwner(input.ingestId))));
      await deleteStaged(deps.tables.io, staged); // read, committed: not needed any more (best effort)
      const snapshotId = res.snapshotId ?? landedCommit(res.metadata, input.ingestId, input.commitId);
      if (snapshotId === null) throw new Error(`commit ${input.commitId} of ${t.table} reported landed but the table does not name it`);
      if (!res.alreadyCommitted) {
        // For lag tooling only, and never on the commit path's critical result: best effort.
        mirrorOffsets(deps, t, input.endOffsets);
      }
      return commitResult(res.metadata, snapshotId, res.alreadyCommitted);
    }),

    ...createBackfillActivities(deps),
    ...createMaintenanceActivities(deps),
  };
};

/** In-flight cursor mirrors by consumer group (one per group at a time; awaited by Deps.close). */
const mirrorsInFlight = new Map<string, Promise<void>>();

/**
 * Mirrors the table's cursor into consumer group `floe.<table>.<ingestId>` for lag tooling only:
 * off the commit path (kafkajs' setOffsets joins the group, ~5 s), best effort, and skipped while
 * the previous mirror of the same group still runs (the next commit mirrors a newer cursor anyway).
 */
function mirrorOffsets(deps: Deps, t: TableConfig, offsets: Offsets): void {
  const groupId = `floe.${t.table}.${t.ingestId}`;
  if (mirrorsInFlight.has(groupId)) return;
  const p = deps.admin.setOffsets({
    groupId,
    topic: t.topic,
    partitions: Object.entries(offsets).map(([partition, offset]) => ({ partition: Number(partition), offset })),
  }).catch(() => undefined).finally(() => mirrorsInFlight.delete(groupId));
  mirrorsInFlight.set(groupId, p);
}
