/**
 * Routes into many tables (issue 29, item 4), on the SQLite catalog in memory and a memory
 * warehouse, with a fake topic:
 * - planning in bulk: one catalog call per existing table of the route (it was five);
 * - the bulk commit: only the tables that got rows get a snapshot, the base table last with the
 *   route cursor; a table that got nothing plans from the route cursor; a crash between the tables
 *   and the base table, and a refused table, leave the route cursor where it was (exactly once);
 * - a large plan and large per-table lists are staged, not carried;
 * - a dynamic table's metadata stays bounded over a simulated day (the ingest expires it).
 * The workflow side (mocked activities) is workflows-route.test.ts; the real stack,
 * test/integration/routing-many-tables.test.ts.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { parseConfig, type FloeConfig, type TableConfig } from '../../config';
import type { Deps } from '../../ingest/deps';
import { DETACHED_RUN } from '../../contract';
import { planCycle } from '../../ingest/plan-cycle';
import { ensureRouteTable, bulkRoutedLists } from '../../ingest/route-write';
import { changedRouteCommits, commitRoute, mergeRouted, type AfterTableCommit } from '../../ingest/route-commit';
import { effectiveCursor, readRouteCursor, ROUTE_BASE_PROPERTY } from '../../ingest/route';
import { ensureIngestTables } from '../../ingest/tables';
import { readCursor, type Offsets } from '../../table/cursor';
import { openTables, type Tables } from '../../table/tables';
import { dataFileToWire, serializeTableMetadata, type DataFile } from '../../iceberg';
import type { CyclePlan, RouteCommitInput, RouteTablePlan } from '../../ingest/types';
import { ingestExpiry } from '../../activities/maintenance';
import { INGEST_EXPIRE_BATCH } from '../../maintenance/expire';

const entry = (over: Record<string, unknown> = {}) => ({
  table: 'shop.events',
  topic: 'events',
  columns: [
    { name: 'id', type: 'string', required: true },
    { name: 'type', type: 'string' },
  ],
  route: { field: 'type', dynamic: 'shop.events_{value}' },
  ...over,
});

async function setup(high: Offsets, over: Record<string, unknown> = {}) {
  const cfg: FloeConfig = parseConfig({ catalog: { uri: 'sqlite:///:memory:', warehouse: 'memory://wh' }, tables: [entry(over)] });
  const tables = await openTables(cfg);
  const admin = {
    fetchTopicOffsets: async () => Object.entries(high).map(([p, h]) => ({ partition: Number(p), low: '0', high: h })),
    // the base table's commit mirrors its cursor for lag tooling (best effort)
    setOffsets: async () => undefined,
  };
  const deps = { cfg, tables, admin } as unknown as Deps;
  const t = cfg.tables[0]!;
  await ensureIngestTables(tables, t, cfg.schemaRegistry);
  return { cfg, tables, deps, t };
}

/** Counts the catalog's calls by method (tables.load and friends call through the same object). */
function countCalls(tables: Tables): { counts: Record<string, number>; total: () => number } {
  const counts: Record<string, number> = {};
  const catalog = tables.catalog as unknown as Record<string, unknown>;
  for (const k of [
    'loadTable',
    'tableExists',
    'namespaceExists',
    'createNamespace',
    'createTable',
    'listTables',
    'listNamespaces',
    'commitTable',
  ]) {
    const f = catalog[k] as (...a: unknown[]) => unknown;
    catalog[k] = (...a: unknown[]) => {
      counts[k] = (counts[k] ?? 0) + 1;
      return f.apply(tables.catalog, a);
    };
  }
  return { counts, total: () => Object.values(counts).reduce((a, b) => a + b, 0) };
}

