/**
 * `floe table rewrite-position-deletes` (maintenance/rewrite-position-deletes.ts) and the library's
 * ReplaceDeleteFiles, in memory (MemoryFileIO + MemoryCatalog): a partition's delete files merged
 * into one, positions of data files no longer live dropped, partitions with one clean file left
 * alone, and every live row deleted before is deleted after.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  DataFileContent,
  MemoryCatalog,
  MemoryFileIO,
  ReplaceDeleteFiles,
  Transaction,
  currentSnapshot,
  fastAppend,
  isDeletionVector,
  isIcebergError,
  mergeDeletionVectors,
  newTableMetadata,
  readDeletionVector,
  planTasks,
  readPositionDeletes,
  rewriteFiles,
  rowDelta,
  writePositionDeletes,
  type DataFile,
  type PartitionSpec,
  type Schema,
  type TableIdentifier,
} from '../../iceberg';
import { rewritePositionDeletes } from '../../maintenance/rewrite-position-deletes';
import type { Tables } from '../../table/tables';

const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'cat', required: false, type: 'string' },
  ],
};
const BY_CAT: PartitionSpec = { 'spec-id': 0, fields: [{ 'source-id': 2, 'field-id': 1000, name: 'cat', transform: 'identity' }] };
const id: TableIdentifier = { namespace: ['db'], name: 't' };
const LOC = 'memory://wh/db/t';

let n = 0;
const df = (rows: number, cat: string): DataFile => ({
  content: DataFileContent.Data,
  filePath: `${LOC}/data/cat=${cat}/f${n++}.parquet`,
  fileFormat: 'PARQUET',
  specId: 0,
  partition: { cat },
  recordCount: rows,
  fileSizeInBytes: rows * 10,
});

async function deletes(io: MemoryFileIO, file: DataFile, positions: number[]): Promise<DataFile> {
  return writePositionDeletes(io, {
    location: `${LOC}/data/cat=${String(file.partition.cat)}/deletes-${n++}.parquet`,
    specId: file.specId,
    partition: file.partition,
    deletes: positions.map((p) => ({ filePath: file.filePath, pos: BigInt(p) })),
  });
}

async function setup() {
  const io = new MemoryFileIO();
  const catalog = new MemoryCatalog('test', io);
  await catalog.createNamespace(['db']);
  await catalog.createTable(
    id,
    newTableMetadata({ location: LOC, schema, tableUuid: '00000000-0000-0000-0000-000000000041', spec: BY_CAT, properties: {} }),
  );
  const tables = { catalog, io, load: () => catalog.loadTable(id) } as unknown as Tables;
  return { io, catalog, tables };
}

/** Deleted positions per data file (name) as scan planning applies them to the live files. */
async function applied(io: MemoryFileIO, tables: Tables): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const t of await planTasks((await tables.load('db.t')).metadata, io)) {
    const set = new Set<bigint>();
    for (const d of t.deletes) for (const p of (await readPositionDeletes(io, d)).get(t.file.filePath) ?? []) set.add(p);
    out[t.file.filePath.split('/').pop()!] = [...set].sort((a, b) => (a < b ? -1 : 1)).join(',');
  }
  return out;
}

test('merges each partition’s delete files into one, drops positions of files no longer live, changes no row', async () => {
  const { io, catalog, tables } = await setup();
  const a1 = df(10, 'a'),
    a2 = df(10, 'a'),
    b1 = df(10, 'b'),
    c1 = df(10, 'c');
  await fastAppend(catalog, io, await catalog.loadTable(id), [a1, a2, b1, c1]);
  // partition a: three delete files (one repeats a position); b: one file naming a file later replaced; c: one clean file
  const dA = [await deletes(io, a1, [0, 1]), await deletes(io, a1, [1, 2]), await deletes(io, a2, [5])];
  const dB = await deletes(io, b1, [3]);
  const dC = await deletes(io, c1, [4]);
  for (const d of [...dA, dB, dC])
    await rowDelta(catalog, io, id, [], [d], {
      referencedDataFiles: [
        d.filePath.includes('cat=a') ? (d === dA[2] ? a2.filePath : a1.filePath) : d.filePath.includes('cat=b') ? b1.filePath : c1.filePath,
      ],
    });
  // b1 replaced without its deleted row by a rewrite that applied it (as compaction does): dB dangles
  const b2 = df(9, 'b');
  await rewriteFiles(catalog, io, id, [b1], [b2], {}, {}, { records: 9 });
  const before = await applied(io, tables);

  const r = await rewritePositionDeletes(tables, 'db.t');
  assert.equal(r.deleteFilesBefore, 5);
  assert.equal(r.partitions, 2, 'a (several files) and b (dangling); c alone and clean is left as it is');
  assert.equal(r.deleteFilesAfter, 2, 'a merged into one, b gone, c kept');
  assert.equal(r.danglingDropped, 1);
  assert.equal(r.positionsBefore, 7);
  assert.equal(r.positionsAfter, 5, 'a: 0,1,2 of a1 and 5 of a2; c: 4');
  assert.deepEqual(await applied(io, tables), before, 'every live file has the same deleted positions');
  const m = (await tables.load('db.t')).metadata;
  const snap = currentSnapshot(m)!;
  assert.equal(snap.summary.operation, 'replace');
  assert.equal(snap.summary['total-delete-files'], '2');
  assert.equal(snap.summary['total-records'], String(10 + 10 + 9 + 10));

  // a second run finds nothing worth rewriting
  const again = await rewritePositionDeletes(tables, 'db.t');
  assert.equal(again.snapshotId, null);
  assert.equal(again.deleteFilesAfter, 2);
});

