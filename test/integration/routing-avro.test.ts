/**
 * Routing of a Schema Registry format on the real stack (Kafka, Temporal, S3, the stack's Apicurio
 * Registry): one topic of Avro events, framed by Confluent's AvroSerializer, feeds a static table
 * and tables created from the template by the events' `type` field; each table derives its columns
 * from the schema. Version 2 of the schema arrives mid-stream (a new optional field): each routed
 * table evolves before its first version-2 row.
 *
 * Kills: the worker is SIGKILLed between the commits of the route's tables, and later right after
 * a table's schema commit (before any version-2 row); restarted workers finish each run. Then every
 * table holds exactly the events routed to it (DuckDB, no duplicate), version-1 rows read null in
 * the new column, and a record not in the wire format and one with an unknown schema id are dead
 * letters.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { ensureStack } from '../../stack/stack';
import { stackEnv } from '../../stack/env';
import { floeHome } from '../../stack/paths';
import { runPythonJson } from '../../stack/python';
import { scenarioConfig } from '../../demo/scenario';
import { loadConfig } from '../../config';
import { connectClient, signalIngest, startIngest, waitForIngest } from '../../client';
import { openTables } from '../../table/tables';
import { readCursor } from '../../table/cursor';
import { effectiveCursor, readRouteCursor } from '../../ingest/route';
import { currentSchema } from '../../iceberg';
import { spawnWorker, type WorkerProcess } from '../../workers/process';
import { produceMessages } from '../support/produce';
import { serializeWithConfluent } from '../support/registry';

const TYPES = ['order', 'refund', 'shipment'] as const;
const N = 30;

const eventSchema = (v2: boolean) =>
  JSON.stringify({
    type: 'record',
    name: 'Event',
    namespace: 'shop',
    fields: [
      { name: 'event_id', type: 'string' },
      { name: 'type', type: 'string' },
      { name: 'amount', type: { type: 'bytes', logicalType: 'decimal', precision: 10, scale: 2 } },
      ...(v2 ? [{ name: 'note', type: ['null', 'string'], default: null }] : []),
    ],
  });

const event = (i: number, v2: boolean) => ({
  event_id: `e${String(i).padStart(3, '0')}`,
  type: TYPES[i % 3]!,
  amount: { $decimal: `${i}.25` },
  ...(v2 ? { note: `n${i}` } : {}),
});

const READ = `
import json, sys
from floe_duckdb import connect
out = {}
for loc in sys.argv[1:]:
    rel = connect().sql(f"SELECT * FROM iceberg_scan('{loc}')")
    names = [d[0] for d in rel.description]
    out[loc] = [dict(zip(names, r)) for r in rel.fetchall()]
print(json.dumps(out, default=str))
`;

describe('routing Avro through the Schema Registry (real stack)', { timeout: 8 * 60_000 }, () => {
  const workers: WorkerProcess[] = [];
  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3', 'schema-registry']);
  });
  after(async () => {
    for (const w of workers) await w.kill('SIGKILL').catch(() => undefined);
  });

  it('one Avro topic feeds three tables exactly once through kills between commits and after a schema commit', async () => {
    const run = `it_route_avro_${Date.now().toString(36)}`;
    const table = `demo.${run}`;
    const orders = `${table}_orders`;
    const c = scenarioConfig(run, 1, '1s', {
      value: { format: 'avro' },
      columns: [{ name: 'kafka_offset', type: 'long', source: 'offset', required: true }],
      partitionBy: [],
      route: { field: 'type', tables: { order: orders }, dynamic: `${table}_t_{value}` },
    });
    const raw = parseYaml(readFileSync(c.path, 'utf8')) as Record<string, unknown>;
    writeFileSync(c.path, stringifyYaml({ schemaRegistry: { url: stackEnv().schemaRegistry.url }, ...raw }));
    const cfg = loadConfig(c.path);
    const registryUrl = stackEnv().schemaRegistry.url;
    const log = (name: string) => join(floeHome(), 'logs', `${run}-${name}.log`);
    const dir = mkdtempSync(join(tmpdir(), 'floe-route-avro-'));
    const targets = { order: orders, refund: `${table}_t_refund`, shipment: `${table}_t_shipment` };

    // 1. Version 1; the worker dies between two tables' commits; a restarted one finishes the run.
    const v1 = await serializeWithConfluent({
      registryUrl,
      topic: c.topic,
      format: 'avro',
      schema: eventSchema(false),
      records: Array.from({ length: N }, (_, i) => event(i, false)),
    });
    await produceMessages(
      cfg,
      c.topic,
      v1.records.map((value) => ({ value })),
    );
    const m1 = join(dir, 'killed-1');
    const doomed = spawnWorker(c.path, log('w1'), { FLOE_TEST_KILL_AT: 'between-table-commits', FLOE_TEST_KILL_MARKER: m1 });
    workers.push(doomed);
    let fc = await connectClient(cfg);
    try {
      await startIngest(fc, table);
      await signalIngest(fc, table, 'stop');
      assert.equal((await doomed.exited).signal, 'SIGKILL', 'killed between two commits');
      assert.match(readFileSync(m1, 'utf8'), /^between-table-commits /);
      workers.push(spawnWorker(c.path, log('w2')));
      assert.equal((await waitForIngest(fc, table)).state, 'stopped');
    } finally {
      await fc.close();
    }
    await workers.pop()!.kill('SIGTERM');

    // 2. Version 2 with two bad records; the worker dies right after a table's schema commit.
    const v2 = await serializeWithConfluent({
      registryUrl,
      topic: c.topic,
      format: 'avro',
      schema: eventSchema(true),
      records: Array.from({ length: N }, (_, i) => event(N + i, true)),
    });
    await produceMessages(cfg, c.topic, [
      { value: Buffer.from('{"type": "order"}') },
      { value: Buffer.concat([Buffer.from([0, 0x7f, 0xff, 0xff, 0xf0]), v2.records[0]!.subarray(5)]) },
      ...v2.records.map((value) => ({ value })),
    ]);
    const m2 = join(dir, 'killed-2');
    const doomed2 = spawnWorker(c.path, log('w3'), { FLOE_TEST_KILL_AT: 'after-evolve', FLOE_TEST_KILL_MARKER: m2 });
    workers.push(doomed2);
    fc = await connectClient(cfg);
    try {
      await startIngest(fc, table);
      await signalIngest(fc, table, 'stop');
      assert.equal((await doomed2.exited).signal, 'SIGKILL', 'killed after a schema commit');
      assert.match(readFileSync(m2, 'utf8'), /^after-evolve /);
      workers.push(spawnWorker(c.path, log('w4')));
      assert.equal((await waitForIngest(fc, table)).state, 'stopped');
    } finally {
      await fc.close();
    }

    // Every routed table: exactly its events, no duplicate, v1 rows null in note; cursors at the end.
    const tables = await openTables(cfg);
    const locations: Record<string, string> = {};
    try {
      const route = readRouteCursor((await tables.load(table)).metadata.properties, 'main');
      for (const t of [table, ...Object.values(targets), cfg.tables[0]!.deadLetterTable]) {
        const { metadata, metadataLocation } = await tables.load(t);
        locations[t] = metadataLocation;
        // A table's cursor where its next poll starts: its own, raised to the route cursor (a table
        // without rows in the last cycles has no snapshot of them).
        if (t !== cfg.tables[0]!.deadLetterTable)
          assert.deepEqual(effectiveCursor(readCursor(metadata, 'main').offsets, route), { '0': String(2 * N + 2) }, t);
        if (t !== table && t !== cfg.tables[0]!.deadLetterTable)
          assert.deepEqual(
            currentSchema(metadata).fields.map((f) => f.name),
            ['kafka_offset', 'event_id', 'type', 'amount', 'note'],
            `${t}: columns from the schema, note added once`,
          );
      }
    } finally {
      await tables.close();
    }
    const rows = await runPythonJson<Record<string, Array<Record<string, unknown>>>>(READ, Object.values(locations), {
      timeoutMs: 120_000,
    });
    for (const [type, t] of Object.entries(targets)) {
      const want = Array.from({ length: 2 * N }, (_, i) => i)
        .filter((i) => TYPES[i % 3] === type)
        .map((i) => ({ event_id: `e${String(i).padStart(3, '0')}`, amount: `${i}.25`, note: i < N ? null : `n${i}` }));
      const got = rows[locations[t]!]!.map((r) => ({ event_id: r.event_id as string, amount: String(r.amount), note: r.note })).sort(
        (a, b) => (a.event_id < b.event_id ? -1 : 1),
      );
      assert.deepEqual(got, want, `${t}: exactly the events routed to it`);
    }
    assert.equal(rows[locations[table]!]!.length, 0, 'nothing unmatched reached the base table');
    const dead = rows[locations[cfg.tables[0]!.deadLetterTable]!]!.map((r) => String(r.error)).sort();
    assert.equal(dead.length, 2);
    assert.match(dead.join('\n'), /not in the Confluent wire format/);
    assert.match(dead.join('\n'), /schema id 2147483632 is not in the schema registry/);
  });
});
