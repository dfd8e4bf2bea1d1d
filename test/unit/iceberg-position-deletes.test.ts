/**
 * Position deletes in floe's Iceberg library (issue 31): the delete file's layout and metrics,
 * RowDelta's manifests, summary and conflict check, which deletes scan planning attaches to which
 * data file (sequence numbers, partitions, file_path bounds), and reads that skip deleted rows.
 * In memory: MemoryFileIO + MemoryCatalog.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  DELETE_FILE_PATH_FIELD_ID,
  DELETE_FILE_POS_FIELD_ID,
  DataFileContent,
  ManifestContent,
  MemoryCatalog,
  MemoryFileIO,
  PARQUET_FIELD_ID_KEY,
  Transaction,
  currentSnapshot,
  fastAppend,
  isIcebergError,
  newTableMetadata,
  planFiles,
  planTasks,
  readManifest,
  readManifestList,
  readParquetInfo,
  readParquetTable,
  readTaskBatches,
  referencedDataFile,
  rewriteFiles,
  rowDelta,
  scanBatches,
  toBytes,
  writeParquetFile,
  writePartitionedRows,
  writePositionDeleteFiles,
  writePositionDeletes,
  type DataFile,
  type FileScanTask,
  type LoadedTable,
  type PartitionSpec,
  type Schema,
  type TableIdentifier,
} from '../../iceberg';

const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'cat', required: false, type: 'string' },
  ],
};
const BY_CAT: PartitionSpec = { 'spec-id': 0, fields: [{ 'source-id': 2, 'field-id': 1000, name: 'cat', transform: 'identity' }] };
const UNPARTITIONED: PartitionSpec = { 'spec-id': 0, fields: [] };
const id: TableIdentifier = { namespace: ['db'], name: 't' };
const LOC = 'memory://wh/db/t';

async function setup(spec: PartitionSpec = BY_CAT): Promise<{ io: MemoryFileIO; catalog: MemoryCatalog; table: LoadedTable }> {
  const io = new MemoryFileIO();
  const catalog = new MemoryCatalog('test', io);
  await catalog.createNamespace(['db']);
  const table = await catalog.createTable(
    id,
    newTableMetadata({
      location: LOC,
      schema,
      tableUuid: '00000000-0000-0000-0000-000000000031',
      spec,
      properties: { 'commit.retry.min-wait-ms': '1' },
    }),
  );
  return { io, catalog, table };
}

let n = 0;
/** A data file known only by its manifest entry (planning and commits never open it). */
const df = (rows: number, cat: string | null = 'a', name = `f${n++}`): DataFile => ({
  content: DataFileContent.Data,
  filePath: `${LOC}/data/cat=${cat}/${name}.parquet`,
  fileFormat: 'PARQUET',
  specId: 0,
  partition: { cat },
  recordCount: rows,
  fileSizeInBytes: rows * 10,
});

/** A position delete file for `files` (positions 0..k-1 of each), written through the real writer. */
async function deletesFor(io: MemoryFileIO, files: DataFile[], k = 1): Promise<DataFile> {
  const first = files[0]!;
  return writePositionDeletes(io, {
    location: `${LOC}/data/deletes-${n++}.parquet`,
    specId: first.specId,
    partition: first.partition,
    deletes: files.flatMap((f) => Array.from({ length: k }, (_, i) => ({ filePath: f.filePath, pos: BigInt(i) }))),
  });
}

const utf8 = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'utf8'));
const name = (p: string): string => p.split('/').pop()!;
const deletesOf = (tasks: FileScanTask[]): Record<string, string[]> =>
  Object.fromEntries(tasks.map((t) => [name(t.file.filePath), t.deletes.map((d) => name(d.filePath)).sort()]));

