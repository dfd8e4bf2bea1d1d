/**
 * Routing (README, "Routing"): the `route` config and its errors, the routing decision, the one
 * poll's start (the minimum of the tables' cursors), a table writing only at or past its own
 * cursor, and the per-table commits of a cycle. The protocol end to end, through SIGKILLs, is
 * test/integration/routing.test.ts; the workflow over mocked activities is workflows-route.test.ts.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig, type FloeConfig, type TableConfig } from '../../config';
import type { KafkaRecord, Row } from '../../ingest/decode';
import type { Deps } from '../../ingest/deps';
import {
  ROUTE_BASE_PROPERTY,
  compileRouter,
  listedRouteTables,
  minimumOffsets,
  routeStart,
  sanitizeRouteValue,
  staticRouteTables,
} from '../../ingest/route';
import { RoutedWriters, ensureRouteTable } from '../../ingest/route-write';
import { openTables } from '../../table/tables';
import { resetCursor } from '../../ingest/reset';
import { cursorProperty, readCursor } from '../../table/cursor';
import { planCycle } from '../../ingest/plan-cycle';
import { DETACHED_RUN } from '../../contract';
import type { CyclePlan, PollInput } from '../../ingest/types';
import { mergeCycle, pollInputs, routeCommits } from '../../workflows/ingest-state';
import { ensureIngestTables } from '../../ingest/tables';

const entry = (route: unknown, over: Record<string, unknown> = {}) => ({
  table: 'shop.events',
  topic: 'events',
  columns: [
    { name: 'id', type: 'string', required: true },
    { name: 'type', type: 'string' },
  ],
  route,
  ...over,
});
const parse = (...tables: unknown[]): FloeConfig => parseConfig({ tables });

describe('route config', () => {
  it('reads a route with its defaults', () => {
    const t = parse(entry({ field: 'meta.type', tables: { order: 'shop.orders' }, dynamic: 'shop.events_{value}' })).tables[0]!;
    assert.deepEqual(t.route, {
      by: 'field',
      field: 'meta.type',
      tables: { order: 'shop.orders' },
      dynamic: 'shop.events_{value}',
      unmatched: 'dead-letter',
    });
    assert.deepEqual(parse(entry({ by: 'topic', dynamic: 'shop.t_{value}', unmatched: 'skip' })).tables[0]!.route, {
      by: 'topic',
      tables: {},
      dynamic: 'shop.t_{value}',
      unmatched: 'skip',
    });
    assert.equal(parse(entry(undefined)).tables[0]!.route, undefined);
  });

  const bad: Array<[string, unknown[], RegExp]> = [
    ['an unknown key', [entry({ field: 'type', tabels: {} })], /tables\[0\]\.route\.tabels: unknown key; did you mean "tables"\?/],
    ['by field without a field', [entry({ tables: { a: 'shop.a' } })], /tables\[0\]\.route\.field: by field needs the \(dotted\) path/],
    [
      'by topic with a field',
      [entry({ by: 'topic', field: 'type', dynamic: 'shop.t_{value}' })],
      /tables\[0\]\.route\.field: only with by: field/,
    ],
    ['an unknown by', [entry({ by: 'key', tables: { a: 'shop.a' } })], /tables\[0\]\.route\.by: expected field or topic, found "key"/],
    ['no table at all', [entry({ field: 'type' })], /tables\[0\]\.route\.tables: a route needs static tables, a dynamic template, or both/],
    [
      'a bad static table',
      [entry({ field: 'type', tables: { a: 'nonamespace' } })],
      /tables\[0\]\.route\.tables\.a: expected an identifier/,
    ],
    [
      'a template without {value}',
      [entry({ field: 'type', dynamic: 'shop.events_x' })],
      /tables\[0\]\.route\.dynamic: expected a table identifier template with \{value\} once in its table name/,
    ],
    [
      'a template with {value} in the namespace',
      [entry({ field: 'type', dynamic: 'shop_{value}.events' })],
      /tables\[0\]\.route\.dynamic: expected a table identifier template/,
    ],
    [
      'a bad unmatched',
      [entry({ field: 'type', tables: { a: 'shop.a' }, unmatched: 'drop' })],
      /route\.unmatched: expected dead-letter, skip or base/,
    ],
    [
      'a routed table another entry owns',
      [entry({ field: 'type', tables: { a: 'shop.other' } }), entry(undefined, { table: 'shop.other', topic: 'other' })],
      /tables\[0\]\.route\.tables\.a: "shop\.other" is already tables\[1\]\.table/,
    ],
    [
      'a routed table that is a dead-letter table',
      [entry({ field: 'type', tables: { a: 'shop.events_dead_letters' } })],
      /tables\[0\]\.deadLetterTable: "shop\.events_dead_letters" is already tables\[0\]\.route\.tables\.a/,
    ],
  ];
  for (const [what, tables, re] of bad) {
    it(`refuses ${what}`, () => assert.throws(() => parse(...tables), re));
  }

  it('lets several values share a table, and the base table be a route', () => {
    const t = parse(entry({ field: 'type', tables: { a: 'shop.ab', b: 'shop.ab', c: 'shop.events' } })).tables[0]!;
    assert.deepEqual(staticRouteTables(t), ['shop.events', 'shop.ab']);
  });
});

const rec = (value: unknown, offset = 0, partition = 0): KafkaRecord => ({
  partition,
  offset: String(offset),
  timestamp: '0',
  key: null,
  value: value === null ? null : Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)),
  topic: 'events',
});

describe('routing decision', () => {
  const cfg = parse(
    entry({ field: 'type', tables: { order: 'shop.orders', refund: 'shop.refunds' }, dynamic: 'shop.events_{value}' }),
    entry(undefined, { table: 'shop.other', topic: 'other' }),
  );
  const route = compileRouter(cfg, cfg.tables[0]!);

  it('static routes, then the template with the value made an identifier', () => {
    assert.deepEqual(route(rec({ type: 'order' })), { table: 'shop.orders' });
    assert.deepEqual(route(rec({ type: 'refund' })), { table: 'shop.refunds' });
    assert.deepEqual(route(rec({ type: 'Ship-Ment.v2' })), { table: 'shop.events_ship_ment_v2' });
    assert.equal(sanitizeRouteValue('2fa'), '_2fa');
  });

  it('unmatched records: a dead letter with the reason by default', () => {
    assert.match((route(rec({ id: 'x' })) as { deadLetter: string }).deadLetter, /route field type: no string value \(found none\)/);
    assert.match((route(rec({ type: 3 })) as { deadLetter: string }).deadLetter, /no string value \(found 3\)/);
    assert.match((route(rec('not json')) as { deadLetter: string }).deadLetter, /the value is not JSON/);
    assert.match((route(rec(null)) as { deadLetter: string }).deadLetter, /no string value/);
    // the template would name the route's own dead-letter table: one writer per table
    assert.match((route(rec({ type: 'dead_letters' })) as { deadLetter: string }).deadLetter, /owns/);
  });

  it('unmatched: skip or the base table; no template: unmatched', () => {
    const skip = parse(entry({ field: 'type', tables: { order: 'shop.orders' }, unmatched: 'skip' }));
    assert.deepEqual(compileRouter(skip, skip.tables[0]!)(rec({ type: 'other' })), { skip: true });
    const base = parse(entry({ field: 'type', tables: { order: 'shop.orders' }, unmatched: 'base' }));
    assert.deepEqual(compileRouter(base, base.tables[0]!)(rec({ id: 1 })), { table: 'shop.events' });
  });

  it('a dotted path, own properties only; by topic', () => {
    const nested = parse(entry({ field: 'meta.kind', tables: { a: 'shop.a' } }));
    const r = compileRouter(nested, nested.tables[0]!);
    assert.deepEqual(r(rec({ meta: { kind: 'a' } })), { table: 'shop.a' });
    assert.ok('deadLetter' in r(rec({ meta: 'a' })));
    assert.ok('deadLetter' in r(rec({ meta: {} })), 'a path only resolves through own properties');
    const proto = parse(entry({ field: 'constructor.name', tables: { Object: 'shop.a' } }));
    assert.ok('deadLetter' in compileRouter(proto, proto.tables[0]!)(rec({})));
    const byTopic = parse(entry({ by: 'topic', tables: { events: 'shop.from_events' } }));
    assert.deepEqual(compileRouter(byTopic, byTopic.tables[0]!)(rec({})), { table: 'shop.from_events' });
  });

  it('lists dynamic tables from the base table properties', () => {
    assert.deepEqual(listedRouteTables({ 'floe.route.table.shop.b': 'main', 'floe.route.table.shop.a': 'main', other: 'x' }), [
      'shop.a',
      'shop.b',
    ]);
  });
});

describe('one poll for every table of a route', () => {
  it('starts at the minimum of the tables cursors, per partition', () => {
    assert.deepEqual(
      minimumOffsets(
        [
          { 0: '10', 1: '5' },
          { 0: '7', 1: '9' },
          { 0: '12', 1: '100' },
        ],
        ['0', '1'],
      ),
      { 0: '7', 1: '5' },
    );
  });

  it('writes a record to its table only at or past that table cursor', async () => {
    const cfg = parse(entry({ field: 'type', tables: { a: 'shop.a', b: 'shop.b' } }));
    const t: TableConfig = cfg.tables[0]!;
    const written: Record<string, Row[]> = {};
    const open = async (table: string) => {
      const rows: Row[] = (written[table] = []);
      return { add: (r: Row) => rows.push(r), rows: 0, close: async () => [], abort: () => undefined } as never;
    };
    const input = {
      table: t.table,
      ingestId: 'main',
      route: { tables: { 'shop.events': { 0: '0' }, 'shop.a': { 0: '5' }, 'shop.b': { 0: '2' } }, start: { 0: '0' } },
    } as unknown as PollInput & { route: NonNullable<PollInput['route']> };
    const w = new RoutedWriters({ cfg } as Deps, t, input, open);
    const dead: string[] = [];
    for (let o = 0; o < 8; o++) await w.add(rec({ id: `e${o}`, type: o % 2 ? 'a' : 'b' }, o), (r) => dead.push(r.offset));
    await w.add(rec({ id: 'x' }, 8), (r) => dead.push(r.offset));
    // a: cursor 5 (offsets 5, 7 written; 1, 3 already there); b: cursor 2 (2, 4, 6; 0 already there)
    assert.deepEqual(
      written['shop.a']!.map((r) => r.id),
      ['e5', 'e7'],
    );
    assert.deepEqual(
      written['shop.b']!.map((r) => r.id),
      ['e2', 'e4', 'e6'],
    );
    assert.deepEqual(dead, ['8'], 'the unmatched record is a dead letter');
  });
});

describe('the commits of a routed cycle', () => {
  const plan = (routeTables: NonNullable<CyclePlan['routeTables']>): CyclePlan => ({
    baseSnapshotId: routeTables[0]!.baseSnapshotId,
    startOffsets: minimumOffsets(
      routeTables.map((r) => r.startOffsets),
      ['0', '1'],
    ),
    highWatermarks: { 0: '20', 1: '20' },
    deadLetterFloor: {},
    deadLetterBaseCommitId: null,
    groups: [[0], [1]],
    commitIntervalMs: 1000,
    maxRecordsPerCycle: 1000,
    maxBytesPerCycle: 1 << 20,
    cyclesPerRun: 10,
    routeTables,
  });
  const result = (groupIndex: number, p: string, end: string, routed: Array<[string, number]>) => ({
    groupIndex,
    files: [],
    deadLetterFiles: [],
    endOffsets: { [p]: end },
    highWatermarks: { [p]: '20' },
    records: routed.reduce((n, [, r]) => n + r, 0),
    deadLetters: 0,
    bytes: 0,
    routed: routed.map(([table, records]) => ({ table, files: [{ 'file-path': `${table}-${groupIndex}` }], records })),
  });

  it('tells each poll every table cursor and the cycle start', () => {
    const p = plan([
      { table: 'shop.events', baseSnapshotId: '1', startOffsets: { 0: '10', 1: '10' } },
      { table: 'shop.a', baseSnapshotId: null, startOffsets: { 0: '4', 1: '10' } },
    ]);
    const inputs = pollInputs({ table: 'shop.events', ingestId: 'main' }, p, 'c1', false);
    assert.deepEqual(
      inputs.map((i) => i.startOffsets),
      [{ 0: '4' }, { 1: '10' }],
    );
    assert.deepEqual(inputs[0]!.route, {
      tables: { 'shop.events': { 0: '10', 1: '10' }, 'shop.a': { 0: '4', 1: '10' } },
      start: { 0: '4', 1: '10' },
    });
    // a plain table's polls are exactly what they were
    assert.equal('route' in pollInputs({ table: 't', ingestId: 'main' }, { ...p, routeTables: undefined }, 'c1', false)[0]!, false);
  });

  it('one commit per table: the same end offsets, never a cursor backwards, a table created by the poll last', () => {
    const p = plan([
      { table: 'shop.events', baseSnapshotId: '7', startOffsets: { 0: '15', 1: '15' } }, // ahead (crash between commits)
      { table: 'shop.a', baseSnapshotId: '3', startOffsets: { 0: '10', 1: '12' } },
      { table: 'shop.b', baseSnapshotId: null, startOffsets: { 0: '10', 1: '12' } },
      { table: 'shop.c', baseSnapshotId: '4', startOffsets: { 0: '20', 1: '20' } }, // past everything read: no commit
    ]);
    const cycle = mergeCycle(p, [
      result(0, '0', '18', [
        ['shop.a', 3],
        ['shop.new', 1],
      ]),
      result(1, '1', '14', [['shop.a', 1]]),
    ]);
    const commits = routeCommits(p, cycle);
    assert.deepEqual(
      commits.map((c) => [c.table, c.baseSnapshotId, c.endOffsets, c.records, c.files.length]),
      [
        ['shop.events', '7', { 0: '18', 1: '15' }, 0, 0],
        ['shop.a', '3', { 0: '18', 1: '14' }, 4, 2],
        ['shop.b', null, { 0: '18', 1: '14' }, 0, 0], // no rows: its cursor still moves (the records went elsewhere)
        ['shop.new', null, { 0: '18', 1: '14' }, 1, 1],
      ],
    );
  });
});

describe('dynamic tables of a route (SQLite catalog in memory)', () => {
  it('created with the route and its start, listed on the base table, idempotently; a foreign table of that name stops the ingest', async () => {
    const cfg = parseConfig({
      catalog: { uri: 'sqlite:///:memory:', warehouse: 'memory://wh' },
      tables: [entry({ field: 'type', dynamic: 'shop.events_{value}' }), entry(undefined, { table: 'shop.other', topic: 'other' })],
    });
    const tables = await openTables(cfg);
    try {
      const t = cfg.tables[0]!;
      await ensureIngestTables(tables, t, cfg.schemaRegistry);
      const deps = { cfg, tables } as unknown as Deps;
      const m = await ensureRouteTable(deps, t, 'shop.events_a', 'main', { 0: '7' });
      assert.equal(m.properties[ROUTE_BASE_PROPERTY], 'shop.events');
      assert.deepEqual(routeStart(m.properties, 'main'), { 0: '7' });
      // a retry (a poll killed after the create, or between create and listing) changes nothing
      const again = await ensureRouteTable(deps, t, 'shop.events_a', 'main', { 0: '9' });
      assert.deepEqual(routeStart(again.properties, 'main'), { 0: '7' }, 'the first start stays');
      const base = (await tables.load('shop.events')).metadata;
      assert.deepEqual(listedRouteTables(base.properties), ['shop.events_a']);
      // shop.events_b exists already, not created by the route: never written to
      await ensureIngestTables(
        tables,
        { ...cfg.tables[1]!, table: 'shop.events_b', deadLetterTable: 'shop.x_dead_letters' },
        cfg.schemaRegistry,
      );
      await assert.rejects(
        ensureRouteTable(deps, t, 'shop.events_b', 'main', { 0: '7' }),
        /names table shop\.events_b, which it did not create/,
      );
      assert.deepEqual(listedRouteTables((await tables.load('shop.events')).metadata.properties), ['shop.events_a']);
      // `floe ingest reset` of a route moves every table of it, the listed dynamic ones too
      const r = await resetCursor(tables, t, 'main', { 0: '3' });
      assert.equal(r.changed, true);
      for (const n of ['shop.events', 'shop.events_a'])
        assert.deepEqual(readCursor((await tables.load(n)).metadata, 'main').offsets, { 0: '3' }, n);
      assert.equal(readCursor((await tables.load('shop.events_b')).metadata, 'main').snapshotId, null, 'not the foreign table');
    } finally {
      await tables.close();
    }
  });
});

describe('planning a route (SQLite catalog in memory, a fake topic)', () => {
  it("reads every table's cursor (a listed dynamic table without one starts at its recorded start) and polls from their minimum", async () => {
    const cfg = parseConfig({
      catalog: { uri: 'sqlite:///:memory:', warehouse: 'memory://wh' },
      tables: [entry({ field: 'type', tables: { a: 'shop.a', b: 'shop.b' }, dynamic: 'shop.events_{value}' }, { parallelism: 2 })],
    });
    const tables = await openTables(cfg);
    const admin = {
      fetchTopicOffsets: async () => [
        { partition: 0, low: '2', high: '50' },
        { partition: 1, low: '0', high: '40' },
      ],
    };
    try {
      const t = cfg.tables[0]!;
      const deps = { cfg, tables, admin } as unknown as Deps;
      const first = await planCycle(deps, { table: t.table, ingestId: 'main' }, DETACHED_RUN);
      assert.deepEqual(
        first.routeTables!.map((r) => [r.table, r.baseSnapshotId, r.startOffsets]),
        [
          ['shop.events', null, { 0: '2', 1: '0' }],
          ['shop.a', null, { 0: '2', 1: '0' }],
          ['shop.b', null, { 0: '2', 1: '0' }],
        ],
        'a new route: every table created, from the earliest offsets',
      );
      const commitCursor = (table: string, offsets: Record<string, string>) =>
        tables.appendOnce(table, {
          files: [],
          summary: {},
          properties: (id) => cursorProperty('main', { snapshotId: id.toString(), commitId: `c-${table}`, offsets, topic: 'events' }),
          validate: () => undefined,
        });
      await commitCursor('shop.events', { 0: '30', 1: '20' });
      await commitCursor('shop.a', { 0: '30', 1: '20' });
      await commitCursor('shop.b', { 0: '10', 1: '25' }); // behind on partition 0 (a crash between commits)
      await ensureRouteTable(deps, t, 'shop.events_x', 'main', { 0: '12', 1: '5' }); // created and listed, never committed
      const plan = await planCycle(deps, { table: t.table, ingestId: 'main' }, DETACHED_RUN);
      assert.deepEqual(
        plan.routeTables!.map((r) => [r.table, r.startOffsets]),
        [
          ['shop.events', { 0: '30', 1: '20' }],
          ['shop.a', { 0: '30', 1: '20' }],
          ['shop.b', { 0: '10', 1: '25' }],
          ['shop.events_x', { 0: '12', 1: '5' }],
        ],
      );
      assert.deepEqual(plan.startOffsets, { 0: '10', 1: '5' }, 'the poll starts at the minimum per partition');
      assert.equal(plan.baseSnapshotId, plan.routeTables![0]!.baseSnapshotId);
      assert.deepEqual(plan.groups, [[0], [1]]);
      await assert.rejects(
        planCycle(deps, { table: t.table, ingestId: 'main', range: { from: { 0: '0' }, to: { 0: '5' } } }, DETACHED_RUN),
        /a backfill of a route is not supported/,
      );
    } finally {
      await tables.close();
    }
  });
});
