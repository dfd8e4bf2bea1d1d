/**
 * Optional columns added to the config join the table's schema (ingest/evolve.ts), against the
 * in-memory catalog: fresh field ids after the last assigned one (a headers map's key and value
 * too), the old schema kept, a second run adds nothing, a racing schema change is re-planned,
 * and renamed, dropped or required columns are never added.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { ColumnConfig } from '../../config';
import { MemoryCatalog } from '../../iceberg/catalog/memory';
import { MemoryFileIO } from '../../iceberg/io/memory';
import { currentSchema, newTableMetadata } from '../../iceberg/spec/metadata';
import { addConfiguredColumns, AddColumns, columnsToAdd } from '../../ingest/evolve';
import { schemaOf, type Tables } from '../../ingest/tables';
import { Transaction } from '../../iceberg/transaction';

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
