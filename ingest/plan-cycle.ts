/**
 * Plans an ingest cycle from the table (never from Kafka): the cursor of the ingest id, bound to
 * its topic and checked against the topic's watermarks, the partition groups, and the dead-letter
 * floor. Creates missing tables and refuses a drifted table. No Temporal here: the activity
 * adapter (activities/index.ts) adds heartbeats and failure mapping.
 */
import type { TableConfig } from '../config';
import { FailureType, nonRetryable, type StepRun } from '../contract';
import { randomUUID } from 'node:crypto';
import { isIcebergError, mapConcurrent, type LoadedTable, type TableMetadata } from '../iceberg';
import { markPending } from '../table/pending';
import { INLINE_FILE_LIST_BUDGET_BYTES, stagedLocation, writeStagedJson } from '../table/staged-files';
import {
  allCursors,
  formatOffsets,
  readCursor,
  readDeadLetterCursor,
  type Cursor,
  type DeadLetterCursor,
  type Offsets,
} from '../table/cursor';
import { ingestTableConfig, pendingOwner, type Deps } from './deps';
import { crashPoint } from '../table/crash-points';
import { checkIngestTablesDrift, tableDriftMessage } from './drift';
import { addConfiguredColumns } from './evolve';
import { ingestWatermarks, type MissingTopic } from './watermarks';
import { deadLetterColumns } from '../ingest/tables';
import {
  ROUTE_BASE_PROPERTY,
  ROUTE_TABLE_PROPERTY_PREFIX,
  effectiveCursor,
  listedRouteTables,
  minimumOffsets,
  readRouteCursor,
  routeStart,
  staticRouteTables,
} from './route';
import type { CyclePlan, RouteTablePlan, StagedJson, TableRef } from './types';
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
  const topicId = await checkCursorTopicId(deps, t, t.table, cursor, ref);
  // A backfill covers exactly its range's partitions; a live ingest every partition of the topic.
  const partitions = Object.keys(ref.range?.to ?? wm.high)
    .map(Number)
    .sort((a, b) => a - b);
  const startOffsets = cursorStart(t, t.table, cursor, ref, wm, partitions, run);
  const plan = cyclePlan(
    t,
    ref,
    cursor.snapshotId,
    startOffsets,
    partitions,
    wm.high,
    readDeadLetterCursor(deadLetterMetadata, ref.ingestId),
  );
  return topicId !== null ? { ...plan, topicId } : plan;
}

/**
 * The cursor is bound to its topic's Kafka id too: a topic deleted and created again under its
 * name gets a new id, and its offsets start again at 0, so once it has passed the old cursor's
 * offsets nothing else tells it from the old one. A cursor without an id (written before floe read
 * them, or by a cluster without them) takes the topic's at its next commit. Asked after the
 * watermarks, so a deleted topic still fails as TopicGone; returns the id (null: none to bind).
 */
