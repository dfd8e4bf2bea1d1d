/**
 * Routing (config `route`): which table of a route a record belongs to, and where a route keeps
 * what it learned. Pure functions, no I/O. The protocol (one cursor per table, one poll for all)
 * is in the README, "Routing"; plan-cycle.ts, poll-write.ts and commit-cycle.ts carry it out.
 *
 * The decision is a function of the config and the record alone, so a record read twice (a
 * table behind the others after a crash between their commits) goes to the same table both times.
 */
import { ROUTE_VALUE_PLACEHOLDER, entryTables, type FloeConfig, type TableConfig } from '../config';
import type { KafkaRecord } from './decode';
import { formatOffsets, maxOffsets, parseOffsets, type Offsets } from '../table/cursor';

/** A record's fate: a table of the route, a dead letter with its reason, or nothing (covered, not written). */
export type RouteDecision = { table: string } | { deadLetter: string } | { skip: true };

/**
 * Base-table property listing a dynamic table of the route: `floe.route.table.<identifier>`. One
 * key per table (not one list) so two polls adding tables at once never overwrite each other.
 */
export const ROUTE_TABLE_PROPERTY_PREFIX = 'floe.route.table.';
/**
 * Property a dynamic table is created with: the offsets its ingest id starts from there (the
 * cycle's start), `floe.route.start.<ingest id>`. Used only while the table has no cursor.
 */
export const routeStartPropertyKey = (ingestId: string): string => `floe.route.start.${ingestId}`;
/** Property a dynamic table is created with: the base table of the route that owns it. */
export const ROUTE_BASE_PROPERTY = 'floe.route.base';

/**
 * Base-table property `floe.route.cursor.<ingest id>`: the route's cursor, offsets below which every
 * record of the ingest id that routes to any table of the route is in that table. Written only in
 * the base table's commit, which lands after every other table of its cycle that got rows (so a
 * table that got none needs no snapshot of its own); a table's effective cursor is the maximum of
 * its own and this (docs/DESIGN-NOTES.md, "Routes into many tables").
 */
const routeCursorPropertyKey = (ingestId: string): string => `floe.route.cursor.${ingestId}`;

/** The route cursor of `ingestId` on the base table (empty: none yet, every table goes by its own). */
export function readRouteCursor(properties: Record<string, string>, ingestId: string): Offsets {
  const v = properties[routeCursorPropertyKey(ingestId)];
  return v === undefined ? {} : parseOffsets(v);
}

/** The property update that records route cursor `offsets`. */
export const routeCursorProperty = (ingestId: string, offsets: Offsets): Record<string, string> => ({
  [routeCursorPropertyKey(ingestId)]: formatOffsets(offsets),
});

/** A table's effective cursor on a route: its own, raised to the route cursor. */
export const effectiveCursor = (own: Offsets, route: Offsets): Offsets => maxOffsets(own, route);

/** Dynamic tables the base table's properties list. */
export function listedRouteTables(properties: Record<string, string>): string[] {
  return Object.keys(properties)
    .filter((k) => k.startsWith(ROUTE_TABLE_PROPERTY_PREFIX))
    .map((k) => k.slice(ROUTE_TABLE_PROPERTY_PREFIX.length))
    .sort();
}

export function routeStart(properties: Record<string, string>, ingestId: string): Offsets | undefined {
  const v = properties[routeStartPropertyKey(ingestId)];
  return v === undefined ? undefined : parseOffsets(v);
}

/** Identifier characters only, lower case (catalogs differ on case), at most 100 of them. */
export function sanitizeRouteValue(v: string): string {
  const s = v
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, '_')
    .slice(0, 100);
  return /^[0-9]/.test(s) ? `_${s}` : s;
}

/** The route's tables the config names: the base table, then the static tables in config order. */
export const staticRouteTables = (t: TableConfig): string[] => entryTables(t);

/**
 * The decision function of entry `t`. A dynamic name that is a table some entry of `cfg` owns
 * otherwise (a dead-letter table, another entry's table) is refused: one writer per table.
 */
export function compileRouter(cfg: FloeConfig, t: TableConfig): (rec: KafkaRecord, decoded?: { doc: unknown }) => RouteDecision {
  const route = t.route;
  if (!route) return () => ({ table: t.table });
  const own = new Set(staticRouteTables(t));
  const taken = new Set<string>();
  for (const e of cfg.tables) {
    taken.add(e.deadLetterTable);
    if (e.table !== t.table) for (const x of staticRouteTables(e)) taken.add(x);
  }
  const parts = route.field?.split('.') ?? [];
  const hasOwn = Object.prototype.hasOwnProperty;
  const unmatched = (why: string): RouteDecision =>
    route.unmatched === 'skip' ? { skip: true } : route.unmatched === 'base' ? { table: t.table } : { deadLetter: why };
  const what = route.by === 'topic' ? 'topic' : `field ${route.field}`;
  return (rec, decoded) => {
    let value: unknown;
    if (route.by === 'topic') value = rec.topic ?? t.topic;
    else {
      let cur: unknown;
      // A schema format's value comes decoded (by its writer schema); JSON is parsed here.
      if (decoded) cur = decoded.doc;
      else
        try {
          cur = rec.value === null ? null : JSON.parse(rec.value.toString('utf8'));
        } catch (e) {
          // Not JSON: no table could decode it either.
          return { deadLetter: `route ${what}: the value is not JSON (${(e as Error).message})` };
        }
      for (const p of parts) {
        if (cur === null || typeof cur !== 'object' || Array.isArray(cur) || !hasOwn.call(cur, p)) {
          cur = undefined;
          break;
        }
        cur = (cur as Record<string, unknown>)[p];
      }
      value = cur;
    }
    if (typeof value !== 'string' || value === '')
      return unmatched(`route ${what}: no string value (found ${JSON.stringify(value) ?? 'none'})`);
    const fixed = route.tables[value];
    if (fixed !== undefined) return { table: fixed };
    if (route.dynamic === undefined) return unmatched(`route ${what}: no table for ${JSON.stringify(value)}`);
    const name = route.dynamic.replace(ROUTE_VALUE_PLACEHOLDER, sanitizeRouteValue(value));
    if (taken.has(name) && !own.has(name))
      return unmatched(`route ${what}: ${JSON.stringify(value)} would route to ${name}, which another entry or a dead-letter table owns`);
    return { table: name };
  };
}

/**
 * Whether a routed table already holds the record at `partition`/`offset`: its floor (the table's
 * cursor when the cycle was planned, or where the route started it) is past it. Such a record is
 * not written again: a crash between the tables' commits left that table ahead of the others.
 */
export function heldByTable(floor: Offsets, partition: number | string, offset: bigint | string): boolean {
  const f = floor[String(partition)];
  return f !== undefined && BigInt(offset) < BigInt(f);
}

/**
 * Where a route's one poll starts: per partition, the lowest cursor of its tables (a table behind
 * the others, after a crash between their commits, is caught up; the others skip what they have).
 */
export function minimumOffsets(cursors: readonly Offsets[], partitions: readonly string[]): Offsets {
  const out: Offsets = {};
  for (const p of partitions) {
    for (const c of cursors) {
      const o = c[p];
      if (o !== undefined && (out[p] === undefined || BigInt(o) < BigInt(out[p]!))) out[p] = o;
    }
  }
  return out;
}