test('a position delete file: reserved columns, rows sorted by (file_path, pos), full metrics', async () => {
  const io = new MemoryFileIO();
  const b = `${LOC}/data/cat=a/b.parquet`,
    a = `${LOC}/data/cat=a/a.parquet`,
    // code point order (UTF-8 bytes), not UTF-16 order: U+FF5E sorts before U+1F600
    e1 = `${LOC}/data/cat=a/\u{ff5e}.parquet`,
    e2 = `${LOC}/data/cat=a/\u{1f600}.parquet`;
  const f = await writePositionDeletes(io, {
    location: `${LOC}/data/cat=a/del.parquet`,
    specId: 0,
    partition: { cat: 'a' },
    deletes: [
      { filePath: b, pos: 7n },
      { filePath: e2, pos: 1n },
      { filePath: a, pos: 10n },
      { filePath: b, pos: 2n },
      { filePath: a, pos: 3n },
      { filePath: e1, pos: 0n },
      { filePath: a, pos: 3n }, // a duplicate is written once
      { filePath: b, pos: 1n << 40n },
    ],
  });
  assert.equal(f.content, DataFileContent.PositionDeletes);
  assert.equal(f.fileFormat, 'PARQUET');
  assert.equal(f.filePath, `${LOC}/data/cat=a/del.parquet`);
  assert.deepEqual(f.partition, { cat: 'a' });
  assert.equal(f.recordCount, 7);
  assert.equal(f.fileSizeInBytes, (await io.read(f.filePath)).length);

  const t = await readParquetTable(io, f.filePath);
  assert.deepEqual(
    t.schema.fields.map((x) => [x.name, x.nullable, x.metadata.get(PARQUET_FIELD_ID_KEY)]),
    [
      ['file_path', false, String(DELETE_FILE_PATH_FIELD_ID)],
      ['pos', false, String(DELETE_FILE_POS_FIELD_ID)],
    ],
  );
  const rows = [...t].map((r) => [r['file_path'] as string, BigInt(r['pos'] as bigint)]);
  assert.deepEqual(rows, [
    [a, 3n],
    [a, 10n],
    [b, 2n],
    [b, 7n],
    [b, 1n << 40n],
    [e1, 0n],
    [e2, 1n],
  ]);
  // bounds in full (no 16-character truncation): readers prune data files by them
  assert.deepEqual(f.lowerBounds?.get(DELETE_FILE_PATH_FIELD_ID), utf8(a));
  assert.deepEqual(f.upperBounds?.get(DELETE_FILE_PATH_FIELD_ID), utf8(e2));
  assert.deepEqual(f.lowerBounds?.get(DELETE_FILE_POS_FIELD_ID), toBytes('long', 0n));
  assert.deepEqual(f.upperBounds?.get(DELETE_FILE_POS_FIELD_ID), toBytes('long', 1n << 40n));
  assert.equal(f.valueCounts?.get(DELETE_FILE_PATH_FIELD_ID), 7);
  assert.equal(f.nullValueCounts?.get(DELETE_FILE_POS_FIELD_ID), 0);
  assert.equal(referencedDataFile(f), undefined, 'names several data files');

  // one data file: lower == upper bound, Java's "referenced data file"
  const one = await writePositionDeletes(io, {
    location: `${LOC}/data/cat=a/del1.parquet`,
    specId: 0,
    partition: { cat: 'a' },
    deletes: [{ filePath: a, pos: 5n }],
  });
  assert.equal(referencedDataFile(one), a);

  await assert.rejects(
    writePositionDeletes(io, { location: `${LOC}/x.parquet`, specId: 0, partition: { cat: 'a' }, deletes: [{ filePath: a, pos: -1n }] }),
    (e: unknown) => isIcebergError(e, 'DataInvalid'),
  );
  await assert.rejects(
    writePositionDeletes(io, { location: `${LOC}/x.parquet`, specId: 0, partition: { cat: 'a' }, deletes: [] }),
    (e: unknown) => isIcebergError(e, 'DataInvalid'),
  );
});