async function checkCursorTopicId(deps: Deps, t: TableConfig, table: string, cursor: Cursor, ref: TableRef): Promise<string | null> {
  if (!deps.topicIds) return null;
  const id = await deps.topicIds.of(t.topic);
  if (id !== null && cursor.topicId && cursor.topicId !== id) {
    throw nonRetryable(
      FailureType.TopicRecreated,
      `table ${table}: the cursor of ingest id "${ref.ingestId}" (${formatOffsets(cursor.offsets)}) belongs to topic ${t.topic} with id ${cursor.topicId}, and ${t.topic} now has id ${id}: it was deleted and created again (or this is another cluster), and its offsets are not the cursor's; move the cursor with: floe ingest reset ${t.table} --to earliest|latest|<time>|<p:offset,...>`,
    );
  }
  return id;
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
 * A bulk plan's tables stay inline up to this (about 50 tables at 64 partitions, 500 at 2): an
 * inline plan is carried four times a cycle (the plan, each poll's input, the commit's input), so
 * a quarter of the file lists' budget keeps a cycle's history near theirs.
 */
const ROUTE_PLAN_INLINE_BUDGET_BYTES = INLINE_FILE_LIST_BUDGET_BYTES / 4;

/** Route tables planned at once (each a catalog load, plus creation or evolution when needed). */
const PLAN_CONCURRENCY = 16;

/**
 * A route's cycle: every table of it (the base table, the static routes, the dynamic tables the
 * base table lists) with its own cursor, raised to the route cursor; the one poll starts at their
 * per-partition minimum. Tables the config names are created here, dynamic ones by the poll that
 * first needs them. The tables are loaded a few at a time, one catalog call each when nothing is
 * missing or new (the namespace and the dead-letter table are ensured once, with the base table).
 * A bulk plan past the inline budget is staged beside the base table's metadata.
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
  // The base table's cursor moves with every cycle of the route (the others may lag): its id binds the route.
  const topicId = await checkCursorTopicId(deps, t, t.table, baseCursor, ref);
  const partitions = Object.keys(wm.high)
    .map(Number)
    .sort((a, b) => a - b);
  // Offsets below which every record of this ingest id is in the table it routes to (route.ts).
  const routeCursor = readRouteCursor(base.metadata.properties, ref.ingestId);
  const planned = await mapConcurrent(names, PLAN_CONCURRENCY, async (name): Promise<RouteTablePlan | undefined> => {
    const rt: TableConfig = { ...t, table: name };
    // A listed dynamic table dropped since is created again (owned by the route), and reloads its
    // records from the earliest offset not below the route cursor, as a new table does.
    const dynamic = !statics.includes(name);
    const loaded = name === t.table ? base : await loadOrCreate(deps, t, rt, dynamic);
    const evolved = await addConfiguredColumns(deps.tables, rt, loaded);
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
      return undefined;
    if (name === t.table && cursor.snapshotId === null && !ref.force) refuseSecondLiveIngest(t, ref.ingestId, m);
    const own = cursorStart(t, name, cursor, ref, wm, partitions, run, routeStart(m.properties, ref.ingestId));
    return { table: name, baseSnapshotId: cursor.snapshotId, startOffsets: onPartitions(effectiveCursor(own, routeCursor), partitions) };
  });
  const routeTables = planned.filter((r): r is RouteTablePlan => r !== undefined);
  const startOffsets = minimumOffsets(
    routeTables.map((r) => r.startOffsets),
    partitions.map(String),
  );
  const plan: CyclePlan = {
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
    ...(topicId !== null ? { topicId } : {}),
  };
  if (!ref.bulk) return plan;
  plan.routeCursor = routeCursor;
  const staged = await stageRoutePlan(deps, base.metadata.location, ref.ingestId, routeTables);
  return staged ? { ...plan, routeTables: [], routeStaged: staged } : plan;
}

/** `o` on `partitions` only (a route cursor may name a partition the topic no longer has). */
const onPartitions = (o: Offsets, partitions: number[]): Offsets =>
  Object.fromEntries(partitions.filter((p) => o[String(p)] !== undefined).map((p) => [String(p), o[String(p)]!]));

/**
 * A route table as the plan needs it: one load when it exists (the usual case: no namespace or
 * existence checks per table), created first when it does not.
 */
async function loadOrCreate(deps: Deps, t: TableConfig, rt: TableConfig, dynamic: boolean): Promise<LoadedTable> {
  try {
    return await deps.tables.load(rt.table);
  } catch (e) {
    if (!isIcebergError(e, 'NotFound')) throw e;
  }
  await ensureIngestTables(
    deps.tables,
    dynamic ? { ...rt, properties: { ...t.properties, [ROUTE_BASE_PROPERTY]: t.table } } : rt,
    deps.cfg.schemaRegistry,
  );
  return deps.tables.load(rt.table);
}

/**
 * A bulk plan's tables past the inline budget, staged as JSON under the base table's
 * `metadata/floe-staged/plan-<uuid>.json`, marked pending first (the ingest's next commit clears
 * the marker; the commit that reads it deletes it). Undefined: small enough to stay inline.
 */
async function stageRoutePlan(
  deps: Deps,
  baseLocation: string,
  ingestId: string,
  routeTables: RouteTablePlan[],
): Promise<StagedJson | undefined> {
  const json = JSON.stringify(routeTables);
  if (Buffer.byteLength(json) <= ROUTE_PLAN_INLINE_BUDGET_BYTES) return undefined;
  const name = `plan-${randomUUID()}`;
  await markPending(deps.tables.io, baseLocation, pendingOwner(ingestId), name);
  const location = stagedLocation(baseLocation, `${name}.json`);
  const bytes = await writeStagedJson(deps.tables.io, location, routeTables);
  return { staged: location, count: routeTables.length, bytes };
}
