/**
 * Routing on the real stack (Kafka, Temporal, SeaweedFS S3, SQLite catalog): one topic of JSON
 * events feeds three tables by their `type` field (two static routes, one table created from the
 * template), events without a type and values that are not JSON are dead letters.
 *
 * The worker is SIGKILLed between the commits of the route's tables (every table of the cycle but
 * the last committed) twice:
 * 1. the run is then terminated (the tables with rows committed, the base table with the route
 *    cursor not), so the next run plans from the tables alone, with their cursors apart: the poll
 *    starts at the minimum, and the tables already past a record skip it;
 * 2. a restarted worker retries the last table's commit within the same run.
 * Then, for every table, rows == the messages routed to it with no duplicate event id, every
 * cursor equals the topic's end, and DuckDB reads each table.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureStack } from '../../stack/stack';
import { floeHome } from '../../stack/paths';
import { runPythonJson } from '../../stack/python';
import { scenarioConfig } from '../../demo/scenario';
import { loadConfig, type FloeConfig } from '../../config';
import { connectClient, ingestStatus, signalIngest, startIngest, waitForIngest } from '../../client';
import { tableIngestStatus } from '../../client/tables';
import { ingestStatusLines } from '../../cli/format';
import { openTables } from '../../table/tables';
import { readCursor, readDeadLetterCursor, type Cursor } from '../../table/cursor';
import { effectiveCursor, listedRouteTables, readRouteCursor } from '../../ingest/route';
import { topicWatermarks } from '../../ingest/kafka';
import { connectKafka } from '../../ingest/kafka-security';
import { ingestWorkflowId } from '../../workflows';
import { spawnWorker, type WorkerProcess } from '../../workers/process';
import { produceMessages, type TestMessage } from '../support/produce';

const TYPES = ['order', 'refund', 'shipment'] as const;

/** Event i: a type in turn; every 20th (from 7) has none (unmatched), every 50th (from 13) is not JSON. */
function event(i: number): { message: TestMessage; type: string | null; json: boolean } {
  const partition = i % 2;
  if (i % 50 === 13) return { message: { value: `not json {${i}`, partition }, type: null, json: false };
  const type = i % 20 === 7 ? null : TYPES[i % 3]!;
  const value = JSON.stringify({ event_id: `e${i}`, n: i, ...(type ? { type } : {}) });
  return { message: { value, partition }, type, json: true };
}

const READ = `
import json, sys
from floe_duckdb import connect
out = {}
for loc in sys.argv[1:]:
    rows = connect().sql(f"SELECT event_id FROM iceberg_scan('{loc}')").fetchall()
    out[loc] = [r[0] for r in rows]
print(json.dumps(out))
`;

