import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  isIcebergError,
  metadataFileLocation,
  newTableMetadata,
  parseIcebergJson,
  parseTableMetadata,
  serializeTableMetadata,
  applyUpdates,
  checkRequirements,
  type Schema,
  type Snapshot,
  type TableMetadata,
} from '../../iceberg';

const fixture = (name: string): string => readFileSync(join(__dirname, '..', 'fixtures', 'iceberg', name), 'utf8');

test('v2 metadata: 64-bit ids above 2^53 survive parse -> serialize -> parse bit-exactly', () => {
  const text = fixture('TableMetadataV2Valid.json');
  const m = parseTableMetadata(text);
  assert.equal(m['current-snapshot-id'], 3055729675574597004n);
  assert.equal(m.snapshots[1]!['parent-snapshot-id'], 3051729675574597004n);
  assert.equal(m.refs['audit']!['max-ref-age-ms'], 9223372036854775807n);
  assert.equal(m['last-sequence-number'], 34n);
  assert.equal(typeof m['last-column-id'], 'number');
  assert.equal(typeof m.schemas[1]!.fields[0]!.id, 'number');
  const out = serializeTableMetadata(m);
  assert.match(out, /"current-snapshot-id":3055729675574597004[,}]/);
  assert.match(out, /"max-ref-age-ms":9223372036854775807/);
  assert.doesNotMatch(out, /"3055729675574597004"/); // numbers, not strings
  assert.deepEqual(parseTableMetadata(out), m);
  // Every key of the input survives (spec-valid output, nothing silently dropped).
  const a = parseIcebergJson(text) as Record<string, unknown>;
  const b = parseIcebergJson(out) as Record<string, unknown>;
  assert.deepEqual(Object.keys(b).sort(), Object.keys(a).sort());
  assert.deepEqual(b, a);
});

test('v2 metadata with legacy "schema" and -1 current snapshot is normalised', () => {
  const m = parseTableMetadata(fixture('TableMetadataV2LegacySchema.json'));
  assert.equal(m.schemas.length, 1);
  assert.equal(m.schemas[0]!['schema-id'], 0);
  assert.equal(m['current-schema-id'], 0);
  assert.equal(m['last-partition-id'], 1000);
  assert.equal(m['current-snapshot-id'], null);
  const out = JSON.parse(serializeTableMetadata(m)) as Record<string, unknown>;
  assert.equal(out['current-snapshot-id'], -1);
  assert.equal(out['schema'], undefined);
  assert.ok(Array.isArray(out['schemas']));
});

test('v1 metadata is readable and written back with its legacy fields', () => {
  const m = parseTableMetadata(fixture('TableMetadataV1Valid.json'));
  assert.equal(m['format-version'], 1);
  assert.equal(m['last-sequence-number'], 0n);
  assert.deepEqual(m['partition-specs'], [
    { 'spec-id': 0, fields: [{ name: 'x', transform: 'identity', 'source-id': 1, 'field-id': 1000 }] },
  ]);
  const out = JSON.parse(serializeTableMetadata(m)) as Record<string, unknown>;
  assert.ok(out['schema'] && out['partition-spec']);
});

test('format-version 4 is refused with expected/found', () => {
  assert.throws(
    () => parseTableMetadata('{"format-version":4}'),
    (e: unknown) => isIcebergError(e, 'FeatureUnsupported') && /expected 1, 2 or 3, found 4/.test(e.message),
  );
});

test('metadataFileLocation pads the version to five digits', () => {
  assert.equal(metadataFileLocation('s3://b/t/', 7, 'u-1'), 's3://b/t/metadata/00007-u-1.metadata.json');
});

const schema: Schema = {
  type: 'struct',
  'schema-id': 7,
  fields: [
    { id: 10, name: 'id', required: true, type: 'long' },
    { id: 11, name: 'loc', required: false, type: { type: 'struct', fields: [{ id: 20, name: 'lat', required: false, type: 'double' }] } },
    { id: 12, name: 'tags', required: false, type: { type: 'list', 'element-id': 30, element: 'string', 'element-required': false } },
    { id: 13, name: 'ts', required: true, type: 'timestamptz' },
  ],
};

test('newTableMetadata assigns fresh ids like Java (struct fields first, then nested)', () => {
  const m = newTableMetadata({
    location: 'memory://wh/db/t',
    schema,
    tableUuid: 'uuid-1',
    nowMs: 1000n,
    spec: { 'spec-id': 5, fields: [{ 'source-id': 13, 'field-id': 1, name: 'ts_day', transform: 'day' }] },
    properties: { a: 'b' },
  });
  const s = m.schemas[0]!;
  assert.deepEqual(
    s.fields.map((f) => f.id),
    [1, 2, 3, 4],
  );
  assert.equal((s.fields[1]!.type as { fields: Array<{ id: number }> }).fields[0]!.id, 5);
  assert.equal((s.fields[2]!.type as { 'element-id': number })['element-id'], 6);
  assert.equal(m['last-column-id'], 6);
  assert.deepEqual(m['partition-specs'], [
    { 'spec-id': 0, fields: [{ 'source-id': 4, 'field-id': 1000, name: 'ts_day', transform: 'day' }] },
  ]);
  assert.equal(m['last-partition-id'], 1000);
  assert.deepEqual(m['sort-orders'], [{ 'order-id': 0, fields: [] }]);
  assert.deepEqual(parseTableMetadata(serializeTableMetadata(m)), m);
});

