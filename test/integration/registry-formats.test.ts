/**
 * Schema Registry formats on the real stack (Kafka, Temporal, SeaweedFS S3, the stack's Apicurio
 * Registry): records framed by Confluent's official serializers (confluent-kafka's AvroSerializer,
 * ProtobufSerializer, JSONSerializer) land in tables whose columns come from the record schema,
 * and PyIceberg and DuckDB read back exactly what was produced: nested records, lists, maps,
 * decimals, timestamps, 64-bit ids.
 *
 * Avro also changes its schema mid-stream: version 2 adds an optional field at the top and one
 * inside a nested record. The worker is SIGKILLed right after the schema commit (before any row
 * of version 2 is written); the restarted cycle finds the table evolved, writes the rest, and
 * rows == messages with no duplicate, version-1 rows reading null in the new columns. A record
 * that is not in the wire format and one naming an unknown schema id are dead letters with their
 * reasons.
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
import { verifyTable } from '../../demo/verify';
import { loadConfig, type FloeConfig } from '../../config';
import { connectClient, signalIngest, startIngest, waitForIngest } from '../../client';
import { openTables } from '../../table/tables';
import { currentSchema } from '../../iceberg';
import { spawnWorker, type WorkerProcess } from '../../workers/process';
import { produceMessages } from '../support/produce';
import { serializeWithConfluent } from '../support/registry';

const N = 12;

/** A JSON integer written exactly (JSON.rawJSON, Node 21+): the serializers get the 64-bit value, not a double. */
const big = (n: bigint): unknown => (JSON as unknown as { rawJSON(s: string): unknown }).rawJSON(n.toString());

const customerV1 = {
  type: 'record',
  name: 'Customer',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'name', type: 'string' },
  ],
};
const customerV2 = { ...customerV1, fields: [...customerV1.fields, { name: 'tier', type: ['null', 'string'], default: null }] };
const orderAvro = (customer: object, extra: object[] = []) =>
  JSON.stringify({
    type: 'record',
    name: 'Order',
    namespace: 'shop',
    fields: [
      { name: 'event_id', type: 'string' },
      { name: 'id', type: 'long' },
      { name: 'total', type: { type: 'bytes', logicalType: 'decimal', precision: 12, scale: 2 } },
      { name: 'at', type: { type: 'long', logicalType: 'timestamp-millis' } },
      { name: 'customer', type: customer },
      {
        name: 'items',
        type: {
          type: 'array',
          items: {
            type: 'record',
            name: 'Item',
            fields: [
              { name: 'sku', type: 'string' },
              { name: 'price', type: { type: 'bytes', logicalType: 'decimal', precision: 9, scale: 2 } },
            ],
          },
        },
      },
      { name: 'attrs', type: { type: 'map', values: 'long' } },
      ...extra,
    ],
  });

const avroRecord = (i: number, v2: boolean) => ({
  event_id: `a${String(i).padStart(3, '0')}`,
  id: big(9007199254740993n + BigInt(i)), // above 2^53: exact only as a 64-bit integer end to end
  total: { $decimal: `${i}.${String(i % 100).padStart(2, '0')}` },
  at: 1_700_000_000_000 + i,
  customer: { id: i, name: `c${i}`, ...(v2 ? { tier: i % 2 ? 'gold' : null } : {}) },
  items: [{ sku: `s${i}`, price: { $decimal: '-1.50' } }],
  attrs: { n: i },
  ...(v2 ? { coupon: `k${i}` } : {}),
});

const KEY_AVRO = JSON.stringify({ type: 'record', name: 'OrderKey', namespace: 'shop', fields: [{ name: 'id', type: 'long' }] });

const PROTO = `
syntax = "proto3";
package shop;
message Shipment {
  string event_id = 1;
  int64 id = 2;
  Address to = 3;
  repeated string tags = 4;
  map<string, int32> counts = 5;
  message Address { string city = 1; int32 zip = 2; }
}`;

const JSON_SCHEMA = JSON.stringify({
  type: 'object',
  required: ['event_id'],
  properties: {
    event_id: { type: 'string' },
    id: { type: 'integer' },
    at: { type: 'string', format: 'date-time' },
    who: { type: 'object', properties: { name: { type: 'string' }, age: { type: 'integer' } } },
    scores: { type: 'array', items: { type: 'number' } },
  },
});

