/**
 * The writing side of a routed poll (ingest/route.ts decides, poll-write.ts polls): one row writer
 * per table a record goes to, each table written only at or past its own cursor, and a dynamic
 * table created (from the entry's template) and listed on the base table before its first row.
 * No Temporal here.
 */
import type { TableConfig } from '../config';
import { FailureType, nonRetryable } from '../contract';
import {
  parseIdentifier,
  ALREADY_COMMITTED,
  Transaction,
  type PartitionedRowWriter,
  type DataFile,
  type TableMetadata,
  type FileIO,
  dataFileToWire,
} from '../iceberg';
import { formatOffsets, readCursor, type Offsets } from '../table/cursor';
import type { KafkaRecord } from './decode';
import { DecodeError } from './formats/errors';
import type { Deps } from './deps';
import { RecordSides, type Decoded } from './formats/reader';
import { TableSink, type DeadLetter } from './table-sink';
import {
  ROUTE_BASE_PROPERTY,
  ROUTE_TABLE_PROPERTY_PREFIX,
  compileRouter,
  heldByTable,
  routeStart,
  routeStartPropertyKey,
  type RouteDecision,
} from './route';
import type { PollInput, RoutedFiles, RouteTablePlan, StagedJson } from './types';
import { fileListForHistory, readStagedJson, stagedLocation, writeStagedJson } from '../table/staged-files';
import { ensureIngestTables } from './tables';

interface Target {
  /** The table's decoding (JSON or its schema format, evolving it first when needed) and writing. */
  sink: TableSink;
  /** Next offset this table still needs per partition: records below it are already the table's. */
  floor: Offsets;
}

/** What one table got from the poll. */
interface RoutedTableFiles {
  table: string;
  files: DataFile[];
  rows: number;
}

/**
 * Creates dynamic table `name` of entry `t` (the entry's columns, partitioning and properties) if
 * missing, starting its ingest id at `start`, then lists it on the base table so every later
 * plan knows it. Both steps are idempotent and run on every poll that first meets the table, so
 * a poll killed between them (a table created, not listed) is completed by its retry; the commit
 * that would make the table's rows count comes only after.
 * Concurrency: creation races are AlreadyExists (ignored); the listing is one property per table
 * (concurrent listings of different tables do not overwrite each other), committed by CAS.
 */
export async function ensureRouteTable(deps: Deps, t: TableConfig, name: string, ingestId: string, start: Offsets): Promise<TableMetadata> {
  const m = await createRouteTable(deps, t, name, ingestId, start);
  await listRouteTables(deps, t, [name], ingestId);
  return m;
}

/**
 * Lists dynamic tables `names` on the base table, in one commit (only those not listed yet). A
 * poll lists the tables it created before it returns, so before any commit of theirs.
 */
async function listRouteTables(deps: Deps, t: TableConfig, names: readonly string[], ingestId: string): Promise<void> {
  if (names.length === 0) return;
  const base = await deps.tables.load(t.table);
  // Only the missing ones: a table stays listed by the ingest id that listed it first.
  const keys = names.map((n) => `${ROUTE_TABLE_PROPERTY_PREFIX}${n}`).filter((k) => base.metadata.properties[k] === undefined);
  if (keys.length === 0) return;
  await new Transaction(parseIdentifier(t.table))
    .setProperties(Object.fromEntries(keys.map((k) => [k, ingestId])))
    .commit(deps.tables.catalog, deps.tables.io, {
      // Listed already (a retried poll, or another topic's ingest): kept as first listed.
      validate: (m) => (keys.every((k) => m.metadata.properties[k] !== undefined) ? ALREADY_COMMITTED : undefined),
    });
}

/** ensureRouteTable without the listing (the caller lists, listRouteTables). */
async function createRouteTable(deps: Deps, t: TableConfig, name: string, ingestId: string, start: Offsets): Promise<TableMetadata> {
  await ensureIngestTables(
    deps.tables,
    {
      ...t,
      table: name,
      properties: { ...t.properties, [ROUTE_BASE_PROPERTY]: t.table, [routeStartPropertyKey(ingestId)]: formatOffsets(start) },
    },
    deps.cfg.schemaRegistry,
  );
  // One writer per table: a table of that name that this route did not create (another route's
  // template made the same name, or it was there before) is a config problem, not a record's.
  const { metadata } = await deps.tables.load(name);
  const owner = metadata.properties[ROUTE_BASE_PROPERTY];
  if (owner !== t.table)
    throw nonRetryable(
      FailureType.ConfigError,
      `route of ${t.table}: its template ${t.route?.dynamic} names table ${name}, which ${owner === undefined ? 'it did not create' : `belongs to the route of ${owner}`}; change the template`,
    );
  // Created by another ingest id (another topic of the entry): this one starts writing it at the
  // cycle's start. No earlier record of this ingest id routed here, or its poll would have been
  // here before (and set this, kept by every later attempt: only set while absent).
  const startKey = routeStartPropertyKey(ingestId);
  if (metadata.properties[startKey] === undefined && readCursor(metadata, ingestId).snapshotId === null) {
    await new Transaction(parseIdentifier(name))
      .setProperties({ [startKey]: formatOffsets(start) })
      .commit(deps.tables.catalog, deps.tables.io, {
        validate: (m) =>
          m.metadata.properties[startKey] !== undefined || readCursor(m.metadata, ingestId).snapshotId !== null
            ? ALREADY_COMMITTED
            : undefined,
      });
    return (await deps.tables.load(name)).metadata;
  }
  return metadata;
}

