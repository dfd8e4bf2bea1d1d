/**
 * The key index of upsert tables (issue 31, ingest/upsert/key-index.ts) over tables in memory
 * (MemoryFileIO + MemoryCatalog) written by floe's own Parquet writer: positions over row groups
 * and around deleted rows, duplicate keys, advance over appends, row deltas and rewrites, rebuild
 * when the history is cut, applyCommit, composite keys of every supported type and null keys.
 * Every check compares with the rows as written (the file and position of each id is known).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  MemoryCatalog,
  MemoryFileIO,
  currentSnapshot,
  fastAppend,
  isIcebergError,
  newTableMetadata,
  readParquetInfo,
  rewriteFiles,
  rowDelta,
  writeParquetFile,
  writePositionDeleteFiles,
  type Columns,
  type DataFile,
  type LoadedTable,
  type PrimitiveType,
  type Schema,
  type TableIdentifier,
  type TableMetadata,
} from '../../iceberg';
import { SpillingKeyStore } from '../../ingest/upsert/disk-key-store';
import { KeyIndex, buildKeyIndex, type KeyStore, type StoredLocation } from '../../ingest/upsert/key-index';

const SCHEMA: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'v', required: false, type: 'string' },
  ],
};
const id: TableIdentifier = { namespace: ['db'], name: 't' };
const LOC = 'memory://wh/db/t';

async function setup(schema: Schema = SCHEMA): Promise<{ io: MemoryFileIO; catalog: MemoryCatalog; table: LoadedTable }> {
  const io = new MemoryFileIO();
  const catalog = new MemoryCatalog('test', io);
  await catalog.createNamespace(['db']);
  const table = await catalog.createTable(
    id,
    newTableMetadata({
      location: LOC,
      schema,
      tableUuid: '00000000-0000-0000-0000-000000000131',
      spec: { 'spec-id': 0, fields: [] },
      properties: { 'commit.retry.min-wait-ms': '1' },
    }),
  );
  return { io, catalog, table };
}

/** A data file of `ids` (in this order), row groups of `rowGroupRows`. */
async function writeIds(io: MemoryFileIO, name: string, ids: readonly bigint[], rowGroupRows = 1000): Promise<DataFile> {
  return writeColumns(io, SCHEMA, name, { id: BigInt64Array.from(ids), v: ids.map((i) => `v${i}`) }, ids.length, rowGroupRows);
}

async function writeColumns(
  io: MemoryFileIO,
  schema: Schema,
  name: string,
  columns: Columns,
  numRows: number,
  rowGroupRows = 1000,
): Promise<DataFile> {
  const w = await writeParquetFile(schema, { columns, numRows }, { rowGroupRows });
  const filePath = `${LOC}/data/${name}.parquet`;
  await io.write(filePath, w.bytes);
  return { ...w.stats, filePath, specId: 0, partition: {} };
}

const range = (from: number, to: number): bigint[] => Array.from({ length: to - from }, (_, i) => BigInt(from + i));

/** Position deletes of (file, pos) pairs committed as one RowDelta with `added` data files. */
async function commitDelta(
  io: MemoryFileIO,
  catalog: MemoryCatalog,
  t: LoadedTable,
  added: DataFile[],
  deletes: Array<[DataFile, number]>,
) {
  const w = deletes.length
    ? await writePositionDeleteFiles(
        io,
        t.metadata,
        deletes.map(([f, pos]) => ({ dataFile: f, pos: BigInt(pos) })),
        (k) => `del-${Math.random().toString(36).slice(2)}-${k}.parquet`,
      )
    : { deleteFiles: [], referencedDataFiles: [] };
  return (await rowDelta(catalog, io, id, added, w.deleteFiles, { referencedDataFiles: w.referencedDataFiles }, { table: t })).table;
}

/** Expected location of every live id: file by file in commit order, minus deleted (file, pos). */
type Expected = Map<bigint, { file: string; pos: number }>;
function expect(files: Array<[DataFile, readonly bigint[]]>, deleted: Array<[DataFile, number]> = []): Expected {
  const gone = new Set(deleted.map(([f, p]) => `${f.filePath}#${p}`));
  const out: Expected = new Map();
  for (const [f, ids] of files) ids.forEach((v, pos) => gone.has(`${f.filePath}#${pos}`) || out.set(v, { file: f.filePath, pos }));
  return out;
}

