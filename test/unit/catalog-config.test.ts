import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { catalogFromConfig, SqlCatalog, sqlitePathFromUri, validateCatalogConfig, isIcebergError } from '../../iceberg';

const root = mkdtempSync(join(tmpdir(), 'floe-catcfg-'));
after(() => rmSync(root, { recursive: true, force: true }));

const rejectsKey = (cfg: unknown, key: string): void => {
  assert.throws(
    () => validateCatalogConfig(cfg),
    (e: unknown) => isIcebergError(e, 'DataInvalid') && e.message.includes(`"${key}"`),
    `config ${JSON.stringify(cfg)} should fail naming "${key}"`,
  );
};

void test('validation fails fast naming the offending key', () => {
  rejectsKey(undefined, '(root)');
  rejectsKey({ uri: 'x' }, 'type');
  rejectsKey({ type: 'hive', uri: 'x' }, 'type');
  rejectsKey({ type: 'sql', name: 'c', warehouse: 'file:///w' }, 'uri');
  rejectsKey({ type: 'sql', name: 'c', uri: 'mysql://h/db', warehouse: 'file:///w' }, 'uri');
  rejectsKey({ type: 'sql', uri: 'sqlite:///x.db', warehouse: 'file:///w' }, 'name');
  rejectsKey({ type: 'sql', name: 'c', uri: 'sqlite:///x.db' }, 'warehouse');
  rejectsKey({ type: 'sql', name: 'c', uri: 'sqlite:///x.db', warehouse: 'gs://b/w' }, 'warehouse');
  rejectsKey({ type: 'sql', name: 'c', uri: 'sqlite:///x.db', warehouse: 'file:///w', wearhouse: 'x' }, 'wearhouse');
  rejectsKey({ type: 'sql', name: 'c', uri: 'sqlite:///x.db', warehouse: 'file:///w', s3: { endpoit: 'x' } }, 's3.endpoit');
  rejectsKey({ type: 'sql', name: 'c', uri: 'sqlite:///x.db', warehouse: 'file:///w', token: 't' }, 'token');
  rejectsKey({ type: 'rest', uri: 'localhost:8181' }, 'uri');
  rejectsKey({ type: 'rest', uri: 'http://h:8181', token: 7 }, 'token');
  rejectsKey({ type: 'rest', uri: 'http://h:8181', properties: { 's3.endpoint': 1 } }, 'properties.s3.endpoint');
  assert.equal(validateCatalogConfig({ type: 'rest', uri: 'http://h:8181', warehouse: 'w' }).type, 'rest');
});

void test('sqlite URIs follow SQLAlchemy: three slashes relative, four absolute', () => {
  assert.equal(sqlitePathFromUri('sqlite:////tmp/a.db'), '/tmp/a.db');
  assert.equal(sqlitePathFromUri('sqlite:///rel/a.db'), resolve('rel/a.db'));
  assert.equal(sqlitePathFromUri('sqlite:///:memory:'), ':memory:');
  assert.throws(
    () => sqlitePathFromUri('sqlite:///'),
    (e: unknown) => isIcebergError(e, 'DataInvalid'),
  );
});

void test('catalogFromConfig opens a SQLite catalog and its FileIO writes to the warehouse', async () => {
  const dbPath = join(root, 'sub', 'catalog.db');
  const warehouse = pathToFileURL(join(root, 'wh')).href;
  const { catalog, io } = await catalogFromConfig({ type: 'sql', name: 'floe', uri: `sqlite:///${dbPath}`, warehouse });
  assert.ok(catalog instanceof SqlCatalog);
  await catalog.createNamespace(['db']);
  assert.deepEqual(await catalog.listNamespaces(), [['db']]);
  await io.write(`${warehouse}/probe`, new Uint8Array([1]));
  assert.equal(await io.exists(`${warehouse}/probe`), true);
  await catalog.close();
});

void test('catalogFromConfig fails fast on an unreachable catalog, naming "uri" and hiding the password', async () => {
  await assert.rejects(
    catalogFromConfig({ type: 'sql', name: 'c', uri: 'postgresql://u:secret@127.0.0.1:1/db', warehouse: 'file:///w' }),
    (e: unknown) => isIcebergError(e, 'Io') && e.message.includes('"uri"') && !e.message.includes('secret') && e.message.includes('u:***@'),
  );
  await assert.rejects(
    catalogFromConfig({ type: 'rest', uri: 'http://127.0.0.1:1' }),
    (e: unknown) => isIcebergError(e, 'Io') && e.message.includes('"uri"'),
  );
});
