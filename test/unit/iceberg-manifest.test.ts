import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  readAvroFile,
  writeAvroFile,
  decodeManifest,
  encodeManifest,
  inheritFromManifest,
  UNASSIGNED_SEQ,
  decodeManifestList,
  encodeManifestList,
  dataFileFromWire,
  dataFileToWire,
  toPartitionValue,
  DataFileContent,
  ManifestContent,
  ManifestEntryStatus,
  type DataFile,
  type ManifestEntry,
  type PartitionSpec,
  type Schema,
} from '../../iceberg';

const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'ts', required: true, type: 'timestamptz' },
    { id: 3, name: 'cat', required: false, type: 'string' },
    { id: 4, name: 'amount', required: false, type: 'decimal(10, 2)' },
    { id: 5, name: 'u', required: false, type: 'uuid' },
  ],
};
const spec: PartitionSpec = {
  'spec-id': 0,
  fields: [
    { 'source-id': 2, 'field-id': 1000, name: 'ts_day', transform: 'day' },
    { 'source-id': 3, 'field-id': 1001, name: 'cat', transform: 'identity' },
    { 'source-id': 1, 'field-id': 1002, name: 'id_bucket', transform: 'bucket[16]' },
    { 'source-id': 4, 'field-id': 1003, name: 'amount', transform: 'identity' },
    { 'source-id': 2, 'field-id': 1004, name: 'ts-raw', transform: 'identity' },
    { 'source-id': 5, 'field-id': 1005, name: 'u', transform: 'identity' },
  ],
};
const BIG = (1n << 62n) + 987654321n;

const file = (i: number, over: Partial<DataFile> = {}): DataFile => ({
  content: DataFileContent.Data,
  filePath: `s3://b/t/data/f${i}.parquet`,
  fileFormat: 'PARQUET',
  specId: 0,
  partition: {
    ts_day: 19000 + i,
    cat: i % 2 ? 'a' : null,
    id_bucket: i % 16,
    amount: toPartitionValue('decimal(10, 2)', `-${i}.05`),
    'ts-raw': 1_700_000_000_000_000n + BigInt(i),
    u: toPartitionValue('uuid', 'f79c3e09-677c-4bbd-a479-3f349cb785e7'),
  },
  recordCount: 100 + i,
  fileSizeInBytes: 4096 + i,
  columnSizes: new Map([
    [1, 10],
    [2, 20],
  ]),
  valueCounts: new Map([[1, 100 + i]]),
  nullValueCounts: new Map([[3, 0]]),
  nanValueCounts: new Map(),
  lowerBounds: new Map([[1, Uint8Array.of(1, 0, 0, 0, 0, 0, 0, 0)]]),
  upperBounds: new Map([[1, Uint8Array.of(9, 0, 0, 0, 0, 0, 0, 0)]]),
  splitOffsets: [4],
  sortOrderId: 0,
  ...over,
});

test('manifest Avro: schema carries spec field ids, header metadata, and round-trips entries', () => {
  const entries: ManifestEntry[] = [
    { status: ManifestEntryStatus.Added, snapshotId: BIG, sequenceNumber: null, fileSequenceNumber: null, dataFile: file(1) },
    { status: ManifestEntryStatus.Existing, snapshotId: 7n, sequenceNumber: 3n, fileSequenceNumber: 3n, dataFile: file(2) },
    { status: ManifestEntryStatus.Deleted, snapshotId: BIG, sequenceNumber: 2n, fileSequenceNumber: 2n, dataFile: file(3) },
  ];
  const { bytes, manifest } = encodeManifest({ location: 'memory://m.avro', spec, schema, snapshotId: BIG, entries });
  const avro = readAvroFile(bytes);
  assert.equal(avro.metadata['avro.codec'], 'deflate');
  assert.equal(avro.metadata['format-version'], '2');
  assert.equal(avro.metadata['content'], 'data');
  assert.equal(avro.metadata['partition-spec-id'], '0');
  assert.equal(avro.metadata['schema-id'], '0');
  assert.deepEqual(JSON.parse(avro.metadata['partition-spec']!), spec.fields);
  assert.equal(JSON.parse(avro.metadata['schema']!).fields.length, 5);
  const s = JSON.stringify(avro.schema);
  for (const needle of [
    '"name":"manifest_entry"',
    '"name":"r2"',
    '"name":"r102"',
    '"name":"k117_v118"',
    '"logicalType":"map"',
    '"element-id":133',
    '"field-id":102',
    '"field-id":1000',
    '"name":"ts_x2Draw"',
    '"logicalType":"decimal"',
    '"logicalType":"date"',
  ]) {
    assert.ok(s.includes(needle), `schema should contain ${needle}`);
  }
  const decoded = decodeManifest(bytes);
  assert.deepEqual(decoded.entries, entries);
  assert.equal(manifest.addedFilesCount, 1);
  assert.equal(manifest.existingFilesCount, 1);
  assert.equal(manifest.deletedFilesCount, 1);
  assert.equal(manifest.addedRowsCount, 101);
  assert.equal(manifest.sequenceNumber, UNASSIGNED_SEQ);
  assert.equal(manifest.minSequenceNumber, 3n);
  // partition summaries: day 19001..19003, cat has a null, bounds are Appendix D bytes
  const day = manifest.partitions![0]!;
  assert.deepEqual([...day.lowerBound!], [0x39, 0x4a, 0, 0]); // 19001 LE
  assert.equal(manifest.partitions![1]!.containsNull, true);
});

