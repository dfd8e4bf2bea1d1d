/**
 * write.metadata.previous-versions-max and write.metadata.delete-after-commit.enabled on the
 * memory catalog (the SQL catalog shares the code: iceberg/catalog/metadata-files.ts), and the
 * catalog-wide table-location helpers that keep one table's maintenance off another's files.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import {
  MemoryCatalog,
  listAllTables,
  locationContains,
  overlappingTables,
  tableLocations,
  METADATA_DELETE_AFTER_COMMIT,
  METADATA_PREVIOUS_VERSIONS_MAX,
  MemoryFileIO,
  newTableMetadata,
  type Schema,
  type TableIdentifier,
} from '../../iceberg';

const schema: Schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'id', required: true, type: 'long' }] };

async function tableWith(
  props: Record<string, string>,
): Promise<{ io: MemoryFileIO; catalog: MemoryCatalog; id: TableIdentifier; location: string }> {
  const io = new MemoryFileIO();
  const catalog = new MemoryCatalog('m', io);
  const id = { namespace: ['ns'], name: 't' };
  const location = 'memory://wh/ns/t';
  await catalog.createNamespace(['ns']);
  await catalog.createTable(id, newTableMetadata({ location, schema, tableUuid: randomUUID(), properties: props }));
  return { io, catalog, id, location };
}

const metadataJsons = async (io: MemoryFileIO, location: string): Promise<string[]> => {
  const out: string[] = [];
  for await (const f of io.list(`${location}/metadata/`)) if (f.location.endsWith('.metadata.json')) out.push(f.location);
  return out.sort();
};

const bump = (catalog: MemoryCatalog, id: TableIdentifier, i: number) =>
  catalog.commitTable(id, [], [{ action: 'set-properties', updates: { n: String(i) } }]);

void test('delete-after-commit with previous-versions-max 3: the log keeps 3 versions and older metadata.json files are deleted', async () => {
  const { io, catalog, id, location } = await tableWith({ [METADATA_DELETE_AFTER_COMMIT]: 'true', [METADATA_PREVIOUS_VERSIONS_MAX]: '3' });
  for (let i = 0; i < 10; i++) await bump(catalog, id, i);
  const t = await catalog.loadTable(id);
  assert.equal(t.metadata['metadata-log'].length, 3);
  const files = await metadataJsons(io, location);
  assert.deepEqual(
    files,
    [...t.metadata['metadata-log'].map((e) => e['metadata-file']), t.metadataLocation].sort(),
    'exactly the current version and the ones its log names remain',
  );
});

void test('without delete-after-commit old metadata.json files stay (Java default), the log is still trimmed', async () => {
  const { io, catalog, id, location } = await tableWith({ [METADATA_PREVIOUS_VERSIONS_MAX]: '3' });
  for (let i = 0; i < 10; i++) await bump(catalog, id, i);
  const t = await catalog.loadTable(id);
  assert.equal(t.metadata['metadata-log'].length, 3);
  assert.equal((await metadataJsons(io, location)).length, 11);
});

void test('an unset previous-versions-max means 100 (Java default)', async () => {
  const { catalog, id } = await tableWith({ [METADATA_DELETE_AFTER_COMMIT]: 'true' });
  for (let i = 0; i < 105; i++) await bump(catalog, id, i);
  assert.equal((await catalog.loadTable(id)).metadata['metadata-log'].length, 100);
});

void test('locationContains is path-wise: a table does not contain its name-prefix sibling', () => {
  assert.ok(locationContains('s3://b/wh/a/b', 's3://b/wh/a/b/c'));
  assert.ok(locationContains('s3://b/wh/a/b/', 's3://b/wh/a/b'));
  assert.ok(locationContains('s3a://b/wh/a/b', 's3://b/wh/a/b/c'));
  assert.ok(!locationContains('s3://b/wh/a/b', 's3://b/wh/a/bc'));
  assert.ok(!locationContains('s3://b/wh/a/b/c', 's3://b/wh/a/b'));
});

void test('nested tables a.b and a.b.c: every table is found across nested namespaces, and the overlap both ways', async () => {
  const io = new MemoryFileIO();
  const catalog = new MemoryCatalog('m', io);
  await catalog.createNamespace(['a', 'b']); // only the nested level exists explicitly
  await catalog.createNamespace(['a']);
  const mk = (location: string) => newTableMetadata({ location, schema, tableUuid: randomUUID() });
  await catalog.createTable({ namespace: ['a'], name: 'b' }, mk('memory://wh/a/b'));
  await catalog.createTable({ namespace: ['a', 'b'], name: 'c' }, mk('memory://wh/a/b/c'));
  await catalog.createTable({ namespace: ['a'], name: 'bc' }, mk('memory://wh/a/bc'));
  assert.deepEqual((await listAllTables(catalog)).map((t) => [...t.namespace, t.name].join('.')).sort(), ['a.b', 'a.b.c', 'a.bc']);
  assert.deepEqual((await tableLocations(catalog, { exclude: { namespace: ['a'], name: 'b' } })).map((t) => t.name).sort(), [
    'a.b.c',
    'a.bc',
  ]);
  assert.deepEqual(
    (await overlappingTables(catalog, 'memory://wh/a/b/c', { namespace: ['a', 'b'], name: 'c' })).map((o) => [o.name, o.relation]),
    [['a.b', 'inside']],
  );
  assert.deepEqual(
    (await overlappingTables(catalog, 'memory://wh/a/b', { namespace: ['a'], name: 'b' })).map((o) => [o.name, o.relation]),
    [['a.b.c', 'contains']],
  );
  assert.deepEqual(
    (await overlappingTables(catalog, 'memory://wh/a/b/')).map((o) => [o.name, o.relation]),
    [
      ['a.b', 'same'],
      ['a.b.c', 'contains'],
    ],
  );
  assert.deepEqual(await overlappingTables(catalog, 'memory://wh/a/x'), []);
});