function assertIndex(index: KeyIndex, expected: Expected, absent: readonly bigint[] = []): void {
  const keys = index.keysOf([...expected.keys()].map((v) => ({ id: v })));
  let k = 0;
  for (const [v, at] of expected) assert.deepEqual(index.lookup(keys[k++]!), at, `id ${v}`);
  for (const [i, key] of index.keysOf(absent.map((v) => ({ id: v }))).entries())
    assert.equal(index.lookup(key), undefined, `id ${absent[i]} is deleted`);
  assert.equal(index.size, expected.size);
}

test('build: every live key at its position over row groups, deleted rows skipped, later duplicates win', async () => {
  const { io, catalog, table } = await setup();
  const aIds = range(0, 3000);
  const a = await writeIds(io, 'a', aIds); // row groups of 1,000
  assert.equal((await readParquetInfo(io, a.filePath)).numRowGroups, 3);
  const b = await writeIds(io, 'b', range(3000, 3500), 128);
  let t = await fastAppend(catalog, io, table, [a, b]);
  // first/last of each row group, a run across a boundary, one in the middle; two delete commits
  const del1: Array<[DataFile, number]> = [0, 999, 1000, 1001, 1500, 2999].map((p) => [a, p]);
  t = await commitDelta(io, catalog, t, [], del1);
  const del2: Array<[DataFile, number]> = [
    [a, 1999],
    [a, 2000],
    [b, 127],
    [b, 128],
  ];
  t = await commitDelta(io, catalog, t, [], del2);
  const index = await buildKeyIndex(io, t.metadata, ['id'], { concurrency: 2 });
  assert.equal(index.snapshotId, currentSnapshot(t.metadata)!['snapshot-id']);
  assert.equal(index.duplicates.count, 0);
  const deleted = [...del1, ...del2];
  assertIndex(
    index,
    expect(
      [
        [a, aIds],
        [b, range(3000, 3500)],
      ],
      deleted,
    ),
    [0n, 999n, 1000n, 1001n, 1500n, 2999n, 1999n, 2000n, 3127n, 3128n],
  );

  // another engine appends ids 5 and 6 again (and 1000, deleted in a: not a duplicate)
  const c = await writeIds(io, 'c', [6n, 5n, 1000n]);
  t = await fastAppend(catalog, io, t, [c]);
  const withDups = await buildKeyIndex(io, t.metadata, ['id']);
  assert.equal(withDups.duplicates.count, 2);
  assert.deepEqual(
    withDups.duplicates.examples.map((e) => [e.key, e.kept.file, e.kept.pos, e.dropped.file, e.dropped.pos]),
    [
      ['id=6', c.filePath, 0, a.filePath, 6],
      ['id=5', c.filePath, 1, a.filePath, 5],
    ],
  );
  const [k5, k1000] = withDups.keysOf([{ id: 5n }, { id: 1000 }]);
  assert.deepEqual(withDups.lookup(k5!), { file: c.filePath, pos: 1 }, 'the later commit wins');
  assert.deepEqual(withDups.lookup(k1000!), { file: c.filePath, pos: 2 });
});

