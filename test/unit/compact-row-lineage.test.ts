/**
 * Compaction keeps row lineage on format v3 (spec "Row Lineage", as Spark's rewrite_data_files):
 * floe's rewrite (maintenance/compact.ts) reads its inputs with `_row_id` and
 * `_last_updated_sequence_number` synthesized (inherited from first_row_id + position and the
 * data sequence number, or materialized) and writes them as Parquet columns with their reserved
 * field ids, so every surviving row keeps both after the commit. Plain scans never see them; a v2
 * table's compaction writes no such column. In memory: MemoryFileIO + MemoryCatalog.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  LAST_UPDATED_SEQUENCE_NUMBER_FIELD_ID,
  MemoryCatalog,
  MemoryFileIO,
  ROW_ID_FIELD_ID,
  currentSnapshot,
  fastAppend,
  fieldIdOf,
  newTableMetadata,
  planTasks,
  readParquetInfo,
  rowDelta,
  scanBatches,
  writeDeletionVectors,
  writeParquetFile,
  type DataFile,
  type LoadedTable,
  type Schema,
  type TableIdentifier,
} from '../../iceberg';
import { commitRewrite, planCompaction, rewriteFileGroup } from '../../maintenance/compact';
import type { Tables } from '../../table/tables';

const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'cat', required: false, type: 'string' },
  ],
};
const id: TableIdentifier = { namespace: ['db'], name: 't' };
const LOC = 'memory://wh/db/t';

async function setup(formatVersion: 2 | 3): Promise<{ io: MemoryFileIO; catalog: MemoryCatalog; table: LoadedTable; tables: Tables }> {
  const io = new MemoryFileIO();
  const catalog = new MemoryCatalog('test', io);
  await catalog.createNamespace(['db']);
  const table = await catalog.createTable(
    id,
    newTableMetadata({
      location: LOC,
      schema,
      tableUuid: '00000000-0000-0000-0000-00000000011e',
      formatVersion,
      properties: { 'commit.retry.min-wait-ms': '1', 'commit.manifest-merge.enabled': 'false' },
    }),
  );
  const tables = { catalog, io, load: () => catalog.loadTable(id) } as unknown as Tables;
  return { io, catalog, table, tables };
}

let n = 0;
async function dataFile(io: MemoryFileIO, from: number, rows: number): Promise<DataFile> {
  const w = await writeParquetFile(schema, {
    columns: { id: BigInt64Array.from({ length: rows }, (_, i) => BigInt(from + i)), cat: new Array(rows).fill('a') },
    numRows: rows,
  });
  const filePath = `${LOC}/data/f${n++}.parquet`;
  await io.write(filePath, w.bytes);
  return { ...w.stats, filePath, specId: 0, partition: {} };
}

type Lineage = Map<bigint, [bigint | null, bigint | null]>;

/** id -> [_row_id, _last_updated_sequence_number] of every live row, read with the lineage option. */
async function lineage(t: LoadedTable, io: MemoryFileIO, columns?: string[]): Promise<Lineage> {
  const out: Lineage = new Map();
  for await (const b of scanBatches(t, io, { rowLineage: true, ...(columns ? { columns } : {}) })) {
    const names = b.schema.fields.map((f) => f.name);
    assert.deepEqual(names.slice(-2), ['_row_id', '_last_updated_sequence_number']);
    assert.deepEqual(
      b.schema.fields.slice(-2).map((f) => fieldIdOf(f)),
      [ROW_ID_FIELD_ID, LAST_UPDATED_SEQUENCE_NUMBER_FIELD_ID],
    );
    const ids = b.getChild('id')!,
      rowIds = b.getChild('_row_id')!,
      seqs = b.getChild('_last_updated_sequence_number')!;
    for (let i = 0; i < b.numRows; i++) out.set(ids.get(i) as bigint, [rowIds.get(i) as bigint | null, seqs.get(i) as bigint | null]);
  }
  return out;
}

/** floe's compaction (plan, rewrite every group, commit), as the workflow runs it. */
async function compactAll(tables: Tables, runId: string): Promise<void> {
  const plan = await planCompaction(tables, undefined, { table: 'db.t', options: { minInputFiles: 2 } });
  assert.ok(plan.groups.length > 0, 'something to compact');
  const results = [];
  for (const group of plan.groups) {
    results.push({
      group,
      result: await rewriteFileGroup(tables, { table: 'db.t', location: LOC, runId, group, targetFileSizeBytes: 128 * 1024 * 1024 }),
    });
  }
  const r = await commitRewrite(tables, { table: 'db.t', location: LOC, commitId: `${runId}-commit`, groups: results });
  assert.deepEqual(r.skippedGroups, []);
  assert.ok(r.snapshotId);
}

