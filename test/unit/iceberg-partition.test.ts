import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  isIcebergError,
  murmur3x86_32,
  applyTransform,
  bucketHash,
  partitionHumanString,
  partitionPath,
  MAX_PARTITION_SEGMENT_BYTES,
  partitionRecord,
  partitionType,
  transformResultType,
  type PartitionSpec,
  type Schema,
} from '../../iceberg';

const micros = (iso: string): bigint => BigInt(Date.parse(iso)) * 1000n;
const days = (iso: string): number => Date.parse(`${iso}T00:00:00Z`) / 86_400_000;

test('bucket hashes match the spec Appendix B test vectors', () => {
  assert.equal(bucketHash('int', 34), 2017239379);
  assert.equal(bucketHash('long', 34n), 2017239379);
  assert.equal(bucketHash('decimal(4, 2)', '14.20'), -500754589);
  assert.equal(bucketHash('date', days('2017-11-16')), -653330422);
  assert.equal(bucketHash('time', 81_068_000_000n), -662762989);
  assert.equal(bucketHash('timestamp', micros('2017-11-16T22:31:08Z')), -2047944441);
  assert.equal(bucketHash('timestamp', micros('2017-11-16T22:31:08Z') + 1n), -1207196810);
  assert.equal(bucketHash('timestamptz', micros('2017-11-16T14:31:08-08:00')), -2047944441);
  assert.equal(bucketHash('timestamp_ns', micros('2017-11-16T22:31:08Z') * 1000n + 1001n), -1207196810);
  assert.equal(bucketHash('string', 'iceberg'), 1210000089);
  assert.equal(bucketHash('uuid', 'f79c3e09-677c-4bbd-a479-3f349cb785e7'), 1488055340);
  assert.equal(bucketHash('fixed[4]', Uint8Array.of(0, 1, 2, 3)), -188683207);
  assert.equal(bucketHash('binary', Uint8Array.of(0, 1, 2, 3)), -188683207);
  // murmur3 tail handling (1 and 3 trailing bytes) against the SMHasher reference values
  assert.equal(murmur3x86_32(new Uint8Array(0)), 0);
  assert.equal(murmur3x86_32(new TextEncoder().encode('a')), 1009084850);
  assert.equal(murmur3x86_32(new TextEncoder().encode('abc')), 0xb3dd93fa | 0);
});

test('bucket[N] masks the sign bit before the modulo (PyIceberg/Java values)', () => {
  assert.equal(applyTransform('bucket[100]', 'int', 34), 79);
  assert.equal(applyTransform('bucket[100]', 'long', 34n), 79);
  assert.equal(applyTransform('bucket[100]', 'date', 17486), 26);
  assert.equal(applyTransform('bucket[16]', 'string', null), null);
});

test('truncate[W] per spec: floor for negatives, code points for strings, unscaled decimals', () => {
  assert.equal(applyTransform('truncate[10]', 'int', 1), 0);
  assert.equal(applyTransform('truncate[10]', 'int', -1), -10);
  assert.equal(applyTransform('truncate[10]', 'long', -1n), -10n);
  assert.equal(applyTransform('truncate[3]', 'string', 'iceberg'), 'ice');
  assert.equal(applyTransform('truncate[2]', 'string', '😀a😀'), '😀a');
  assert.deepEqual(applyTransform('truncate[3]', 'binary', Uint8Array.of(1, 2, 3, 4)), Uint8Array.of(1, 2, 3));
  // spec example: truncate[50] of 10.65 (unscaled 1065) -> 10.50 (unscaled 1050 = 0x041a)
  assert.deepEqual(applyTransform('truncate[50]', 'decimal(9, 2)', '10.65'), Uint8Array.of(0x04, 0x1a));
});