test('advance over appends and row deltas, applyCommit of an own commit, both equal to a fresh build', async () => {
  const { io, catalog, table } = await setup();
  const empty = await buildKeyIndex(io, table.metadata, ['id']);
  assert.equal(empty.snapshotId, undefined);
  assert.equal(empty.size, 0);
  const a = await writeIds(io, 'a', range(0, 2500));
  let t = await fastAppend(catalog, io, table, [a]);
  assert.deepEqual(await empty.advance(io, t.metadata), {
    action: 'advanced',
    snapshots: 1,
    filesScanned: 1,
    deleteFilesRead: 0,
    duplicates: { count: 0, examples: [] },
  });
  const index = empty;

  // two appends then an upsert of ids 10, 11 and 2400 (deletes in a, a new file with the new rows,
  // which also deletes its own second row) and a plain delete of id 20
  const b = await writeIds(io, 'b', range(2500, 2600));
  t = await fastAppend(catalog, io, t, [b]);
  const c = await writeIds(io, 'c', range(2600, 2700));
  t = await fastAppend(catalog, io, t, [c]);
  const u = await writeIds(io, 'u', [10n, 77777n, 11n, 2400n]);
  const deleted: Array<[DataFile, number]> = [
    [a, 10],
    [a, 11],
    [a, 2400],
    [a, 20],
    [u, 1],
  ];
  t = await commitDelta(io, catalog, t, [u], deleted);
  const r = await index.advance(io, t.metadata);
  assert.deepEqual(r, {
    action: 'advanced',
    snapshots: 3,
    filesScanned: 4, // b, c, u, and a's keys at the deleted positions
    deleteFilesRead: 1,
    duplicates: { count: 0, examples: [] },
  });
  const files: Array<[DataFile, readonly bigint[]]> = [
    [a, range(0, 2500)],
    [b, range(2500, 2600)],
    [c, range(2600, 2700)],
    [u, [10n, 77777n, 11n, 2400n]],
  ];
  assertIndex(index, expect(files, deleted), [20n, 77777n]);
  assertIndex(await buildKeyIndex(io, t.metadata, ['id']), expect(files, deleted), [20n, 77777n]);
  assert.deepEqual(await index.advance(io, t.metadata), { action: 'current' });

  // the writer's own commit: look up, delete the old rows, write the new ones, apply
  const rows = [{ id: 2550n }, { id: 5 }, { id: 900000n }];
  const keys = index.keysOf(rows);
  const old = keys.map((k) => index.lookup(k));
  assert.deepEqual(old, [{ file: b.filePath, pos: 50 }, { file: a.filePath, pos: 5 }, undefined]);
  const w = await writeIds(io, 'w', [2550n, 5n, 900000n]);
  const parent = index.snapshotId;
  const ownDeletes: Array<[DataFile, number]> = [
    [b, 50],
    [a, 5],
  ];
  t = await commitDelta(io, catalog, t, [w], ownDeletes);
  const snapshotId = currentSnapshot(t.metadata)!['snapshot-id'];
  const own = {
    snapshotId,
    parentSnapshotId: parent,
    added: [{ file: w.filePath, keys }],
    deleted: [
      { key: keys[0]!, ...old[0]! },
      { key: keys[1]!, ...old[1]! },
    ],
  };
  assert.equal(index.applyCommit({ ...own, parentSnapshotId: 123n }), 'stale');
  assert.equal(index.snapshotId, parent, 'a stale commit changes nothing');
  assert.equal(index.applyCommit(own), 'applied');
  assert.equal(index.snapshotId, snapshotId);
  const all = [...files, [w, [2550n, 5n, 900000n]] as [DataFile, readonly bigint[]]];
  assertIndex(index, expect(all, [...deleted, ...ownDeletes]), [20n, 77777n]);
  assertIndex(await buildKeyIndex(io, t.metadata, ['id']), expect(all, [...deleted, ...ownDeletes]), [20n, 77777n]);
  assert.deepEqual(await index.advance(io, t.metadata), { action: 'current' });
});

/** A KeyStore of the test's own: the index must hold everything through the interface. */
class MapStore implements KeyStore {
  private readonly m = new Map<string, StoredLocation>();
  get size(): number {
    return this.m.size;
  }
  get(key: string): StoredLocation | undefined {
    return this.m.get(key);
  }
  set(key: string, fileId: number, pos: number): StoredLocation | undefined {
    const prev = this.m.get(key);
    this.m.set(key, { fileId, pos });
    return prev;
  }
  delete(key: string): boolean {
    return this.m.delete(key);
  }
  deleteFiles(fileIds: ReadonlySet<number>): number {
    let n = 0;
    for (const [k, v] of this.m) if (fileIds.has(v.fileId) && this.m.delete(k)) n++;
    return n;
  }
  clear(): void {
    this.m.clear();
  }
}

