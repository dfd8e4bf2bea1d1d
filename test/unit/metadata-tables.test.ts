/**
 * Row shapes of Spark's metadata tables (iceberg/scan/metadata-tables.ts) and of what
 * `floe table commits|files|partitions|manifests --json` prints (cli/table-inspect.ts), on an
 * in-memory catalog: two appends into a month-partitioned table, then a RowDelta adding a
 * position delete file. Against PyIceberg's `table.inspect.*` on the real stack:
 * test/integration/table-inspect.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  DataFileContent,
  MemoryCatalog,
  MemoryFileIO,
  Transaction,
  fastAppend,
  filesTable,
  manifestsTable,
  newTableMetadata,
  partitionsTable,
  snapshotsTable,
  toBytes,
  type DataFile,
  type Schema,
} from '../../iceberg';
import { commitsJson, filesJson, manifestsView, partitionLabel, partitionsView } from '../../cli/table-inspect';

const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'd', required: true, type: 'date' },
    { id: 3, name: 'loc', required: false, type: { type: 'struct', fields: [{ id: 4, name: 'city', required: false, type: 'string' }] } },
  ],
};
const id = { namespace: ['db'], name: 't' };
// 2020-01-15 is day 18276; month 600 is 2020-01
const dataFile = (name: string, month: number, rows: number): DataFile => ({
  content: DataFileContent.Data,
  filePath: `memory://t/data/${name}.parquet`,
  fileFormat: 'PARQUET',
  specId: 0,
  partition: { d_month: month },
  recordCount: rows,
  fileSizeInBytes: rows * 100,
  columnSizes: new Map([[1, 40]]),
  valueCounts: new Map([
    [1, rows],
    [2, rows],
  ]),
  nullValueCounts: new Map([[4, 1]]),
  lowerBounds: new Map([
    [1, toBytes('long', 1n)],
    [2, toBytes('date', 18276)],
    [4, toBytes('string', 'Oslo')],
  ]),
  upperBounds: new Map([
    [1, toBytes('long', 9_007_199_254_740_993n)],
    [2, toBytes('date', 18277)],
  ]),
  splitOffsets: [4],
  sortOrderId: 0,
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
      properties: { 'commit.manifest-merge.enabled': 'false', 'format-version': '2' },
    }),
  );
  let t = await catalog.loadTable(id);
  const a = dataFile('a', 600, 10);
  t = await fastAppend(catalog, io, t, [a, dataFile('b', 601, 20)]);
  t = await fastAppend(catalog, io, t, [dataFile('c', 600, 5)]);
  // the metadata tables read manifests only: the delete file need not exist
  const del: DataFile = {
    content: DataFileContent.PositionDeletes,
    filePath: 'memory://t/data/d_month=2020-01/del.parquet',
    fileFormat: 'PARQUET',
    specId: 0,
    partition: { d_month: 600 },
    recordCount: 3,
    fileSizeInBytes: 77,
  };
  const tx = new Transaction(id);
  tx.rowDelta([], [del], { referencedDataFiles: [a.filePath] });
  t = (await tx.commit(catalog, io)).table;
  return { io, t };
}

test("files: Spark's columns for data and delete files, bounds readable, 64-bit values exact", async () => {
  const { io, t } = await table();
  const rows = await filesTable(t, io);
  assert.deepEqual(
    rows.map((r) => r.content),
    [0, 0, 0, 1],
    'data files first',
  );
  assert.deepEqual(rows.map((r) => r.file_path.split('/').pop()).sort(), ['a.parquet', 'b.parquet', 'c.parquet', 'del.parquet']);
  const a = rows.find((r) => r.file_path.endsWith('/a.parquet'))!;
  assert.deepEqual(Object.keys(a).slice(0, 17), [
    'content',
    'file_path',
    'file_format',
    'spec_id',
    'partition',
    'record_count',
    'file_size_in_bytes',
    'column_sizes',
    'value_counts',
    'null_value_counts',
    'nan_value_counts',
    'lower_bounds',
    'upper_bounds',
    'split_offsets',
    'equality_ids',
    'sort_order_id',
    'readable_metrics',
  ]);
  assert.deepEqual(a.lower_bounds, { 1: '1', 2: '2020-01-15', 4: 'Oslo' });
  assert.deepEqual(a.upper_bounds, { 1: '9007199254740993', 2: '2020-01-16' });
  assert.deepEqual(a.readable_metrics['loc.city'], {
    column_size: null,
    value_count: null,
    null_value_count: 1,
    nan_value_count: null,
    lower_bound: 'Oslo',
    upper_bound: null,
  });
  assert.equal(a.readable_metrics['id']!.column_size, 40);
  assert.deepEqual([a.split_offsets, a.equality_ids, a.sort_order_id, a.nan_value_counts], [[4], null, 0, null]);
  const del = rows.find((r) => r.content === 1)!;
  assert.equal(del.data_sequence_number, 3n, 'the delete commit is the third snapshot');

  const json = await filesJson(t, io);
  assert.deepEqual(json.find((r) => r['file_path'] === a.file_path)!['partition'], { d_month: 600 });
  assert.equal(typeof json[0]!['snapshot_id'], 'bigint', 'printJson prints it as a decimal string');
});

test('partitions: data and position delete counts per partition, last update from the delete commit', async () => {
  const { io, t } = await table();
  const snaps = t.metadata.snapshots;
  const rows = await partitionsTable(t, io);
  const jan = rows.find((r) => r.partition['d_month'] === 600)!;
  assert.deepEqual(jan, {
    partition: { d_month: 600 },
    spec_id: 0,
    record_count: 15,
    file_count: 2,
    total_data_file_size_in_bytes: 1500,
    position_delete_record_count: 3,
    position_delete_file_count: 1,
    equality_delete_record_count: 0,
    equality_delete_file_count: 0,
    last_updated_at: snaps[2]!['timestamp-ms'],
    last_updated_snapshot_id: snaps[2]!['snapshot-id'],
  });
  const feb = rows.find((r) => r.partition['d_month'] === 601)!;
  assert.equal(feb.position_delete_file_count, 0);
  assert.equal(feb.last_updated_snapshot_id, snaps[0]!['snapshot-id']);

  const v = await partitionsView(t, io);
  assert.equal(
    v.json.find((r) => (r['partition'] as Record<string, number>)['d_month'] === 600)!['last_updated_at'],
    new Date(Number(snaps[2]!['timestamp-ms'])).toISOString(),
  );
  assert.deepEqual(
    v.text.map((r) => [r['partition'], r['record_count'], r['pos_deletes']]),
    [
      ['d_month=2020-01', 15, 3],
      ['d_month=2020-02', 20, 0],
    ],
  );
  assert.equal(partitionLabel(t.metadata, 0, { d_month: null }), 'd_month=null');
});

test('manifests: data and delete manifests with counts in the columns of their content', async () => {
  const { io, t } = await table();
  const rows = await manifestsTable(t, io);
  assert.equal(rows.length, 3);
  const deletes = rows.find((r) => r.content === 1)!;
  assert.deepEqual(
    [deletes.added_delete_files_count, deletes.added_data_files_count, deletes.existing_data_files_count, deletes.partition_spec_id],
    [1, 0, 0, 0],
  );
  assert.equal(deletes.added_snapshot_id, t.metadata['current-snapshot-id']);
  const first = rows.find((r) => r.added_data_files_count === 2)!;
  assert.deepEqual(first.partition_summaries, [
    { contains_null: false, contains_nan: null, lower_bound: '2020-01', upper_bound: '2020-02' },
  ]);
  const v = await manifestsView(t, io);
  assert.deepEqual(v.text.map((r) => [r['content'], r['added_files'], r['partitions']]).sort(), [
    ['data', 1, '2020-01'],
    ['data', 2, '2020-01..2020-02'],
    ['deletes', 1, '2020-01'],
  ]);
});

test("commits --json: Spark's snapshots columns with is_current_ancestor, then floe's text columns", async () => {
  const { t } = await table();
  const rows = commitsJson(t);
  assert.equal(rows.length, 3);
  assert.deepEqual(Object.keys(rows[0]!).slice(0, 7), [
    'committed_at',
    'snapshot_id',
    'parent_id',
    'operation',
    'manifest_list',
    'summary',
    'is_current_ancestor',
  ]);
  const snaps = snapshotsTable(t);
  assert.deepEqual(
    rows.map((r) => [r['snapshot_id'], r['parent_id'], r['operation'], r['is_current_ancestor']]),
    [
      [snaps[0]!.snapshot_id, null, 'append', true],
      [snaps[1]!.snapshot_id, snaps[0]!.snapshot_id, 'append', true],
      [snaps[2]!.snapshot_id, snaps[1]!.snapshot_id, 'delete', true],
    ],
  );
  assert.equal(rows[0]!['committed_at'], new Date(Number(snaps[0]!.committed_at)).toISOString());
  assert.equal((rows[2]!['summary'] as Record<string, string>)['added-delete-files'], '1');
  assert.deepEqual([rows[1]!['rows'], rows[1]!['total_rows'], rows[1]!['total_files']], ['5', '35', '3']);
});