test('calendar transforms floor before the epoch and use the spec result types', () => {
  const ts = micros('2017-11-16T22:31:08Z');
  assert.equal(applyTransform('year', 'timestamp', ts), 47);
  assert.equal(applyTransform('month', 'timestamp', ts), 574);
  assert.equal(applyTransform('day', 'timestamptz', ts), 17486);
  assert.equal(applyTransform('hour', 'timestamp', ts), 419686);
  assert.equal(applyTransform('day', 'date', 17486), 17486);
  assert.equal(applyTransform('year', 'date', days('1969-12-31')), -1);
  assert.equal(applyTransform('month', 'date', days('1969-12-31')), -1);
  assert.equal(applyTransform('day', 'timestamp', -1n), -1);
  assert.equal(applyTransform('hour', 'timestamp', -1n), -1);
  assert.equal(applyTransform('day', 'timestamp_ns', -1n), -1);
  assert.equal(applyTransform('void', 'string', 'x'), null);
  assert.equal(transformResultType('day', 'timestamp'), 'date');
  assert.equal(transformResultType('bucket[4]', 'string'), 'int');
  assert.equal(transformResultType('truncate[4]', 'string'), 'string');
  assert.throws(
    () => transformResultType('hour', 'date'),
    (e: unknown) => isIcebergError(e, 'DataInvalid'),
  );
  assert.throws(
    () => transformResultType('bucket[4]', 'double'),
    (e: unknown) => isIcebergError(e, 'DataInvalid'),
  );
  assert.throws(
    () => applyTransform('zorder', 'int', 1),
    (e: unknown) => isIcebergError(e, 'FeatureUnsupported'),
  );
});

const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'ts', required: true, type: 'timestamptz' },
    {
      id: 3,
      name: 'geo',
      required: false,
      type: { type: 'struct', fields: [{ id: 4, name: 'country code', required: false, type: 'string' }] },
    },
  ],
};
const spec: PartitionSpec = {
  'spec-id': 0,
  fields: [
    { 'source-id': 2, 'field-id': 1000, name: 'ts_hour', transform: 'hour' },
    { 'source-id': 4, 'field-id': 1001, name: 'country code', transform: 'identity' },
    { 'source-id': 1, 'field-id': 1002, name: 'id_bucket', transform: 'bucket[8]' },
  ],
};

test('partitionRecord reads nested sources; partitionPath uses Java human strings, URL-encoded', () => {
  const row = { id: 34n, ts: micros('2017-11-16T22:31:08Z'), geo: { 'country code': 'a b/ü' } };
  const p = partitionRecord(spec, schema, row);
  assert.deepEqual(p, { ts_hour: 419686, 'country code': 'a b/ü', id_bucket: (2017239379 & 0x7fffffff) % 8 });
  assert.equal(partitionPath(spec, schema, p), `ts_hour=2017-11-16-22/country+code=a+b%2F%C3%BC/id_bucket=${p['id_bucket']}`);
  assert.equal(
    partitionPath(spec, schema, partitionRecord(spec, schema, { id: 1n, ts: 0n, geo: null })).split('/')[1],
    'country+code=null',
  );
  assert.deepEqual(
    partitionType(spec, schema).fields.map((f) => [f.id, f.type, f.required]),
    [
      [1000, 'int', false],
      [1001, 'string', false],
      [1002, 'int', false],
    ],
  );
  assert.equal(partitionHumanString('month', 'date', 574), '2017-11');
  assert.equal(partitionHumanString('day', 'date', 17486), '2017-11-16');
  assert.equal(partitionHumanString('identity', 'timestamptz', micros('2017-11-16T22:31:08Z') + 1n), '2017-11-16T22:31:08.000001+00:00');
  assert.throws(
    () => partitionRecord(spec, schema, { id: 'x', ts: 0n }),
    (e: unknown) => isIcebergError(e, 'DataInvalid') && /expected/.test(e.message),
  );
});

