/**
 * Columns from Kafka metadata on the real stack (Kafka, Temporal, SeaweedFS S3, SQLite catalog):
 * the topic, selected headers (as text converted to the column type, and as bytes; a repeated
 * header gives its last value), every header as a map<string, binary>, and the key land in their
 * columns, read back equal by DuckDB and by PyIceberg; a record whose required header is absent or
 * unconvertible is a dead letter naming the column and the header.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { IHeaders } from 'kafkajs';
import { ensureStack } from '../../stack/stack';
import { runPythonJson } from '../../stack/python';
import { floeHome } from '../../stack/paths';
import { scenarioConfig } from '../../demo/scenario';
import { verifyTable } from '../../demo/verify';
import { findTable, loadConfig, type FloeConfig } from '../../config';
import { connectClient, signalIngest, startIngest, waitForIngest, type FloeClient } from '../../client';
import { readColumnValues } from '../../client/tables';
import { openTables } from '../../table/tables';
import { spawnWorker, type WorkerProcess } from '../../workers/process';
import { produceMessages, type TestMessage } from '../support/produce';

const columns = [
  { name: 'event_id', type: 'string', required: true },
  { name: 'src_topic', type: 'string', required: true, source: 'topic' },
  { name: 'trace_id', type: 'string', source: 'header', header: 'trace-id' },
  { name: 'tenant', type: 'long', required: true, source: 'header', header: 'tenant' },
  { name: 'sig', type: 'binary', source: 'header', header: 'sig' },
  { name: 'k', type: 'string', source: 'key' },
  { name: 'hdrs', type: 'map<string, binary>', source: 'headers' },
];

const GOOD = 30;
const headersOf = (i: number): IHeaders => ({
  'trace-id': i % 5 === 0 ? [Buffer.from('first'), Buffer.from(`trace-${i}`)] : Buffer.from(`trace-${i}`),
  tenant: Buffer.from(String(100 + (i % 3))),
  ...(i % 2 ? { sig: Buffer.from([i, 0xff]) } : {}),
});

const DUCKDB_READ = `
import json, sys
from floe_duckdb import connect
con = connect()
rows = con.sql(f"SELECT event_id, src_topic, trace_id, tenant, hex(sig), map_keys(hdrs), list_transform(map_values(hdrs), x -> hex(x)) FROM iceberg_scan('{sys.argv[1]}') ORDER BY event_id").fetchall()
print(json.dumps([[r[0], r[1], r[2], int(r[3]), r[4], dict(sorted(zip(r[5], r[6])))] for r in rows]))
`;

// PyIceberg reads the same columns (its own Parquet + Iceberg reader, field ids and the map type)
const PYICEBERG_READ = `
import json, sys
from pyiceberg.table import StaticTable
from floe_duckdb import pyiceberg_s3_properties
t = StaticTable.from_metadata(sys.argv[1], properties=pyiceberg_s3_properties())
rows = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["event_id"])
h = lambda b: None if b is None else b.hex().upper()
print(json.dumps([[r["event_id"], r["src_topic"], r["trace_id"], r["tenant"], h(r["sig"]), dict(sorted((k, h(v)) for k, v in r["hdrs"]))] for r in rows]))
`;

describe('columns from the topic, headers and key (real stack)', { timeout: 10 * 60_000 }, () => {
  let cfg: FloeConfig;
  let table: string;
  let topic: string;
  let fc: FloeClient;
  let worker: WorkerProcess;

  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3']);
    const c = scenarioConfig(`it_kafka_meta_${Date.now().toString(36)}`, 1, '2s', { columns, partitionBy: [] });
    cfg = loadConfig(c.path);
    ({ table, topic } = c);
    const messages: TestMessage[] = Array.from({ length: GOOD }, (_, i) => ({
      key: `key-${i}`,
      value: JSON.stringify({ event_id: `e${String(i).padStart(3, '0')}` }),
      headers: headersOf(i),
    }));
    // two bad ones: the required header absent, and not a number
    messages.push({ key: 'bad-1', value: JSON.stringify({ event_id: 'bad-1' }), headers: { 'trace-id': Buffer.from('x') } });
    messages.push({ key: 'bad-2', value: JSON.stringify({ event_id: 'bad-2' }), headers: { tenant: Buffer.from('seven') } });
    await produceMessages(cfg, topic, messages);
    worker = spawnWorker(c.path, join(floeHome(), 'logs', `${c.table.replace(/\W/g, '_')}-worker.log`));
    fc = await connectClient(cfg);
  });

  after(async () => {
    await fc?.close();
    await worker?.kill('SIGTERM');
  });

  it('lands the topic, headers and key in their columns; bad headers are dead letters naming them', async () => {
    await startIngest(fc, table);
    await signalIngest(fc, table, 'stop');
    const status = await waitForIngest(fc, table);
    assert.equal(status.totalRows, GOOD);
    assert.equal(status.totalDeadLetters, 2);
    const v = await verifyTable(cfg, table, topic);
    assert.deepEqual(v.problems, []);

    const expected = Array.from({ length: GOOD }, (_, i) => [
      `e${String(i).padStart(3, '0')}`,
      topic,
      `trace-${i}`,
      100 + (i % 3),
      i % 2 ? Buffer.from([i, 0xff]).toString('hex').toUpperCase() : null,
      // every header by name, as bytes (hex here); the repeated trace-id keeps its last value
      Object.fromEntries(
        Object.entries({
          'trace-id': Buffer.from(`trace-${i}`),
          tenant: Buffer.from(String(100 + (i % 3))),
          ...(i % 2 ? { sig: Buffer.from([i, 0xff]) } : {}),
        })
          .sort(([a], [b]) => (a < b ? -1 : 1))
          .map(([k, v]) => [k, v.toString('hex').toUpperCase()]),
      ),
    ]);
    // DuckDB reads the columns floe wrote (an independent Parquet + Iceberg reader)
    const tables = await openTables(cfg);
    try {
      const { metadataLocation } = await tables.load(table);
      const duck = await runPythonJson<unknown[][]>(DUCKDB_READ, [metadataLocation], { timeoutMs: 120_000 });
      assert.deepEqual(duck, expected);
      const py = await runPythonJson<unknown[][]>(PYICEBERG_READ, [metadataLocation], { timeoutMs: 120_000 });
      assert.deepEqual(py, expected);
      const keys = (await readColumnValues(tables, table, 'k')) as string[];
      const ids = (await readColumnValues(tables, table, 'event_id')) as string[];
      for (const [j, id] of ids.entries()) assert.equal(keys[j], `key-${Number(id.slice(1))}`);

      const dlt = findTable(cfg, table).deadLetterTable;
      const errors = ((await readColumnValues(tables, dlt, 'error')) as string[]).sort();
      assert.equal(errors.length, 2);
      assert.match(errors[0]!, /^tenant: expected an integer, found "seven"/);
      assert.match(errors[1]!, /^tenant: header "tenant" is required but absent/);
    } finally {
      await tables.close();
    }
  });
});