test('manifest list Avro: field ids, header, sequence number assignment, round trip with 64-bit ids', () => {
  const { manifest } = encodeManifest({
    location: 'memory://m1.avro',
    spec,
    schema,
    snapshotId: BIG,
    entries: [{ status: ManifestEntryStatus.Added, snapshotId: BIG, sequenceNumber: null, fileSequenceNumber: null, dataFile: file(1) }],
  });
  const old = {
    ...manifest,
    manifestPath: 'memory://m0.avro',
    addedSnapshotId: 5n,
    sequenceNumber: 4n,
    minSequenceNumber: 1n,
    content: ManifestContent.Data,
  };
  const bytes = encodeManifestList({
    location: 'memory://l.avro',
    snapshotId: BIG,
    parentSnapshotId: 5n,
    sequenceNumber: 9n,
    manifests: [manifest, old],
  });
  const { manifests, metadata } = decodeManifestList(bytes);
  assert.deepEqual(metadata['snapshot-id'], BIG.toString());
  assert.deepEqual(metadata['parent-snapshot-id'], '5');
  assert.deepEqual(metadata['sequence-number'], '9');
  assert.deepEqual(metadata['format-version'], '2');
  assert.equal(manifests[0]!.sequenceNumber, 9n);
  assert.equal(manifests[0]!.minSequenceNumber, 9n);
  assert.equal(manifests[0]!.addedSnapshotId, BIG);
  assert.deepEqual(manifests[1], old);
  assert.deepEqual(manifests[0], { ...manifest, sequenceNumber: 9n, minSequenceNumber: 9n });
  const avro = readAvroFile(bytes);
  const s = JSON.stringify(avro.schema);
  for (const needle of [
    '"name":"manifest_file"',
    '"field-id":500',
    '"field-id":517',
    '"field-id":515',
    '"name":"r508"',
    '"element-id":508',
    '"field-id":518',
  ]) {
    assert.ok(s.includes(needle), `schema should contain ${needle}`);
  }
  // a foreign manifest without a sequence number is refused
  assert.throws(
    () => encodeManifestList({ location: 'x', snapshotId: 1n, parentSnapshotId: null, sequenceNumber: 1n, manifests: [manifest] }),
    /added_snapshot_id/,
  );
});

test('inheritance: null snapshot id / sequence numbers come from the manifest list for ADDED entries', () => {
  const e: ManifestEntry = {
    status: ManifestEntryStatus.Added,
    snapshotId: null,
    sequenceNumber: null,
    fileSequenceNumber: null,
    dataFile: file(1),
  };
  const m = {
    manifestPath: 'x',
    manifestLength: 1,
    partitionSpecId: 0,
    content: ManifestContent.Data,
    sequenceNumber: 12n,
    minSequenceNumber: 12n,
    addedSnapshotId: BIG,
    addedFilesCount: 1,
    existingFilesCount: 0,
    deletedFilesCount: 0,
    addedRowsCount: 1,
    existingRowsCount: 0,
    deletedRowsCount: 0,
  };
  const r = inheritFromManifest(e, m);
  assert.equal(r.snapshotId, BIG);
  assert.equal(r.sequenceNumber, 12n);
  assert.equal(r.fileSequenceNumber, 12n);
  const ex = inheritFromManifest({ ...e, status: ManifestEntryStatus.Existing }, m);
  assert.equal(ex.sequenceNumber, null, 'EXISTING entries never inherit in v2');
});

test('reading resolves fields by id: PyIceberg-style names (data_sequence_number) read the same', () => {
  const { bytes } = encodeManifest({
    location: 'memory://m.avro',
    spec,
    schema,
    snapshotId: BIG,
    entries: [{ status: ManifestEntryStatus.Existing, snapshotId: 7n, sequenceNumber: 3n, fileSequenceNumber: 4n, dataFile: file(1) }],
  });
  // rewrite the writer schema's field names as PyIceberg names them, keep ids
  const avro = readAvroFile(bytes);
  const renamed = JSON.parse(JSON.stringify(avro.schema).replace('"name":"sequence_number"', '"name":"data_sequence_number"'));
  const recs = avro.records.map((r) => {
    const o = { ...(r as Record<string, unknown>) };
    o['data_sequence_number'] = o['sequence_number'];
    delete o['sequence_number'];
    return o;
  });
  const again = writeAvroFile(renamed, recs, avro.metadata, 'null');
  const e = decodeManifest(again).entries[0]!;
  assert.equal(e.sequenceNumber, 3n);
  assert.equal(e.fileSequenceNumber, 4n);
});

