import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MemoryFileIO, readParquetBatches, RollingParquetWriter, writeDataFile, fromBytes, type Schema } from '../../iceberg';

const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'payload', required: false, type: 'string' },
  ],
};

/** Deterministic, poorly compressible payloads so file sizes track row counts. */
function payload(i: number): string {
  let x = (i * 2654435761) >>> 0,
    s = '';
  for (let k = 0; k < 12; k++) {
    x = (x * 1103515245 + 12345) >>> 0;
    s += x.toString(36);
  }
  return s;
}

test('rolling writer rolls files near the target size and loses no rows', async () => {
  const io = new MemoryFileIO();
  const target = 256 * 1024;
  const w = new RollingParquetWriter({ schema, io, targetFileSizeBytes: target, location: (i) => `memory://t/data/f-${i}.parquet` });
  const n = 60_000;
  for (let start = 0; start < n; start += 5000) {
    const rows = [];
    for (let i = start; i < start + 5000; i++) rows.push({ id: BigInt(i), payload: payload(i) });
    await w.writeRows(rows);
  }
  const files = await w.close();
  assert.ok(files.length >= 5, `expected several files, got ${files.length}`);
  assert.equal(
    files.reduce((a, f) => a + f.recordCount, 0),
    n,
  );
  // every file but the last within 25% of the target: the ratio is re-learned after each file
  for (const f of files.slice(1, -1)) {
    assert.ok(f.fileSizeInBytes > target * 0.75 && f.fileSizeInBytes < target * 1.25, `file size ${f.fileSizeInBytes} vs target ${target}`);
  }
  // files are contiguous in id order and their bounds say so
  let next = 0n;
  for (const f of files) {
    assert.equal((await io.stat(f.filePath)).size, f.fileSizeInBytes);
    assert.equal(fromBytes('long', f.lowerBounds!.get(1)!), next);
    next += BigInt(f.recordCount);
    assert.equal(fromBytes('long', f.upperBounds!.get(1)!), next - 1n);
    let rows = 0;
    for await (const b of readParquetBatches(io, f.filePath)) rows += b.numRows;
    assert.equal(rows, f.recordCount);
  }
  await assert.rejects(w.writeRows([{ id: 1n }]), /after close/);
});

test('writeDataFile: one small input gives one file; an empty input gives none', async () => {
  const io = new MemoryFileIO();
  const files = await writeDataFile(io, {
    schema,
    rows: [
      { id: 1n, payload: 'a' },
      { id: 2n, payload: null },
    ],
    location: (i) => `memory://t/x-${i}.parquet`,
  });
  assert.equal(files.length, 1);
  assert.equal(files[0]!.filePath, 'memory://t/x-0.parquet');
  assert.equal(files[0]!.recordCount, 2);
  assert.equal(files[0]!.nullValueCounts!.get(2), 1);
  assert.deepEqual(await writeDataFile(io, { schema, rows: [], location: () => 'memory://never' }), []);
});