const READ = `
import json, sys
from pyiceberg.table import StaticTable
from floe_duckdb import connect, pyiceberg_s3_properties
loc, cols = sys.argv[1], sys.argv[2]
t = StaticTable.from_metadata(loc, properties=pyiceberg_s3_properties())
first = cols.split(",")[0]
py = sorted(t.scan().to_arrow().select(cols.split(",")).to_pylist(), key=lambda r: r[first])
quoted = ", ".join(f'"{c}"' for c in cols.split(","))
rel = connect().sql(f"SELECT {quoted} FROM iceberg_scan('{loc}') ORDER BY 1")
names = [d[0] for d in rel.description]
duck = [dict(zip(names, r)) for r in rel.fetchall()]
def exact(x):
    # integers beyond 2^53 as text: JSON.parse would round them
    if isinstance(x, bool): return x
    if isinstance(x, int) and abs(x) > 2**53: return str(x)
    if isinstance(x, dict): return {k: exact(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)): return [exact(v) for v in x]
    return x
print(json.dumps({"pyiceberg": exact(py), "duckdb": exact(duck)}, default=str))
`;

async function readBack(
  cfg: FloeConfig,
  table: string,
  cols: string,
): Promise<{ pyiceberg: unknown[]; duckdb: unknown[]; fields: string[] }> {
  const tables = await openTables(cfg);
  try {
    const { metadata, metadataLocation } = await tables.load(table);
    const read = await runPythonJson<{ pyiceberg: unknown[]; duckdb: unknown[] }>(READ, [metadataLocation, cols], { timeoutMs: 120_000 });
    return { ...read, fields: currentSchema(metadata).fields.map((f) => f.name) };
  } finally {
    await tables.close();
  }
}

