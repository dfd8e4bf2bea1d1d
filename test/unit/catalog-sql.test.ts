import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, test } from 'node:test';
import { DatabaseSync } from 'node:sqlite';
import { pathToFileURL } from 'node:url';
import {
  SqlCatalog,
  SqliteDialect,
  withPreviousMetadata,
  isIcebergError,
  LocalFileIO,
  newTableMetadata,
  parseMetadataVersion,
  type Schema,
  type Snapshot,
  type TableIdentifier,
  type TableMetadata,
  type TableRequirement,
  type TableUpdate,
} from '../../iceberg';

const root = mkdtempSync(join(tmpdir(), 'floe-sqlcat-'));
after(() => rmSync(root, { recursive: true, force: true }));
const warehouseRoot = pathToFileURL(join(root, 'warehouse')).href;
// One warehouse per database file, so tables named alike in different tests never share files.
const warehouseFor = (dbPath: string): string => `${warehouseRoot}/${basename(dbPath, '.db')}`;
const io = new LocalFileIO();
let n = 0;

const open = (dbPath: string, name = 'floe'): SqlCatalog =>
  new SqlCatalog({ name, dialect: new SqliteDialect({ path: dbPath }), io, warehouse: warehouseFor(dbPath) });
const freshDb = (): string => join(root, `cat-${++n}.db`);

const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'v', required: false, type: 'string' },
  ],
};
const metadataFor = async (cat: SqlCatalog, id: TableIdentifier, props: Record<string, string> = {}): Promise<TableMetadata> =>
  newTableMetadata({ location: await cat.defaultTableLocation(id), schema, tableUuid: randomUUID(), properties: props });

