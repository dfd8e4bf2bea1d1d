/**
 * Optional columns added to the config join the table's schema (ingest/evolve.ts), against the
 * in-memory catalog: fresh field ids after the last assigned one (a headers map's key and value
 * too), the old schema kept, a second run adds nothing, a racing schema change is re-planned,
 * and renamed, dropped or required columns are never added.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { parseColumnType, type ColumnConfig } from '../../config';
import {
  MemoryCatalog,
  MemoryFileIO,
  currentSchema,
  newTableMetadata,
  Transaction,
  type ListType,
  type MapType,
  type StructType,
} from '../../iceberg';
import { addConfiguredColumns, AddColumns, columnsToAdd, nestedFieldsToAdd } from '../../ingest/evolve';
import { checkTableDrift } from '../../ingest/drift';
import { type Tables } from '../../table/tables';
import { schemaOf } from '../../ingest/tables';

const v1: ColumnConfig[] = [
  { name: 'id', type: 'long', required: true },
  { name: 'hdrs', type: 'map<string, binary>', required: false, source: 'headers' },
  { name: 'kind', type: 'string', required: false },
];

async function fixture(): Promise<{ catalog: MemoryCatalog; tables: Tables }> {
  const io = new MemoryFileIO();
  const catalog = new MemoryCatalog('m', io);
  await catalog.createNamespace(['db']);
  await catalog.createTable(
    { namespace: ['db'], name: 't' },
    newTableMetadata({ location: 'memory://w/db/t', schema: schemaOf(v1), tableUuid: randomUUID() }),
  );
  const tables = { catalog, io, load: () => catalog.loadTable({ namespace: ['db'], name: 't' }) } as unknown as Tables;
  return { catalog, tables };
}

describe('schema evolution from the config', () => {
  it('adds new optional columns at the end with fresh field ids; the old schema stays; a second run adds nothing', async () => {
    const { tables } = await fixture();
    const before = (await tables.load('db.t')).metadata;
    assert.equal(before['last-column-id'], 5, 'id, hdrs (+ key, value), kind');
    const v2: ColumnConfig[] = [
      ...v1,
      { name: 'note', type: 'string', required: false, doc: 'free text' },
      { name: 'h2', type: 'map<string, string>', required: false, source: 'headers' },
    ];
    assert.deepEqual((await addConfiguredColumns(tables, { table: 'db.t', columns: v2 }, await tables.load('db.t'))).added, ['note', 'h2']);
    const after = (await tables.load('db.t')).metadata;
    const s = currentSchema(after);
    assert.deepEqual(
      s.fields.map((f) => [f.id, f.name, f.required]),
      [
        [1, 'id', true],
        [2, 'hdrs', false],
        [3, 'kind', false],
        [6, 'note', false],
        [7, 'h2', false],
      ],
    );
    assert.equal(s.fields[3]!.doc, 'free text');
    assert.deepEqual(s.fields[4]!.type, {
      type: 'map',
      'key-id': 8,
      key: 'string',
      'value-id': 9,
      value: 'string',
      'value-required': false,
    });
    assert.equal(after['last-column-id'], 9);
    assert.equal(after.schemas.length, 2, 'the old schema is kept (older files read by field id)');
    assert.notEqual(after['current-schema-id'], before['current-schema-id']);
    // idempotent: a retried cycle (or a second worker) finds nothing to add and commits nothing
    assert.deepEqual((await addConfiguredColumns(tables, { table: 'db.t', columns: v2 }, await tables.load('db.t'))).added, []);
    assert.equal((await tables.load('db.t')).metadata['metadata-log'].length, after['metadata-log'].length);
  });

  it('never adds a required column, nor one renamed or dropped by another engine', async () => {
    const { tables } = await fixture();
    const m = (await tables.load('db.t')).metadata;
    assert.deepEqual(columnsToAdd([...v1, { name: 'must', type: 'int', required: true }], m), []);
    // "kind" was in an older schema: gone from the current one means renamed or dropped (drift)
    const dropped = {
      ...m,
      schemas: [...m.schemas, { ...currentSchema(m), 'schema-id': 1, fields: currentSchema(m).fields.slice(0, 2) }],
      'current-schema-id': 1,
    };
    assert.deepEqual(columnsToAdd(v1, dropped), []);
  });

  it('a racing schema change fails the requirement; the retry re-plans on the new schema', async () => {
    const { catalog, tables } = await fixture();
    const base = await tables.load('db.t');
    // another writer adds a column between our load and our commit
    await new Transaction({ namespace: ['db'], name: 't' })
      .add(new AddColumns([...v1, { name: 'theirs', type: 'int', required: false }]))
      .commit(catalog, tables.io);
    const ours = new AddColumns([...v1, { name: 'note', type: 'string', required: false }]);
    await new Transaction({ namespace: ['db'], name: 't' }).add(ours).commit(catalog, tables.io, { table: base, minWaitMs: 1 });
    const s = currentSchema((await tables.load('db.t')).metadata);
    assert.deepEqual(
      s.fields.map((f) => [f.id, f.name]),
      [
        [1, 'id'],
        [2, 'hdrs'],
        [3, 'kind'],
        [6, 'theirs'],
        [7, 'note'],
      ],
    );
  });
});

describe('nested columns: ids at every level, and new optional struct fields', () => {
  const orders: ColumnConfig[] = [
    { name: 'id', type: 'long', required: true },
    { name: 'customer', type: parseColumnType('struct<id: long not null, name: string>', 'k'), required: false },
    { name: 'items', type: parseColumnType('list<struct<sku: string not null, qty: int not null>>', 'k'), required: false },
    { name: 'counts', type: parseColumnType('map<string, struct<n: long>>', 'k'), required: false },
  ];

  async function ordersFixture(): Promise<{ catalog: MemoryCatalog; tables: Tables }> {
    const io = new MemoryFileIO();
    const catalog = new MemoryCatalog('m', io);
    await catalog.createNamespace(['db']);
    await catalog.createTable(
      { namespace: ['db'], name: 'o' },
      newTableMetadata({ location: 'memory://w/db/o', schema: schemaOf(orders), tableUuid: randomUUID() }),
    );
    const tables = { catalog, io, load: () => catalog.loadTable({ namespace: ['db'], name: 'o' }) } as unknown as Tables;
    return { catalog, tables };
  }

  it("a new table: columns 1..n, then each column's nested ids level by level (struct fields, list element, map key and value)", () => {
    const s = schemaOf(orders);
    assert.deepEqual(
      s.fields.map((f) => [f.id, f.name]),
      [
        [1, 'id'],
        [2, 'customer'],
        [3, 'items'],
        [4, 'counts'],
      ],
    );
    assert.deepEqual(s.fields[1]!.type, {
      type: 'struct',
      fields: [
        { id: 5, name: 'id', required: true, type: 'long' },
        { id: 6, name: 'name', required: false, type: 'string' },
      ],
    });
    assert.deepEqual(s.fields[2]!.type, {
      type: 'list',
      'element-id': 7,
      element: {
        type: 'struct',
        fields: [
          { id: 8, name: 'sku', required: true, type: 'string' },
          { id: 9, name: 'qty', required: true, type: 'int' },
        ],
      },
      'element-required': false,
    });
    assert.deepEqual(s.fields[3]!.type, {
      type: 'map',
      'key-id': 10,
      key: 'string',
      'value-id': 11,
      value: { type: 'struct', fields: [{ id: 12, name: 'n', required: false, type: 'long' }] },
      'value-required': false,
    });
    assert.equal(newTableMetadata({ location: 'memory://x', schema: s, tableUuid: randomUUID() })['last-column-id'], 12);
  });

  it('an optional field added to a struct (a column, a list element, a map value) joins it at the end under a fresh id; a retry adds nothing', async () => {
    const { tables } = await ordersFixture();
    const v2: ColumnConfig[] = [
      orders[0]!,
      { ...orders[1]!, type: parseColumnType('struct<id: long not null, name: string, email: string>', 'k') },
      { ...orders[2]!, type: parseColumnType('list<struct<sku: string not null, qty: int not null, tags: list<string>>>', 'k') },
      { ...orders[3]!, type: parseColumnType('map<string, struct<n: long, at: struct<day: date>>>', 'k') },
      { name: 'note', type: parseColumnType('list<string>', 'k'), required: false, doc: 'new column' },
    ];
    assert.deepEqual(nestedFieldsToAdd(v2, (await tables.load('db.o')).metadata), [
      'customer.email',
      'items.element.tags',
      'counts.value.at',
    ]);
    const r = await addConfiguredColumns(tables, { table: 'db.o', columns: v2 }, await tables.load('db.o'));
    assert.deepEqual(r.added, ['customer.email', 'items.element.tags', 'counts.value.at', 'note']);
    const m = (await tables.load('db.o')).metadata;
    const s = currentSchema(m);
    const [, customer, items, counts, note] = s.fields;
    assert.deepEqual((customer!.type as StructType).fields.at(-1), { id: 13, name: 'email', required: false, type: 'string' });
    assert.deepEqual(((items!.type as ListType).element as StructType).fields.at(-1), {
      id: 14,
      name: 'tags',
      required: false,
      type: { type: 'list', 'element-id': 15, element: 'string', 'element-required': false },
    });
    assert.deepEqual(((counts!.type as MapType).value as StructType).fields.at(-1), {
      id: 16,
      name: 'at',
      required: false,
      type: { type: 'struct', fields: [{ id: 17, name: 'day', required: false, type: 'date' }] },
    });
    assert.deepEqual(note, {
      id: 18,
      name: 'note',
      required: false,
      type: { type: 'list', 'element-id': 19, element: 'string', 'element-required': false },
      doc: 'new column',
    });
    assert.equal(m['last-column-id'], 19);
    assert.equal(m.schemas.length, 2, 'one schema change');
    // existing ids untouched, the table now matches the config
    assert.deepEqual(
      (customer!.type as StructType).fields.slice(0, 2).map((f) => f.id),
      [5, 6],
    );
    assert.deepEqual(checkTableDrift({ table: 'db.o', columns: v2, partitionBy: [] }, m), []);
    // a retry (or a second worker) finds nothing to add and commits nothing
    assert.deepEqual(nestedFieldsToAdd(v2, m), []);
    const again = await addConfiguredColumns(tables, { table: 'db.o', columns: v2 }, await tables.load('db.o'));
    assert.deepEqual(again.added, []);
    assert.equal((await tables.load('db.o')).metadata['metadata-log'].length, m['metadata-log'].length);
  });

  it('a new required nested field, or one at a path an older schema had (renamed or dropped elsewhere), is never added: it stays drift', async () => {
    const { tables } = await ordersFixture();
    const required: ColumnConfig[] = [
      orders[0]!,
      { ...orders[1]!, type: parseColumnType('struct<id: long not null, name: string, email: string not null>', 'k') },
    ];
    const m = (await tables.load('db.o')).metadata;
    assert.deepEqual(nestedFieldsToAdd(required, m), []);
    assert.equal(checkTableDrift({ table: 'db.o', columns: required, partitionBy: [] }, m).length, 1);
    // another engine dropped customer.name: the config's customer.name is not added back
    const cur = currentSchema(m);
    const withoutName = {
      ...cur,
      'schema-id': 1,
      fields: cur.fields.map((f) =>
        f.name === 'customer' ? { ...f, type: { type: 'struct' as const, fields: (f.type as StructType).fields.slice(0, 1) } } : f,
      ),
    };
    const dropped = { ...m, schemas: [...m.schemas, withoutName], 'current-schema-id': 1 };
    assert.deepEqual(nestedFieldsToAdd(orders, dropped), []);
    assert.deepEqual(checkTableDrift({ table: 'db.o', columns: orders, partitionBy: [] }, dropped), [
      'table db.o: column "customer" field "customer.name" (string in the config) was dropped from the table (it was string)',
    ]);
  });

  it('a racing schema change fails the requirement; the retry re-plans nested fields on the new schema', async () => {
    const { catalog, tables } = await ordersFixture();
    const base = await tables.load('db.o');
    await new Transaction({ namespace: ['db'], name: 'o' })
      .add(new AddColumns([...orders, { name: 'theirs', type: 'int', required: false }]))
      .commit(catalog, tables.io);
    const v2 = [orders[0]!, { ...orders[1]!, type: parseColumnType('struct<id: long not null, name: string, email: string>', 'k') }];
    const ours = new AddColumns(v2);
    await new Transaction({ namespace: ['db'], name: 'o' }).add(ours).commit(catalog, tables.io, { table: base, minWaitMs: 1 });
    assert.deepEqual(ours.added, ['customer.email']);
    const s = currentSchema((await tables.load('db.o')).metadata);
    assert.deepEqual(
      s.fields.map((f) => [f.id, f.name]),
      [
        [1, 'id'],
        [2, 'customer'],
        [3, 'items'],
        [4, 'counts'],
        [13, 'theirs'],
      ],
    );
    assert.deepEqual((s.fields[1]!.type as StructType).fields.at(-1), { id: 14, name: 'email', required: false, type: 'string' });
  });
});
