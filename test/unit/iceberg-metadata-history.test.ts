/**
 * Commit cost that must not grow with a table's history (issue 11): metadata.json is written from
 * cached per-record JSON of the frozen history records (snapshots, snapshot-log, metadata-log),
 * the fast lossless parser keeps 64-bit ids exact, and the SQL catalog reuses the metadata it read
 * or committed while the catalog row still names that file.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import {
  SqlCatalog,
  SqliteDialect,
  withPreviousMetadata,
  applyUpdates,
  LocalFileIO,
  encodeTableMetadata,
  newTableMetadata,
  parseIcebergJson,
  parseTableMetadata,
  serializeTableMetadata,
  stringifyIcebergJson,
  withFrozenHistory,
  type FileIO,
  type Snapshot,
  type TableMetadata,
  type TableUpdate,
} from '../../iceberg';

const schema = { type: 'struct' as const, 'schema-id': 0, fields: [{ id: 1, name: 'id', required: false, type: 'long' as const }] };
const fresh = (): TableMetadata =>
  newTableMetadata({
    location: 'file:///wh/t',
    schema,
    tableUuid: randomUUID(),
    properties: { 'write.metadata.previous-versions-max': '3' },
  });

// ids above 2^53 (Java/PyIceberg pick random 63-bit ones)
const BIG = 9223372036854775807n;
const snap = (m: TableMetadata, id: bigint): Snapshot => {
  const parent = m['current-snapshot-id'] ?? undefined;
  return {
    'snapshot-id': id,
    ...(parent === undefined ? {} : { 'parent-snapshot-id': parent }),
    'sequence-number': m['last-sequence-number'] + 1n,
    'timestamp-ms': m['last-updated-ms'] + 1n,
    'manifest-list': `${m.location}/metadata/snap-${id}-1-x.avro`,
    summary: { operation: 'append', 'floe.commit-id': `c-${id}`, 'added-records': '100' },
    'schema-id': 0,
  };
};
const append = (m: TableMetadata, id: bigint): TableMetadata => {
  const updates: TableUpdate[] = [
    { action: 'add-snapshot', snapshot: snap(m, id) },
    { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': id },
  ];
  const applied = applyUpdates(m, updates, m['last-updated-ms'] + 1n);
  // as a catalog stages a commit (stage.ts)
  return withFrozenHistory(
    withPreviousMetadata(applied, { location: `${m.location}/metadata/v${id}.metadata.json`, lastUpdatedMs: m['last-updated-ms'] })
      .metadata,
  );
};

/** The same metadata without frozen records: serialized the uncached way. */
const unfrozen = (m: TableMetadata): TableMetadata => structuredClone(m);

void test('serialized metadata is canonical compact JSON, identical with and without cached records', () => {
  let m = fresh();
  for (let i = 1n; i <= 20n; i++) {
    m = append(m, BIG - i);
    const text = serializeTableMetadata(m);
    assert.equal(text, serializeTableMetadata(unfrozen(m)), `commit ${i}: cached and uncached serialization agree`);
    assert.equal(stringifyIcebergJson(parseIcebergJson(text)), text, 'what a plain lossless stringify of the same tree writes');
    assert.deepEqual(parseTableMetadata(text), m);
    assert.equal(new TextDecoder().decode(encodeTableMetadata(m)), text);
  }
  assert.equal(m.snapshots.length, 20);
  assert.equal(m['metadata-log'].length, 3, 'previous-versions-max 3');
  assert.match(serializeTableMetadata(m), new RegExp(`"snapshot-id":${BIG - 20n}[,}]`), '64-bit ids written as plain numbers');
});