test('writePositionDeleteFiles: one delete file per partition, in the partition directory', async () => {
  const { io, table } = await setup();
  const fa = df(10, 'a'),
    fa2 = df(10, 'a'),
    fb = df(10, 'b'),
    fnull = df(10, null);
  const r = await writePositionDeleteFiles(
    io,
    table.metadata,
    [fa, fb, fa2, fnull, fa].map((f, i) => ({ dataFile: f, pos: BigInt(i) })),
    (k) => `pos-del-${k}.parquet`,
  );
  assert.deepEqual(r.referencedDataFiles.sort(), [fa, fa2, fb, fnull].map((f) => f.filePath).sort());
  const byPartition = Object.fromEntries(r.deleteFiles.map((d) => [String(d.partition['cat']), d]));
  assert.deepEqual(Object.keys(byPartition).sort(), ['a', 'b', 'null']);
  assert.equal(byPartition['a']!.recordCount, 3);
  assert.equal(byPartition['a']!.filePath, `${LOC}/data/cat=a/pos-del-0.parquet`);
  assert.equal(byPartition['b']!.filePath, `${LOC}/data/cat=b/pos-del-1.parquet`);
  assert.equal(byPartition['null']!.filePath, `${LOC}/data/cat=null/pos-del-2.parquet`);
  assert.equal(referencedDataFile(byPartition['b']!), fb.filePath);
});

test('RowDelta: delete manifests, sequence numbers, operation and summary totals', async () => {
  const { io, catalog, table } = await setup();
  const a1 = df(10, 'a'),
    b1 = df(20, 'b');
  const t1 = await fastAppend(catalog, io, table, [a1, b1]);
  const d1 = await deletesFor(io, [a1], 2);
  const d2 = await deletesFor(io, [b1], 3);
  const r = await rowDelta(catalog, io, id, [], [d1, d2], { referencedDataFiles: [a1.filePath, b1.filePath] }, { table: t1 });
  const s = currentSnapshot(r.table.metadata)!;
  assert.equal(s['sequence-number'], 2n);
  assert.equal(s.summary.operation, 'delete', 'deletes only: Java BaseRowDelta says delete');
  assert.equal(s.summary['added-delete-files'], '2');
  assert.equal(s.summary['added-position-deletes'], '5');
  assert.equal(s.summary['total-delete-files'], '2');
  assert.equal(s.summary['total-position-deletes'], '5');
  assert.equal(s.summary['total-records'], '30', 'records count data rows; deletes are counted apart, as Java does');
  assert.equal(s.summary['total-data-files'], '2');
  assert.equal(s.summary['added-data-files'], undefined);
  assert.equal(s.summary['changed-partition-count'], '2');
  assert.equal(s.summary['total-files-size'], String(a1.fileSizeInBytes + b1.fileSizeInBytes + d1.fileSizeInBytes + d2.fileSizeInBytes));

  const ml = await readManifestList(io, s['manifest-list']);
  const del = ml.filter((m) => m.content === ManifestContent.Deletes);
  assert.equal(del.length, 1);
  assert.equal(del[0]!.sequenceNumber, 2n);
  assert.equal(del[0]!.addedFilesCount, 2);
  assert.equal(del[0]!.addedRowsCount, 5);
  const entries = await readManifest(io, del[0]!);
  assert.deepEqual(entries.map((e) => [e.dataFile.content, e.sequenceNumber]).sort(), [
    [DataFileContent.PositionDeletes, 2n],
    [DataFileContent.PositionDeletes, 2n],
  ]);
  // the bounds survive the manifest round trip (Java finds the referenced data file in them)
  assert.deepEqual(entries.map((e) => referencedDataFile(e.dataFile)).sort(), [a1.filePath, b1.filePath].sort());

  // data + deletes in one snapshot: overwrite; totals continue
  const a2 = df(5, 'a');
  const d3 = await deletesFor(io, [a2], 1);
  const r2 = await rowDelta(catalog, io, id, [a2], [d3], { referencedDataFiles: [a2.filePath] });
  const s2 = currentSnapshot(r2.table.metadata)!;
  assert.equal(s2.summary.operation, 'overwrite');
  assert.equal(s2.summary['total-delete-files'], '3');
  assert.equal(s2.summary['total-position-deletes'], '6');
  assert.equal(s2.summary['total-records'], '35');
  assert.equal(s2.summary['added-records'], '5');
  // data only: append
  const r3 = await rowDelta(catalog, io, id, [df(1, 'c')], []);
  assert.equal(currentSnapshot(r3.table.metadata)!.summary.operation, 'append');
  // delete manifests are carried forward untouched by later commits
  const ml3 = await readManifestList(io, currentSnapshot(r3.table.metadata)!['manifest-list']);
  assert.deepEqual(
    ml3
      .filter((m) => m.content === ManifestContent.Deletes)
      .map((m) => m.sequenceNumber)
      .sort(),
    [2n, 3n],
  );
});

