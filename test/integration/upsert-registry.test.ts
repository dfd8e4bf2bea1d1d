/**
 * A CDC table in Avro through the real Schema Registry (issue 31): Debezium's envelope as its
 * AvroConverter writes it (key and value framed by Confluent's serializer, the key a record of the
 * primary key), with inserts, snapshot reads, updates, deletes followed by tombstones, and keys
 * deleted and inserted again. `idColumns` is not configured: the key subject's schema names the
 * row key, and the table is created from the value subject with `id` required and its identifier
 * field. Small cycles make later cycles delete rows earlier ones committed; the worker is SIGKILLed
 * right after a cycle wrote its delete files, and the table must equal the source state (computed
 * here from the events produced) through floe's reader, DuckDB and PyIceberg.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureStack } from '../../stack/stack';
import { stackEnv } from '../../stack/env';
import { floeHome } from '../../stack/paths';
import { scenarioConfig } from '../../demo/config';
import { verifyUpsertTable } from '../../demo/customers';
import { loadConfig } from '../../config';
import { connectClient, signalIngest, startIngest, waitForIngest } from '../../client';
import { openTables } from '../../table/tables';
import { currentSchema } from '../../iceberg';
import { spawnWorker, type WorkerProcess } from '../../workers/process';
import { produceMessages, type TestMessage } from '../support/produce';
import { serializeWithConfluent } from '../support/registry';

const NS = 'dbserver1.inventory.customers';
const VALUE = {
  type: 'record',
  name: 'Value',
  namespace: NS,
  fields: [
    { name: 'id', type: 'int' },
    { name: 'name', type: 'string' },
    { name: 'version', type: 'int' },
    { name: 'email', type: ['null', 'string'], default: null },
  ],
};
const ENVELOPE = JSON.stringify({
  type: 'record',
  name: 'Envelope',
  namespace: NS,
  fields: [
    { name: 'before', type: ['null', VALUE], default: null },
    { name: 'after', type: ['null', `${NS}.Value`], default: null },
    {
      name: 'source',
      type: {
        type: 'record',
        name: 'Source',
        namespace: 'io.debezium.connector.postgresql',
        fields: [
          { name: 'connector', type: 'string' },
          { name: 'lsn', type: ['null', 'long'], default: null },
        ],
      },
    },
    { name: 'op', type: 'string' },
    { name: 'ts_ms', type: ['null', 'long'], default: null },
  ],
});
const KEY = JSON.stringify({ type: 'record', name: 'Key', namespace: NS, fields: [{ name: 'id', type: 'int' }] });

interface Row {
  id: number;
  name: string;
  version: number;
  email: string | null;
}
type Event = { key: number; value: { before: Row | null; after: Row | null; source: object; op: string; ts_ms: number } | null };

/** A source table's change stream: a snapshot, then inserts, updates, deletes (each followed by a tombstone) and re-inserts. */
function changeStream(keys: number, changes: number): { events: Event[]; state: Map<number, Row> } {
  const state = new Map<number, Row>();
  const events: Event[] = [];
  let lsn = 0;
  const emit = (op: string, key: number, before: Row | null, after: Row | null) =>
    events.push({ key, value: { before, after, source: { connector: 'postgresql', lsn: ++lsn }, op, ts_ms: 1_700_000_000_000 + lsn } });
  for (let id = 1; id <= keys / 2; id++) {
    const r = { id, name: `n${id}`, version: 1, email: id % 3 ? `c${id}@x` : null };
    state.set(id, r);
    emit('r', id, null, r);
  }
  let x = 12345;
  for (let n = 0; n < changes; n++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    const id = 1 + ((x >>> 8) % keys);
    const old = state.get(id);
    if (!old) {
      const r = { id, name: `n${id}`, version: 1, email: null };
      state.set(id, r);
      emit('c', id, null, r);
    } else if ((x >>> 20) % 4 === 0) {
      state.delete(id);
      emit('d', id, old, null);
      events.push({ key: id, value: null }); // Debezium's tombstone after a delete
    } else {
      const r = { ...old, version: old.version + 1, name: `n${id}v${old.version + 1}` };
      state.set(id, r);
      emit('u', id, old, r);
    }
  }
  return { events, state };
}

