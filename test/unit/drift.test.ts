import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseColumnType, parseConfig, type TableConfig } from '../../config';
import { checkIngestTablesDrift, checkTableDrift, tableDriftMessage, TableDriftError } from '../../ingest/drift';
import {
  newTableMetadata,
  type IcebergType,
  type ListType,
  type MapType,
  type NestedField,
  type PartitionField,
  type StructType,
  type TableMetadata,
} from '../../iceberg';
import { deadLetterColumns, schemaOf } from '../../ingest/tables';

const cfg = (over: Record<string, unknown> = {}): TableConfig =>
  parseConfig({
    tables: [
      {
        table: 'demo.orders',
        topic: 'orders',
        columns: [
          { name: 'id', type: 'long', required: true },
          { name: 'ts', type: 'timestamptz', required: true },
          { name: 'kind', type: 'string' },
          { name: 'amount', type: 'decimal(9, 2)' },
          { name: 'kafka_partition', type: 'int', source: 'partition', required: true },
        ],
        partitionBy: [
          { column: 'ts', transform: 'day' },
          { column: 'kind', transform: 'identity' },
        ],
        ...over,
      },
    ],
  }).tables[0]!;

/** The table as floe creates it from a config entry (activities/tables.ts create()). */
function created(t: { columns: TableConfig['columns']; partitionBy: TableConfig['partitionBy'] }): TableMetadata {
  const schema = schemaOf(t.columns);
  const id = (name: string) => schema.fields.find((f) => f.name === name)!.id;
  return newTableMetadata({
    location: 's3://floe/warehouse/demo/orders',
    schema,
    tableUuid: '00000000-0000-4000-8000-000000000000',
    spec: {
      'spec-id': 0,
      fields: t.partitionBy.map((p, i) => ({ 'source-id': id(p.column), 'field-id': 1000 + i, name: p.column, transform: p.transform })),
    },
  });
}

/** What another engine's schema update leaves: a new current schema (field ids kept), older schemas retained. */
function evolveSchema(m: TableMetadata, change: (fields: NestedField[]) => NestedField[]): TableMetadata {
  const cur = m.schemas.find((s) => s['schema-id'] === m['current-schema-id'])!;
  const next = { ...cur, 'schema-id': cur['schema-id'] + 1, fields: change(cur.fields.map((f) => ({ ...f }))) };
  return { ...m, schemas: [...m.schemas, next], 'current-schema-id': next['schema-id'] };
}

function evolveSpec(m: TableMetadata, fields: PartitionField[]): TableMetadata {
  const spec = { 'spec-id': m['default-spec-id'] + 1, fields };
  return { ...m, 'partition-specs': [...m['partition-specs'], spec], 'default-spec-id': spec['spec-id'] };
}

const field = (m: TableMetadata, name: string) =>
  m.schemas.find((s) => s['schema-id'] === m['current-schema-id'])!.fields.find((f) => f.name === name)!;

