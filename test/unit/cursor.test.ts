import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  allCursors,
  carryLegacyCursors,
  cursorProperty,
  findCommit,
  formatOffsets,
  landedCommit,
  legacyCursors,
  maxOffsets,
  parseOffsets,
  readCursor,
  readDeadLetterCursor,
  deadLetterCursorProperty,
} from '../../table/cursor';
import type { Snapshot, TableMetadata } from '../../iceberg';
import { reportedTopicId } from '../../ingest/topic-ids';

const snap = (id: bigint, parent: bigint | undefined, summary: Record<string, string>): Snapshot => ({
  'snapshot-id': id,
  ...(parent === undefined ? {} : { 'parent-snapshot-id': parent }),
  'sequence-number': id,
  'timestamp-ms': 1000n + id,
  'manifest-list': `s3://b/m/${id}.avro`,
  summary: { operation: 'append', ...summary },
});
const BIG = 2n ** 62n + 12345n; // beyond 2^53: must survive as bigint

const meta = (snapshots: Snapshot[], head: bigint): TableMetadata => ({
  'format-version': 2,
  'table-uuid': 'u',
  location: 's3://b/t',
  'last-sequence-number': 10n,
  'last-updated-ms': 0n,
  'last-column-id': 1,
  schemas: [],
  'current-schema-id': 0,
  'partition-specs': [],
  'default-spec-id': 0,
  'last-partition-id': 999,
  properties: {},
  'current-snapshot-id': head,
  snapshots,
  'snapshot-log': [],
  'metadata-log': [],
  'sort-orders': [],
  'default-sort-order-id': 0,
  refs: { main: { 'snapshot-id': head, type: 'branch' } },
});

describe('ingest cursor in snapshot summaries', () => {
  const m = meta(
    [
      snap(1n, undefined, { 'floe.ingest-id': 'main', 'floe.offsets': '{"0":"10"}', 'floe.commit-id': 'c1' }),
      snap(2n, 1n, { 'floe.ingest-id': 'other', 'floe.offsets': '{"0":"5"}', 'floe.commit-id': 'c2' }),
      snap(BIG, 2n, { 'floe.ingest-id': 'main', 'floe.offsets': '{"0":"20","1":"9007199254740993"}', 'floe.commit-id': 'c3' }),
      snap(4n, BIG, { operation: 'replace' }),
      snap(5n, 4n, { 'floe.ingest-id': 'main', 'floe.offsets': '{"0":"99"}', 'floe.commit-id': 'dangling' }), // not on main
    ],
    4n,
  );

  it('reads the newest legacy (summary-only) cursor of an ingest id across a compaction snapshot', () => {
    assert.deepEqual(readCursor(m, 'main'), {
      snapshotId: BIG.toString(),
      commitId: 'c3',
      topic: null,
      offsets: { 0: '20', 1: '9007199254740993' },
    });
    assert.deepEqual(readCursor(m, 'other'), { snapshotId: '2', commitId: 'c2', topic: null, offsets: { 0: '5' } });
    assert.deepEqual(readCursor(m, 'new'), { snapshotId: null, commitId: null, topic: null, offsets: {} });
  });
  it('finds commits only on the main ancestry', () => {
    assert.equal(findCommit(m, 'c1')?.['snapshot-id'], 1n);
    assert.equal(findCommit(m, 'dangling'), undefined);
  });
  it('carries every legacy cursor into a table property (what expiry commits before cutting history)', () => {
    assert.deepEqual([...legacyCursors(m).keys()].sort(), ['main', 'other']);
    const carried: TableMetadata = { ...m, properties: carryLegacyCursors(m), snapshots: [m.snapshots[3]!], 'current-snapshot-id': 4n };
    // With history cut to the compaction head, the carried cursors still read the same.
    assert.deepEqual(readCursor(carried, 'main'), readCursor(m, 'main'));
    assert.deepEqual(readCursor(carried, 'other'), readCursor(m, 'other'));
    assert.deepEqual(carryLegacyCursors(carried), {}, 'nothing left to carry');
  });
  it('formats offsets stably and rejects bad ones', () => {
    assert.equal(formatOffsets({ 10: '1', 2: '3' }), '{"2":"3","10":"1"}');
    assert.throws(() => parseOffsets('{"0": 5}'), /bad entry 0/);
    assert.throws(() => parseOffsets('[]'), /not a JSON object/);
  });
});