void test('history records are frozen after parse and after staging; the caller keeps its own objects', () => {
  const m0 = append(fresh(), 1n);
  const mine = snap(m0, BIG);
  const m1 = applyUpdates(
    m0,
    [
      { action: 'add-snapshot', snapshot: mine },
      { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': BIG },
    ],
    m0['last-updated-ms'] + 1n,
  );
  const staged = withFrozenHistory(m1);
  assert.notEqual(staged, m1, 'a copy, as some records were not frozen');
  assert.equal(withFrozenHistory(staged), staged, 'nothing to do the second time');
  assert.equal(Object.isFrozen(mine), false, "the caller's snapshot is cloned, not frozen");
  assert.equal(Object.isFrozen(m1.snapshots.at(-1)), false);
  for (const m of [staged, parseTableMetadata(serializeTableMetadata(m1))]) {
    const last = m.snapshots.at(-1)!;
    assert.deepEqual(last, mine);
    assert.ok(Object.isFrozen(last) && Object.isFrozen(last.summary));
    assert.ok(Object.isFrozen(m['snapshot-log'].at(-1)) && Object.isFrozen(m['metadata-log'].at(-1)));
    assert.throws(() => {
      (last.summary as Record<string, string>)['added-records'] = '1';
    }, TypeError);
    assert.equal(Object.isFrozen(m.snapshots), false, 'the lists themselves stay ordinary arrays');
  }
  assert.equal(serializeTableMetadata(staged), serializeTableMetadata(m1));
});

void test('two different commits on one base (a retried CAS) and the base itself keep their own bytes', () => {
  let base = fresh();
  for (let i = 1n; i <= 5n; i++) base = append(base, 100n + i);
  const baseText = serializeTableMetadata(base);
  const x = append(base, 201n);
  const y = append(base, 202n);
  const xText = serializeTableMetadata(x); // appended in place after the base's bytes
  const yText = serializeTableMetadata(y); // same prefix, different record: must not overwrite x's
  for (const [m, text] of [
    [x, xText],
    [y, yText],
    [base, baseText],
    [append(x, 301n), undefined],
    [append(y, 302n), undefined],
  ] as const) {
    const now = serializeTableMetadata(m);
    assert.equal(now, serializeTableMetadata(unfrozen(m)));
    if (text !== undefined) assert.equal(now, text);
  }
  assert.match(xText, /"snapshot-id":201[,}]/);
  assert.doesNotMatch(xText, /"snapshot-id":202[,}]/);
  assert.match(yText, /"snapshot-id":202[,}]/);
});

void test('remove-snapshots and a trimmed metadata log serialize exactly like a fresh tree', () => {
  let m = fresh();
  for (let i = 1n; i <= 10n; i++) m = append(m, 1000n + i);
  serializeTableMetadata(m); // every record cached
  const expired = applyUpdates(m, [{ action: 'remove-snapshots', 'snapshot-ids': [1001n, 1002n, 1003n] }], m['last-updated-ms'] + 1n);
  assert.equal(expired.snapshots.length, 7);
  assert.equal(serializeTableMetadata(expired), serializeTableMetadata(unfrozen(expired)));
  const v1 = { ...m, 'format-version': 1 as const, extra: { a: [1, 2n] } } as TableMetadata;
  const text = serializeTableMetadata(v1);
  assert.equal(text, serializeTableMetadata(unfrozen(v1)));
  const o = parseIcebergJson(text) as Record<string, unknown>;
  assert.ok(o['schema'] && o['partition-spec'], 'v1 legacy fields');
  assert.deepEqual(
    o['extra'],
    { a: [1, 2] },
    'unknown keys are written after the known ones (a small bigint outside LONG_KEYS reads back as a number)',
  );
  assert.deepEqual(Object.keys(o).slice(-1), ['extra']);
});

void test('the lossless parser: long integers outside strings only, escapes and backslashes honoured', () => {
  const text =
    '{"a":"x\\\\","snapshot-id":9223372036854775807,"b":"\\"1234567890123456789","c":-1234567890123456789,' +
    '"snapshot-ids":[1234567890123456789,5],"d":"\\\\\\"9007199254740993\\\\","e":1.2345678901234567,"f":12,' +
    '"g":"snap-1234567890123456789-1.avro","sequence-number":7,"h":[{"timestamp-ms":1700000000000}],"i":null}';
  const o = parseIcebergJson(text) as Record<string, unknown>;
  assert.deepEqual(o, {
    a: 'x\\',
    'snapshot-id': 9223372036854775807n,
    b: '"1234567890123456789',
    c: -1234567890123456789n,
    'snapshot-ids': [1234567890123456789n, 5n],
    d: '\\"9007199254740993\\',
    e: 1.2345678901234567,
    f: 12,
    g: 'snap-1234567890123456789-1.avro',
    'sequence-number': 7n,
    h: [{ 'timestamp-ms': 1700000000000n }],
    i: null,
  });
  // a literal \u0000 escape in the text takes the lossless-json path: same result
  const withNul = text.replace('"i":null', '"i":"\\u0000big:1"');
  assert.deepEqual(parseIcebergJson(withNul), { ...o, i: '\u0000big:1' });
  assert.equal(parseIcebergJson('12345678901234567890'), 12345678901234567890n);
  assert.throws(() => parseIcebergJson('{"a":"unterminated'), SyntaxError);
});