describe('CDC in Avro through the Schema Registry (real stack)', { timeout: 5 * 60_000 }, () => {
  const workers: WorkerProcess[] = [];

  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3', 'schema-registry']);
  });
  after(async () => {
    for (const w of workers) await w.kill('SIGKILL');
  });

  it('Debezium Avro envelopes land equal to the source state through a SIGKILL after a delete write; idColumns from the key schema', async () => {
    const run = `it_cdc_avro_${Date.now().toString(36)}`;
    const registryUrl = stackEnv().schemaRegistry.url;
    const c = scenarioConfig(run, 2, '1s', {
      columns: [{ name: 'kafka_offset', type: 'long', source: 'offset', required: true }],
      partitionBy: [],
      value: { format: 'avro' },
      mode: 'cdc',
      // several cycles: later ones delete rows the earlier ones committed
      maxRecordsPerCycle: 60,
    });
    const raw = readFileSync(c.path, 'utf8');
    const cfgPath = join(mkdtempSync(join(tmpdir(), 'floe-cdc-avro-')), 'floe.yaml');
    writeFileSync(cfgPath, `schemaRegistry: { url: "${registryUrl}" }\n${raw}`);
    const cfg = loadConfig(cfgPath);
    assert.equal(cfg.tables[0]!.idColumns, undefined, 'the config names no row key');

    const { events, state } = changeStream(40, 260);
    const values = await serializeWithConfluent({
      registryUrl,
      topic: c.topic,
      format: 'avro',
      schema: ENVELOPE,
      records: events.filter((e) => e.value !== null).map((e) => e.value),
    });
    const keys = await serializeWithConfluent({
      registryUrl,
      topic: c.topic,
      format: 'avro',
      isKey: true,
      schema: KEY,
      records: events.map((e) => ({ id: e.key })),
    });
    let v = 0;
    const messages: TestMessage[] = events.map((e, i) => ({
      key: keys.records[i]!,
      value: e.value === null ? null : values.records[v++]!,
    }));
    await produceMessages(cfg, c.topic, messages, 2);

    const log = (name: string) => join(floeHome(), 'logs', `${run}-${name}.log`);
    const marker = join(mkdtempSync(join(tmpdir(), 'floe-kill-')), 'killed');
    // the second cycle that writes deletes dies right after writing them, before its commit
    const doomed = spawnWorker(cfgPath, log('w1-killed'), {
      FLOE_TEST_KILL_AT: 'after-delete-write',
      FLOE_TEST_KILL_MARKER: marker,
      FLOE_TEST_KILL_SKIP: '1',
    });
    workers.push(doomed);
    const fc = await connectClient(cfg);
    try {
      await startIngest(fc, c.table);
      assert.equal((await doomed.exited).signal, 'SIGKILL', 'the worker killed itself after a delete write');
      assert.match(readFileSync(marker, 'utf8'), /^after-delete-write /);
      workers.push(spawnWorker(cfgPath, log('w2')));
      await signalIngest(fc, c.table, 'stop');
      await waitForIngest(fc, c.table);
    } finally {
      await fc.close();
    }

    const verified = await verifyUpsertTable(cfg, c.table, new Map([...state].map(([id, r]) => [id, { version: r.version }])));
    assert.deepEqual(verified.problems, [], verified.problems.join('; '));
    assert.equal(verified.rows, state.size);

    const tables = await openTables(cfg);
    try {
      const { metadata } = await tables.load(c.table);
      const schema = currentSchema(metadata);
      assert.deepEqual(
        schema.fields.map((f) => [f.name, f.type, f.required]),
        [
          ['kafka_offset', 'long', true],
          ['id', 'int', true],
          ['name', 'string', false],
          ['version', 'int', false],
          ['email', 'string', false],
        ],
        "the table's columns are the envelope's after, not the envelope",
      );
      assert.deepEqual(schema['identifier-field-ids'], [2], 'id, from the key schema, is the identifier field');
      const deletes = metadata.snapshots.reduce((n, s) => n + Number(s.summary['added-position-deletes'] ?? '0'), 0);
      assert.ok(deletes > 0, 'position deletes were committed');
    } finally {
      await tables.close();
    }
  });
});