test('ReplaceDeleteFiles refuses a delete file that is no longer live, and one with nothing to remove', async () => {
  const { io, catalog } = await setup();
  const a1 = df(10, 'a');
  await fastAppend(catalog, io, await catalog.loadTable(id), [a1]);
  const d = await deletes(io, a1, [0]);
  const ghost = await deletes(io, a1, [1]);
  await rowDelta(catalog, io, id, [], [d], { referencedDataFiles: [a1.filePath] });
  await assert.rejects(
    new Transaction(id).add(new ReplaceDeleteFiles([ghost], [])).commit(catalog, io, {}),
    (e: unknown) => isIcebergError(e, 'CommitFailed') && /1 of 1 delete files are no longer live/.test((e as Error).message),
  );
  assert.throws(() => new ReplaceDeleteFiles([], [d]), /needs at least one delete file/);
});

test('v3: the v2 delete files of a table upgraded to v3 become one DV per data file (merged with its DV), dangling DVs dropped', async () => {
  const { io, catalog, tables } = await setup();
  const a1 = df(10, 'a'),
    a2 = df(10, 'a'),
    b1 = df(10, 'b');
  await fastAppend(catalog, io, await catalog.loadTable(id), [a1, a2, b1]);
  for (const [f, ps] of [
    [a1, [0, 1]],
    [a1, [1, 2]],
    [b1, [3]],
  ] as const)
    await rowDelta(catalog, io, id, [], [await deletes(io, f, [...ps])], { referencedDataFiles: [f.filePath] });
  await new Transaction(id).upgradeFormatVersion(3).commit(catalog, io, {});
  // after the upgrade: a DV for a2, and one for a1 that holds a1's v2 positions too
  let m = (await tables.load('db.t')).metadata;
  for (const [f, ps] of [
    [a2, [5n]],
    [a1, [7n]],
  ] as const) {
    const merged = await mergeDeletionVectors(io, m, [{ dataFile: f, positions: ps }], `dv-${n++}.puffin`);
    await rowDelta(catalog, io, id, [], merged.deleteFiles, {
      referencedDataFiles: merged.referencedDataFiles,
      removeDeleteFiles: merged.removeDeleteFiles,
    });
    m = (await tables.load('db.t')).metadata;
  }
  const before = await appliedAll(io, tables);
  const r = await rewritePositionDeletes(tables, 'db.t');
  assert.equal(r.deleteFilesBefore, 3, "a1's DV (its v2 files were merged into it and removed), a2's DV, b1's v2 file");
  assert.equal(r.deleteFilesAfter, 3, "b1's v2 file became a DV; the DVs stay");
  assert.deepEqual(await appliedAll(io, tables), before, 'every live file has the same deleted positions');
  const live = await planTasks((await tables.load('db.t')).metadata, io);
  for (const t of live) for (const d of t.deletes) assert.ok(isDeletionVector(d), `${d.filePath} is a DV`);
  const again = await rewritePositionDeletes(tables, 'db.t');
  assert.equal(again.snapshotId, null, 'nothing left to convert');
});

/** Deleted positions per data file, DVs and position delete files alike. */
async function appliedAll(io: MemoryFileIO, tables: Tables): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const t of await planTasks((await tables.load('db.t')).metadata, io)) {
    const set = new Set<bigint>();
    for (const d of t.deletes) {
      const ps = isDeletionVector(d) ? await readDeletionVector(io, d) : ((await readPositionDeletes(io, d)).get(t.file.filePath) ?? []);
      for (const p of ps) set.add(p);
    }
    out[t.file.filePath.split('/').pop()!] = [...set].sort((a, b) => (a < b ? -1 : 1)).join(',');
  }
  return out;
}