for (const [label, makeStore] of [
  ['a store of the caller', () => new MapStore()],
  ['a store that spills to disk at 100 keys', () => new SpillingKeyStore(100)],
] as const)
  test(`advance over a rewrite (replace): the replaced files dropped, only the new files read (${label})`, async () => {
    const { io, catalog, table } = await setup();
    const a = await writeIds(io, 'a', range(0, 300));
    const b = await writeIds(io, 'b', range(300, 600));
    const c = await writeIds(io, 'c', range(600, 700));
    let t = await fastAppend(catalog, io, table, [a, b, c]);
    // through a store of the caller's (the seam a disk-backed store plugs into)
    const store = makeStore();
    const index = await buildKeyIndex(io, t.metadata, ['id'], { store });
    assert.equal(store.size, 700);
    // compaction: a and b into one file, rows in another order; then an append
    const ab = await writeIds(io, 'ab', [...range(300, 600), ...range(0, 300)]);
    t = (await rewriteFiles(catalog, io, id, [a, b], [ab], {}, { table: t })).table;
    const d = await writeIds(io, 'd', range(700, 710));
    t = await fastAppend(catalog, io, t, [d]);
    const r = await index.advance(io, t.metadata);
    assert.equal(r.action, 'advanced');
    assert.deepEqual(r.action === 'advanced' && [r.snapshots, r.filesScanned, r.duplicates.count], [2, 2, 0]);
    const files: Array<[DataFile, readonly bigint[]]> = [
      [c, range(600, 700)],
      [ab, [...range(300, 600), ...range(0, 300)]],
      [d, range(700, 710)],
    ];
    assertIndex(index, expect(files));
    assert.equal(store.size, 710, 'the rewrite and the append went through the same store');
    if (store instanceof SpillingKeyStore) assert.ok(store.spilled);
    index.close();
  });

test('advance rebuilds when the index snapshot is no longer an ancestor (expired, rolled back)', async () => {
  const { io, catalog, table } = await setup();
  const a = await writeIds(io, 'a', range(0, 100));
  let t = await fastAppend(catalog, io, table, [a]);
  const first = currentSnapshot(t.metadata)!;
  const b = await writeIds(io, 'b', range(100, 200));
  t = await fastAppend(catalog, io, t, [b]);
  const index = await buildKeyIndex(io, t.metadata, ['id']);
  const second = currentSnapshot(t.metadata)!;

  // rolled back to the first snapshot: the second is not an ancestor of it
  const rolledBack: TableMetadata = {
    ...t.metadata,
    'current-snapshot-id': first['snapshot-id'],
    refs: { main: { 'snapshot-id': first['snapshot-id'], type: 'branch' } },
  };
  const r = await index.advance(io, rolledBack);
  assert.equal(r.action, 'rebuilt');
  assert.match(r.action === 'rebuilt' ? r.reason : '', new RegExp(`snapshot ${second['snapshot-id']} is not an ancestor`));
  assertIndex(index, expect([[a, range(0, 100)]]), [150n]);
  assert.equal(index.snapshotId, first['snapshot-id']);

  // history expired: the current snapshot's parent chain ends before the index's snapshot
  const c = await writeIds(io, 'c', range(200, 300));
  t = await fastAppend(catalog, io, t, [c]);
  const expired: TableMetadata = {
    ...t.metadata,
    snapshots: t.metadata.snapshots.filter((s) => s['snapshot-id'] !== second['snapshot-id']),
  };
  const again = await buildKeyIndex(io, rolledBack, ['id']); // at the first snapshot
  assert.equal((await again.advance(io, expired)).action, 'rebuilt');
  assertIndex(
    again,
    expect([
      [a, range(0, 100)],
      [b, range(100, 200)],
      [c, range(200, 300)],
    ]),
  );
});

