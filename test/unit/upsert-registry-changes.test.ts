/**
 * Upsert and CDC tables in a schema format (ingest/upsert/registry-changes.ts): Debezium's Avro
 * envelope and its flattened form, the row key from the key schema, tombstones, the table's
 * identifier fields set by the first schema. Plain Avro (the config's schemas): the same reader as
 * the registry formats, without a registry; test/integration/upsert-registry.test.ts runs them
 * through the stack's Schema Registry.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse as parseYaml } from 'yaml';
import { parseConfig, type TableConfig } from '../../config';
import { avroType } from '../../ingest/formats/avro';
import { DecodeError } from '../../ingest/formats/errors';
import { planUnion } from '../../ingest/formats/union';
import { RegistryChanges, defaultIdColumns } from '../../ingest/upsert/registry-changes';
import { currentSchema, newTableMetadata, type TableMetadata } from '../../iceberg';
import type { KafkaRecord } from '../../ingest/decode';

const VALUE = {
  type: 'record',
  name: 'Value',
  namespace: 'dbserver1.inventory.customers',
  fields: [
    { name: 'id', type: 'int' },
    { name: 'first_name', type: 'string' },
    { name: 'email', type: ['null', 'string'], default: null },
  ],
};
const ENVELOPE = {
  type: 'record',
  name: 'Envelope',
  namespace: 'dbserver1.inventory.customers',
  fields: [
    { name: 'before', type: ['null', VALUE], default: null },
    { name: 'after', type: ['null', 'Value'], default: null },
    {
      name: 'source',
      type: {
        type: 'record',
        name: 'Source',
        namespace: 'io.debezium.connector.postgresql',
        fields: [{ name: 'lsn', type: ['null', 'long'] }],
      },
    },
    { name: 'op', type: 'string' },
    { name: 'ts_ms', type: ['null', 'long'], default: null },
  ],
};
const KEY = { type: 'record', name: 'Key', namespace: 'dbserver1.inventory.customers', fields: [{ name: 'id', type: 'int' }] };
const FLAT = {
  type: 'record',
  name: 'Value',
  fields: [...VALUE.fields, { name: '__deleted', type: ['null', 'string'], default: null }],
};

function entry(value: object, mode: 'cdc' | 'upsert', extra = ''): TableConfig {
  const cfg = parseConfig(
    parseYaml(`
tables:
  - table: inventory.customers
    topic: dbserver1.inventory.customers
    value: { format: avro, schema: '${JSON.stringify(value)}' }
    key: { format: avro, schema: '${JSON.stringify(KEY)}' }
    columns:
      - { name: kafka_offset, type: long, source: offset }
    mode: ${mode}
${extra}`),
  );
  return cfg.tables[0]!;
}

const envelope = avroType(ENVELOPE);
const key = avroType(KEY);
const flat = avroType(FLAT);
let offset = 0n;
const rec = (k: Buffer | null, v: Buffer | null): KafkaRecord =>
  ({ topic: 't', partition: 0, offset: String(offset++), key: k, value: v, timestamp: '0', headers: {} }) as unknown as KafkaRecord;
const row = (id: number, name: string, email: string | null = null) => ({ id, first_name: name, email });
const event = (op: string, before: object | null, after: object | null) =>
  envelope.toBuffer({ before, after, source: { lsn: 1n }, op, ts_ms: 1n });

/** A new table of the entry's own columns (what ensureIngestTables creates before any schema is known). */
function emptyTable(): TableMetadata {
  return newTableMetadata({
    location: 'memory://wh/t',
    schema: { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'kafka_offset', required: true, type: 'long' }] },
    tableUuid: '00000000-0000-0000-0000-000000000001',
  });
}

/** Applies an evolve outcome as the sink does (one schema commit), returning the new metadata. */
function evolved(m: TableMetadata, out: ReturnType<RegistryChanges['read']>, ids: string[]): TableMetadata {
  assert.ok('evolve' in out, `expected an evolve, got ${JSON.stringify(out, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))}`);
  const plan = planUnion(m, out.evolve, new Set(['kafka_offset']), ids);
  assert.deepEqual(plan.problems, []);
  const schema = { ...currentSchema(m), 'schema-id': 1, fields: plan.fields, 'identifier-field-ids': plan.identifierFieldIds };
  return { ...m, schemas: [...m.schemas, schema], 'current-schema-id': 1, 'last-column-id': plan.lastColumnId } as TableMetadata;
}