test('data file wire form survives JSON (Temporal history) exactly', () => {
  const df = file(5, { partition: { ...file(5).partition, f: Number.NaN, z: -0 } });
  const back = dataFileFromWire(JSON.parse(JSON.stringify(dataFileToWire(df))) as Record<string, unknown>);
  assert.deepEqual(back, df);
  assert.ok(Object.is(back.partition['z'], -0));
});

test('manifest streaming: entries from a generator span several Avro blocks; a metrics-free read skips only the metrics', () => {
  // 9,000 entries: three 4096-record blocks, produced lazily and read back lazily
  function* entries(): Generator<ManifestEntry> {
    for (let i = 0; i < 9000; i++)
      yield { status: ManifestEntryStatus.Existing, snapshotId: 7n, sequenceNumber: 3n, fileSequenceNumber: 3n, dataFile: file(i) };
  }
  const { bytes, manifest } = encodeManifest({ location: 'memory://m.avro', spec, schema, snapshotId: BIG, entries: entries() });
  assert.equal(manifest.existingFilesCount, 9000);
  const full = decodeManifest(bytes);
  assert.equal(full.entries.length, 9000);
  assert.deepEqual(full.entries[8999], [...entries()][8999]);
  const slim = decodeManifest(bytes, 'memory://m.avro', undefined, { metrics: false });
  assert.equal(slim.entries.length, 9000);
  for (const i of [0, 4095, 4096, 8999]) {
    const { columnSizes, valueCounts, nullValueCounts, nanValueCounts, lowerBounds, upperBounds, splitOffsets, ...identity } = file(i);
    void [columnSizes, valueCounts, nullValueCounts, nanValueCounts, lowerBounds, upperBounds, splitOffsets];
    assert.deepEqual(slim.entries[i]!.dataFile, identity, `entry ${i}: identity, partition, counts and sort order, no metrics`);
    assert.equal(slim.entries[i]!.sequenceNumber, 3n);
  }
});

test('a spec with two partition fields of one named Avro type (decimal, uuid, fixed) writes a valid manifest that reads back (found by the fuzzer)', () => {
  // identity + truncate of one decimal column, and two uuid columns: the partition record held
  // two definitions of `decimal_10_2` / `uuid_fixed`, which Avro refuses, so no commit of such a table landed
  const s2: Schema = {
    type: 'struct',
    'schema-id': 0,
    fields: [
      { id: 1, name: 'amount', required: false, type: 'decimal(10, 2)' },
      { id: 2, name: 'u', required: false, type: 'uuid' },
      { id: 3, name: 'v', required: false, type: 'uuid' },
    ],
  };
  const spec2: PartitionSpec = {
    'spec-id': 0,
    fields: [
      { 'source-id': 1, 'field-id': 1000, name: 'amount', transform: 'identity' },
      { 'source-id': 1, 'field-id': 1001, name: 'amount_trunc', transform: 'truncate[100]' },
      { 'source-id': 2, 'field-id': 1002, name: 'u', transform: 'identity' },
      { 'source-id': 3, 'field-id': 1003, name: 'v', transform: 'identity' },
    ],
  };
  const partition = {
    amount: toPartitionValue('decimal(10, 2)', '-12.34'),
    amount_trunc: toPartitionValue('decimal(10, 2)', '-13.00'),
    u: toPartitionValue('uuid', 'f79c3e09-677c-4bbd-a479-3f349cb785e7'),
    v: toPartitionValue('uuid', '00000000-0000-4000-8000-000000000001'),
  };
  const entries: ManifestEntry[] = [
    { status: ManifestEntryStatus.Added, snapshotId: 1n, sequenceNumber: null, fileSequenceNumber: null, dataFile: file(1, { partition }) },
  ];
  const { bytes, manifest } = encodeManifest({ location: 'memory://m.avro', spec: spec2, schema: s2, snapshotId: 1n, entries });
  assert.deepEqual(decodeManifest(bytes).entries, entries);
  assert.equal(manifest.partitions!.length, 4);
  // the later field of a type gets a name of its own (PyIceberg cannot read a type referenced by name)
  const fields = (readAvroFile(bytes).schema as unknown as { fields: Array<{ name: string; type: unknown }> }).fields;
  const df = fields.find((f) => f.name === 'data_file')!.type as { fields: Array<{ name: string; type: unknown }> };
  const part = df.fields.find((f) => f.name === 'partition')!.type as { fields: Array<{ name: string; type: unknown }> };
  assert.deepEqual(
    part.fields.map((f) => ((f.type as unknown[])[1] as { name: string }).name),
    ['decimal_10_2', 'decimal_10_2_1001', 'uuid_fixed', 'uuid_fixed_1003'],
  );
});