test('composite keys of every supported type: exact, distinct, described; null ids and other types refused', async () => {
  const schema: Schema = {
    type: 'struct',
    'schema-id': 0,
    fields: [
      { id: 1, name: 'i', required: true, type: 'int' },
      { id: 2, name: 'l', required: true, type: 'long' },
      { id: 3, name: 's', required: true, type: 'string' },
      { id: 4, name: 'd', required: true, type: 'date' },
      { id: 5, name: 'ts', required: true, type: 'timestamp' },
      { id: 6, name: 'tz', required: true, type: 'timestamptz' },
      { id: 7, name: 'dec', required: true, type: 'decimal(38,4)' as PrimitiveType },
      { id: 8, name: 'u', required: true, type: 'uuid' },
      { id: 9, name: 'b', required: true, type: 'boolean' },
      { id: 10, name: 's2', required: false, type: 'string' },
      { id: 11, name: 'x', required: false, type: 'double' },
    ],
  };
  const ids = ['i', 'l', 's', 'd', 'ts', 'tz', 'dec', 'u', 'b', 's2'];
  const { io, catalog, table } = await setup(schema);
  const base = {
    i: -7,
    l: -(2n ** 63n),
    s: 'ab',
    d: 19000,
    ts: 1_700_000_000_123_456n,
    tz: 2n ** 62n,
    dec: '-12345678901234567890123456789012.3456',
    u: '0189a6e4-6f4b-7cc1-9d58-1bcfb2a0f1c3',
    b: true,
    s2: 'c',
    x: 1.5,
  };
  const rows = [
    base,
    { ...base, s: 'a', s2: 'bc' }, // same bytes as ("ab", "c") without the length prefix
    { ...base, l: 2n ** 63n - 1n },
    { ...base, b: false },
    { ...base, s: 'ab\u0000', s2: '' },
    { ...base, s2: 'ü €𝄞' },
    { ...base, dec: '0.0001', u: 'ffffffff-ffff-ffff-ffff-ffffffffffff', i: 2 ** 31 - 1 },
  ];
  const cols: Columns = Object.fromEntries(schema.fields.map((f) => [f.name, rows.map((r) => (r as Record<string, unknown>)[f.name])]));
  const f = await writeColumns(io, schema, 'k', cols, rows.length, 3);
  let t = await fastAppend(catalog, io, table, [f]);
  const index = await buildKeyIndex(io, t.metadata, ids);
  assert.equal(index.duplicates.count, 0);
  assert.equal(index.size, rows.length);
  // the writer's JS values (other JS types for the same values) find the rows the scan found
  const asWriter = rows.map((r) => ({ ...r, ts: Number(r.ts) })); // a safe-integer number for a timestamp
  index.keysOf(asWriter).forEach((k, pos) => assert.deepEqual(index.lookup(k), { file: f.filePath, pos }, `row ${pos}`));
  const [k] = index.keysOf([{ ...base, l: -(2n ** 63n), i: -7 }]);
  assert.equal(index.describe(k!).split(', ').length, ids.length);
  assert.equal(
    index.describe(k!),
    'i=-7, l=-9223372036854775808, s="ab", d=2022-01-08, ts=1700000000123456, tz=4611686018427387904, dec=-12345678901234567890123456789012.3456, u=0189a6e4-6f4b-7cc1-9d58-1bcfb2a0f1c3, b=true, s2="c"',
  );
  // an int given as a long-typed number and a bigint give the same key
  const single = await buildKeyIndex(io, t.metadata, ['l']);
  assert.equal(single.keysOf([{ l: 5 }])[0], single.keysOf([{ l: 5n }])[0]);
  assert.equal(single.duplicates.count, rows.length - 2, 'l repeats: all but the two distinct values are duplicates');

  await assert.rejects(
    buildKeyIndex(io, t.metadata, ['i', 'x']),
    (e: unknown) => isIcebergError(e, 'FeatureUnsupported') && /x type/.test(String(e)),
  );
  await assert.rejects(buildKeyIndex(io, t.metadata, ['nope']), (e: unknown) => isIcebergError(e, 'DataInvalid'));

  // a null in an identifier column: refused, naming the file and the row
  const g = await writeColumns(io, schema, 'nulls', { ...cols, s2: rows.map((_, i) => (i === 4 ? null : 'z')) }, rows.length, 3);
  t = await fastAppend(catalog, io, t, [g]);
  await assert.rejects(
    buildKeyIndex(io, t.metadata, ids),
    (e: unknown) =>
      isIcebergError(e, 'DataInvalid') && (e as Error).message.includes(g.filePath) && /s2 is null at row 4/.test((e as Error).message),
  );
  assert.throws(() => index.keysOf([{ ...base, s2: null }]), /identifier column s2 is null at row 0/);
});
