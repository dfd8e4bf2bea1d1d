import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  MemoryFileIO,
  columnsToRecordBatch,
  readParquetTable,
  RollingParquetWriter,
  rowsToRecordBatch,
  writeParquetFile,
  icebergToArrowSchema,
  type Row,
  type Schema,
} from '../../iceberg';
import { ParquetStreamWriter } from '../../iceberg/parquet/stream-writer';
import { parquetFieldIds, rowGroupStarts } from './parquet-thrift';

const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'name', required: false, type: 'string' },
    { id: 3, name: 'score', required: false, type: 'double' },
  ],
};

function rowsFrom(start: number, n: number): Row[] {
  const out: Row[] = [];
  for (let i = start; i < start + n; i++) {
    out.push({
      id: BigInt(i),
      name: i % 7 === 0 ? null : `n-${(i * 7919) % 1000}`,
      score: i % 11 === 0 ? NaN : i % 13 === 0 ? null : (i % 500) - 250.5,
    });
  }
  return out;
}

test('streamed file from many tiny batches equals the one-shot file: stats, field ids, split offsets, rows', async () => {
  const arrowSchema = icebergToArrowSchema(schema);
  const all = rowsFrom(0, 30_000);
  // compaction-like input: 300 batches of 100 rows; small coalesce and row groups so both paths
  // (several hand-overs to wasm, several row groups) are exercised
  const w = new ParquetStreamWriter(schema, arrowSchema, { coalesceRows: 4096, rowGroupRows: 10_000 });
  for (let i = 0; i < all.length; i += 100) await w.write(rowsToRecordBatch(schema, all.slice(i, i + 100), arrowSchema));
  const streamed = await w.finish();
  const oneShot = await writeParquetFile(schema, { rows: all }, { rowGroupRows: 10_000 });

  const s = streamed.stats,
    o = oneShot.stats;
  assert.equal(s.recordCount, 30_000);
  assert.deepEqual(s.valueCounts, o.valueCounts);
  assert.deepEqual(s.nullValueCounts, o.nullValueCounts);
  assert.deepEqual(s.nanValueCounts, o.nanValueCounts);
  assert.ok(s.nanValueCounts!.get(3)! > 0 && s.nullValueCounts!.get(2)! > 0, 'input has NaNs and nulls');
  assert.deepEqual(s.lowerBounds, o.lowerBounds);
  assert.deepEqual(s.upperBounds, o.upperBounds);
  assert.equal(s.fileSizeInBytes, streamed.bytes.length);
  assert.deepEqual(s.splitOffsets, rowGroupStarts(streamed.bytes));
  assert.equal(s.splitOffsets!.length, 3);
  assert.equal([...s.columnSizes!.values()].reduce((a, b) => a + b, 0) + 4 <= streamed.bytes.length, true);
  const ids = parquetFieldIds(streamed.bytes);
  for (const f of schema.fields) assert.equal(ids.get(f.name), f.id, `field id of ${f.name}`);

  const io = new MemoryFileIO();
  await io.write('memory://t/s.parquet', streamed.bytes);
  const back = await readParquetTable(io, 'memory://t/s.parquet');
  assert.equal(back.numRows, 30_000);
  assert.equal(back.getChild('id')!.get(29_999), 29_999n);
  assert.equal(back.getChild('name')!.get(7), null);
  assert.equal(back.getChild('name')!.get(1), 'n-919');
});

test('rolling writer fed tiny batches rolls near the target with exact split offsets', async () => {
  const io = new MemoryFileIO();
  const arrowSchema = icebergToArrowSchema(schema);
  const target = 128 * 1024;
  const w = new RollingParquetWriter({
    schema,
    io,
    targetFileSizeBytes: target,
    coalesceRows: 2000,
    location: (i) => `memory://t/r-${i}.parquet`,
  });
  const n = 80_000;
  for (let i = 0; i < n; i += 100) await w.writeBatch(rowsToRecordBatch(schema, rowsFrom(i, 100), arrowSchema));
  const files = await w.close();
  assert.ok(files.length >= 3, `expected several files, got ${files.length}`);
  assert.equal(
    files.reduce((a, f) => a + f.recordCount, 0),
    n,
  );
  for (const f of files.slice(1, -1)) {
    assert.ok(f.fileSizeInBytes > target * 0.7 && f.fileSizeInBytes < target * 1.3, `file size ${f.fileSizeInBytes} vs target ${target}`);
  }
  for (const f of files) assert.deepEqual(f.splitOffsets, rowGroupStarts(await io.read(f.filePath)));
});

test('an aborted stream writer refuses more input', async () => {
  const arrowSchema = icebergToArrowSchema(schema);
  const w = new ParquetStreamWriter(schema, arrowSchema, { coalesceRows: 10 });
  await w.write(rowsToRecordBatch(schema, rowsFrom(0, 50), arrowSchema));
  w.abort();
  await assert.rejects(w.write(rowsToRecordBatch(schema, rowsFrom(0, 5), arrowSchema)), /after finish\(\)\/abort\(\)/);
});

test('typed-array columns (copied fast path) give the same file facts as row objects, and are copied', async () => {
  const typed: Schema = {
    type: 'struct',
    'schema-id': 0,
    fields: [
      { id: 1, name: 'i', required: true, type: 'int' },
      { id: 2, name: 'd', required: false, type: 'date' },
      { id: 3, name: 'f', required: true, type: 'float' },
      { id: 4, name: 'x', required: true, type: 'double' },
      { id: 5, name: 'l', required: true, type: 'long' },
      { id: 6, name: 'ts', required: true, type: 'timestamptz' },
      { id: 7, name: 't', required: true, type: 'time' },
    ],
  };
  const n = 5000;
  const cols = {
    i: Int32Array.from({ length: n }, (_, k) => k - 2500),
    d: Int32Array.from({ length: n }, (_, k) => 19000 + (k % 40)),
    f: Float32Array.from({ length: n }, (_, k) => (k % 3 === 0 ? NaN : k / 4)),
    x: Float64Array.from({ length: n }, (_, k) => -k * 1.5),
    l: BigInt64Array.from({ length: n }, (_, k) => BigInt(k) * 10_000_000_000n),
    ts: BigInt64Array.from({ length: n }, (_, k) => 1_700_000_000_000_000n + BigInt(k)),
    t: BigInt64Array.from({ length: n }, (_, k) => BigInt(k) * 1000n),
  };
  const rows: Row[] = Array.from({ length: n }, (_, k) => Object.fromEntries(Object.entries(cols).map(([c, a]) => [c, a[k]])));
  const arrowSchema = icebergToArrowSchema(typed);
  const batch = columnsToRecordBatch(typed, cols, n, arrowSchema);
  cols.l[0] = 42n; // the batch holds a copy
  assert.equal(batch.getChild('l')!.get(0), 0n);
  cols.l[0] = 0n;
  const viaCols = await writeParquetFile(typed, { columns: cols, numRows: n });
  const viaRows = await writeParquetFile(typed, { rows });
  assert.deepEqual(viaCols.stats, {
    ...viaRows.stats,
    fileSizeInBytes: viaCols.stats.fileSizeInBytes,
    columnSizes: viaCols.stats.columnSizes,
    splitOffsets: viaCols.stats.splitOffsets,
  });
  assert.equal(viaCols.stats.nanValueCounts!.get(3), Math.ceil(n / 3));
  assert.deepEqual(viaCols.bytes, viaRows.bytes);
});
