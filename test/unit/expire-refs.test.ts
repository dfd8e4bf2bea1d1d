/**
 * Which snapshots expiry keeps on a table with tags and branches (iceberg/transaction/expire.ts
 * snapshotsToExpire), as the Iceberg spec's snapshot retention and Java's RemoveSnapshots decide:
 * a tag keeps its snapshot; a branch keeps its head and, per its own `min-snapshots-to-keep` and
 * `max-snapshot-age-ms` (else the call's retainLast and olderThan), its ancestors. The real-stack
 * version with refs PyIceberg made: test/integration/maintenance-refs.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newTableMetadata, snapshotsToExpire, type Snapshot, type SnapshotRef, type TableMetadata } from '../../iceberg';

/** main: 1 <- 2 <- 3 <- 4; branch b: 2 <- 10 <- 11 <- 12. Snapshot n is 100 - n minutes old at `NOW`. */
const NOW = 1_000_000_000n;
const MIN = 60_000n;
function table(refs: Record<string, Omit<SnapshotRef, 'type'> & { type?: SnapshotRef['type'] }>): TableMetadata {
  const snap = (id: number, parent: number | undefined): Snapshot => ({
    'snapshot-id': BigInt(id),
    ...(parent === undefined ? {} : { 'parent-snapshot-id': BigInt(parent) }),
    'sequence-number': BigInt(id),
    'timestamp-ms': NOW - (100n - BigInt(id)) * MIN,
    'manifest-list': `memory://t/metadata/snap-${id}.avro`,
    summary: { operation: 'append' },
  });
  const m = newTableMetadata({
    location: 'memory://t',
    schema: { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'id', required: true, type: 'long' }] },
    tableUuid: '00000000-0000-4000-8000-000000000001',
  });
  return {
    ...m,
    snapshots: [snap(1, undefined), snap(2, 1), snap(3, 2), snap(4, 3), snap(10, 2), snap(11, 10), snap(12, 11)],
    'current-snapshot-id': 4n,
    refs: Object.fromEntries(
      [['main', { 'snapshot-id': 4n }] as const, ...Object.entries(refs)].map(([k, r]) => [k, { type: 'branch', ...r }]),
    ),
  };
}
const kept = (m: TableMetadata, opts: Parameters<typeof snapshotsToExpire>[1]) =>
  snapshotsToExpire(m, opts, NOW)
    .retain.map((s) => Number(s['snapshot-id']))
    .sort((a, b) => a - b);

void test('a tag keeps its snapshot; a branch without retention settings keeps its head (retain last 1)', () => {
  const m = table({ audit: { 'snapshot-id': 3n, type: 'tag' }, b: { 'snapshot-id': 12n } });
  assert.deepEqual(kept(m, { olderThanMs: NOW, retainLast: 1 }), [3, 4, 12]);
});

void test('a branch keeps its min-snapshots-to-keep newest ancestors, whatever their age', () => {
  const m = table({ b: { 'snapshot-id': 12n, 'min-snapshots-to-keep': 3 } });
  assert.deepEqual(kept(m, { olderThanMs: NOW, retainLast: 1 }), [4, 10, 11, 12]);
});

void test('retain-last applies to every branch that sets no min-snapshots-to-keep of its own', () => {
  const m = table({ b: { 'snapshot-id': 12n } });
  assert.deepEqual(kept(m, { olderThanMs: NOW, retainLast: 2 }), [3, 4, 11, 12]);
});

void test('a branch keeps the ancestors younger than its max-snapshot-age-ms, past min-snapshots-to-keep', () => {
  // b's ancestors up to 98.5 min old stay (12, 11, 10 and its fork point 2, 98 min old); 1 goes.
  const m = table({ b: { 'snapshot-id': 12n, 'max-snapshot-age-ms': 98n * MIN + 30_000n } });
  assert.deepEqual(kept(m, { olderThanMs: NOW, retainLast: 1 }), [2, 4, 10, 11, 12]);
});

void test('snapshots younger than the cutoff stay, referenced or not', () => {
  const m = table({ b: { 'snapshot-id': 12n } });
  assert.deepEqual(kept(m, { olderThanMs: NOW - 98n * MIN, retainLast: 1 }), [2, 3, 4, 10, 11, 12]);
});
