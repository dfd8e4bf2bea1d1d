/**
 * The one staging step (iceberg/catalog/stage.ts) that the memory and SQL catalogs share: both
 * produce the same metadata-log, version numbering and metadata path behaviour, including
 * `write.metadata.path`, `write.metadata.previous-versions-max` and delete-after-commit; a commit
 * that changes nothing writes nothing in either; a failed requirement writes nothing in either;
 * an unparsable metadata table property fails the commit before anything is written.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import {
  MemoryCatalog,
  METADATA_DELETE_AFTER_COMMIT,
  METADATA_PREVIOUS_VERSIONS_MAX,
  WRITE_METADATA_PATH,
  SqlCatalog,
  SqliteDialect,
  stageTable,
  isIcebergError,
  MemoryFileIO,
  newTableMetadata,
  parseMetadataVersion,
  parseTableMetadata,
  COMMIT_NUM_RETRIES,
  MAX_SNAPSHOT_AGE_MS,
  commitNumRetries,
  metadataDirectory,
  metadataPreviousVersionsMax,
  tableProperty,
  type Catalog,
  type Schema,
  type TableIdentifier,
  type TableMetadata,
} from '../../iceberg';

const schema: Schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'id', required: true, type: 'long' }] };
const id: TableIdentifier = { namespace: ['ns'], name: 't' };
const location = 'memory://wh/ns/t';

interface Subject {
  kind: string;
  catalog: Catalog;
  io: MemoryFileIO;
}

const catalogs: Array<{ kind: string; open: () => Subject }> = [
  {
    kind: 'memory',
    open: () => {
      const io = new MemoryFileIO();
      return { kind: 'memory', io, catalog: new MemoryCatalog('m', io) };
    },
  },
  {
    kind: 'sql (sqlite)',
    open: () => {
      const io = new MemoryFileIO();
      return {
        kind: 'sql (sqlite)',
        io,
        catalog: new SqlCatalog({ name: 'm', dialect: new SqliteDialect({ path: ':memory:' }), io, warehouse: 'memory://wh' }),
      };
    },
  },
];

const metadataFor = (props: Record<string, string>): TableMetadata =>
  newTableMetadata({ location, schema, tableUuid: randomUUID(), properties: props });

const metadataJsons = (io: MemoryFileIO): string[] =>
  io
    .locations()
    .filter((l) => l.endsWith('.metadata.json'))
    .sort();

/** What the staging step decided, with the random uuids taken out, so both catalogs compare equal. */
interface Shape {
  dirs: string[];
  versions: number[];
  logVersions: number[];
  logTimestampsArePreviousUpdates: boolean;
  files: number[];
}

async function run(s: Subject, props: Record<string, string>, commits: number): Promise<Shape> {
  await s.catalog.createNamespace(['ns']);
  const t0 = await s.catalog.createTable(id, metadataFor(props));
  const tables = [t0];
  for (let i = 1; i <= commits; i++) {
    tables.push(await s.catalog.commitTable(id, [], [{ action: 'set-properties', updates: { round: String(i) } }]));
  }
  const last = tables[tables.length - 1]!;
  const reloaded = await s.catalog.loadTable(id);
  assert.equal(reloaded.metadataLocation, last.metadataLocation, `${s.kind}: load sees the last commit`);
  assert.deepEqual(reloaded.metadata, last.metadata, `${s.kind}: load returns the committed metadata`);
  assert.deepEqual(
    parseTableMetadata(Buffer.from(await s.io.read(last.metadataLocation)).toString('utf8')),
    last.metadata,
    `${s.kind}: the file holds exactly the committed metadata`,
  );
  const log = last.metadata['metadata-log'];
  const updatedAt = new Map(tables.map((t) => [t.metadataLocation, t.metadata['last-updated-ms']]));
  return {
    dirs: [...new Set(tables.map((t) => t.metadataLocation.replace(/\/[^/]*$/, '')))],
    versions: tables.map((t) => parseMetadataVersion(t.metadataLocation)),
    logVersions: log.map((e) => parseMetadataVersion(e['metadata-file'])),
    logTimestampsArePreviousUpdates: log.every((e) => updatedAt.get(e['metadata-file']) === e['timestamp-ms']),
    files: metadataJsons(s.io)
      .map(parseMetadataVersion)
      .sort((a, b) => a - b),
  };
}

async function bothCatalogs(props: Record<string, string>, commits: number): Promise<Shape> {
  const shapes: Shape[] = [];
  for (const c of catalogs) {
    const s = c.open();
    try {
      shapes.push(await run(s, props, commits));
    } finally {
      await s.catalog.close();
    }
  }
  assert.deepEqual(shapes[1], shapes[0], 'the SQL catalog stages exactly as the memory catalog');
  return shapes[0]!;
}