/** A data file of `table` that exists (the commit checks), in its wire form. */
async function fileOf(tables: Tables, table: string, records = 1): Promise<Record<string, unknown>> {
  const { metadata } = await tables.load(table);
  const filePath = `${metadata.location}/data/${randomUUID()}.parquet`;
  await tables.io.write(filePath, new Uint8Array([1, 2, 3]));
  return dataFileToWire({
    content: 0,
    filePath,
    fileFormat: 'PARQUET',
    specId: 0,
    partition: {},
    recordCount: records,
    fileSizeInBytes: 3,
    columnSizes: new Map(),
    valueCounts: new Map(),
    nullValueCounts: new Map(),
    nanValueCounts: new Map(),
    lowerBounds: new Map(),
    upperBounds: new Map(),
  } as unknown as DataFile);
}

const bulkPlan = (deps: Deps, t: TableConfig): Promise<CyclePlan> =>
  planCycle(deps, { table: t.table, ingestId: 'main', bulk: true }, DETACHED_RUN);

/** The commit input of a bulk cycle from `plan` to `end`, with files for `got` tables. */
async function cycle(tables: Tables, plan: CyclePlan, end: Offsets, got: string[], commitId = randomUUID()): Promise<RouteCommitInput> {
  return {
    table: 'shop.events',
    ingestId: 'main',
    commitId,
    routeTables: plan.routeTables!,
    ...(plan.routeStaged ? { routeStaged: plan.routeStaged } : {}),
    routeCursor: plan.routeCursor!,
    startOffsets: plan.startOffsets,
    endOffsets: end,
    deadLetterFloor: plan.deadLetterFloor,
    deadLetterBaseCommitId: plan.deadLetterBaseCommitId,
    deadLetterFiles: [],
    deadLetters: 0,
    records: got.length,
    routed: await Promise.all(got.map(async (table) => ({ table, files: [await fileOf(tables, table)], records: 1 }))),
    routedStaged: [],
  };
}

const snapshots = async (tables: Tables, table: string) => (await tables.load(table)).metadata.snapshots.length;

describe('planning a route in bulk', () => {
  it('one catalog call per existing table, the tables loaded a few at a time', async () => {
    const { tables, deps, t } = await setup({ 0: '10', 1: '10' });
    try {
      const N = 40;
      for (let i = 0; i < N; i++) await ensureRouteTable(deps, t, `shop.events_v${i}`, 'main', { 0: '0', 1: '0' });
      const calls = countCalls(tables);
      const plan = await bulkPlan(deps, t);
      assert.equal(plan.routeTables!.length, N + 1);
      // The base table's own ensure (namespace + existence, its dead-letter table's too) and loads
      // are constant; each dynamic table costs one loadTable. Before: five (namespaceExists and
      // tableExists for it and for the dead-letter table, then loadTable).
      const perTable = (calls.total() - 6) / N;
      console.log(`catalog calls planning ${N} route tables: ${calls.total()} (${JSON.stringify(calls.counts)}), ${perTable} per table`);
      assert.equal(calls.counts.loadTable, N + 2, 'each dynamic table loaded once (plus the base and dead-letter tables)');
      assert.equal(calls.counts.tableExists, 2, 'existence checked for the base and dead-letter tables only');
      assert.ok(perTable <= 1, `expected at most one catalog call per table, found ${perTable}`);
    } finally {
      await tables.close();
    }
  });

  it('a listed table dropped since is created again', async () => {
    const { tables, deps, t } = await setup({ 0: '10' });
    try {
      await ensureRouteTable(deps, t, 'shop.events_gone', 'main', { 0: '0' });
      await tables.catalog.dropTable({ namespace: ['shop'], name: 'events_gone' });
      const plan = await bulkPlan(deps, t);
      assert.deepEqual(
        plan.routeTables!.map((r) => r.table),
        ['shop.events', 'shop.events_gone'],
      );
      assert.equal((await tables.load('shop.events_gone')).metadata.properties[ROUTE_BASE_PROPERTY], 'shop.events');
    } finally {
      await tables.close();
    }
  });
});