describe('table drift', () => {
  const t = cfg();
  const base = created(t);

  it("a schema format's upsert/CDC table: its required row key comes from the record schema, not the config", () => {
    const own = [{ name: 'kafka_offset', type: 'long', source: 'offset', required: true }];
    const avro = parseConfig({
      tables: [{ table: 'demo.c', topic: 'c', columns: own, value: { format: 'avro', schema: '"long"' }, mode: 'cdc' }],
    }).tables[0]!;
    const m = evolveSchema(created(avro), (fs) => [...fs, { id: 2, name: 'id', required: true, type: 'int' }]);
    const keyed = { ...m, schemas: m.schemas.map((x) => ({ ...x, 'identifier-field-ids': [2] })) };
    assert.deepEqual(checkIngestTablesDrift(avro, keyed, null, deadLetterColumns), []);
    // a required column that is not the row key is still drift, and so is the row key of a JSON table
    assert.equal(checkIngestTablesDrift(avro, m, null, deadLetterColumns).length, 1);
    const json = parseConfig({ tables: [{ table: 'demo.c', topic: 'c', columns: own }] }).tables[0]!;
    assert.equal(checkIngestTablesDrift(json, keyed, null, deadLetterColumns).length, 1);
  });

  it('a table floe created from the same config has no drift (decimal spacing and case do not matter)', () => {
    assert.deepEqual(checkTableDrift(t, base), []);
    const spaced = evolveSchema(base, (fs) =>
      fs.map((f) => (f.name === 'amount' ? { ...f, type: 'decimal(9,2)' as NestedField['type'] } : f)),
    );
    assert.deepEqual(checkTableDrift(t, spaced), []);
  });

  it('a type changed by another engine (int -> long) names the table, the column and both types', () => {
    const m = evolveSchema(base, (fs) => fs.map((f) => (f.name === 'kafka_partition' ? { ...f, type: 'long' as const } : f)));
    assert.deepEqual(checkTableDrift(t, m), ['table demo.orders: column "kafka_partition" is long in the table but int in the config']);
  });

  it('a headers map column: no drift as created; another value type is drift, named in both forms', () => {
    const withHeaders = cfg({
      columns: [
        { name: 'id', type: 'long', required: true },
        { name: 'ts', type: 'timestamptz', required: true },
        { name: 'kind', type: 'string' },
        { name: 'hdrs', type: 'map<string,binary>', source: 'headers' },
      ],
    });
    const m = created(withHeaders);
    const h = field(m, 'hdrs');
    assert.deepEqual(h.type, { type: 'map', 'key-id': 5, key: 'string', 'value-id': 6, value: 'binary', 'value-required': false });
    assert.deepEqual(checkTableDrift(withHeaders, m), []);
    const changed = evolveSchema(m, (fs) =>
      fs.map((f) => (f.name === 'hdrs' ? { ...f, type: { ...(f.type as object), value: 'string' } as NestedField['type'] } : f)),
    );
    assert.deepEqual(checkTableDrift(withHeaders, changed), [
      'table demo.orders: column "hdrs" is map<string, string> in the table but map<string,binary> in the config',
    ]);
  });

  it('a decimal precision change is drift', () => {
    const m = evolveSchema(base, (fs) => fs.map((f) => (f.name === 'amount' ? { ...f, type: 'decimal(12, 2)' as const } : f)));
    assert.deepEqual(checkTableDrift(t, m), [
      'table demo.orders: column "amount" is decimal(12,2) in the table but decimal(9,2) in the config',
    ]);
  });

  it('a column renamed by another engine is found by its field id in the older schema', () => {
    const m = evolveSchema(base, (fs) => fs.map((f) => (f.name === 'amount' ? { ...f, name: 'amount_eur' } : f)));
    assert.deepEqual(checkTableDrift(t, m), [
      'table demo.orders: column "amount" (decimal(9,2) in the config) was renamed to "amount_eur" (decimal(9,2) in the table)',
    ]);
  });

  it('a renamed partition source column also shows as a partition spec difference', () => {
    const m = evolveSchema(base, (fs) => fs.map((f) => (f.name === 'kind' ? { ...f, name: 'event_kind' } : f)));
    assert.deepEqual(checkTableDrift(t, m), [
      'table demo.orders: column "kind" (string in the config) was renamed to "event_kind" (string in the table)',
      'table demo.orders: partition spec is [day(ts), identity(event_kind)] in the table but [day(ts), identity(kind)] in the config',
    ]);
  });

  it('a column removed from the table', () => {
    const m = evolveSchema(base, (fs) => fs.filter((f) => f.name !== 'amount'));
    assert.deepEqual(checkTableDrift(t, m), [
      'table demo.orders: column "amount" (decimal(9,2) in the config) was dropped from the table (it was decimal(9,2))',
    ]);
  });

  it('a required configured column the table never had is drift (listing the table columns); an optional one is not (the next cycle adds it)', () => {
    const withRequired = cfg({ columns: [...t.columns.map((c) => ({ ...c })), { name: 'note', type: 'string', required: true }] });
    assert.deepEqual(checkTableDrift(withRequired, base), [
      'table demo.orders: column "note" (required string in the config) is not in the table (table columns: id long, ts timestamptz, kind string, amount decimal(9,2), kafka_partition int); floe adds optional columns to a table, not required ones (rows already written have no value): make it optional',
    ]);
    const withOptional = cfg({ columns: [...t.columns.map((c) => ({ ...c })), { name: 'note', type: 'string' }] });
    assert.deepEqual(checkTableDrift(withOptional, base), []);
  });

  it('required in the table but optional in the config would fail writes; the other way round is fine', () => {
    const m = evolveSchema(base, (fs) => fs.map((f) => (f.name === 'kind' ? { ...f, required: true } : f)));
    assert.deepEqual(checkTableDrift(t, m), [
      'table demo.orders: column "kind" is required string in the table but optional string in the config: a null would fail the write (make it required: nulls then go to the dead-letter table)',
    ]);
    const relaxed = evolveSchema(base, (fs) => fs.map((f) => (f.name === 'id' ? { ...f, required: false } : f)));
    assert.deepEqual(checkTableDrift(t, relaxed), []);
  });

  it('a column added by another engine: optional is fine, required is drift', () => {
    const optional = evolveSchema(base, (fs) => [...fs, { id: 6, name: 'region', required: false, type: 'string' }]);
    assert.deepEqual(checkTableDrift(t, optional), []);
    const required = evolveSchema(base, (fs) => [...fs, { id: 6, name: 'region', required: true, type: 'string' }]);
    assert.deepEqual(checkTableDrift(t, required), [
      'table demo.orders: column "region" is required string in the table but not in the config: every write would leave it null',
    ]);
  });

  it('nested table types are described, not crashed on', () => {
    const m = evolveSchema(base, (fs) =>
      fs.map((f) =>
        f.name === 'kind'
          ? { ...f, type: { type: 'list' as const, 'element-id': 9, element: 'string' as const, 'element-required': false } }
          : f,
      ),
    );
    assert.deepEqual(checkTableDrift(t, m), ['table demo.orders: column "kind" is list<string> in the table but string in the config']);
  });

  it('a partition spec evolved by another engine', () => {
    const ts = field(base, 'ts').id;
    const hourOnly = evolveSpec(base, [{ 'source-id': ts, 'field-id': 1002, name: 'ts_hour', transform: 'hour' }]);
    assert.deepEqual(checkTableDrift(t, hourOnly), [
      'table demo.orders: partition spec is [hour(ts)] in the table but [day(ts), identity(kind)] in the config',
    ]);
    const unpartitioned = cfg({ partitionBy: [] });
    assert.deepEqual(checkTableDrift(unpartitioned, base), [
      'table demo.orders: partition spec is [day(ts), identity(kind)] in the table but [] in the config',
    ]);
    // Same source columns and transforms under other partition field names: no drift.
    const renamedFields = evolveSpec(
      base,
      base['partition-specs'][0]!.fields.map((f) => ({ ...f, name: `p_${f.name}` })),
    );
    assert.deepEqual(checkTableDrift(t, renamedFields), []);
  });

  it('reports every problem at once', () => {
    const m = evolveSchema(base, (fs) =>
      fs.filter((f) => f.name !== 'amount').map((f) => (f.name === 'kafka_partition' ? { ...f, type: 'long' as const } : f)),
    );
    assert.equal(checkTableDrift(t, m).length, 2);
  });

  it("the dead-letter table is checked against floe's fixed dead-letter columns", () => {
    const dl = created({ columns: deadLetterColumns, partitionBy: [] });
    assert.deepEqual(checkIngestTablesDrift(t, base, dl, deadLetterColumns), []);
    const droppedError = evolveSchema(dl, (fs) => fs.filter((f) => f.name !== 'error'));
    const widened = evolveSchema(base, (fs) => fs.map((f) => (f.name === 'kafka_partition' ? { ...f, type: 'long' as const } : f)));
    assert.deepEqual(checkIngestTablesDrift(t, widened, droppedError, deadLetterColumns), [
      'table demo.orders: column "kafka_partition" is long in the table but int in the config',
      'table demo.orders_dead_letters: column "error" (string in floe\'s dead-letter schema) was dropped from the table (it was string)',
    ]);
    // A table that does not exist yet cannot drift.
    assert.deepEqual(checkIngestTablesDrift(t, null, null, deadLetterColumns), []);
  });

  it('the error carries the problems and says what to do', () => {
    const e = new TableDriftError(['table a.b: column "x" is long in the table but int in the config']);
    assert.equal(e.name, 'TableDrift');
    assert.deepEqual(e.problems, ['table a.b: column "x" is long in the table but int in the config']);
    assert.equal(e.message, tableDriftMessage(e.problems));
    assert.match(
      e.message,
      /^the configured columns no longer match the table .*: table a\.b: column "x" is long in the table but int in the config\. Change the config/,
    );
  });
});

