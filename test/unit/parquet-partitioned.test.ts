import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  MemoryFileIO,
  PartitionedRowWriter,
  readParquetBatches,
  newTableMetadata,
  partitionKey,
  partitionRecord,
  partitioner,
  samePartition,
  type PartitionSpec,
  type Schema,
} from '../../iceberg';

const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'ts', required: true, type: 'timestamptz' },
    { id: 3, name: 'tag', required: false, type: 'binary' },
    { id: 4, name: 'score', required: false, type: 'double' },
  ],
};
const spec: PartitionSpec = {
  'spec-id': 0,
  fields: [
    { 'source-id': 2, 'field-id': 1000, name: 'ts_hour', transform: 'hour' },
    { 'source-id': 3, 'field-id': 1001, name: 'tag', transform: 'identity' },
    { 'source-id': 4, 'field-id': 1002, name: 'score', transform: 'identity' },
  ],
};
const HOUR = 3_600_000_000n;

test('samePartition: equal primitives only; byte arrays and NaN fall back to the key', () => {
  assert.equal(samePartition({ a: 1, b: 5n, c: null, d: 'x' }, { a: 1, b: 5n, c: null, d: 'x' }), true);
  assert.equal(samePartition({ a: 1, b: 5n }, { a: 1, b: 6n }), false);
  assert.equal(samePartition({ a: null }, { a: 0 }), false);
  const bytes = new Uint8Array([1, 2]);
  assert.equal(samePartition({ a: bytes }, { a: bytes }), false, 'a byte array is never taken as the same (it may change in place)');
  assert.equal(samePartition({ a: NaN }, { a: NaN }), false);
});

test('partitioner computes what partitionRecord does, and checks the spec once', () => {
  const of = partitioner(spec, schema);
  const rows = [
    { id: 1n, ts: 5n * HOUR + 7n, tag: new Uint8Array([1]), score: 0.5 },
    { id: 2n, ts: -1n, tag: null, score: null },
  ];
  for (const r of rows) assert.deepEqual(of(r), partitionRecord(spec, schema, r));
  const bad: PartitionSpec = { 'spec-id': 0, fields: [{ 'source-id': 3, 'field-id': 1000, name: 'b', transform: 'hour' }] };
  assert.throws(() => partitioner(bad, schema), /transform hour source type/);
});

/**
 * Rows in runs of one partition, runs that come back, and partitions no run can reuse (byte
 * arrays, NaN): every row must land in the file of its own partition, whichever path found it.
 */
test('partitioned writer: runs of one partition reuse the stream; every row lands in its own partition', async () => {
  const io = new MemoryFileIO();
  const metadata = newTableMetadata({ location: 'memory://t', schema, spec, tableUuid: '00000000-0000-4000-8000-000000000001' });
  const w = new PartitionedRowWriter(io, metadata, { fileName: (n) => `f-${n}.parquet`, batchRows: 7 });
  const rows = [];
  for (let i = 0; i < 600; i++) {
    const hour = BigInt(Math.floor(i / 50) % 3); // runs of 50 rows, hours 0,1,2,0,1,2,...
    const tag = i % 100 < 10 ? new Uint8Array([i % 2]) : null; // byte-array partitions, alternating
    const score = i % 97 === 0 ? NaN : i % 10 === 9 ? 1.5 : null;
    rows.push({ id: BigInt(i), ts: hour * HOUR + BigInt(i), tag, score });
  }
  for (const r of rows) w.add(r);
  const files = await w.close();
  const expected = new Map<string, bigint[]>();
  for (const r of rows) {
    const k = partitionKey(partitionRecord(spec, schema, r));
    expected.set(k, [...(expected.get(k) ?? []), r.id]);
  }
  const got = new Map<string, bigint[]>();
  for (const f of files) {
    const ids: bigint[] = [];
    for await (const b of readParquetBatches(io, f.filePath)) for (const v of b.getChild('id')!) ids.push(v as bigint);
    // each file's rows: exactly the rows whose own partition is the file's
    for (const id of ids) assert.equal(partitionKey(partitionRecord(spec, schema, rows[Number(id)]!)), partitionKey(f.partition));
    const k = partitionKey(f.partition);
    got.set(k, [...(got.get(k) ?? []), ...ids]);
  }
  assert.equal(got.size, expected.size);
  for (const [k, ids] of expected)
    assert.deepEqual(
      [...(got.get(k) ?? [])].sort((a, b) => (a < b ? -1 : 1)),
      ids,
      k,
    );
});