describe('the bulk commit of a route: only the tables that changed, the base table last', () => {
  it('a table that got no rows gets no snapshot and plans from the route cursor', async () => {
    const { tables, deps, t } = await setup({ 0: '100', 1: '100' });
    try {
      for (const v of ['a', 'b', 'c']) await ensureRouteTable(deps, t, `shop.events_${v}`, 'main', { 0: '0', 1: '0' });
      const p1 = await bulkPlan(deps, t);
      assert.deepEqual(p1.routeCursor, {});
      const r1 = await commitRoute(deps, await cycle(tables, p1, { 0: '10', 1: '10' }, ['shop.events_a', 'shop.events_b']));
      assert.equal(r1.committedTables, 3);
      assert.deepEqual(
        r1.tables!.map((x) => x.table),
        ['shop.events_a', 'shop.events_b', 'shop.events'],
        'the tables with rows, then the base table',
      );
      assert.equal(await snapshots(tables, 'shop.events_c'), 0, 'no rows, no snapshot');
      const base = (await tables.load('shop.events')).metadata;
      assert.deepEqual(readRouteCursor(base.properties, 'main'), { 0: '10', 1: '10' });

      const p2 = await bulkPlan(deps, t);
      const start = (n: string) => p2.routeTables!.find((r) => r.table === n)!.startOffsets;
      assert.deepEqual(start('shop.events_c'), { 0: '10', 1: '10' }, 'its own start is 0; the route cursor covers it');
      assert.deepEqual(p2.startOffsets, { 0: '10', 1: '10' }, 'the poll does not go back for it');

      // Only a: a and the base table commit; b and c keep their snapshots.
      await commitRoute(deps, await cycle(tables, p2, { 0: '20', 1: '20' }, ['shop.events_a']));
      assert.deepEqual(
        await Promise.all(['shop.events', 'shop.events_a', 'shop.events_b', 'shop.events_c'].map((n) => snapshots(tables, n))),
        [2, 2, 1, 0],
      );
      const b = (await tables.load('shop.events_b')).metadata;
      assert.deepEqual(readCursor(b, 'main').offsets, { 0: '10', 1: '10' }, 'its own cursor stays');
      assert.deepEqual(
        effectiveCursor(readCursor(b, 'main').offsets, readRouteCursor((await tables.load('shop.events')).metadata.properties, 'main')),
        { 0: '20', 1: '20' },
        'its effective cursor moved with the route',
      );
    } finally {
      await tables.close();
    }
  });

  it('a crash between the tables and the base table: the route cursor stays; the retry lands the base table once', async () => {
    const { tables, deps, t } = await setup({ 0: '100' });
    try {
      for (const v of ['a', 'b']) await ensureRouteTable(deps, t, `shop.events_${v}`, 'main', { 0: '0' });
      const p1 = await bulkPlan(deps, t);
      const input = await cycle(tables, p1, { 0: '30' }, ['shop.events_a', 'shop.events_b']);
      const crash: AfterTableCommit = async (table) => {
        if (table === 'shop.events_b') throw new Error('worker killed');
        return 0;
      };
      await assert.rejects(commitRoute(deps, input, { afterTable: crash }), /worker killed/);
      assert.equal(await snapshots(tables, 'shop.events'), 0, 'the base table did not commit');
      assert.deepEqual(readRouteCursor((await tables.load('shop.events')).metadata.properties, 'main'), {});
      // A new plan (the run lost): a and b hold [0, 30); the base table does not; the poll starts at 0
      // for the base table and a, b skip what they hold.
      const p2 = await bulkPlan(deps, t);
      assert.deepEqual(
        p2.routeTables!.map((r) => [r.table, r.startOffsets]),
        [
          ['shop.events', { 0: '0' }],
          ['shop.events_a', { 0: '30' }],
          ['shop.events_b', { 0: '30' }],
        ],
      );
      // Or the same activity retried: a and b are found by the commit id, the base table lands.
      const r = await commitRoute(deps, input);
      assert.equal(r.alreadyCommitted, false);
      assert.deepEqual(
        await Promise.all(['shop.events', 'shop.events_a', 'shop.events_b'].map((n) => snapshots(tables, n))),
        [1, 1, 1],
        'each table once',
      );
      assert.deepEqual(readRouteCursor((await tables.load('shop.events')).metadata.properties, 'main'), { 0: '30' });
    } finally {
      await tables.close();
    }
  });

  it('a refused table leaves the base table, and so the route cursor, where they were', async () => {
    const { tables, deps, t } = await setup({ 0: '100' });
    try {
      for (const v of ['a', 'b', 'c']) await ensureRouteTable(deps, t, `shop.events_${v}`, 'main', { 0: '0' });
      const p1 = await bulkPlan(deps, t);
      // Another writer moved b's cursor meanwhile: b's commit is fenced.
      const stale: CyclePlan = {
        ...p1,
        routeTables: p1.routeTables!.map((r): RouteTablePlan => (r.table === 'shop.events_b' ? { ...r, baseSnapshotId: '42' } : r)),
      };
      await assert.rejects(
        commitRoute(deps, await cycle(tables, stale, { 0: '10' }, ['shop.events_a', 'shop.events_b', 'shop.events_c'])),
        /stale cursor for shop\.events_b/,
      );
      assert.equal(await snapshots(tables, 'shop.events_c'), 1, 'the other tables in flight still landed');
      assert.equal(await snapshots(tables, 'shop.events'), 0, 'the base table did not');
      assert.deepEqual(readRouteCursor((await tables.load('shop.events')).metadata.properties, 'main'), {});
    } finally {
      await tables.close();
    }
  });

  it('changedRouteCommits: changed tables in plan order, created ones by name, the base table always, last', () => {
    const planned: RouteTablePlan[] = [
      { table: 'b', baseSnapshotId: '1', startOffsets: { 0: '5' } },
      { table: 'x', baseSnapshotId: '2', startOffsets: { 0: '9' } },
      { table: 'y', baseSnapshotId: null, startOffsets: { 0: '5' } },
    ];
    const routed = mergeRouted([
      { table: 'y', files: [{ f: 1 }], records: 1 },
      { table: 'z', files: [{ f: 2 }], records: 2 },
      { table: 'y', files: [{ f: 3 }], records: 1 },
    ]);
    const c = changedRouteCommits('b', planned, routed, { 0: '5' }, { 0: '8' });
    assert.deepEqual(
      c.map((x) => [x.table, x.records, x.files.length, x.endOffsets]),
      [
        ['y', 2, 2, { 0: '8' }],
        ['z', 2, 1, { 0: '8' }],
        ['b', 0, 0, { 0: '8' }],
      ],
      'x got nothing (and is past the end: never backwards)',
    );
  });
});