describe('Schema Registry formats (real stack, Apicurio Registry, Confluent serializers)', { timeout: 12 * 60_000 }, () => {
  const workers: WorkerProcess[] = [];
  let dir: string;

  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3', 'schema-registry']);
    dir = mkdtempSync(join(tmpdir(), 'floe-registry-'));
  });
  after(async () => {
    for (const w of workers) await w.kill('SIGKILL');
  });

  it('ingests Avro, Protobuf and JSON Schema topics; Avro evolves mid-stream through a SIGKILL after the schema commit', async () => {
    const run = `it_sr_${Date.now().toString(36)}`;
    const registryUrl = stackEnv().schemaRegistry.url;
    const c = scenarioConfig(`${run}_avro`, 1, '1s', {
      columns: [{ name: 'kafka_offset', type: 'long', source: 'offset', required: true }],
      partitionBy: [{ column: 'at', transform: 'day' }],
      value: { format: 'avro' },
      key: { format: 'avro', column: 'order_key' },
    });
    const raw = parseYaml(readFileSync(c.path, 'utf8')) as { schemaRegistry?: unknown; tables: Array<Record<string, unknown>> };
    raw.schemaRegistry = { url: registryUrl };
    const base = raw.tables[0]!;
    const more = (value: Record<string, unknown>, suffix: string) => {
      const { key: _key, ...rest } = base;
      void _key;
      return {
        ...rest,
        table: `${c.table}_${suffix}`,
        topic: `${c.topic}_${suffix}`,
        deadLetterTable: `${c.table}_${suffix}_dead_letters`,
        partitionBy: [],
        value,
      };
    };
    // JSON Schema: only some fields become columns, one under another name
    raw.tables.push(
      more({ format: 'protobuf' }, 'proto'),
      more({ format: 'json-schema', fields: ['event_id', 'id', 'who', 'scores'], rename: { who: 'person' } }, 'json'),
    );
    writeFileSync(c.path, stringifyYaml(raw));
    const cfg = loadConfig(c.path);
    const log = (name: string) => join(floeHome(), 'logs', `${run}-${name}.log`);

    // Version 1 of the Avro schema (registered by the serializer: the table is created from it)
    const v1 = await serializeWithConfluent({
      registryUrl,
      topic: c.topic,
      format: 'avro',
      schema: orderAvro(customerV1),
      records: Array.from({ length: N }, (_, i) => avroRecord(i, false)),
    });
    const keys = await serializeWithConfluent({
      registryUrl,
      topic: c.topic,
      format: 'avro',
      isKey: true,
      schema: KEY_AVRO,
      records: Array.from({ length: 2 * N }, (_, i) => ({ id: big(9007199254740993n + BigInt(i)) })),
    });
    await produceMessages(
      cfg,
      c.topic,
      v1.records.map((value, i) => ({ key: keys.records[i]!, value })),
    );
    const proto = await serializeWithConfluent({
      registryUrl,
      topic: `${c.topic}_proto`,
      format: 'protobuf',
      schema: PROTO,
      records: Array.from({ length: N }, (_, i) => ({
        event_id: `p${String(i).padStart(3, '0')}`,
        id: String(9007199254740993n + BigInt(i)),
        to: i % 3 ? { city: `city${i}`, zip: 10000 + i } : undefined,
        tags: [`t${i}`, 'x'],
        counts: { a: i },
      })),
    });
    await produceMessages(
      cfg,
      `${c.topic}_proto`,
      proto.records.map((value) => ({ value })),
    );
    const json = await serializeWithConfluent({
      registryUrl,
      topic: `${c.topic}_json`,
      format: 'json',
      schema: JSON_SCHEMA,
      records: Array.from({ length: N }, (_, i) => ({
        event_id: `j${String(i).padStart(3, '0')}`,
        id: big(9007199254740993n + BigInt(i)),
        at: `2024-05-0${1 + (i % 9)}T10:00:00.123456Z`,
        who: { name: `w${i}`, age: 20 + i },
        scores: [i, i + 0.5],
      })),
    });
    await produceMessages(
      cfg,
      `${c.topic}_json`,
      json.records.map((value) => ({ value })),
    );

    workers.push(spawnWorker(c.path, log('w1')));
    let fc = await connectClient(cfg);
    try {
      for (const t of cfg.tables) await startIngest(fc, t.table);
      for (const t of cfg.tables) await signalIngest(fc, t.table, 'stop');
      for (const t of cfg.tables) assert.equal((await waitForIngest(fc, t.table)).totalRows, N, t.table);
    } finally {
      await fc.close();
    }
    await workers.pop()!.kill('SIGTERM');

    // Version 2 arrives mid-stream with two bad records; the worker dies right after the schema commit
    const v2 = await serializeWithConfluent({
      registryUrl,
      topic: c.topic,
      format: 'avro',
      schema: orderAvro(customerV2, [{ name: 'coupon', type: ['null', 'string'], default: null }]),
      records: Array.from({ length: N }, (_, i) => avroRecord(N + i, true)),
    });
    assert.notEqual(v2.schemaId, v1.schemaId);
    const unknownId = Buffer.concat([Buffer.from([0, 0x7f, 0xff, 0xff, 0xf0]), v2.records[0]!.subarray(5)]);
    // A record whose customer name is not UTF-8 (0xff): a dead letter, never a row with U+FFFD.
    const notUtf8 = Buffer.from(v2.records[1]!);
    notUtf8[notUtf8.indexOf(Buffer.from(`c${N + 1}`))] = 0xff;
    await produceMessages(cfg, c.topic, [
      { value: Buffer.from('{"event_id": "not framed"}') },
      { value: unknownId },
      { value: notUtf8 },
      ...v2.records.map((value, i) => ({ key: keys.records[N + i]!, value })),
    ]);
    const marker = join(dir, 'killed');
    const doomed = spawnWorker(c.path, log('w2-killed'), { FLOE_TEST_KILL_AT: 'after-evolve', FLOE_TEST_KILL_MARKER: marker });
    workers.push(doomed);
    fc = await connectClient(cfg);
    try {
      await startIngest(fc, c.table);
      await signalIngest(fc, c.table, 'stop');
      assert.equal((await doomed.exited).signal, 'SIGKILL', 'the worker killed itself at after-evolve');
      assert.match(readFileSync(marker, 'utf8'), /^after-evolve /);
      workers.push(spawnWorker(c.path, log('w3')));
      const status = await waitForIngest(fc, c.table);
      assert.equal(status.totalRows, N, 'the second run committed version 2');
    } finally {
      await fc.close();
    }

    // Exactly once: rows == good messages, 0 duplicates, 3 dead letters with their reasons
    const v = await verifyTable(cfg, c.table, c.topic);
    assert.deepEqual(v.problems, []);
    assert.equal(v.rows, 2 * N);
    assert.equal(v.deadLetters, 3);
    const dead = await readBack(cfg, `${c.table}_dead_letters`, 'error');
    const reasons = (dead.pyiceberg as Array<{ error: string }>).map((r) => r.error).sort();
    assert.match(reasons.join('\n'), /not valid avro for schema \d+ \(a string is not valid UTF-8/);
    assert.match(reasons.join('\n'), /not in the Confluent wire format \(magic byte 0x7b/);
    assert.match(reasons.join('\n'), /schema id 2147483632 is not in the schema registry/);

    const avro = await readBack(cfg, c.table, 'event_id,id,total,at,customer,items,attrs,coupon,kafka_offset,order_key');
    assert.deepEqual(avro.fields, ['kafka_offset', 'event_id', 'id', 'total', 'at', 'customer', 'items', 'attrs', 'order_key', 'coupon']);
    const expectAvro = Array.from({ length: 2 * N }, (_, i) => {
      const r = avroRecord(i, i >= N);
      return {
        event_id: r.event_id,
        id: String(9007199254740993n + BigInt(i)),
        total: r.total.$decimal,
        customer: { id: String(i), name: `c${i}`, tier: i >= N && i % 2 ? 'gold' : 'None' },
        items: [{ sku: `s${i}`, price: '-1.50' }],
        coupon: i >= N ? `k${i}` : 'None',
        order_key: { id: String(9007199254740993n + BigInt(i)) },
      };
    });
    for (const [engine, rows] of Object.entries({ pyiceberg: avro.pyiceberg, duckdb: avro.duckdb })) {
      const got = (rows as Array<Record<string, unknown>>).map((r) => ({
        event_id: r.event_id,
        id: String(r.id),
        total: String(r.total),
        customer: JSON.parse(JSON.stringify(r.customer), (_k, x: unknown) => (x === null ? 'None' : typeof x === 'number' ? String(x) : x)),
        items: (r.items as Array<Record<string, unknown>>).map((x) => ({ sku: x.sku, price: String(x.price) })),
        coupon: String(r.coupon ?? 'None'),
        order_key: r.order_key,
      }));
      assert.deepEqual(got, expectAvro, engine);
    }
    const ats = (avro.pyiceberg as Array<{ at: string }>).map((r) => r.at);
    assert.match(ats[0]!, /^2023-11-14 22:13:20(\.000000)?\+00:00$/);

    const pr = await readBack(cfg, `${c.table}_proto`, 'event_id,id,to,tags,counts');
    const expectProto = Array.from({ length: N }, (_, i) => ({
      event_id: `p${String(i).padStart(3, '0')}`,
      id: String(9007199254740993n + BigInt(i)),
      to: i % 3 ? { city: `city${i}`, zip: 10000 + i } : null,
      tags: [`t${i}`, 'x'],
    }));
    for (const rows of [pr.pyiceberg, pr.duckdb])
      assert.deepEqual(
        (rows as Array<Record<string, unknown>>).map((r) => ({ event_id: r.event_id, id: String(r.id), to: r.to, tags: r.tags })),
        expectProto,
      );
    const js = await readBack(cfg, `${c.table}_json`, 'event_id,id,person,scores');
    assert.deepEqual(js.fields, ['kafka_offset', 'event_id', 'id', 'person', 'scores'], 'only the selected fields, who as person');
    const expectJson = Array.from({ length: N }, (_, i) => ({
      event_id: `j${String(i).padStart(3, '0')}`,
      id: String(9007199254740993n + BigInt(i)),
      who: { name: `w${i}`, age: 20 + i },
      scores: [i, i + 0.5],
    }));
    for (const rows of [js.pyiceberg, js.duckdb])
      assert.deepEqual(
        (rows as Array<Record<string, unknown>>).map((r) => ({ event_id: r.event_id, id: String(r.id), who: r.person, scores: r.scores })),
        expectJson,
      );
  });
});
