/**
 * Plans an ingest cycle from the table (never from Kafka): the cursor of the ingest id, bound to
 * its topic and checked against the topic's watermarks, the partition groups, and the dead-letter
 * floor. Creates missing tables and refuses a drifted table. No Temporal here: the activity
 * adapter (activities/index.ts) adds heartbeats and failure mapping.
 */
import type { TableConfig } from '../config';
import { FailureType, nonRetryable, type StepRun } from '../contract';
import type { TableMetadata } from '../iceberg';
import {
  allCursors,
  formatOffsets,
  readCursor,
  readDeadLetterCursor,
  type Cursor,
  type DeadLetterCursor,
  type Offsets,
} from '../table/cursor';
import { ingestTableConfig, type Deps } from './deps';
import { crashPoint } from '../table/crash-points';
import { checkIngestTablesDrift, tableDriftMessage } from './drift';
import { addConfiguredColumns } from './evolve';
import { ingestWatermarks, type MissingTopic } from './watermarks';
import { deadLetterColumns } from '../ingest/tables';
import {
  ROUTE_BASE_PROPERTY,
  ROUTE_TABLE_PROPERTY_PREFIX,
  listedRouteTables,
  minimumOffsets,
  routeStart,
  staticRouteTables,
} from './route';
import type { CyclePlan, RouteTablePlan, TableRef } from './types';
import { ensureIngestTables } from './tables';

/** Refuses to start a second live ingest id on a table that already holds the topic (it would re-read it all). */
function refuseSecondLiveIngest(t: TableConfig, ingestId: string, m: TableMetadata): void {
  for (const [other, c] of allCursors(m)) {
    if (other === ingestId || c.range || (c.topic !== null && c.topic !== t.topic)) continue;
    throw nonRetryable(
      FailureType.IngestOverlap,
      `table ${t.table} already holds topic ${t.topic} through ingest id "${other}" (cursor ${formatOffsets(c.offsets)}); starting ingest id "${ingestId}" would load the topic again; start it with force to do that anyway, or keep ingestId "${other}"`,
    );
  }
}

/**
 * A missing topic was deleted if this ingest held it (a cursor), or if it is one topic of an entry
 * of several (started because it existed); a new one-topic ingest waits for its topic.
 */
const missingMeans = (ref: TableRef, cursor: { commitId: string | null }): MissingTopic =>
  ref.topic !== undefined || cursor.commitId !== null ? 'deleted' : 'not-yet';

export async function planCycle(deps: Deps, ref: TableRef, run: StepRun): Promise<CyclePlan> {
  const t = ingestTableConfig(deps.cfg, ref.table, ref.topic);
  if (t.route) return planRoute(deps, t, ref, run);
  await ensureIngestTables(deps.tables, t, deps.cfg.schemaRegistry);
  // Optional columns added to the config join the table's schema before anything is written.
  const evolved = await addConfiguredColumns(deps.tables, t, await deps.tables.load(t.table));
  if (evolved.added.length > 0) crashPoint('after-evolve');
  const loaded = evolved.table;
  // Another engine changed the table (or its dead-letter table) under the config: fail visibly, never write.
  const deadLetterMetadata = (await deps.tables.load(t.deadLetterTable)).metadata;
  const drift = checkIngestTablesDrift(t, loaded.metadata, deadLetterMetadata, deadLetterColumns);
  if (drift.length > 0) throw nonRetryable(FailureType.TableDrift, tableDriftMessage(drift));
  const cursor = readCursor(loaded.metadata, ref.ingestId);
  if (cursor.snapshotId === null && !ref.range && !ref.force) refuseSecondLiveIngest(t, ref.ingestId, loaded.metadata);
  checkCursorTopic(t, t.table, cursor, ref);
  const wm = await ingestWatermarks(deps, t.topic, missingMeans(ref, cursor));
  // A backfill covers exactly its range's partitions; a live ingest every partition of the topic.
  const partitions = Object.keys(ref.range?.to ?? wm.high)
    .map(Number)
    .sort((a, b) => a - b);
  const startOffsets = cursorStart(t, t.table, cursor, ref, wm, partitions, run);
  return cyclePlan(t, ref, cursor.snapshotId, startOffsets, partitions, wm.high, readDeadLetterCursor(deadLetterMetadata, ref.ingestId));
}

