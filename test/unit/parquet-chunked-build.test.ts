/**
 * writeParquetFile builds rows and columns BUILD_CHUNK_ROWS at a time (columns.ts,
 * rowsToRecordBatches): the file must be the one a single batch gives, byte for byte, and errors
 * must name a row by its index in the caller's input, not in its chunk.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  BUILD_CHUNK_ROWS,
  columnsToRecordBatch,
  columnsToRecordBatches,
  encodeParquet,
  icebergToArrowSchema,
  readParquetTable,
  rowsToRecordBatch,
  writeParquetFile,
  MemoryFileIO,
  type Row,
  type Schema,
} from '../../iceberg';

const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'kind', required: true, type: 'string' },
    { id: 3, name: 'note', required: false, type: 'string' },
    { id: 4, name: 'score', required: false, type: 'double' },
    { id: 5, name: 'n', required: false, type: 'int' },
  ],
};
const KINDS = ['view', 'click', 'buy'];
/** A bit more than 2.5 chunks; `kind` is clearly low-cardinality, `note` clearly distinct. */
const N = 2 * BUILD_CHUNK_ROWS + 5001;
const columns = {
  id: new BigInt64Array(N).map((_, i) => BigInt(i) * 7n - 1000n),
  kind: Array.from({ length: N }, (_, i) => KINDS[(i * 7) % 3]!),
  note: Array.from({ length: N }, (_, i) => (i % 13 === 0 ? null : `note ${i} ${'x'.repeat(i % 40)}`)),
  score: Array.from({ length: N }, (_, i) => (i % 11 === 0 ? null : i % 97 === 0 ? NaN : (i * 1.5) % 1000)),
  n: Array.from({ length: N }, (_, i) => (i % 5 === 0 ? null : i % 1000)),
};

test('columns and rows built in chunks write the bytes and facts of one batch', async () => {
  const arrowSchema = icebergToArrowSchema(schema);
  const chunks = [...columnsToRecordBatches(schema, columns, N, arrowSchema)];
  assert.deepEqual(
    chunks.map((b) => b.numRows),
    [BUILD_CHUNK_ROWS, BUILD_CHUNK_ROWS, 5001],
  );
  const one = await encodeParquet(schema, arrowSchema, [columnsToRecordBatch(schema, columns, N, arrowSchema)], {
    pageSizeBytes: 64 << 10,
  });
  const viaColumns = await writeParquetFile(schema, { columns, numRows: N }, { pageSizeBytes: 64 << 10 });
  assert.ok(Buffer.from(viaColumns.bytes).equals(Buffer.from(one.bytes)), 'same Parquet bytes');
  assert.deepEqual(viaColumns.stats, one.stats);
  // Arrow bytes in: each chunk has its own offsets entry at its end (4 bytes per string column)
  assert.equal(viaColumns.arrowBytes - one.arrowBytes, 2 * 2 * 4);

  const rows: Row[] = Array.from({ length: N }, (_, i) => ({
    id: columns.id[i],
    kind: columns.kind[i],
    note: columns.note[i],
    score: columns.score[i],
    n: columns.n[i],
  }));
  const viaRows = await writeParquetFile(schema, { rows }, { pageSizeBytes: 64 << 10 });
  assert.ok(Buffer.from(viaRows.bytes).equals(Buffer.from(one.bytes)), 'rows: same Parquet bytes');

  const io = new MemoryFileIO();
  await io.write('memory://c.parquet', viaColumns.bytes);
  const back = await readParquetTable(io, 'memory://c.parquet');
  assert.equal(back.numRows, N);
  const ids = back.getChild('id')!.toArray() as BigInt64Array;
  assert.equal(ids[BUILD_CHUNK_ROWS], columns.id[BUILD_CHUNK_ROWS]);
  assert.equal(ids[N - 1], columns.id[N - 1]);
  assert.equal(back.getChild('note')!.get(N - 1), columns.note[N - 1]);
});

test('an error in a later chunk names the row by its index in the input', async () => {
  const bad = { ...columns, kind: columns.kind.map((k, i) => (i === BUILD_CHUNK_ROWS + 17 ? null : k)) };
  const row = BUILD_CHUNK_ROWS + 17;
  await assert.rejects(
    writeParquetFile(schema, { columns: bad, numRows: N }),
    (e: Error & { context?: { row?: number } }) =>
      e.message === `column kind: required, found null at row ${row}` && e.context?.row === row,
  );
  const rows: Row[] = Array.from({ length: N }, (_, i) => ({ id: BigInt(i), kind: i === N - 1 ? undefined : 'a' }));
  await assert.rejects(writeParquetFile(schema, { rows }), new RegExp(`column kind: required, found null at row ${N - 1}$`));
  // a struct's children name the same rows
  const nested: Schema = {
    type: 'struct',
    'schema-id': 0,
    fields: [{ id: 1, name: 's', required: false, type: { type: 'struct', fields: [{ id: 2, name: 'x', required: true, type: 'int' }] } }],
  };
  assert.throws(
    () => rowsToRecordBatch(nested, [{ s: { x: 1 } }, { s: { x: 2 } }, { s: {} }], undefined, 1, 3),
    /column s\.x: required, found null at row 2$/,
  );
});

test('a row range outside the input is refused', () => {
  assert.throws(() => columnsToRecordBatch(schema, columns, N, undefined, 10, N + 1), /rows \[10, \d+\) of \d+: not a range of them/);
  assert.throws(() => rowsToRecordBatch(schema, [], undefined, 1, 0), /not a range of them/);
  assert.equal(rowsToRecordBatch(schema, [{ id: 1n, kind: 'a' }], undefined, 1, 1).numRows, 0);
});

test('a nested schema (parquet-wasm) takes every chunk, in order', async () => {
  const nested: Schema = {
    type: 'struct',
    'schema-id': 0,
    fields: [
      { id: 1, name: 'id', required: true, type: 'long' },
      { id: 2, name: 'tags', required: false, type: { type: 'list', 'element-id': 3, element: 'string', 'element-required': false } },
    ],
  };
  const n = BUILD_CHUNK_ROWS + 3;
  const w = await writeParquetFile(nested, {
    rows: Array.from({ length: n }, (_, i) => ({ id: BigInt(i), tags: i % 2 ? [`t${i}`] : null })),
  });
  assert.equal(w.stats.recordCount, n);
  const io = new MemoryFileIO();
  await io.write('memory://n.parquet', w.bytes);
  const back = await readParquetTable(io, 'memory://n.parquet');
  assert.equal(back.numRows, n);
  assert.equal(String(back.getChild('id')!.get(n - 1)), String(n - 1));
  assert.deepEqual([...back.getChild('tags')!.get(n - 2)!], [`t${n - 2}`]);
});