describe('routing: one topic into several tables, each with its own cursor (real stack)', { timeout: 5 * 60_000 }, () => {
  const workers: WorkerProcess[] = [];
  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3']);
  });
  after(async () => {
    for (const w of workers) await w.kill('SIGKILL').catch(() => undefined);
  });

  it('a worker SIGKILLed between two tables commits, a run terminated with the cursors apart: every table exactly once', async () => {
    const run = `it_route_${Date.now().toString(36)}`;
    const table = `demo.${run}`;
    const orders = `${table}_orders`;
    const refunds = `${table}_refunds`;
    const shipments = `${table}_t_shipment`;
    const c = scenarioConfig(run, 2, '1s', {
      columns: [
        { name: 'event_id', type: 'string', required: true },
        { name: 'type', type: 'string', required: true },
        { name: 'n', type: 'long', required: true },
        { name: 'kafka_offset', type: 'long', source: 'offset', required: true },
      ],
      partitionBy: [{ column: 'n', transform: 'bucket[4]' }],
      route: { field: 'type', tables: { order: orders, refund: refunds }, dynamic: `${table}_t_{value}` },
    });
    const cfg = loadConfig(c.path);
    assert.deepEqual(cfg.tables[0]!.route, {
      by: 'field',
      field: 'type',
      tables: { order: orders, refund: refunds },
      dynamic: `${table}_t_{value}`,
      unmatched: 'dead-letter',
    });
    const log = (name: string) => join(floeHome(), 'logs', `${run}-${name}.log`);
    const dir = mkdtempSync(join(tmpdir(), 'floe-route-'));
    const events = Array.from({ length: 240 }, (_, i) => event(i));
    const firstHalf = events.slice(0, 120);
    await produceMessages(
      cfg,
      c.topic,
      firstHalf.map((e) => e.message),
      2,
    );

    // 1. The first cycle commits orders, refunds and the new dynamic table, then the worker dies
    //    before the base table's commit; the run is terminated (as if lost): the cursors stay apart.
    const m1 = join(dir, 'killed-1');
    const doomed = spawnWorker(c.path, log('w1'), { FLOE_TEST_KILL_AT: 'between-table-commits', FLOE_TEST_KILL_MARKER: m1 });
    workers.push(doomed);
    let fc = await connectClient(cfg);
    try {
      await startIngest(fc, table);
      assert.equal((await doomed.exited).signal, 'SIGKILL', 'the worker killed itself between two commits');
      assert.match(readFileSync(m1, 'utf8'), /^between-table-commits /);
      await fc.client.workflow.getHandle(ingestWorkflowId(table, 'main')).terminate('routing test: lose the run');
    } finally {
      await fc.close();
    }
    const apart = await cursors(cfg, [table, orders, refunds, shipments]);
    // The tables with rows commit first, the base table (with the route cursor) last.
    assert.ok(apart[orders]!.snapshotId !== null && apart[refunds]!.snapshotId !== null && apart[shipments]!.snapshotId !== null);
    assert.equal(apart[table]!.snapshotId, null, 'the tables committed; the base table, last, never ran');
    assert.deepEqual(await listed(cfg, table), [shipments]);

    // 2. The rest arrives; a new run plans from the tables (the poll starts at the dynamic table's
    //    start, the others skip what they have) and dies again before its last commit; the
    //    restarted worker retries that commit in the same run.
    await produceMessages(
      cfg,
      c.topic,
      events.slice(120).map((e) => e.message),
      2,
    );
    const m2 = join(dir, 'killed-2');
    const doomed2 = spawnWorker(c.path, log('w2'), { FLOE_TEST_KILL_AT: 'between-table-commits', FLOE_TEST_KILL_MARKER: m2 });
    workers.push(doomed2);
    fc = await connectClient(cfg);
    let status;
    try {
      await startIngest(fc, table);
      await signalIngest(fc, table, 'stop');
      assert.equal((await doomed2.exited).signal, 'SIGKILL');
      workers.push(spawnWorker(c.path, log('w3')));
      status = await waitForIngest(fc, table);
    } finally {
      await fc.close();
    }
    assert.equal(status.state, 'stopped');
    assert.deepEqual(Object.keys(status.tables ?? {}).sort(), [table, orders, refunds, shipments].sort(), 'status shows every table');

    // Every table: rows == the messages routed to it, no duplicate; every cursor at the topic's end.
    const expected: Record<string, string[]> = { [table]: [], [orders]: [], [refunds]: [], [shipments]: [] };
    events.forEach((e, i) => {
      if (e.type) expected[{ order: orders, refund: refunds, shipment: shipments }[e.type]!]!.push(`e${i}`);
    });
    const tables = await openTables(cfg);
    let locations: Record<string, string>;
    try {
      locations = Object.fromEntries(
        await Promise.all(Object.keys(expected).map(async (t) => [t, (await tables.load(t)).metadataLocation] as const)),
      );
    } finally {
      await tables.close();
    }
    const read = await runPythonJson<Record<string, string[]>>(READ, Object.values(locations), { timeoutMs: 120_000 });
    for (const [t, ids] of Object.entries(expected)) {
      const got = read[locations[t]!]!;
      assert.equal(new Set(got).size, got.length, `${t}: no duplicate event id`);
      assert.deepEqual([...got].sort(), [...ids].sort(), `${t}: rows == the messages routed to it`);
    }
    assert.ok(expected[shipments]!.length > 50 && expected[orders]!.length > 50);

    const end = await topicEnd(cfg, c.topic);
    const final = await cursors(cfg, Object.keys(expected));
    // A table that got no rows in the last cycles has no snapshot of them: its own cursor raised to
    // the route cursor (the base table's) is where its next poll starts.
    const route = await routeCursorOf(cfg, table);
    assert.deepEqual(route, end, "the route cursor at the topic's end");
    for (const [t, cur] of Object.entries(final))
      assert.deepEqual(effectiveCursor(cur.offsets, route), end, `${t}: cursor at the topic's end`);

    // `floe ingest status`: a row per table, from the finished run and from the tables alone.
    fc = await connectClient(cfg);
    try {
      const view = (await ingestStatus(fc, table))!;
      assert.deepEqual(
        ingestStatusLines(view, Date.now()).tables.map((r) => [r.table, r.cursor]),
        Object.keys(expected)
          .sort()
          .map((t) => [t, `0:${end['0']} 1:${end['1']}`]),
      );
    } finally {
      await fc.close();
    }
    const held = await tableIngestStatus(cfg, table, 'main');
    assert.deepEqual(held.cursor, end);
    assert.deepEqual(Object.keys(held.tables ?? {}).sort(), Object.keys(expected).sort());

    // Dead letters: events without a type and values that are not JSON, once each, with their reasons.
    const dead = await deadLetters(cfg, cfg.tables[0]!.deadLetterTable);
    const wantDead = events.filter((e) => !e.type).length;
    assert.equal(dead.count, wantDead);
    assert.equal(dead.distinctOffsets, wantDead);
    for (const [p, o] of Object.entries(dead.cursor)) assert.ok(BigInt(o) <= BigInt(end[p]!), 'the dead-letter cursor within the topic');
  });
});