describe('large plans and lists are staged', () => {
  it('a plan past the inline budget is staged and read back by the commit; small ones stay inline', async () => {
    const high = Object.fromEntries(Array.from({ length: 64 }, (_, p) => [String(p), '9999999999']));
    const { tables, deps, t } = await setup(high);
    try {
      // Offsets of a topic that has run a while: ten digits each.
      const start = Object.fromEntries(Object.keys(high).map((p) => [p, '9999999000']));
      const small = await bulkPlan(deps, t);
      assert.equal(small.routeStaged, undefined);
      // 300 tables x 64 partitions: ~1 KB of offsets each, past the 256 KiB inline budget.
      for (let i = 0; i < 300; i++) await ensureRouteTable(deps, t, `shop.events_v${i}`, 'main', start);
      const plan = await bulkPlan(deps, t);
      assert.ok(plan.routeStaged, 'staged');
      assert.deepEqual(plan.routeTables, []);
      assert.equal(plan.routeStaged.count, 301);
      const inHistory = JSON.stringify(plan).length;
      console.log(
        `plan of 301 tables x 64 partitions in history: ${inHistory} bytes (its tables: ${plan.routeStaged.bytes} bytes, staged)`,
      );
      assert.ok(inHistory < 16 * 1024);
      const end = Object.fromEntries(Object.keys(high).map((p) => [p, '9999999005']));
      const r = await commitRoute(deps, await cycle(tables, plan, end, ['shop.events_v7']));
      assert.equal(r.committedTables, 2);
      assert.equal(await tables.io.exists(plan.routeStaged.staged), false, 'read, committed, deleted');
    } finally {
      await tables.close();
    }
  });

  it("a poll's per-table lists past its budget go in one staged object", async () => {
    const { tables, t } = await setup({ 0: '10' });
    try {
      const { metadata } = await tables.load(t.table);
      const file = (await import('../../iceberg')).dataFileFromWire(await fileOf(tables, t.table));
      const routed = Array.from({ length: 50 }, (_, i) => ({ table: `shop.events_v${i}`, files: [file], rows: 1 }));
      let marked = 0;
      const base = { location: metadata.location, baseName: 'c1-g0-a1', mark: async () => void marked++ };
      const inline = await bulkRoutedLists(tables.io, routed, 1 << 20, base);
      assert.equal(inline.routed.length, 50);
      assert.equal(inline.routedStaged, undefined);
      const staged = await bulkRoutedLists(tables.io, routed, 4096, base);
      assert.deepEqual(staged.routed, []);
      assert.equal(staged.routedStaged!.count, 50);
      assert.equal(marked, 1, 'marked pending before it was written');
      assert.match(staged.routedStaged!.staged, /metadata\/floe-staged\/c1-g0-a1-routed\.json$/);
    } finally {
      await tables.close();
    }
  });
});

