/**
 * SqlCatalog on the stack's PostgreSQL with metadata on SeaweedFS S3: the multi-worker setup.
 * Each run uses its own catalog_name, so runs never see each other's rows.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { Client } from 'pg';
import {
  PostgresDialect,
  SqlCatalog,
  catalogFromConfig,
  isIcebergError,
  S3FileIO,
  newTableMetadata,
  parseMetadataVersion,
  type Schema,
  type Snapshot,
  type TableMetadata,
} from '../../iceberg';
import { ensureStack } from '../../stack';
import type { StackEnv } from '../../stack';

let env: StackEnv;
let io: S3FileIO;
const catalogName = `it-${randomUUID().slice(0, 8)}`;
const catalogs: SqlCatalog[] = [];
let warehouse = '';

const open = (): SqlCatalog => {
  const c = new SqlCatalog({ name: catalogName, dialect: new PostgresDialect({ connectionString: env.postgres.url }), io, warehouse });
  catalogs.push(c);
  return c;
};

before(async () => {
  env = await ensureStack(['s3', 'postgres']);
  io = new S3FileIO({
    endpoint: env.s3.endpoint,
    region: env.s3.region,
    forcePathStyle: true,
    accessKeyId: env.s3.accessKeyId,
    secretAccessKey: env.s3.secretAccessKey,
  });
  warehouse = `s3://${env.s3.bucket}/test/pg-catalog-${catalogName}`;
});
after(async () => {
  for (const c of catalogs) await c.close().catch(() => undefined);
  if (!env) return;
  const pg = new Client({ connectionString: env.postgres.url });
  await pg.connect();
  await pg.query('DELETE FROM iceberg_tables WHERE catalog_name = $1', [catalogName]);
  await pg.query('DELETE FROM iceberg_namespace_properties WHERE catalog_name = $1', [catalogName]);
  await pg.end();
  for await (const f of io.list(warehouse)) await io.delete(f.location);
  io.client.destroy();
});

const schema: Schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'id', required: true, type: 'long' }] };
const snap = (id: bigint, parent: bigint | null, seq: bigint, m: TableMetadata): Snapshot => ({
  'snapshot-id': id,
  ...(parent === null ? {} : { 'parent-snapshot-id': parent }),
  'sequence-number': seq,
  'timestamp-ms': BigInt(Date.now()),
  'manifest-list': `${m.location}/metadata/snap-${id}.avro`,
  summary: { operation: 'append' },
});

void test('DDL on Postgres matches the JDBC/PyIceberg schema', async () => {
  await open().init();
  const pg = new Client({ connectionString: env.postgres.url });
  await pg.connect();
  const cols = await pg.query<{ table_name: string; column_name: string; data_type: string; len: number | null; is_nullable: string }>(
    `SELECT table_name, column_name, data_type, character_maximum_length AS len, is_nullable FROM information_schema.columns
     WHERE table_schema = current_schema() AND table_name IN ('iceberg_tables', 'iceberg_namespace_properties')
     ORDER BY table_name, ordinal_position`,
  );
  const pk = await pg.query<{ table_name: string; column_name: string }>(
    `SELECT tc.table_name, kcu.column_name FROM information_schema.table_constraints tc
     JOIN information_schema.key_column_usage kcu ON tc.constraint_name = kcu.constraint_name AND tc.table_schema = kcu.table_schema
     WHERE tc.constraint_type = 'PRIMARY KEY' AND tc.table_schema = current_schema()
       AND tc.table_name IN ('iceberg_tables', 'iceberg_namespace_properties') ORDER BY tc.table_name, kcu.ordinal_position`,
  );
  await pg.end();
  const t = (name: string) => cols.rows.filter((r) => r.table_name === name).map((r) => [r.column_name, r.data_type, r.len, r.is_nullable]);
  // iceberg_type may be absent when PyIceberg created the tables first in this database.
  assert.deepEqual(
    t('iceberg_tables').filter((c) => c[0] !== 'iceberg_type'),
    [
      ['catalog_name', 'character varying', 255, 'NO'],
      ['table_namespace', 'character varying', 255, 'NO'],
      ['table_name', 'character varying', 255, 'NO'],
      ['metadata_location', 'character varying', 1000, 'YES'],
      ['previous_metadata_location', 'character varying', 1000, 'YES'],
    ],
  );
  assert.deepEqual(
    t('iceberg_namespace_properties').map((c) => [c[0], c[2]]),
    [
      ['catalog_name', 255],
      ['namespace', 255],
      ['property_key', 255],
      ['property_value', 1000],
    ],
  );
  assert.deepEqual(
    pk.rows.map((r) => `${r.table_name}.${r.column_name}`),
    [
      'iceberg_namespace_properties.catalog_name',
      'iceberg_namespace_properties.namespace',
      'iceberg_namespace_properties.property_key',
      'iceberg_tables.catalog_name',
      'iceberg_tables.table_namespace',
      'iceberg_tables.table_name',
    ],
  );
});

void test('namespaces, create/load/list/drop on Postgres + S3', async () => {
  const cat = open();
  await cat.createNamespace(['db', 'inner']);
  assert.deepEqual(await cat.listNamespaces(), [['db']]);
  const id = { namespace: ['db', 'inner'], name: 'events' };
  const m = newTableMetadata({ location: await cat.defaultTableLocation(id), schema, tableUuid: randomUUID() });
  const created = await cat.createTable(id, m);
  assert.match(created.metadataLocation, new RegExp(`^${warehouse}/db\\.inner\\.db/events/metadata/00000-`));
  assert.equal(await io.exists(created.metadataLocation), true);
  assert.deepEqual((await cat.loadTable(id)).metadata, m);
  assert.deepEqual(await cat.listTables(['db', 'inner']), [id]);
  await assert.rejects(cat.createTable(id, m), (e: unknown) => isIcebergError(e, 'AlreadyExists'));
  await cat.dropTable(id, { purge: true });
  assert.equal(await io.exists(created.metadataLocation), false);
  await cat.dropNamespace(['db', 'inner']);
  assert.deepEqual(await cat.listNamespaces(), []);
});

void test('CAS on Postgres: concurrent commits from 3 catalog instances (separate pools) all land with retry', async () => {
  const cats = [open(), open(), open()];
  await cats[0]!.createNamespace(['cas']);
  const id = { namespace: ['cas'], name: 't' };
  await cats[0]!.createTable(id, newTableMetadata({ location: await cats[0]!.defaultTableLocation(id), schema, tableUuid: randomUUID() }));
  let nextId = 1n;
  let conflicts = 0;
  const commitOne = async (cat: SqlCatalog): Promise<void> => {
    for (let attempt = 0; attempt < 50; attempt++) {
      const cur = await cat.loadTable(id);
      const parent = cur.metadata['current-snapshot-id'] ?? null;
      const s = snap(nextId++, parent, cur.metadata['last-sequence-number'] + 1n, cur.metadata);
      try {
        await cat.commitTable(
          id,
          [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': parent }],
          [
            { action: 'add-snapshot', snapshot: s },
            { action: 'set-snapshot-ref', 'ref-name': 'main', 'snapshot-id': s['snapshot-id'], type: 'branch' },
          ],
        );
        return;
      } catch (e) {
        if (!isIcebergError(e, 'CommitConflict')) throw e;
        conflicts++;
      }
    }
    throw new Error('no commit after 50 attempts');
  };
  await Promise.all(Array.from({ length: 9 }, (_, i) => commitOne(cats[i % 3]!)));
  const final = await cats[1]!.loadTable(id);
  assert.equal(final.metadata.snapshots.length, 9);
  assert.equal(parseMetadataVersion(final.metadataLocation), 9);
  assert.equal(final.metadata['metadata-log'].length, 9);
  assert.ok(conflicts > 0, 'the CAS was exercised');
  // Every losing attempt deleted its metadata file: exactly versions 0..9 remain.
  const files = [];
  for await (const f of io.list(`${final.metadata.location}/metadata`)) files.push(f.location);
  assert.deepEqual(
    files.map(parseMetadataVersion).sort((a, b) => a - b),
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
  );
});

void test('catalogFromConfig with a postgresql:// uri', async () => {
  const { catalog } = await catalogFromConfig({
    type: 'sql',
    name: catalogName,
    uri: env.postgres.url,
    warehouse,
    s3: {
      endpoint: env.s3.endpoint,
      region: env.s3.region,
      forcePathStyle: true,
      accessKeyId: env.s3.accessKeyId,
      secretAccessKey: env.s3.secretAccessKey,
    },
  });
  catalogs.push(catalog as SqlCatalog);
  assert.deepEqual(await catalog.listNamespaces(), [['cas']]);
});

void test('a commit blocked by a row lock held by a stuck session fails after the statement timeout instead of hanging', async () => {
  const c = new SqlCatalog({
    name: catalogName,
    dialect: new PostgresDialect({ connectionString: env.postgres.url, statementTimeoutMs: 1500 }),
    io,
    warehouse,
  });
  catalogs.push(c);
  const id = { namespace: ['stuck'], name: `t_${randomUUID().slice(0, 8)}` };
  await c.createNamespace(id.namespace).catch(() => undefined);
  const created = await c.createTable(id, newTableMetadata({ location: `${warehouse}/stuck/${id.name}`, schema, tableUuid: randomUUID() }));
  const locker = new Client({ connectionString: env.postgres.url });
  await locker.connect();
  try {
    await locker.query('BEGIN');
    await locker.query('SELECT 1 FROM iceberg_tables WHERE catalog_name = $1 AND table_name = $2 FOR UPDATE', [catalogName, id.name]);
    // The row stays locked until after the assertion (the ROLLBACK below): a commit that waited for
    // the lock instead of timing out would never return, and the test's timeout would fail it.
    await assert.rejects(
      c.commitTable(
        id,
        [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': null }],
        [{ action: 'set-properties', updates: { k: 'v' } }],
      ),
      (e: unknown) => isIcebergError(e) && /statement timeout|canceling statement/i.test((e as Error).message),
    );
  } finally {
    await locker.query('ROLLBACK').catch(() => undefined);
    await locker.end();
  }
  // Once the lock is gone the same commit lands.
  const after = await c.commitTable(
    id,
    [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': null }],
    [{ action: 'set-properties', updates: { k: 'v' } }],
  );
  assert.equal(after.metadata.properties.k, 'v');
  assert.notEqual(after.metadataLocation, created.metadataLocation);
});