describe('ingest cursor as a table property', () => {
  const head = meta([snap(7n, undefined, { operation: 'replace' })], 7n);
  const withCursor = (props: Record<string, string>): TableMetadata => ({ ...head, properties: props });

  it('a cursor whose snapshots were all expired is still read, bound to its topic (expiry cannot hide it)', () => {
    const m = withCursor(
      cursorProperty('b1', {
        snapshotId: BIG.toString(),
        commitId: 'k1',
        topic: 'orders',
        offsets: { 1: '9007199254740993', 0: '4' },
        range: { from: { 0: '0', 1: '0' }, to: { 0: '4', 1: '9007199254740993' } },
      }),
    );
    const c = readCursor(m, 'b1');
    assert.equal(c.snapshotId, BIG.toString());
    assert.equal(c.topic, 'orders');
    assert.deepEqual(c.offsets, { 0: '4', 1: '9007199254740993' });
    assert.deepEqual(c.range?.to, { 0: '4', 1: '9007199254740993' });
    assert.deepEqual([...allCursors(m).keys()], ['b1']);
  });
  it('the property wins over an older summary cursor of the same ingest id', () => {
    const m: TableMetadata = {
      ...meta([snap(1n, undefined, { 'floe.ingest-id': 'main', 'floe.offsets': '{"0":"10"}', 'floe.commit-id': 'c1' })], 1n),
      properties: cursorProperty('main', { snapshotId: '1', commitId: 'c9', topic: 't', offsets: { 0: '99' } }),
    };
    assert.equal(readCursor(m, 'main').offsets['0'], '99');
    assert.equal(legacyCursors(m).size, 0);
  });
  it('a retried commit is found through the cursor even when its snapshot is gone', () => {
    const m = withCursor(cursorProperty('main', { snapshotId: '42', commitId: 'c-last', topic: 't', offsets: { 0: '1' } }));
    assert.equal(landedCommit(m, 'main', 'c-last'), '42');
    assert.equal(landedCommit(m, 'main', 'c-other'), null);
  });
  it('dead-letter cursor round-trips and merges offsets per partition as bigints', () => {
    const m = withCursor(deadLetterCursorProperty('main', 't', { offsets: { 0: '5' }, commitId: 'd1' }));
    assert.deepEqual(readDeadLetterCursor(m, 'main'), { offsets: { 0: '5' }, commitId: 'd1' });
    assert.deepEqual(readDeadLetterCursor(m, 'x'), { offsets: {}, commitId: null });
    assert.deepEqual(maxOffsets({ 0: '9', 1: '9007199254740993' }, { 0: '10', 1: '9007199254740992', 2: '1' }), {
      0: '10',
      1: '9007199254740993',
      2: '1',
    });
  });
  it("the topic's Kafka id rides with the cursor; a cursor written before topic ids reads as none", () => {
    const id = '5eded856-ed95-4a88-ac3a-a64b6380d494';
    const m = withCursor(cursorProperty('main', { snapshotId: '3', commitId: 'c3', topic: 't', topicId: id, offsets: { 0: '7' } }));
    assert.equal(readCursor(m, 'main').topicId, id);
    assert.match(m.properties['floe.cursor.main']!, /"topic-id":"5eded856-/);
    const old = withCursor(cursorProperty('main', { snapshotId: '3', commitId: 'c3', topic: 't', offsets: { 0: '7' } }));
    assert.doesNotMatch(old.properties['floe.cursor.main']!, /topic-id/);
    assert.equal(readCursor(old, 'main').topicId ?? null, null);
  });
  it('a cluster without topic ids reports none: the null id, or (Metadata v8 and older) the name in its place', () => {
    assert.equal(reportedTopicId('t', '5eded856-ed95-4a88-ac3a-a64b6380d494'), '5eded856-ed95-4a88-ac3a-a64b6380d494');
    assert.equal(reportedTopicId('t', '00000000-0000-0000-0000-000000000000'), null);
    assert.equal(reportedTopicId('t', 'AAAAAAAAAAAAAAAAAAAAAA'), null);
    assert.equal(reportedTopicId('orders', 'orders'), null);
    assert.equal(reportedTopicId('t', undefined), null);
  });
  it('a malformed cursor property fails naming the key', () => {
    assert.throws(() => readCursor(withCursor({ 'floe.cursor.main': '{oops' }), 'main'), /floe\.cursor\.main is not JSON/);
  });
});