const snap = (id: bigint, parent: bigint | undefined, seq: bigint, ts: bigint): Snapshot => ({
  'snapshot-id': id,
  ...(parent === undefined ? {} : { 'parent-snapshot-id': parent }),
  'sequence-number': seq,
  'timestamp-ms': ts,
  'manifest-list': `memory://ml-${id}.avro`,
  summary: { operation: 'append' },
});

test('applyUpdates: add-snapshot + set main ref move current, log and sequence numbers', () => {
  const base = newTableMetadata({ location: 'memory://t', schema, tableUuid: 'u', nowMs: 1000n });
  const big = (1n << 62n) + 12345n;
  const m1 = applyUpdates(
    base,
    [
      { action: 'add-snapshot', snapshot: snap(big, undefined, 1n, 2000n) },
      { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': big },
    ],
    1500n,
  );
  assert.equal(m1['current-snapshot-id'], big);
  assert.equal(m1['last-sequence-number'], 1n);
  assert.equal(m1['last-updated-ms'], 2000n);
  assert.deepEqual(m1['snapshot-log'], [{ 'timestamp-ms': 2000n, 'snapshot-id': big }]);
  assert.equal(base.snapshots.length, 0, 'base must not be mutated');

  // Stale sequence number on a child snapshot is refused (spec v2 rule).
  assert.throws(
    () => applyUpdates(m1, [{ action: 'add-snapshot', snapshot: snap(5n, big, 1n, 3000n) }], 3000n),
    (e: unknown) => isIcebergError(e, 'CommitConflict'),
  );

  const m2 = applyUpdates(
    m1,
    [
      { action: 'add-snapshot', snapshot: snap(2n, big, 2n, 3000n) },
      { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': 2n },
      { action: 'add-snapshot', snapshot: snap(3n, 2n, 3n, 4000n) },
      { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': 3n },
      { action: 'set-snapshot-ref', 'ref-name': 'keep', type: 'tag', 'snapshot-id': 2n },
      { action: 'set-properties', updates: { x: '1', y: '2' } },
      { action: 'remove-properties', removals: ['y'] },
    ],
    5000n,
  );
  assert.equal(m2['last-sequence-number'], 3n);
  assert.equal(m2['last-updated-ms'], 5000n);
  assert.deepEqual(m2.properties, { x: '1' });
  assert.deepEqual(
    m2['snapshot-log'].map((e) => e['snapshot-id']),
    [big, 2n, 3n],
  );

  // remove-snapshots prunes the log (prefix up to the last removed entry) and dangling refs.
  const m3 = applyUpdates(m2, [{ action: 'remove-snapshots', 'snapshot-ids': [big, 2n] }], 6000n);
  assert.deepEqual(
    m3.snapshots.map((s) => s['snapshot-id']),
    [3n],
  );
  assert.deepEqual(
    m3['snapshot-log'].map((e) => e['snapshot-id']),
    [3n],
  );
  assert.deepEqual(Object.keys(m3.refs), ['main']);
  assert.equal(m3['current-snapshot-id'], 3n);
});

test('checkRequirements: mismatches are retryable CommitConflicts with expected/found', () => {
  const m: TableMetadata = newTableMetadata({ location: 'memory://t', schema, tableUuid: 'u', nowMs: 1n });
  checkRequirements(m, [
    { type: 'assert-table-uuid', uuid: 'u' },
    { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': null },
  ]);
  assert.throws(
    () => checkRequirements(m, [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': 9n }]),
    (e: unknown) => isIcebergError(e, 'CommitConflict') && e.retryable && e.context['expected'] === 9n && e.context['found'] === 'no ref',
  );
  assert.throws(
    () => checkRequirements(m, [{ type: 'assert-current-schema-id', 'current-schema-id': 3 }]),
    (e: unknown) => isIcebergError(e, 'CommitConflict') && /expected 3, found 0/.test(e.message),
  );
  assert.throws(
    () => checkRequirements(m, [{ type: 'assert-create' }]),
    (e: unknown) => isIcebergError(e, 'AlreadyExists'),
  );
  checkRequirements(undefined, [{ type: 'assert-create' }]);
  assert.throws(
    () => checkRequirements(undefined, [{ type: 'assert-table-uuid', uuid: 'u' }]),
    (e: unknown) => isIcebergError(e, 'NotFound'),
  );
});