test('cdc, Avro envelope: columns from after, the id column required and the identifier field, ops c/r/u/d and tombstones', async () => {
  const t = entry(ENVELOPE, 'cdc');
  // no idColumns in the config: the key schema's fields
  const ids = await defaultIdColumns(t, undefined, undefined);
  assert.deepEqual(ids, ['id']);
  let m = emptyTable();
  const changes = new RegistryChanges(t, m, undefined, ids);
  const k1 = key.toBuffer({ id: 1 });
  m = evolved(m, changes.read(rec(k1, event('c', null, row(1, 'Ann')))), ids!);
  const schema = currentSchema(m);
  assert.deepEqual(
    schema.fields.map((f) => [f.name, f.type, f.required]),
    [
      ['kafka_offset', 'long', true],
      ['id', 'int', true],
      ['first_name', 'string', false],
      ['email', 'string', false],
    ],
    'the envelope is not a column: its after is the row',
  );
  assert.deepEqual(schema['identifier-field-ids'], [2]);
  changes.setTable(m);
  // the table now knows the row key: a second reader takes it from the identifier fields
  assert.deepEqual(await defaultIdColumns({ ...t, key: undefined }, m, undefined), ['id']);

  const c = changes.read(rec(k1, event('c', null, row(1, 'Ann', 'ann@x'))));
  assert.ok('change' in c && c.change.kind === 'upsert');
  assert.deepEqual({ ...c.change.row, kafka_offset: 0n }, { kafka_offset: 0n, id: 1, first_name: 'Ann', email: 'ann@x' });
  const r = changes.read(rec(key.toBuffer({ id: 2 }), event('r', null, row(2, 'Bob'))));
  assert.ok('change' in r && r.change.kind === 'upsert' && r.change.row.id === 2, 'a snapshot read loads like an insert');
  const u = changes.read(rec(k1, event('u', row(1, 'Ann'), row(1, 'Anna'))));
  assert.ok('change' in u && u.change.kind === 'upsert' && u.change.row.first_name === 'Anna');
  assert.deepEqual(changes.read(rec(k1, event('d', row(1, 'Anna'), null))), { change: { kind: 'delete', key: { id: 1 } } });
  // a delete without before (REPLICA IDENTITY NOTHING): the Kafka key names the row
  assert.deepEqual(changes.read(rec(key.toBuffer({ id: 2 }), event('d', null, null))), { change: { kind: 'delete', key: { id: 2 } } });
  // Debezium's tombstone after a delete: the key
  assert.deepEqual(changes.read(rec(key.toBuffer({ id: 2 }), null)), { change: { kind: 'delete', key: { id: 2 } } });
  // truncate: refused with the reason (a dead letter), nothing guessed
  assert.throws(
    () => changes.read(rec(null, event('t', null, null))),
    (e: unknown) => e instanceof DecodeError && /truncate/.test(e.message),
  );
  assert.throws(() => changes.read(rec(k1, event('c', null, null))), /op c has no after/);
  assert.throws(() => changes.read(rec(null, null)), /a tombstone \(null value\) needs the record key/);
  assert.throws(
    () => changes.read(rec(k1, Buffer.from([1, 2, 3]))),
    (e: unknown) => e instanceof DecodeError,
  );
});

test('cdc, the flattened form (ExtractNewRecordState): __deleted deletes and is not a column', () => {
  const t = entry(FLAT, 'cdc', '    idColumns: [id]');
  let m = emptyTable();
  const changes = new RegistryChanges(t, m, undefined, ['id']);
  const k = key.toBuffer({ id: 7 });
  m = evolved(m, changes.read(rec(k, flat.toBuffer({ ...row(7, 'Cy'), __deleted: 'false' }))), ['id']);
  assert.deepEqual(
    currentSchema(m).fields.map((f) => f.name),
    ['kafka_offset', 'id', 'first_name', 'email'],
  );
  changes.setTable(m);
  const up = changes.read(rec(k, flat.toBuffer({ ...row(7, 'Cy'), __deleted: 'false' })));
  assert.ok('change' in up && up.change.kind === 'upsert' && up.change.row.first_name === 'Cy');
  assert.deepEqual(changes.read(rec(k, flat.toBuffer({ ...row(7, 'Cy'), __deleted: 'true' }))), {
    change: { kind: 'delete', key: { id: 7 } },
  });
});

test('upsert, Avro rows: a tombstone deletes the key its Avro key names; a string key beside Avro values is read as text', () => {
  const t = entry(VALUE, 'upsert', '    idColumns: [id]');
  let m = emptyTable();
  const changes = new RegistryChanges(t, m, undefined, ['id']);
  const value = avroType(VALUE);
  m = evolved(m, changes.read(rec(key.toBuffer({ id: 3 }), value.toBuffer(row(3, 'Di')))), ['id']);
  changes.setTable(m);
  const up = changes.read(rec(key.toBuffer({ id: 3 }), value.toBuffer(row(3, 'Di'))));
  assert.ok('change' in up && up.change.kind === 'upsert' && up.change.row.id === 3);
  assert.deepEqual(changes.read(rec(key.toBuffer({ id: 3 }), null)), { change: { kind: 'delete', key: { id: 3 } } });

  // no key format, values in plain Avro: the key as the id column's text
  const text = new RegistryChanges({ ...t, key: undefined }, m, undefined, ['id']);
  assert.deepEqual(text.read(rec(Buffer.from('42'), null)), { change: { kind: 'delete', key: { id: 42 } } });
  assert.throws(
    () => text.read(rec(Buffer.from('x'), null)),
    (e: unknown) => e instanceof DecodeError,
  );
});

test('an identifier column missing from a table that has rows is a problem; an optional one too', () => {
  const m = emptyTable();
  const withValue = planUnion(m, [{ name: 'name', type: 'string', required: false }], new Set(['kafka_offset']));
  const schema = { ...currentSchema(m), 'schema-id': 1, fields: withValue.fields };
  const m2 = { ...m, schemas: [...m.schemas, schema], 'current-schema-id': 1, 'last-column-id': withValue.lastColumnId } as TableMetadata;
  const late = planUnion(m2, [{ name: 'id', type: 'int', required: true }], new Set(['kafka_offset']), ['id']);
  assert.match(late.problems.join('; '), /id: an identifier column \(idColumns\) cannot be added to a table that has rows without it/);
  const optional = planUnion(m2, [{ name: 'name', type: 'string', required: false }], new Set(['kafka_offset']), ['name']);
  assert.match(optional.problems.join('; '), /name: an identifier column \(idColumns\) is optional in the table/);
});