/** A FileIO that counts reads of metadata.json files. */
const counting = (io: FileIO): { io: FileIO; reads: () => number } => {
  let reads = 0;
  const wrapped = Object.create(io) as FileIO;
  wrapped.read = (location: string) => {
    if (location.endsWith('.metadata.json')) reads++;
    return io.read(location);
  };
  return { io: wrapped, reads: () => reads };
};

const root = mkdtempSync(join(tmpdir(), 'floe-history-'));
after(() => rmSync(root, { recursive: true, force: true }));

void test('SqlCatalog: loads and commits reuse the metadata it read or wrote; another writer is seen', async () => {
  const db = join(root, 'cat.db');
  const warehouse = pathToFileURL(join(root, 'wh')).href;
  const a = counting(new LocalFileIO());
  const b = counting(new LocalFileIO());
  const catA = new SqlCatalog({ name: 'c', dialect: new SqliteDialect({ path: db }), io: a.io, warehouse });
  const catB = new SqlCatalog({ name: 'c', dialect: new SqliteDialect({ path: db }), io: b.io, warehouse });
  try {
    const id = { namespace: ['n'], name: 't' };
    await catA.createNamespace(['n']);
    await catA.createTable(
      id,
      newTableMetadata({
        location: `${warehouse}/n/t`,
        schema,
        tableUuid: randomUUID(),
        properties: { 'write.metadata.previous-versions-max': '2', 'write.metadata.delete-after-commit.enabled': 'true' },
      }),
    );
    const commit = async (cat: SqlCatalog, sid: bigint) => {
      const t = await cat.loadTable(id);
      return cat.commitTable(
        id,
        [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': t.metadata['current-snapshot-id'] ?? null }],
        [
          { action: 'add-snapshot', snapshot: snap(t.metadata, sid) },
          { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': sid },
        ],
      );
    };
    for (let i = 1n; i <= 5n; i++) await commit(catA, BIG - i);
    assert.equal(a.reads(), 0, 'five loads and commits without reading a metadata.json');

    // another catalog (another process) commits: A's row now names a file A never read
    const byB = await commit(catB, 42n);
    assert.equal(b.reads(), 1, 'B parsed the current file once');
    const seen = await catA.loadTable(id);
    assert.equal(a.reads(), 1);
    assert.equal(seen.metadataLocation, byB.metadataLocation);
    assert.deepEqual(seen.metadata, byB.metadata, 'what A parsed is what B committed');
    await commit(catA, 43n);
    assert.equal(a.reads(), 1, 'A committed on what it had just read');
    const last = await catB.loadTable(id);
    assert.deepEqual(
      last.metadata.snapshots.map((s) => s['snapshot-id']),
      [BIG - 1n, BIG - 2n, BIG - 3n, BIG - 4n, BIG - 5n, 42n, 43n],
    );
    assert.equal(last.metadata['metadata-log'].length, 2);
    // a CAS based on stale metadata still loses: the row, not the cache, decides
    const stale = await catA.loadTable(id);
    await commit(catB, 44n);
    await assert.rejects(
      catA.commitTable(
        id,
        [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': stale.metadata['current-snapshot-id'] ?? null }],
        [{ action: 'set-properties', updates: { x: '1' } }],
      ),
      /CommitConflict|requirement failed/,
    );
  } finally {
    await catA.close();
    await catB.close();
  }
});