void test('write.metadata.path + previous-versions-max 2 + delete-after-commit: same files, log and path in both catalogs', async () => {
  const shape = await bothCatalogs(
    {
      [WRITE_METADATA_PATH]: 'memory://elsewhere/meta/',
      [METADATA_PREVIOUS_VERSIONS_MAX]: '2',
      [METADATA_DELETE_AFTER_COMMIT]: 'true',
    },
    4,
  );
  assert.deepEqual(shape, {
    dirs: ['memory://elsewhere/meta'], // every version, version 0 included, under write.metadata.path (trailing / trimmed)
    versions: [0, 1, 2, 3, 4],
    logVersions: [2, 3], // trimmed to the 2 newest previous versions
    logTimestampsArePreviousUpdates: true,
    files: [2, 3, 4], // the ones that fell off the log were deleted after the commit
  });
});

void test('default layout: metadata/ under the table location, log of every previous version, nothing deleted', async () => {
  const shape = await bothCatalogs({}, 3);
  assert.deepEqual(shape, {
    dirs: [`${location}/metadata`],
    versions: [0, 1, 2, 3],
    logVersions: [0, 1, 2],
    logTimestampsArePreviousUpdates: true,
    files: [0, 1, 2, 3],
  });
});

void test('previous-versions-max without delete-after-commit trims the log and keeps the files', async () => {
  const shape = await bothCatalogs({ [METADATA_PREVIOUS_VERSIONS_MAX]: '1' }, 3);
  assert.deepEqual(shape.logVersions, [2]);
  assert.deepEqual(shape.files, [0, 1, 2, 3]);
});

void test("setting write.metadata.path in a commit moves that commit's file already (the staged metadata decides)", async () => {
  for (const c of catalogs) {
    const s = c.open();
    await s.catalog.createNamespace(['ns']);
    const t0 = await s.catalog.createTable(id, metadataFor({}));
    const t1 = await s.catalog.commitTable(id, [], [{ action: 'set-properties', updates: { [WRITE_METADATA_PATH]: 'memory://moved' } }]);
    assert.match(t1.metadataLocation, /^memory:\/\/moved\/00001-[0-9a-f-]{36}\.metadata\.json$/, c.kind);
    assert.deepEqual(
      t1.metadata['metadata-log'].map((e) => e['metadata-file']),
      [t0.metadataLocation],
      c.kind,
    );
    await s.catalog.close();
  }
});

void test('a commit that changes nothing writes nothing and keeps the pointer; a failed requirement writes nothing; a missing table is NotFound', async () => {
  for (const c of catalogs) {
    const s = c.open();
    await s.catalog.createNamespace(['ns']);
    const t0 = await s.catalog.createTable(id, metadataFor({}));
    const files = metadataJsons(s.io);
    const same = await s.catalog.commitTable(id, [{ type: 'assert-table-uuid', uuid: t0.metadata['table-uuid'] }], []);
    assert.equal(same.metadataLocation, t0.metadataLocation, c.kind);
    assert.deepEqual(same.metadata, t0.metadata, c.kind);
    await assert.rejects(
      s.catalog.commitTable(id, [{ type: 'assert-table-uuid', uuid: 'other' }], [{ action: 'set-properties', updates: { a: 'b' } }]),
      (e: unknown) => isIcebergError(e, 'CommitConflict') && e.retryable && /expected other/.test(e.message),
      c.kind,
    );
    assert.deepEqual(metadataJsons(s.io), files, `${c.kind}: nothing written`);
    await assert.rejects(
      s.catalog.commitTable({ namespace: ['ns'], name: 'nope' }, [], [{ action: 'set-properties', updates: { a: 'b' } }]),
      (e: unknown) => isIcebergError(e, 'NotFound'),
      c.kind,
    );
    await s.catalog.close();
  }
});

void test('stageTable: create is version 0 with the initial metadata as is; a commit is version N+1 carrying the base in its log', () => {
  const initial = metadataFor({ [WRITE_METADATA_PATH]: 'memory://p' });
  const created = stageTable(id, undefined, [{ type: 'assert-create' }], [], { nowMs: 5n, initial });
  assert.equal(created.metadata, initial, 'no updates: the initial metadata object itself');
  assert.equal(created.changed, true);
  assert.equal(created.baseMetadataLocation, undefined);
  assert.match(created.metadataLocation, /^memory:\/\/p\/00000-/);

  const current = { metadataLocation: 'memory://p/00007-x.metadata.json', metadata: initial };
  const next = stageTable(id, current, [], [{ action: 'set-properties', updates: { k: 'v' } }], {
    nowMs: initial['last-updated-ms'] + 10n,
  });
  assert.equal(next.changed, true);
  assert.equal(next.baseMetadataLocation, current.metadataLocation);
  assert.match(next.metadataLocation, /^memory:\/\/p\/00008-/);
  assert.deepEqual(next.metadata['metadata-log'], [
    { 'timestamp-ms': initial['last-updated-ms'], 'metadata-file': current.metadataLocation },
  ]);
  assert.equal(next.metadata['last-updated-ms'], initial['last-updated-ms'] + 10n);
  assert.deepEqual(initial['metadata-log'], [], 'the base is not mutated');

  const unchanged = stageTable(id, current, [], [], { nowMs: 1n });
  assert.equal(unchanged.changed, false);
  assert.equal(unchanged.metadataLocation, current.metadataLocation);
  assert.equal(unchanged.metadata, initial);

  assert.throws(
    () => stageTable(id, undefined, [], [], { nowMs: 1n }),
    (e: unknown) => isIcebergError(e, 'NotFound') && /ns\.t does not exist/.test(e.message),
  );
  assert.throws(
    () => stageTable(id, current, [{ type: 'assert-create' }], [], { nowMs: 1n }),
    (e: unknown) => isIcebergError(e, 'AlreadyExists'),
  );
});