async function routeCursorOf(cfg: FloeConfig, table: string): Promise<Record<string, string>> {
  const tables = await openTables(cfg);
  try {
    return readRouteCursor((await tables.load(table)).metadata.properties, 'main');
  } finally {
    await tables.close();
  }
}

async function cursors(cfg: FloeConfig, names: string[]): Promise<Record<string, Cursor>> {
  const tables = await openTables(cfg);
  try {
    return Object.fromEntries(await Promise.all(names.map(async (n) => [n, readCursor((await tables.load(n)).metadata, 'main')] as const)));
  } finally {
    await tables.close();
  }
}

async function listed(cfg: FloeConfig, base: string): Promise<string[]> {
  const tables = await openTables(cfg);
  try {
    return listedRouteTables((await tables.load(base)).metadata.properties);
  } finally {
    await tables.close();
  }
}

async function topicEnd(cfg: FloeConfig, topic: string): Promise<Record<string, string>> {
  const kafka = await connectKafka(cfg.kafka);
  const admin = kafka.admin();
  await admin.connect();
  try {
    return (await topicWatermarks(admin, topic)).high;
  } finally {
    await admin.disconnect();
  }
}

async function deadLetters(
  cfg: FloeConfig,
  table: string,
): Promise<{ count: number; distinctOffsets: number; cursor: Record<string, string> }> {
  const tables = await openTables(cfg);
  try {
    const { metadata, metadataLocation } = await tables.load(table);
    const r = await runPythonJson<{ count: number; distinct: number; reasons: string[] }>(
      `
import json, sys
from floe_duckdb import connect
rows = connect().sql(f"SELECT count(*), count(DISTINCT (\\"partition\\", \\"offset\\")), list(DISTINCT error) FROM iceberg_scan('{sys.argv[1]}')").fetchone()
print(json.dumps({"count": rows[0], "distinct": rows[1], "reasons": rows[2]}))
`,
      [metadataLocation],
      { timeoutMs: 120_000 },
    );
    assert.ok(
      r.reasons.some((x) => /route field type: no string value/.test(x)) &&
        r.reasons.some((x) => /route field type: the value is not JSON/.test(x)),
      r.reasons.join('; '),
    );
    return { count: r.count, distinctOffsets: r.distinct, cursor: readDeadLetterCursor(metadata, 'main').offsets };
  } finally {
    await tables.close();
  }
}