describe('table drift of nested columns', () => {
  const t = cfg({
    columns: [
      { name: 'id', type: 'long', required: true },
      { name: 'ts', type: 'timestamptz', required: true },
      { name: 'customer', type: 'struct<id: long not null, name: string>' },
      { name: 'items', type: 'list<struct<sku: string not null, qty: int not null, price: decimal(10, 2)>>' },
      { name: 'counts', type: 'map<string, long>' },
    ],
    partitionBy: [{ column: 'ts', transform: 'day' }],
  });
  const base = created(t);
  /** `base` after another engine changed column `name`'s type (ids kept unless `change` says otherwise). */
  const retype = (name: string, change: (type: IcebergType) => IcebergType) =>
    evolveSchema(base, (fs) => fs.map((f) => (f.name === name ? { ...f, type: change(structuredClone(f.type)) } : f)));
  const struct = (t: IcebergType) => t as StructType;
  const list = (t: IcebergType) => t as ListType;
  const map = (t: IcebergType) => t as MapType;

  it('a table floe created from the config has no drift; field ids are never compared', () => {
    assert.deepEqual(checkTableDrift(t, base), []);
    const renumbered = retype('customer', (c) => ({ ...struct(c), fields: struct(c).fields.map((f) => ({ ...f, id: f.id + 100 })) }));
    assert.deepEqual(checkTableDrift(t, renumbered), []);
  });

  it('a leaf retyped at any depth names the nested path and both types', () => {
    const qty = retype('items', (l) => {
      struct(list(l).element).fields[1]!.type = 'long';
      return l;
    });
    assert.deepEqual(checkTableDrift(t, qty), [
      'table demo.orders: column "items" field "items.element.qty" is long in the table but int in the config',
    ]);
    const value = retype('counts', (m) => ({ ...map(m), value: 'int' }));
    assert.deepEqual(checkTableDrift(t, value), [
      'table demo.orders: column "counts" field "counts.value" is int in the table but long in the config',
    ]);
    const key = retype('counts', (m) => ({ ...map(m), key: 'int' }));
    assert.deepEqual(checkTableDrift(t, key), [
      'table demo.orders: column "counts" field "counts.key" is int in the table but string in the config',
    ]);
    const kind = retype('customer', (c) => {
      struct(c).fields[1]!.type = { type: 'list', 'element-id': 99, element: 'string', 'element-required': false };
      return c;
    });
    assert.deepEqual(checkTableDrift(t, kind), [
      'table demo.orders: column "customer" field "customer.name" is list<string> in the table but string in the config',
    ]);
    const whole = retype('items', () => 'string');
    assert.deepEqual(checkTableDrift(t, whole), [
      'table demo.orders: column "items" is string in the table but list<struct<sku: string not null, qty: int not null, price: decimal(10,2)>> in the config',
    ]);
  });

  it('a field, element or value required in the table but optional in the config would fail writes; the other way round is fine', () => {
    const name = retype('customer', (c) => {
      struct(c).fields[1]!.required = true;
      return c;
    });
    assert.deepEqual(checkTableDrift(t, name), [
      'table demo.orders: column "customer" field "customer.name" is required string in the table but optional string in the config: a null would fail the write (make it required with required: true or not null; nulls then go to the dead-letter table)',
    ]);
    const element = retype('items', (l) => ({ ...list(l), 'element-required': true }));
    assert.deepEqual(checkTableDrift(t, element), [
      'table demo.orders: column "items" field "items.element" is required struct<sku: string not null, qty: int not null, price: decimal(10,2)> in the table but optional struct<sku: string not null, qty: int not null, price: decimal(10,2)> in the config: a null would fail the write (make the elements required with elementRequired: true or not null; nulls then go to the dead-letter table)',
    ]);
    const value = retype('counts', (m) => ({ ...map(m), 'value-required': true }));
    assert.match(
      checkTableDrift(t, value)[0]!,
      /column "counts" field "counts.value" is required long in the table but optional long .*make the values required/,
    );
    const relaxed = retype('customer', (c) => {
      struct(c).fields[0]!.required = false;
      return c;
    });
    assert.deepEqual(checkTableDrift(t, relaxed), []);
  });

  it('a struct field renamed or dropped by another engine is found through the older schema', () => {
    const renamed = retype('customer', (c) => {
      struct(c).fields[1]!.name = 'full_name';
      return c;
    });
    assert.deepEqual(checkTableDrift(t, renamed), [
      'table demo.orders: column "customer" field "customer.name" (string in the config) was renamed to "customer.full_name" in the table',
    ]);
    const dropped = retype('items', (l) => {
      struct(list(l).element).fields.pop();
      return l;
    });
    assert.deepEqual(checkTableDrift(t, dropped), [
      'table demo.orders: column "items" field "items.element.price" (decimal(10,2) in the config) was dropped from the table (it was decimal(10,2))',
    ]);
  });

  it('a new optional field is not drift (the next cycle adds it); a new required one is; a required table field the config lacks is', () => {
    const columns = t.columns.map((c) => ({ ...c }));
    columns[2] = { ...columns[2]!, type: parseColumnType('struct<id: long not null, name: string, email: string>', 'k') };
    assert.deepEqual(checkTableDrift({ ...t, columns }, base), []);
    columns[2] = { ...columns[2], type: parseColumnType('struct<id: long not null, name: string, email: string not null>', 'k') };
    assert.deepEqual(checkTableDrift({ ...t, columns }, base), [
      'table demo.orders: column "customer" field "customer.email" (required string in the config) is not in the table (struct<id: long not null, name: string>); floe adds optional fields to a struct, not required ones (rows already written have no value): make it optional',
    ]);
    const extra = (required: boolean) =>
      retype('items', (l) => {
        struct(list(l).element).fields.push({ id: 50, name: 'note', required, type: 'string' });
        return l;
      });
    assert.deepEqual(checkTableDrift(t, extra(false)), []);
    assert.deepEqual(checkTableDrift(t, extra(true)), [
      'table demo.orders: column "items" field "items.element.note" is required string in the table but not in the config: every write would leave it null',
    ]);
  });
});