describe("a dynamic table's metadata stays bounded over a simulated day", () => {
  it('the ingest expires the dynamic tables it commits (older than 2 h, in batches)', async () => {
    const realNow = Date.now;
    let now = Date.parse('2026-07-01T00:00:00Z');
    Date.now = () => now; // snapshot timestamps, the catalog's and expiry's clocks
    try {
      const { tables, deps, t } = await setup({ 0: '100000000' });
      try {
        await ensureRouteTable(deps, t, 'shop.events_hot', 'main', { 0: '0' });
        const expire = ingestExpiry(
          deps,
          t,
          (m) => assert.fail(m),
          () => now,
        );
        const intervalMs = 120_000; // a commit every 2 minutes: 720 in the day
        const cycles = 720;
        let offset = 0,
          maxSnapshots = 0,
          expired = 0;
        const hourlyMaxBytes: number[] = [];
        for (let c = 0; c < cycles; c++) {
          now += intervalMs;
          const plan = await bulkPlan(deps, t);
          offset += 10;
          const r = await commitRoute(deps, await cycle(tables, plan, { 0: String(offset) }, ['shop.events_hot']), { afterTable: expire });
          expired += r.expiredSnapshots ?? 0;
          const m = (await tables.load('shop.events_hot')).metadata;
          maxSnapshots = Math.max(maxSnapshots, m.snapshots.length);
          const hour = Math.floor((c * intervalMs) / 3_600_000);
          hourlyMaxBytes[hour] = Math.max(hourlyMaxBytes[hour] ?? 0, serializeTableMetadata(m).length);
        }
        const bound = t.maintenance.expire.olderThanMs / intervalMs + INGEST_EXPIRE_BATCH;
        console.log(
          `simulated day: ${cycles} commits, ${expired} snapshots expired by the ingest, at most ${maxSnapshots} snapshots (bound ${bound}), metadata.json by hour: ${hourlyMaxBytes.join(' ')}`,
        );
        assert.ok(maxSnapshots <= bound, `at most ${bound} snapshots, found ${maxSnapshots}`);
        assert.ok(expired >= cycles - bound, `expired ${expired}`);
        // Steady state from the third hour: the last hour's metadata is within 2% of the third's (the
        // offsets gain digits); without expiry it would hold every one of the day's snapshots.
        assert.ok(hourlyMaxBytes.at(-1)! <= hourlyMaxBytes[3]! * 1.02, `metadata.json grew: ${hourlyMaxBytes.join(' ')}`);
        assert.ok(maxSnapshots * 5 < cycles);
        // The base table is the schedules' (`floe schedules apply`): the ingest never expires it.
        assert.equal(await snapshots(tables, 'shop.events'), cycles);
      } finally {
        await tables.close();
      }
    } finally {
      Date.now = realNow;
    }
  });
});