void test('an unparsable metadata property fails the commit with DataInvalid naming key and value, before anything is written', async () => {
  for (const c of catalogs) {
    const s = c.open();
    await s.catalog.createNamespace(['ns']);
    const t0 = await s.catalog.createTable(id, metadataFor({}));
    const files = metadataJsons(s.io);
    for (const [key, value] of [
      [METADATA_PREVIOUS_VERSIONS_MAX, 'ten'],
      [METADATA_DELETE_AFTER_COMMIT, 'yes'],
    ] as const) {
      await assert.rejects(
        s.catalog.commitTable(id, [], [{ action: 'set-properties', updates: { [key]: value } }]),
        (e: unknown) => isIcebergError(e, 'DataInvalid') && !e.retryable && e.message.includes(key) && e.message.includes(`"${value}"`),
        `${c.kind} ${key}`,
      );
    }
    assert.deepEqual(metadataJsons(s.io), files, `${c.kind}: nothing written`);
    assert.equal((await s.catalog.loadTable(id)).metadataLocation, t0.metadataLocation, c.kind);
    // booleans in any case, as Java reads them
    const t1 = await s.catalog.commitTable(
      id,
      [],
      [{ action: 'set-properties', updates: { [METADATA_DELETE_AFTER_COMMIT]: 'TRUE', [METADATA_PREVIOUS_VERSIONS_MAX]: '1' } }],
    );
    await s.catalog.commitTable(id, [], [{ action: 'set-properties', updates: { n: '2' } }]);
    assert.equal(await s.io.exists(t0.metadataLocation), false, `${c.kind}: delete-after-commit TRUE honoured`);
    assert.equal(await s.io.exists(t1.metadataLocation), true, c.kind);
    await s.catalog.close();
  }
});

void test('table property getters: defaults, typed values, and an error naming key and value', () => {
  assert.equal(tableProperty.int({}, COMMIT_NUM_RETRIES, 4), 4);
  assert.equal(tableProperty.int({}, COMMIT_NUM_RETRIES), undefined);
  assert.equal(tableProperty.int({ [COMMIT_NUM_RETRIES]: ' 7 ' }, COMMIT_NUM_RETRIES, 4), 7);
  assert.throws(
    () => tableProperty.int({ [COMMIT_NUM_RETRIES]: '7.5' }, COMMIT_NUM_RETRIES, 4),
    (e: unknown) =>
      isIcebergError(e, 'DataInvalid') && e.message === 'table property commit.retry.num-retries: expected an integer, found "7.5"',
  );
  assert.equal(tableProperty.long({ [MAX_SNAPSHOT_AGE_MS]: '9223372036854775807' }, MAX_SNAPSHOT_AGE_MS, 1n), 9223372036854775807n);
  assert.throws(
    () => tableProperty.long({ [MAX_SNAPSHOT_AGE_MS]: '9223372036854775808' }, MAX_SNAPSHOT_AGE_MS, 1n),
    (e: unknown) => isIcebergError(e, 'DataInvalid'),
  );
  assert.equal(tableProperty.bool({ k: 'False' }, 'k', true), false);
  assert.throws(
    () => tableProperty.bool({ k: '1' }, 'k', true),
    (e: unknown) => isIcebergError(e, 'DataInvalid') && /table property k: expected true or false, found "1"/.test(e.message),
  );
  // each property keeps its rule: negative retries mean the default; previous-versions-max is at least 1, 0 means the default
  assert.equal(commitNumRetries({ [COMMIT_NUM_RETRIES]: '-1' }), 4);
  assert.equal(metadataPreviousVersionsMax({ [METADATA_PREVIOUS_VERSIONS_MAX]: '-3' }), 1);
  assert.equal(metadataPreviousVersionsMax({ [METADATA_PREVIOUS_VERSIONS_MAX]: '0' }), 100);
  assert.equal(metadataDirectory({ location: 's3://b/t/', properties: {} }), 's3://b/t/metadata');
  assert.equal(metadataDirectory({ location: 's3://b/t', properties: { [WRITE_METADATA_PATH]: 's3://m/x//' } }), 's3://m/x');
  assert.equal(metadataDirectory({ location: 's3://b/t', properties: { [WRITE_METADATA_PATH]: '' } }), 's3://b/t/metadata');
});