// snapshot ids above 2^53 to prove they survive the catalog round trip
const snap = (id: bigint, parent: bigint | undefined, seq: bigint, table: TableMetadata): Snapshot => ({
  'snapshot-id': id,
  ...(parent === undefined ? {} : { 'parent-snapshot-id': parent }),
  'sequence-number': seq,
  'timestamp-ms': BigInt(Date.now()),
  'manifest-list': `${table.location}/metadata/snap-${id}.avro`,
  summary: { operation: 'append', 'floe.commit-id': `c-${id}` },
  'schema-id': 0,
});
const appendUpdates = (s: Snapshot): TableUpdate[] => [
  { action: 'add-snapshot', snapshot: s },
  { action: 'set-snapshot-ref', 'ref-name': 'main', 'snapshot-id': s['snapshot-id'], type: 'branch' },
];
const mainIs = (id: bigint | null): TableRequirement => ({ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': id });

void test('schema matches the JDBC/PyIceberg DDL: columns, nullability, primary keys', async () => {
  const path = freshDb();
  const cat = open(path);
  await cat.init();
  await cat.close();
  const db = new DatabaseSync(path, { readOnly: true });
  const info = (t: string) =>
    db.prepare(`PRAGMA table_info(${t})`).all() as unknown as Array<{ name: string; type: string; notnull: number; pk: number }>;
  assert.deepEqual(
    info('iceberg_tables').map((c) => [c.name, c.type, c.notnull, c.pk]),
    [
      ['catalog_name', 'VARCHAR(255)', 1, 1],
      ['table_namespace', 'VARCHAR(255)', 1, 2],
      ['table_name', 'VARCHAR(255)', 1, 3],
      ['metadata_location', 'VARCHAR(1000)', 0, 0],
      ['previous_metadata_location', 'VARCHAR(1000)', 0, 0],
      ['iceberg_type', 'VARCHAR(5)', 0, 0],
    ],
  );
  assert.deepEqual(
    info('iceberg_namespace_properties').map((c) => [c.name, c.type, c.notnull, c.pk]),
    [
      ['catalog_name', 'VARCHAR(255)', 1, 1],
      ['namespace', 'VARCHAR(255)', 1, 2],
      ['property_key', 'VARCHAR(255)', 1, 3],
      ['property_value', 'VARCHAR(1000)', 1, 0],
    ],
  );
  assert.equal(String(db.prepare('PRAGMA journal_mode').get()?.['journal_mode']).toLowerCase(), 'wal');
  db.close();
});

void test('namespaces: create, exists, nested listing, properties, drop rules', async () => {
  const cat = open(freshDb());
  await cat.createNamespace(['db']);
  await cat.createNamespace(['db', 'sub', 'leaf'], { owner: 'floe', location: 's3://b/custom' });
  await cat.createNamespace(['other']);
  assert.equal(await cat.namespaceExists(['db']), true);
  assert.equal(await cat.namespaceExists(['db', 'sub']), true, 'a parent of an existing namespace exists (PyIceberg rule)');
  assert.equal(await cat.namespaceExists(['d']), false, 'prefix of a name is not a namespace');
  assert.deepEqual(await cat.listNamespaces(), [['db'], ['other']]);
  assert.deepEqual(await cat.listNamespaces(['db']), [['db', 'sub']]);
  assert.deepEqual(await cat.listNamespaces(['db', 'sub']), [['db', 'sub', 'leaf']]);
  assert.deepEqual(await cat.loadNamespaceProperties(['db']), { exists: 'true' });
  assert.deepEqual(await cat.loadNamespaceProperties(['db', 'sub', 'leaf']), { owner: 'floe', location: 's3://b/custom' });
  assert.equal(await cat.defaultTableLocation({ namespace: ['db', 'sub', 'leaf'], name: 't' }), 's3://b/custom/t');
  assert.equal(await cat.defaultTableLocation({ namespace: ['db'], name: 't' }), `${warehouseFor(`cat-${n}.db`)}/db.db/t`);
  await assert.rejects(cat.createNamespace(['db']), (e: unknown) => isIcebergError(e, 'AlreadyExists'));
  await assert.rejects(cat.createNamespace(['a.b']), (e: unknown) => isIcebergError(e, 'DataInvalid') && /"a\.b"/.test(e.message));
  await assert.rejects(
    cat.dropNamespace(['db']),
    (e: unknown) => isIcebergError(e, 'DataInvalid') && /found 0 table\(s\), 1 child namespace\(s\)/.test(e.message),
  );
  await assert.rejects(cat.dropNamespace(['nope']), (e: unknown) => isIcebergError(e, 'NotFound'));
  await assert.rejects(cat.listNamespaces(['nope']), (e: unknown) => isIcebergError(e, 'NotFound'));
  await cat.dropNamespace(['other']);
  assert.equal(await cat.namespaceExists(['other']), false);
  await cat.close();
});

void test('tables: create writes 00000-<uuid>.metadata.json; load, list, exists; duplicate create is AlreadyExists', async () => {
  const path = freshDb();
  const cat = open(path);
  await cat.createNamespace(['db']);
  const id = { namespace: ['db'], name: 'events' };
  const m = await metadataFor(cat, id);
  await assert.rejects(cat.createTable({ namespace: ['missing'], name: 'x' }, m), (e: unknown) => isIcebergError(e, 'NotFound'));
  const created = await cat.createTable(id, m);
  assert.match(created.metadataLocation, /\/db\.db\/events\/metadata\/00000-[0-9a-f-]{36}\.metadata\.json$/);
  assert.equal(await io.exists(created.metadataLocation), true);
  const loaded = await cat.loadTable(id);
  assert.equal(loaded.metadataLocation, created.metadataLocation);
  assert.deepEqual(loaded.metadata, m);
  assert.deepEqual(await cat.listTables(['db']), [id]);
  assert.equal(await cat.tableExists(id), true);
  assert.equal(await cat.tableExists({ namespace: ['db'], name: 'nope' }), false);
  await assert.rejects(cat.createTable(id, m), (e: unknown) => isIcebergError(e, 'AlreadyExists'));
  await assert.rejects(
    cat.loadTable({ namespace: ['db'], name: 'nope' }),
    (e: unknown) => isIcebergError(e, 'NotFound') && /db\.nope/.test(e.message),
  );
  await assert.rejects(cat.dropNamespace(['db']), (e: unknown) => isIcebergError(e, 'DataInvalid') && /1 table\(s\)/.test(e.message));
  // a second catalog name in the same database does not see the table
  const other = open(path, 'other');
  assert.equal(await other.tableExists(id), false);
  await other.close();
  await cat.close();
});

void test('commit: CAS chain of versions, metadata-log, previous_metadata_location, 64-bit ids', async () => {
  const path = freshDb();
  const cat = open(path);
  await cat.createNamespace(['db']);
  const id = { namespace: ['db'], name: 't' };
  const t0 = await cat.createTable(id, await metadataFor(cat, id));
  const s1 = snap(9007199254740993n, undefined, 1n, t0.metadata);
  const t1 = await cat.commitTable(id, [mainIs(null)], appendUpdates(s1));
  assert.equal(parseMetadataVersion(t1.metadataLocation), 1);
  assert.equal(t1.metadata['current-snapshot-id'], 9007199254740993n);
  assert.deepEqual(
    t1.metadata['metadata-log'].map((e) => e['metadata-file']),
    [t0.metadataLocation],
  );
  const s2 = snap(9223372036854775807n, s1['snapshot-id'], 2n, t1.metadata);
  const t2 = await cat.commitTable(id, [mainIs(s1['snapshot-id'])], appendUpdates(s2));
  assert.equal(parseMetadataVersion(t2.metadataLocation), 2);
  assert.deepEqual(
    t2.metadata['metadata-log'].map((e) => e['metadata-file']),
    [t0.metadataLocation, t1.metadataLocation],
  );
  const reloaded = await cat.loadTable(id);
  assert.deepEqual(reloaded.metadata, t2.metadata);
  assert.equal(reloaded.metadata.snapshots[1]!['snapshot-id'], 9223372036854775807n);
  const db = new DatabaseSync(path, { readOnly: true });
  const row = db.prepare('SELECT * FROM iceberg_tables').get() as unknown as Record<string, string>;
  db.close();
  assert.equal(row['metadata_location'], t2.metadataLocation);
  assert.equal(row['previous_metadata_location'], t1.metadataLocation);
  assert.equal(row['table_namespace'], 'db');
  assert.equal(row['iceberg_type'], 'TABLE');
  // no updates: nothing written, same pointer
  const same = await cat.commitTable(id, [mainIs(s2['snapshot-id'])], []);
  assert.equal(same.metadataLocation, t2.metadataLocation);
  await cat.close();
});

void test('commit: a failed requirement is a retryable CommitConflict naming expected vs found, and writes nothing', async () => {
  const cat = open(freshDb());
  await cat.createNamespace(['db']);
  const id = { namespace: ['db'], name: 't' };
  const t0 = await cat.createTable(id, await metadataFor(cat, id));
  const s1 = snap(101n, undefined, 1n, t0.metadata);
  await cat.commitTable(id, [mainIs(null)], appendUpdates(s1));
  const metaDir = new URL(`${t0.metadata.location}/metadata`).pathname;
  const before = readdirSync(metaDir).sort();
  await assert.rejects(
    cat.commitTable(id, [mainIs(null)], appendUpdates(snap(102n, undefined, 2n, t0.metadata))),
    (e: unknown) => isIcebergError(e, 'CommitConflict') && e.retryable && /expected no ref, found 101/.test(e.message),
  );
  await assert.rejects(
    cat.commitTable(id, [{ type: 'assert-table-uuid', uuid: 'not-the-uuid' }], []),
    (e: unknown) => isIcebergError(e, 'CommitConflict') && /table uuid: expected not-the-uuid, found /.test(e.message),
  );
  assert.deepEqual(readdirSync(metaDir).sort(), before);
  await assert.rejects(cat.commitTable({ namespace: ['db'], name: 'nope' }, [], []), (e: unknown) => isIcebergError(e, 'NotFound'));
  await cat.close();
});

void test('commit: two catalog instances on one SQLite file race; the loser gets CommitConflict and its file is deleted', async () => {
  const path = freshDb();
  const a = open(path);
  const b = open(path);
  await a.createNamespace(['db']);
  const id = { namespace: ['db'], name: 't' };
  const t0 = await a.createTable(id, await metadataFor(a, id));
  // Both load version 0; neither asserts anything, so only the pointer CAS can catch the race.
  const ioSpy = { writes: [] as string[], deletes: [] as string[] };
  let raced = false;
  const spying = new SqlCatalog({
    name: 'floe',
    dialect: new SqliteDialect({ path }),
    warehouse: warehouseFor(path),
    io: {
      read: (l) => io.read(l),
      readRange: (l, o, len) => io.readRange(l, o, len),
      exists: (l) => io.exists(l),
      stat: (l) => io.stat(l),
      list: (p) => io.list(p),
      write: async (l, d) => {
        ioSpy.writes.push(l);
        await io.write(l, d);
        if (!raced) {
          // between our metadata write and our pointer swap, `a` commits
          raced = true;
          await a.commitTable(id, [], appendUpdates(snap(1n, undefined, 1n, t0.metadata)));
        }
      },
      delete: async (l) => {
        ioSpy.deletes.push(l);
        await io.delete(l);
      },
    },
  });
  // `spying` writes its version 1, and before it swaps, catalog `a` commits its own version 1.
  await assert.rejects(
    spying.commitTable(id, [], appendUpdates(snap(2n, undefined, 1n, t0.metadata))),
    (e: unknown) => isIcebergError(e, 'CommitConflict') && e.retryable && e.message.includes(`expected ${t0.metadataLocation}, found `),
  );
  assert.equal(ioSpy.deletes.length, 1);
  assert.equal(ioSpy.deletes[0], ioSpy.writes[0]);
  assert.equal(await io.exists(ioSpy.writes[0]!), false, 'the losing metadata file is removed');
  // b (a third handle) sees a's commit; a retry on top of it lands as version 2
  const current = await b.loadTable(id);
  assert.equal(current.metadata['current-snapshot-id'], 1n);
  const t2 = await spying.commitTable(id, [mainIs(1n)], appendUpdates(snap(2n, 1n, 2n, current.metadata)));
  assert.equal(parseMetadataVersion(t2.metadataLocation), 2);
  assert.deepEqual(
    t2.metadata.snapshots.map((s) => s['snapshot-id']),
    [1n, 2n],
  );
  for (const c of [a, b, spying]) await c.close();
});

void test('commit: interleaved commits from two instances all land with reload-and-retry', async () => {
  const path = freshDb();
  const a = open(path);
  const b = open(path);
  await a.createNamespace(['db']);
  const id = { namespace: ['db'], name: 't' };
  await a.createTable(id, await metadataFor(a, id));
  let nextId = 1000n;
  let conflicts = 0;
  const appendWithRetry = async (cat: SqlCatalog): Promise<void> => {
    for (;;) {
      const cur = await cat.loadTable(id);
      const parent = cur.metadata['current-snapshot-id'] ?? null;
      const s = snap(nextId++, parent ?? undefined, cur.metadata['last-sequence-number'] + 1n, cur.metadata);
      try {
        await cat.commitTable(id, [mainIs(parent)], appendUpdates(s));
        return;
      } catch (e) {
        if (!isIcebergError(e, 'CommitConflict')) throw e;
        conflicts++;
      }
    }
  };
  await Promise.all(Array.from({ length: 10 }, (_, i) => appendWithRetry(i % 2 === 0 ? a : b)));
  const final = await a.loadTable(id);
  assert.equal(final.metadata.snapshots.length, 10);
  assert.equal(final.metadata['last-sequence-number'], 10n);
  assert.equal(parseMetadataVersion(final.metadataLocation), 10);
  assert.ok(conflicts > 0, 'concurrent commits conflicted at least once (the CAS was exercised)');
  await a.close();
  await b.close();
});

void test('metadata-log is bounded by write.metadata.previous-versions-max; delete-after-commit removes old files', async () => {
  const cat = open(freshDb());
  await cat.createNamespace(['db']);
  const id = { namespace: ['db'], name: 't' };
  const t0 = await cat.createTable(
    id,
    await metadataFor(cat, id, {
      'write.metadata.previous-versions-max': '2',
      'write.metadata.delete-after-commit.enabled': 'true',
    }),
  );
  let cur = t0;
  const locations = [t0.metadataLocation];
  for (let i = 1; i <= 4; i++) {
    cur = await cat.commitTable(id, [], [{ action: 'set-properties', updates: { round: String(i) } }]);
    locations.push(cur.metadataLocation);
  }
  assert.deepEqual(
    cur.metadata['metadata-log'].map((e) => e['metadata-file']),
    locations.slice(2, 4),
  );
  assert.equal(await io.exists(locations[0]!), false);
  assert.equal(await io.exists(locations[1]!), false);
  assert.equal(await io.exists(locations[2]!), true);
  const { dropped } = withPreviousMetadata({ ...cur.metadata, properties: {} }, { location: 'x', lastUpdatedMs: 1n });
  assert.equal(dropped.length, 0, 'default max is 100');
  await cat.close();
});

void test('dropTable: NotFound when missing; purge deletes metadata files', async () => {
  const cat = open(freshDb());
  await cat.createNamespace(['db']);
  const keep = { namespace: ['db'], name: 'keep' };
  const purge = { namespace: ['db'], name: 'purge' };
  const k0 = await cat.createTable(keep, await metadataFor(cat, keep));
  const p0 = await cat.createTable(purge, await metadataFor(cat, purge));
  const p1 = await cat.commitTable(purge, [], [{ action: 'set-properties', updates: { a: 'b' } }]);
  await cat.dropTable(keep);
  assert.equal(await cat.tableExists(keep), false);
  assert.equal(await io.exists(k0.metadataLocation), true, 'drop without purge keeps files');
  await cat.dropTable(purge, { purge: true });
  assert.equal(await io.exists(p0.metadataLocation), false);
  assert.equal(await io.exists(p1.metadataLocation), false);
  await assert.rejects(cat.dropTable(keep), (e: unknown) => isIcebergError(e, 'NotFound'));
  await cat.close();
});

void test('opens a catalog created by PyIceberg (no iceberg_type column) and leaves its schema alone', async () => {
  const path = freshDb();
  const db = new DatabaseSync(path);
  db.exec(`CREATE TABLE iceberg_tables (catalog_name VARCHAR(255) NOT NULL, table_namespace VARCHAR(255) NOT NULL,
    table_name VARCHAR(255) NOT NULL, metadata_location VARCHAR(1000), previous_metadata_location VARCHAR(1000),
    PRIMARY KEY (catalog_name, table_namespace, table_name))`);
  db.close();
  const cat = open(path);
  await cat.createNamespace(['db']);
  const id = { namespace: ['db'], name: 't' };
  await cat.createTable(id, await metadataFor(cat, id));
  assert.deepEqual(await cat.listTables(['db']), [id]);
  await cat.close();
  const db2 = new DatabaseSync(path, { readOnly: true });
  const cols = (db2.prepare('PRAGMA table_info(iceberg_tables)').all() as unknown as Array<{ name: string }>).map((c) => c.name);
  db2.close();
  assert.equal(cols.includes('iceberg_type'), false);
});

void test('commit: a DB error on the swap is CommitStateUnknown (file kept) unless the DB proves it did not run (Io, file deleted)', async () => {
  const path = freshDb();
  const setup = open(path);
  await setup.createNamespace(['db']);
  const id = { namespace: ['db'], name: 't' };
  const t0 = await setup.createTable(id, await metadataFor(setup, id));
  await setup.close();
  const metaDir = new URL(`${t0.metadata.location}/metadata`).pathname;

  // A dialect whose CAS UPDATE fails the way a lost connection (or a SQLITE_BUSY) does.
  const failing = (error: Error & { code?: string; errcode?: number }): SqlCatalog => {
    const inner = new SqliteDialect({ path });
    const dialect = Object.assign(Object.create(inner) as SqliteDialect, {
      execute: (sql: string, params?: unknown[]) =>
        sql.trimStart().startsWith('UPDATE iceberg_tables') ? Promise.reject(error) : inner.execute(sql, params),
    });
    return new SqlCatalog({ name: 'floe', dialect, io, warehouse: warehouseFor(path) });
  };
  const lost = failing(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }));
  await assert.rejects(
    lost.commitTable(id, [], [{ action: 'set-properties', updates: { a: '1' } }]),
    (e: unknown) => isIcebergError(e, 'CommitStateUnknown') && !e.retryable && typeof e.context['metadataLocation'] === 'string',
  );
  assert.equal(readdirSync(metaDir).length, 2, 'unknown state: the new metadata file is kept');
  await lost.close();

  // node:sqlite's error for SQLITE_BUSY: code ERR_SQLITE_ERROR with SQLite's result code in errcode.
  const busy = failing(
    Object.assign(new Error('database is locked'), { code: 'ERR_SQLITE_ERROR', errcode: 5, errstr: 'database is locked' }),
  );
  await assert.rejects(
    busy.commitTable(id, [], [{ action: 'set-properties', updates: { a: '2' } }]),
    (e: unknown) => isIcebergError(e, 'Io') && e.retryable,
  );
  assert.equal(readdirSync(metaDir).length, 2, 'definite failure: the new metadata file is deleted');
  await busy.close();
});