export class RoutedWriters {
  private readonly route: (rec: KafkaRecord, decoded?: { doc: unknown }) => RouteDecision;
  /** A schema format's writer schemas and decoding: each value decoded once, for the route's field and its table. */
  private readonly values: RecordSides | undefined;
  private readonly targets = new Map<string, Target>();
  private readonly opening = new Map<string, Promise<Target>>();
  /** Tables this poll created (not planned): listed on the base table by close(). */
  private readonly created: string[] = [];
  /** The plan's tables' cursors: inline in the input, or read once from the staged plan. */
  private floors: Promise<Record<string, Offsets>> | undefined;

  constructor(
    private readonly deps: Deps,
    private readonly t: TableConfig,
    private readonly input: PollInput & { route: NonNullable<PollInput['route']> },
    private readonly open: (table: string, suffix?: string) => Promise<PartitionedRowWriter>,
    private readonly warn: (msg: string) => void = () => undefined,
  ) {
    this.route = compileRouter(deps.cfg, t);
    this.values = t.value.format === 'json' ? undefined : new RecordSides(t, deps.cfg.schemaRegistry);
  }

  private plannedFloors(): Promise<Record<string, Offsets>> {
    const staged = this.input.route.staged;
    return (this.floors ??= staged
      ? readStagedPlan(this.deps.tables.io, staged).then((tables) => Object.fromEntries(tables.map((r) => [r.table, r.startOffsets])))
      : Promise.resolve(this.input.route.tables));
  }

  private async target(name: string): Promise<Target> {
    let floor = (await this.plannedFloors())[name];
    if (floor === undefined) {
      // Not planned: a dynamic table met for the first time (or created by a killed attempt).
      // Listed on the base table when the poll closes, in one commit for all it created.
      const m = await createRouteTable(this.deps, this.t, name, this.input.ingestId, this.input.route.start);
      this.created.push(name);
      floor = {
        ...this.input.route.start,
        ...routeStart(m.properties, this.input.ingestId),
        ...readCursor(m, this.input.ingestId).offsets,
      };
    }
    const sink = await TableSink.open(this.deps, { ...this.t, table: name }, (suffix) => this.open(name, suffix), this.warn);
    const target: Target = { sink, floor };
    this.targets.set(name, target);
    return target;
  }

  /** Routes and writes one record; `deadLetter` takes a record no table gets, with its reason. */
  add(rec: KafkaRecord, deadLetter: DeadLetter): void | Promise<void> {
    let decoded: Decoded | undefined;
    if (this.values) {
      let got;
      try {
        got = this.values.document(rec);
      } catch (e) {
        return deadLetter(rec, e);
      }
      if ('wait' in got) return got.wait.then(() => this.add(rec, deadLetter));
      decoded = got;
    }
    const d = this.route(rec, decoded);
    if ('skip' in d) return;
    if ('deadLetter' in d) return deadLetter(rec, new DecodeError(d.deadLetter));
    const target = this.targets.get(d.table);
    if (target === undefined) {
      let p = this.opening.get(d.table);
      if (p === undefined) this.opening.set(d.table, (p = this.target(d.table)));
      return p.then(() => this.add(rec, deadLetter));
    }
    if (heldByTable(target.floor, rec.partition, rec.offset)) return;
    return target.sink.add(rec, deadLetter, decoded);
  }

  async close(): Promise<RoutedTableFiles[]> {
    // Before any of their commits (which come after this poll returns), every later plan knows them.
    await listRouteTables(this.deps, this.t, this.created, this.input.ingestId);
    const out: RoutedTableFiles[] = [];
    for (const [table, { sink }] of [...this.targets].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const rows = sink.rows;
      out.push({ table, files: await sink.close(), rows });
    }
    return out;
  }

  abort(): void {
    for (const { sink } of this.targets.values()) sink.abort();
  }
}

/** The history form of a routed poll's files: each table's list, staged past its share of `budget`. */
export function routedFileLists(
  io: FileIO,
  routed: RoutedTableFiles[],
  budget: number,
  stage: (table: string) => { metadata: () => Promise<TableMetadata>; baseName: string },
): Promise<RoutedFiles[]> {
  const share = Math.max(1, Math.floor(budget / Math.max(1, routed.length)));
  return Promise.all(
    routed.map(async (r) => ({ table: r.table, files: await fileListForHistory(io, r.files, share, stage(r.table)), records: r.rows })),
  );
}

/**
 * A bulk route's poll: every table's list inline while they fit the group's `budget` together,
 * else all of them in one JSON object staged beside the base table's metadata as
 * `<baseName>-routed.json` (marked pending under the cycle's commit id first): one write however
 * many tables, where per-table staging (routedFileLists) makes one manifest per table.
 */
export async function bulkRoutedLists(
  io: FileIO,
  routed: RoutedTableFiles[],
  budget: number,
  base: { location: string; baseName: string; mark: () => Promise<void> },
): Promise<{ routed: RoutedFiles[]; routedStaged?: StagedJson }> {
  const lists: RoutedFiles[] = routed.map((r) => ({ table: r.table, files: r.files.map(dataFileToWire), records: r.rows }));
  if (Buffer.byteLength(JSON.stringify(lists)) <= budget) return { routed: lists };
  await base.mark();
  const location = stagedLocation(base.location, `${base.baseName}-routed.json`);
  const bytes = await writeStagedJson(io, location, lists);
  return { routed: [], routedStaged: { staged: location, count: lists.length, bytes } };
}

/** A staged route plan (plan-cycle.ts stageRoutePlan), checked against its reference. */
export async function readStagedPlan(io: FileIO, ref: StagedJson): Promise<RouteTablePlan[]> {
  const tables = await readStagedJson<RouteTablePlan[]>(io, ref.staged);
  if (!Array.isArray(tables) || tables.length !== ref.count)
    throw new Error(
      `staged route plan ${ref.staged}: expected ${ref.count} tables, found ${Array.isArray(tables) ? tables.length : typeof tables}`,
    );
  return tables;
}