function cyclePlan(
  t: TableConfig,
  ref: TableRef,
  baseSnapshotId: string | null,
  startOffsets: Offsets,
  partitions: number[],
  high: Offsets,
  deadLetters: DeadLetterCursor,
): CyclePlan {
  const highWatermarks = ref.range ? ref.range.to : high;
  const groups: number[][] = Array.from({ length: Math.min(t.parallelism, partitions.length) || 1 }, () => []);
  partitions.forEach((p, i) => groups[i % groups.length]!.push(p));
  return {
    baseSnapshotId,
    startOffsets,
    highWatermarks,
    groups,
    deadLetterFloor: deadLetters.offsets,
    deadLetterBaseCommitId: deadLetters.commitId,
    commitIntervalMs: t.commitIntervalMs,
    maxRecordsPerCycle: t.maxRecordsPerCycle,
    maxBytesPerCycle: t.maxBytesPerCycle,
    cyclesPerRun: t.cyclesPerRun,
    isolateAfterAttempts: t.isolateAfterAttempts,
  };
}

/**
 * Where `table`'s ingest id starts on every partition: its cursor, bound to its topic and checked
 * against the topic's watermarks; for a partition the cursor lacks, `noCursor` (a routed table
 * created mid-stream), the range start, else the earliest retained offset.
 */
/**
 * The cursor is bound to its topic: offsets of another topic (renamed in the config, recreated, a
 * failover cluster) would silently skip or re-read records. Checked before the topic is asked for
 * its watermarks, so a config naming a topic that does not exist fails with this, at once.
 */
function checkCursorTopic(t: TableConfig, table: string, cursor: Cursor, ref: TableRef): void {
  if (cursor.topic !== null && cursor.topic !== t.topic) {
    throw nonRetryable(
      FailureType.CursorTopicMismatch,
      `table ${table}: the cursor of ingest id "${ref.ingestId}" belongs to topic "${cursor.topic}", the config says "${t.topic}"; move it explicitly with: floe ingest reset ${t.table} --to earliest|latest|<time>|<p:offset,...>`,
    );
  }
}

function cursorStart(
  t: TableConfig,
  table: string,
  cursor: Cursor,
  ref: TableRef,
  wm: { low: Offsets; high: Offsets },
  partitions: number[],
  run: StepRun,
  noCursor: Offsets = {},
): Offsets {
  checkCursorTopic(t, table, cursor, ref);
  for (const [p, o] of Object.entries(cursor.offsets)) {
    const high = wm.high[p];
    if (high === undefined || BigInt(o) > BigInt(high)) {
      throw nonRetryable(
        FailureType.CursorAheadOfTopic,
        `table ${table}: the cursor of ingest id "${ref.ingestId}" is at ${p}:${o} but topic ${t.topic} ${high === undefined ? `has no partition ${p}` : `partition ${p} ends at ${high}`}; the topic was recreated or failed over; move the cursor with: floe ingest reset ${t.table} --to earliest|latest|<time>|<p:offset,...>`,
      );
    }
  }
  const startOffsets: Offsets = {};
  for (const p of partitions) {
    const k = String(p);
    // A partition the cursor lacks starts at the range start, or else the earliest retained offset.
    startOffsets[k] = cursor.offsets[k] ?? noCursor[k] ?? ref.range?.from[k] ?? wm.low[k] ?? '0';
    if (BigInt(startOffsets[k]!) < BigInt(wm.low[k] ?? '0')) {
      // Retention deleted records the table never got: that is data loss upstream, not ours to hide.
      run.warn(
        `${table} partition ${k}: cursor ${startOffsets[k]} is below the earliest retained offset ${wm.low[k]}; records were lost to retention`,
      );
      startOffsets[k] = wm.low[k]!;
    }
  }
  return startOffsets;
}