test('RowDelta refuses deletes it cannot validate or that name another partition', async () => {
  const { io, catalog, table } = await setup();
  const a1 = df(10, 'a');
  await fastAppend(catalog, io, table, [a1]);
  const d = await deletesFor(io, [a1]);
  assert.throws(
    () => new Transaction(id).rowDelta([], [d]),
    (e: unknown) => isIcebergError(e, 'DataInvalid') && /names no referenced data files/.test((e as Error).message),
  );
  assert.throws(
    () => new Transaction(id).rowDelta([], [d], { referencedDataFiles: ['memory://elsewhere.parquet'] }),
    (e: unknown) => isIcebergError(e, 'DataInvalid') && (e as Error).message.includes(a1.filePath),
  );
  assert.throws(
    () => new Transaction(id).rowDelta([], [{ ...d, content: DataFileContent.EqualityDeletes, equalityIds: [1] }]),
    (e: unknown) => isIcebergError(e, 'FeatureUnsupported'),
  );
  // filed under partition b but naming a data file of partition a: no reader would apply it
  const misplaced = { ...d, partition: { cat: 'b' } };
  await assert.rejects(
    rowDelta(catalog, io, id, [], [misplaced], { referencedDataFiles: [a1.filePath] }),
    (e: unknown) => isIcebergError(e, 'DataInvalid') && /partition of delete file/.test((e as Error).message),
  );
});

test('RowDelta conflict check: a concurrent rewrite of a referenced file fails the commit, a concurrent append does not', async () => {
  const { io, catalog, table } = await setup();
  const a1 = df(10, 'a'),
    a2 = df(10, 'a');
  const t1 = await fastAppend(catalog, io, table, [a1, a2]);

  // a concurrent compaction replaced a2 after we planned against t1: the deletes would name a
  // file no reader sees any more (rewriteFiles itself refuses tables that already have deletes,
  // so it runs first here)
  const d2 = await deletesFor(io, [a2]);
  await rewriteFiles(catalog, io, id, [a2], [df(10, 'a')]);
  const before = (await catalog.loadTable(id)).metadata;
  const writesBefore = io.locations().length;
  await assert.rejects(
    rowDelta(catalog, io, id, [], [d2], { referencedDataFiles: [a2.filePath] }, { table: t1 }),
    (e: unknown) =>
      isIcebergError(e, 'CommitFailed') &&
      !(e as { retryable: boolean }).retryable &&
      (e as Error).message.includes(a2.filePath) &&
      /no longer live/.test((e as Error).message),
  );
  const after = (await catalog.loadTable(id)).metadata;
  assert.equal(after['current-snapshot-id'], before['current-snapshot-id'], 'nothing was committed');
  assert.equal(io.locations().length, writesBefore, "the failed commit's manifests were cleaned up");
  assert.ok(await io.exists(d2.filePath), 'the delete file itself is the caller’s to keep or remove');

  // a concurrent append lands between our load and our CAS: retried, and it commits
  const stale = await catalog.loadTable(id);
  const d1 = await deletesFor(io, [a1]);
  await fastAppend(catalog, io, stale, [df(3, 'b')]);
  const ok = await rowDelta(catalog, io, id, [], [d1], { referencedDataFiles: [a1.filePath] }, { table: stale });
  assert.equal(ok.attempts, 2);
  assert.equal(currentSnapshot(ok.table.metadata)!.summary.operation, 'delete');

  // a data file added in the same commit may be named by its deletes
  const a3 = df(4, 'a');
  const d3 = await deletesFor(io, [a3]);
  const r = await rowDelta(catalog, io, id, [a3], [d3], { referencedDataFiles: [a3.filePath] });
  assert.equal(currentSnapshot(r.table.metadata)!.summary.operation, 'overwrite');
});

