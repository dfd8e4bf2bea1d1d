import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  MemoryCatalog,
  MemoryFileIO,
  newTableMetadata,
  DataFileContent,
  filesTable,
  historyTable,
  manifestsTable,
  partitionsTable,
  planFiles,
  snapshotsTable,
  Transaction,
  fastAppend,
  type DataFile,
  type Schema,
} from '../../iceberg';

const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'd', required: true, type: 'date' },
  ],
};
const id = { namespace: ['db'], name: 't' };
const file = (path: string, d: number, rows: number): DataFile => ({
  content: DataFileContent.Data,
  filePath: `memory://t/data/${path}`,
  fileFormat: 'PARQUET',
  specId: 0,
  partition: { d_month: d },
  recordCount: rows,
  fileSizeInBytes: rows * 100,
});

async function table() {
  const io = new MemoryFileIO();
  const catalog = new MemoryCatalog('c', io);
  await catalog.createNamespace(['db']);
  await catalog.createTable(
    id,
    newTableMetadata({
      location: 'memory://t',
      schema,
      tableUuid: 'u',
      spec: { 'spec-id': 0, fields: [{ 'source-id': 2, 'field-id': 1000, name: 'd_month', transform: 'month' }] },
      properties: { 'commit.manifest-merge.enabled': 'false' },
    }),
  );
  let t = await catalog.loadTable(id);
  t = await fastAppend(catalog, io, t, [file('a', 600, 10), file('b', 601, 20)]);
  t = await fastAppend(catalog, io, t, [file('c', 700, 5)]);
  t = await fastAppend(catalog, io, t, [file('d', null as unknown as number, 1)]);
  return { io, catalog, t };
}

test('planFiles prunes by manifest summaries and partition values', async () => {
  const { io, t } = await table();
  const all = await planFiles(t, io);
  assert.deepEqual(all.map((f) => f.filePath.split('/').pop()).sort(), ['a', 'b', 'c', 'd']);
  io.stats.reads = 0;
  const ge = await planFiles(t, io, { partitionFilter: [{ field: 'd_month', op: '>=', value: 650 }] });
  assert.deepEqual(
    ge.map((f) => f.filePath.split('/').pop()),
    ['c'],
  );
  assert.equal(io.stats.reads, 2, 'manifest list + the one manifest whose summary can match');
  assert.deepEqual(
    (await planFiles(t, io, { partitionFilter: [{ field: 'd_month', op: 'in', values: [601, 700] }] }))
      .map((f) => f.filePath.split('/').pop())
      .sort(),
    ['b', 'c'],
  );
  assert.deepEqual(
    (await planFiles(t, io, { partitionFilter: [{ field: 'd_month', op: 'is-null' }] })).map((f) => f.filePath.split('/').pop()),
    ['d'],
  );
  const first = t.metadata.snapshots[0]!['snapshot-id'];
  assert.equal((await planFiles(t, io, { snapshotId: first })).length, 2, 'time travel to the first snapshot');
  assert.equal((await planFiles(t, io, { partitionFilter: (p) => p['d_month'] === 600 })).length, 1);
});

test('metadata tables: snapshots, history, files, manifests, partitions', async () => {
  const { io, catalog, t } = await table();
  const snaps = snapshotsTable(t);
  assert.equal(snaps.length, 3);
  assert.equal(snaps[2]!.parent_id, snaps[1]!.snapshot_id);
  assert.equal(snaps[0]!.operation, 'append');
  const h = historyTable(t);
  assert.deepEqual(
    h.map((r) => r.is_current_ancestor),
    [true, true, true],
  );
  const files = await filesTable(t, io);
  assert.equal(files.length, 4);
  assert.equal(files.find((f) => f.file_path.endsWith('/c'))!.data_sequence_number, 2n);
  const mans = await manifestsTable(t, io);
  assert.equal(mans.length, 3);
  const m0 = mans.find((m) => m.added_data_files_count === 2)!;
  assert.deepEqual(m0.partition_summaries, [{ contains_null: false, contains_nan: null, lower_bound: '2020-01', upper_bound: '2020-02' }]);
  const parts = await partitionsTable(t, io);
  assert.equal(parts.length, 4);
  assert.equal(
    parts.reduce((a, p) => a + p.record_count, 0),
    36,
  );
  // a replace moves history but keeps partitions' totals
  const tx = new Transaction(id);
  tx.rewriteFiles([file('a', 600, 10)], [file('a2', 600, 10)]);
  const r = await tx.commit(catalog, io);
  assert.equal(
    (await partitionsTable(r.table, io)).find((p) => p.partition['d_month'] === 600)!.last_updated_snapshot_id,
    r.snapshotIds[0],
  );
});