void test('long partition values make short path segments: 300 "é", 5,000 "x", truncate[W], binary identity (ENAMETOOLONG / S3 key limit)', () => {
  const sch: Schema = {
    type: 'struct',
    'schema-id': 0,
    fields: [
      { id: 1, name: 's', type: 'string', required: false },
      { id: 2, name: 'b', type: 'binary', required: false },
    ],
  };
  const sp = (fields: PartitionSpec['fields']): PartitionSpec => ({ 'spec-id': 0, fields });
  const identity = sp([{ 'source-id': 1, 'field-id': 1000, name: 's', transform: 'identity' }]);
  const trunc = sp([{ 'source-id': 1, 'field-id': 1000, name: 's_trunc', transform: 'truncate[4000]' }]);
  const bin = sp([{ 'source-id': 2, 'field-id': 1000, name: 'b', transform: 'identity' }]);
  const wide = sp(
    Array.from({ length: 6 }, (_, i) => ({ 'source-id': 1, 'field-id': 1000 + i, name: `s${i}`, transform: 'identity' as const })),
  );
  const accents = 'é'.repeat(300);
  const xs = 'x'.repeat(5000);
  for (const [spec, row] of [
    [identity, { s: accents }],
    [identity, { s: xs }],
    [trunc, { s: xs }],
    [bin, { b: new Uint8Array(3000).fill(7) }],
    [wide, { s: xs }],
  ] as const) {
    const path = partitionPath(spec, sch, partitionRecord(spec, sch, row));
    for (const seg of path.split('/'))
      assert.ok(Buffer.byteLength(seg) <= MAX_PARTITION_SEGMENT_BYTES, `${seg.length}: ${seg.slice(0, 40)}`);
    assert.ok(path.length <= 1024 - 200, `path of ${path.length} bytes`);
    assert.match(path, /^[a-z_0-9]+=/);
  }
  // Shortened values keep a readable prefix (never cut inside an escape) and distinct hashes.
  const a = partitionPath(identity, sch, { s: accents });
  const b = partitionPath(identity, sch, { s: `${accents}!` });
  assert.match(a, /^s=(%C3%A9)+-[0-9a-f]{8}$/);
  assert.notEqual(a, b);
  // Short values are unchanged (what Java writes).
  assert.equal(partitionPath(identity, sch, { s: 'a b' }), 's=a+b');
});

void test('location provider: write.data.path, object-storage hashed prefixes (PyIceberg/Java vectors), partitioned-paths=false', async () => {
  const { locationProvider, objectStorageHash } = await import('../../iceberg');
  const base = { location: 's3://b/wh/db/t/', properties: {} as Record<string, string> };
  assert.equal(locationProvider(base).newDataLocation('f.parquet', 'day=2026-01-01'), 's3://b/wh/db/t/data/day=2026-01-01/f.parquet');
  assert.equal(locationProvider(base).newDataLocation('f.parquet'), 's3://b/wh/db/t/data/f.parquet');
  const custom = { ...base, properties: { 'write.data.path': 's3://other/x/' } };
  assert.equal(locationProvider(custom).newDataLocation('f.parquet', 'r=eu'), 's3://other/x/r=eu/f.parquet');
  // Computed by PyIceberg 0.12's ObjectStoreLocationProvider._compute_hash (the stack's venv).
  assert.equal(objectStorageHash('region=eu/f-00000.parquet'), '0100/1010/0100/11000011');
  const hashed = { ...base, properties: { 'write.object-storage.enabled': 'true' } };
  assert.equal(
    locationProvider(hashed).newDataLocation('f-00000.parquet', 'region=eu'),
    's3://b/wh/db/t/data/0100/1010/0100/11000011/region=eu/f-00000.parquet',
  );
  const flat = { ...base, properties: { 'write.object-storage.enabled': 'true', 'write.object-storage.partitioned-paths': 'false' } };
  assert.match(
    locationProvider(flat).newDataLocation('f.parquet', 'region=eu'),
    /^s3:\/\/b\/wh\/db\/t\/data\/[01]{4}\/[01]{4}\/[01]{4}\/[01]{8}-f\.parquet$/,
  );
});