/**
 * A route's cycle: every table of it (the base table, the static routes, the dynamic tables the
 * base table lists) with its own cursor; the one poll starts at their per-partition minimum.
 * Tables the config names are created here, dynamic ones by the poll that first needs them.
 */
async function planRoute(deps: Deps, t: TableConfig, ref: TableRef, run: StepRun): Promise<CyclePlan> {
  if (ref.range)
    throw nonRetryable(
      FailureType.ConfigError,
      `table ${t.table} routes its records over several tables: a backfill of a route is not supported`,
    );
  await ensureIngestTables(deps.tables, t, deps.cfg.schemaRegistry);
  const base = await deps.tables.load(t.table);
  const deadLetterMetadata = (await deps.tables.load(t.deadLetterTable)).metadata;
  const statics = staticRouteTables(t);
  const names = [...new Set([...statics, ...listedRouteTables(base.metadata.properties)])];
  const baseCursor = readCursor(base.metadata, ref.ingestId);
  checkCursorTopic(t, t.table, baseCursor, ref);
  const wm = await ingestWatermarks(deps, t.topic, missingMeans(ref, baseCursor));
  const partitions = Object.keys(wm.high)
    .map(Number)
    .sort((a, b) => a - b);
  const routeTables: RouteTablePlan[] = [];
  for (const name of names) {
    const rt: TableConfig = { ...t, table: name };
    // A listed dynamic table dropped since is created again (owned by the route), and reloads its
    // records from the earliest offset, as a new table does.
    const dynamic = !statics.includes(name);
    if (name !== t.table)
      await ensureIngestTables(
        deps.tables,
        dynamic ? { ...rt, properties: { ...t.properties, [ROUTE_BASE_PROPERTY]: t.table } } : rt,
        deps.cfg.schemaRegistry,
      );
    const evolved = await addConfiguredColumns(deps.tables, rt, name === t.table ? base : await deps.tables.load(name));
    if (evolved.added.length > 0) crashPoint('after-evolve');
    const m = evolved.table.metadata;
    const drift = checkIngestTablesDrift(rt, m, name === t.table ? deadLetterMetadata : null, deadLetterColumns);
    if (drift.length > 0) throw nonRetryable(FailureType.TableDrift, tableDriftMessage(drift));
    const cursor = readCursor(m, ref.ingestId);
    // A dynamic table another ingest id listed (another topic of an entry of several) and this one
    // never wrote: not planned, or this topic's poll would start at its earliest offset for it.
    // If a record of this topic routes there, the poll gives the table this ingest id's start
    // (the cycle's) before writing (route-write.ts ensureRouteTable).
    const lister = base.metadata.properties[`${ROUTE_TABLE_PROPERTY_PREFIX}${name}`];
    if (
      dynamic &&
      lister !== undefined &&
      lister !== ref.ingestId &&
      cursor.snapshotId === null &&
      routeStart(m.properties, ref.ingestId) === undefined
    )
      continue;
    if (name === t.table && cursor.snapshotId === null && !ref.force) refuseSecondLiveIngest(t, ref.ingestId, m);
    routeTables.push({
      table: name,
      baseSnapshotId: cursor.snapshotId,
      startOffsets: cursorStart(t, name, cursor, ref, wm, partitions, run, routeStart(m.properties, ref.ingestId)),
    });
  }
  const startOffsets = minimumOffsets(
    routeTables.map((r) => r.startOffsets),
    partitions.map(String),
  );
  return {
    ...cyclePlan(
      t,
      ref,
      routeTables[0]!.baseSnapshotId,
      startOffsets,
      partitions,
      wm.high,
      readDeadLetterCursor(deadLetterMetadata, ref.ingestId),
    ),
    routeTables,
  };
}