test('planning: which deletes apply to which data files (sequence numbers, partitions, bounds)', async () => {
  const { io, catalog, table } = await setup();
  const a1 = df(10, 'a', 'a1'),
    a2 = df(10, 'a', 'a2'),
    a9 = df(10, 'a', 'a9'),
    b1 = df(10, 'b', 'b1');
  let t = await fastAppend(catalog, io, table, [a1, a2, a9, b1]); // seq 1
  // one delete file for a1 and a2 (bounds a1..a2: a9 is outside), one for b1
  const dA = await deletesFor(io, [a1, a2]);
  const dB = await deletesFor(io, [b1]);
  t = (await rowDelta(catalog, io, id, [], [dA, dB], { referencedDataFiles: [a1.filePath, a2.filePath, b1.filePath] }, { table: t })).table; // seq 2
  const a3 = df(10, 'a', 'a3');
  t = await fastAppend(catalog, io, t, [a3]); // seq 3: no earlier delete applies to it
  // a delete file naming a3 and a4, committed together with a4
  const a4 = df(10, 'a', 'a4');
  const dA3 = await deletesFor(io, [a3, a4]);
  t = (await rowDelta(catalog, io, id, [a4], [dA3], { referencedDataFiles: [a3.filePath, a4.filePath] }, { table: t })).table; // seq 4

  const tasks = await planTasks(t, io);
  assert.deepEqual(deletesOf(tasks), {
    'a1.parquet': [name(dA.filePath)],
    'a2.parquet': [name(dA.filePath)],
    'a9.parquet': [], // in the partition, outside the delete file's file_path bounds
    'b1.parquet': [name(dB.filePath)],
    'a3.parquet': [name(dA3.filePath)], // dA (seq 2) is older than a3 (seq 3)
    'a4.parquet': [name(dA3.filePath)], // same commit: delete seq == data seq applies
  });
  const seq = Object.fromEntries(tasks.map((x) => [name(x.file.filePath), x.dataSequenceNumber]));
  assert.deepEqual(seq, { 'a1.parquet': 1n, 'a2.parquet': 1n, 'a9.parquet': 1n, 'b1.parquet': 1n, 'a3.parquet': 3n, 'a4.parquet': 4n });

  // partition predicates prune deletes with the data files
  assert.deepEqual(deletesOf(await planTasks(t, io, { partitionFilter: [{ field: 'cat', op: '=', value: 'b' }] })), {
    'b1.parquet': [name(dB.filePath)],
  });
  // time travel: before the deletes nothing applies
  const first = t.metadata.snapshots[0]!['snapshot-id'];
  assert.ok((await planTasks(t, io, { snapshotId: first })).every((x) => x.deletes.length === 0));
  assert.equal((await planFiles(t, io, { snapshotId: first })).length, 4);
  // planFiles' callers read rows without deletes: refused instead of resurrecting rows
  await assert.rejects(planFiles(t, io), (e: unknown) => isIcebergError(e, 'FeatureUnsupported'));
});

test('planning: deletes of an unpartitioned table apply by path only', async () => {
  const { io, catalog, table } = await setup(UNPARTITIONED);
  const mk = (k: string): DataFile => ({ ...df(5, null, k), filePath: `${LOC}/data/${k}.parquet`, partition: {} });
  const [x, y, z] = [mk('x'), mk('y'), mk('z')];
  let t = await fastAppend(catalog, io, table, [x, y, z]);
  const d = await deletesFor(io, [x, z]); // bounds x..z cover y too: y's rows are checked, none match
  t = (await rowDelta(catalog, io, id, [], [d], { referencedDataFiles: [x.filePath, z.filePath] }, { table: t })).table;
  assert.deepEqual(deletesOf(await planTasks(t, io)), {
    'x.parquet': [name(d.filePath)],
    'y.parquet': [name(d.filePath)],
    'z.parquet': [name(d.filePath)],
  });
});