test('v3 compaction keeps _row_id and _last_updated_sequence_number of every surviving row', async () => {
  const { io, catalog, table, tables } = await setup(3);
  const a = await dataFile(io, 0, 10);
  let t = await fastAppend(catalog, io, table, [a]); // seq 1, row ids 0..9
  const b = await dataFile(io, 100, 5);
  t = await fastAppend(catalog, io, t, [b]); // seq 2, row ids 10..14
  const dvs = await writeDeletionVectors(
    io,
    t.metadata,
    [
      { dataFile: a, positions: [0n, 3n, 9n] },
      { dataFile: b, positions: [2n] },
    ],
    'dv.puffin',
  );
  t = (await rowDelta(catalog, io, id, [], dvs, { referencedDataFiles: [a.filePath, b.filePath] }, { table: t })).table;

  // inherited: first_row_id + position in the whole file (deleted rows keep their positions' ids away)
  const before = await lineage(t, io);
  const expected: Lineage = new Map();
  for (const i of [1, 2, 4, 5, 6, 7, 8]) expected.set(BigInt(i), [BigInt(i), 1n]);
  for (const k of [0, 1, 3, 4]) expected.set(BigInt(100 + k), [BigInt(10 + k), 2n]);
  assert.deepEqual(before, expected);
  assert.deepEqual(await lineage(t, io, ['id']), expected, 'with a projection too');

  await compactAll(tables, 'run1');
  t = await catalog.loadTable(id);
  const tasks = await planTasks(t, io);
  assert.equal(tasks.length, 1, 'both files compacted into one');
  assert.deepEqual(tasks[0]!.deletes, [], 'the DVs went with their data files');
  assert.equal(tasks[0]!.file.firstRowId, 15n, 'the new file still gets a first_row_id at commit');
  assert.ok(currentSnapshot(t.metadata)!['sequence-number'] > 3n);
  // the output materializes both columns with their reserved ids
  const info = await readParquetInfo(io, tasks[0]!.file.filePath);
  assert.deepEqual(
    info.schema.fields.map((f) => [f.name, fieldIdOf(f), f.nullable]),
    [
      ['id', 1, false],
      ['cat', 2, true],
      ['_row_id', ROW_ID_FIELD_ID, true],
      ['_last_updated_sequence_number', LAST_UPDATED_SEQUENCE_NUMBER_FIELD_ID, true],
    ],
  );
  assert.deepEqual(await lineage(t, io), expected, 'materialized values win over inheritance');
  assert.deepEqual(await lineage(t, io, ['id']), expected);

  // plain scans never see the lineage columns (they are not table columns)
  for await (const batch of scanBatches(t, io))
    assert.deepEqual(
      batch.schema.fields.map((f) => f.name),
      ['id', 'cat'],
    );

  // a later append inherits new ids; compacting it with the compacted file keeps both kinds
  const c = await dataFile(io, 200, 3);
  t = await fastAppend(catalog, io, t, [c]);
  const seqC = currentSnapshot(t.metadata)!['sequence-number'];
  const firstC = (await planTasks(t, io)).find((x) => x.file.filePath === c.filePath)!.file.firstRowId!;
  for (let k = 0; k < 3; k++) expected.set(BigInt(200 + k), [firstC + BigInt(k), seqC]);
  assert.deepEqual(await lineage(t, io), expected);
  await compactAll(tables, 'run2');
  t = await catalog.loadTable(id);
  assert.equal((await planTasks(t, io)).length, 1);
  assert.deepEqual(await lineage(t, io), expected);
});

test('v2 compaction writes no lineage columns', async () => {
  const { io, catalog, table, tables } = await setup(2);
  let t = await fastAppend(catalog, io, table, [await dataFile(io, 0, 4)]);
  t = await fastAppend(catalog, io, t, [await dataFile(io, 10, 4)]);
  await compactAll(tables, 'v2run');
  t = await catalog.loadTable(id);
  const tasks = await planTasks(t, io);
  assert.equal(tasks.length, 1);
  const info = await readParquetInfo(io, tasks[0]!.file.filePath);
  assert.deepEqual(
    info.schema.fields.map((f) => f.name),
    ['id', 'cat'],
  );
  // the lineage option on a v2 table: no first_row_id, so both are null
  for await (const b of scanBatches(t, io, { rowLineage: true })) {
    assert.equal(b.getChild('_row_id')!.nullCount, b.numRows);
    assert.equal(b.getChild('_last_updated_sequence_number')!.nullCount, b.numRows);
  }
});