test('reading: deleted rows are skipped across batches and row groups, other files read untouched', async () => {
  const { io, catalog, table } = await setup();
  // partitioned files from the table's own writer
  const rows = Array.from({ length: 40 }, (_, i) => ({ id: BigInt(i), cat: i % 2 ? 'odd' : 'even' }));
  const files = await writePartitionedRows(io, table.metadata, rows, { fileName: (k) => `part-${k}.parquet` });
  // and one file of 3,000 rows in row groups of 1,000 (positions count over the whole file)
  const big = await writeParquetFile(
    schema,
    { columns: { id: BigInt64Array.from({ length: 3000 }, (_, i) => BigInt(1000 + i)), cat: new Array(3000).fill('big') }, numRows: 3000 },
    { rowGroupRows: 1000 },
  );
  const bigPath = `${LOC}/data/cat=big/big.parquet`;
  await io.write(bigPath, big.bytes);
  assert.equal((await readParquetInfo(io, bigPath)).numRowGroups, 3);
  const bigFile: DataFile = { ...big.stats, filePath: bigPath, specId: 0, partition: { cat: 'big' } };
  let t = await fastAppend(catalog, io, table, [...files, bigFile]);

  const even = files.find((f) => f.partition['cat'] === 'even')!;
  const odd = files.find((f) => f.partition['cat'] === 'odd')!;
  // even rows are ids 0,2,..,38 at positions 0..19; delete positions 0, 5, 19 (ids 0, 10, 38)
  // big: the first and last row of every row group and a run across a row-group boundary
  const bigDeleted = [0n, 999n, 1000n, 1001n, 1999n, 2000n, 2999n, 1500n];
  const written = await writePositionDeleteFiles(
    io,
    t.metadata,
    [...[0n, 5n, 19n].map((pos) => ({ dataFile: even, pos })), ...bigDeleted.map((pos) => ({ dataFile: bigFile, pos }))],
    (k) => `del-${k}.parquet`,
  );
  t = (await rowDelta(catalog, io, id, [], written.deleteFiles, { referencedDataFiles: written.referencedDataFiles }, { table: t })).table;
  // a second commit deletes more of even, and one row already deleted again
  const more = await writePositionDeleteFiles(
    io,
    t.metadata,
    [1n, 5n].map((pos) => ({ dataFile: even, pos })),
    (k) => `del2-${k}.parquet`,
  );
  t = (await rowDelta(catalog, io, id, [], more.deleteFiles, { referencedDataFiles: more.referencedDataFiles }, { table: t })).table;

  const ids: bigint[] = [];
  for await (const b of scanBatches(t, io, { columns: ['id'] })) for (const v of b.getChild('id')!) ids.push(v as bigint);
  const deletedIds = new Set([0n, 2n, 10n, 38n, ...bigDeleted.map((p) => 1000n + p)]);
  const expected = [...rows.map((r) => r.id), ...Array.from({ length: 3000 }, (_, i) => BigInt(1000 + i))].filter(
    (v) => !deletedIds.has(v),
  );
  assert.deepEqual(
    ids.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
    expected.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
  );

  // a task without deletes is read as the file is: same batches, no delete file opened
  const tasks = await planTasks(t, io);
  const oddTask = tasks.find((x) => x.file.filePath === odd.filePath)!;
  assert.equal(oddTask.deletes.length, 0);
  const readsBefore = io.stats.reads;
  let oddRows = 0;
  for await (const b of readTaskBatches(io, oddTask)) oddRows += b.numRows;
  assert.equal(oddRows, 20);
  assert.equal(io.stats.reads - readsBefore, 1, 'one read: the data file (small files are read whole)');
});

test('planning refuses equality deletes instead of ignoring them', async () => {
  const { io, catalog, table } = await setup();
  const a1 = df(10, 'a');
  const t = await fastAppend(catalog, io, table, [a1]);
  // another engine's equality delete file (RowDelta itself only writes position deletes)
  const d = await deletesFor(io, [a1]);
  const tx = new Transaction(id);
  tx.rowDelta([], [d], { referencedDataFiles: [a1.filePath] });
  Object.assign(d, { content: DataFileContent.EqualityDeletes, equalityIds: [1] });
  const r = await tx.commit(catalog, io, { table: t });
  await assert.rejects(
    planTasks(r.table, io),
    (e: unknown) => isIcebergError(e, 'FeatureUnsupported') && /content: expected position deletes/.test((e as Error).message),
  );
});
