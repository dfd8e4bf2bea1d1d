/**
 * Upsert and CDC table entries (issue 31): what a record says about its key (ingest/upsert/changes.ts
 * `compileChanges`: the new row, or the deletion of a key) in mode upsert and in mode cdc with
 * Debezium's envelope and its flattened form; and how one poll's changes resolve against the key
 * index (ingest/upsert/change-buffer.ts `ChangeBuffer`), here against a fake index of known rows.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ColumnConfig, TableConfig } from '../../config';
import type { KafkaRecord, Row } from '../../ingest/decode';
import { DecodeError, DecoderConfigError } from '../../ingest/formats/errors';
import { compileChanges, type Change } from '../../ingest/upsert/changes';
import { ChangeBuffer } from '../../ingest/upsert/change-buffer';
import type { KeyIndex } from '../../ingest/upsert/key-index';

type Entry = Pick<TableConfig, 'table' | 'columns' | 'partitionBy' | 'mode' | 'idColumns'>;

const COLUMNS: ColumnConfig[] = [
  { name: 'id', type: 'long', required: true, source: 'value' },
  { name: 'name', type: 'string', required: false, source: 'value' },
  { name: 'qty', type: 'int', required: false, source: 'value' },
];

const entry = (mode: Entry['mode'], over: Partial<Entry> = {}): Entry => ({
  table: 'demo.customers',
  columns: COLUMNS,
  partitionBy: [],
  mode,
  idColumns: ['id'],
  ...over,
});

const buf = (v: string | Buffer | null): Buffer | null => (v === null ? null : Buffer.isBuffer(v) ? v : Buffer.from(v, 'utf8'));
const rec = (value: string | Buffer | null, key: string | Buffer | null = null): KafkaRecord => ({
  partition: 0,
  offset: '0',
  timestamp: '0',
  key: buf(key),
  value: buf(value),
});
const json = (v: unknown): string => JSON.stringify(v);

/** Asserts reading `r` throws a DecodeError whose message matches `re`. */
function refuses(read: (r: KafkaRecord) => Change, r: KafkaRecord, re: RegExp): void {
  assert.throws(
    () => read(r),
    (e: unknown) => {
      assert.ok(e instanceof DecodeError, `a DecodeError, not ${String(e)}`);
      assert.match(e.message, re);
      return true;
    },
  );
}

describe('compileChanges: mode upsert', () => {
  const read = compileChanges(entry('upsert'));

  it('a value is the whole new row of its key, each column typed (long as bigint, int as number)', () => {
    const c = read(rec(json({ id: 42, name: 'alice', qty: 3 }), '42'));
    assert.deepEqual(c, { kind: 'upsert', row: { id: 42n, name: 'alice', qty: 3 } });
    assert.equal(typeof (c as { row: Row }).row.id, 'bigint');
  });

  it('a value row is read from the value, not the key (the key may even be absent)', () => {
    assert.deepEqual(read(rec(json({ id: 7, name: null }), null)), { kind: 'upsert', row: { id: 7n, name: null, qty: null } });
    assert.deepEqual(read(rec(json({ id: 7 }), '999')), { kind: 'upsert', row: { id: 7n, name: null, qty: null } });
  });

  it('a long id beyond 2^53 keeps every digit, in the value and in a text key', () => {
    assert.deepEqual(read(rec('{"id": 9007199254740993}')), { kind: 'upsert', row: { id: 9007199254740993n, name: null, qty: null } });
    assert.deepEqual(read(rec(null, '9007199254740993')), { kind: 'delete', key: { id: 9007199254740993n } });
    assert.deepEqual(read(rec(null, '{"id": 9007199254740993}')), { kind: 'delete', key: { id: 9007199254740993n } });
  });

  it('a tombstone with the key as text (42) deletes that key: a key row of the id column alone', () => {
    assert.deepEqual(read(rec(null, '42')), { kind: 'delete', key: { id: 42n } });
  });

  it('a tombstone with a JSON object key deletes the key it names', () => {
    assert.deepEqual(read(rec(null, '{"id": 42}')), { kind: 'delete', key: { id: 42n } });
    // other fields of the key object are not part of the row key
    assert.deepEqual(read(rec(null, '{"id": 42, "tenant": "x"}')), { kind: 'delete', key: { id: 42n } });
  });

  it("a tombstone with a JSON converter's schema-wrapped key reads the payload", () => {
    assert.deepEqual(read(rec(null, '{"schema":{},"payload":{"id":42}}')), { kind: 'delete', key: { id: 42n } });
    assert.deepEqual(read(rec(null, json({ schema: { type: 'struct', fields: [{ field: 'id', type: 'int64' }] }, payload: { id: 42 } }))), {
      kind: 'delete',
      key: { id: 42n },
    });
  });

  it('a tombstone without a key is refused: it names no row to delete', () => {
    refuses(read, rec(null, null), /^key: a tombstone \(null value\) needs the record key/);
  });

  it('a key that does not hold the id is refused', () => {
    refuses(read, rec(null, '{"other": 1}'), /^id: /);
    refuses(read, rec(null, '{"id": null}'), /^id: /);
    refuses(read, rec(null, 'not-a-number'), /^id: /);
    refuses(read, rec(null, '{"schema":{},"payload":{}}'), /^id: /);
    refuses(read, rec(null, '{"schema":{},"payload":null}'), /^id: /);
    // a key that looks like a JSON object but is not JSON is a dead letter too
    refuses(read, rec(null, '{id: 42}'), /not valid JSON/);
    refuses(read, rec(null, Buffer.from([0x7b, 0xff, 0x7d])), /^key: not valid UTF-8$/);
  });

  it('a value without its id column (or with a null id) is refused: id columns are required', () => {
    refuses(read, rec(json({ name: 'alice' }), '42'), /^id: /);
    refuses(read, rec(json({ id: null, name: 'alice' }), '42'), /^id: /);
  });

  it('a value that is not a JSON object is refused as in append mode', () => {
    refuses(read, rec('not json', '42'), /^value: not valid JSON/);
    refuses(read, rec('[1, 2]', '42'), /^value: expected a JSON object/);
  });

  it('a string id column takes the text key as it is', () => {
    const byName = compileChanges(
      entry('upsert', { idColumns: ['name'], columns: COLUMNS.map((c) => (c.name === 'name' ? { ...c, required: true } : c)) }),
    );
    assert.deepEqual(byName(rec(null, 'alice')), { kind: 'delete', key: { name: 'alice' } });
    assert.deepEqual(byName(rec(null, '{"name": "alice"}')), { kind: 'delete', key: { name: 'alice' } });
  });

  it('two id columns need a JSON object key naming both', () => {
    const columns: ColumnConfig[] = [
      { name: 'region', type: 'string', required: true, source: 'value' },
      { name: 'id', type: 'long', required: true, source: 'value' },
      { name: 'name', type: 'string', required: false, source: 'value' },
    ];
    const two = compileChanges(entry('upsert', { columns, idColumns: ['region', 'id'] }));
    assert.deepEqual(two(rec(null, '{"region": "eu", "id": 42}')), { kind: 'delete', key: { region: 'eu', id: 42n } });
    assert.deepEqual(two(rec(null, '{"schema": {}, "payload": {"id": 42, "region": "eu"}}')), {
      kind: 'delete',
      key: { region: 'eu', id: 42n },
    });
    refuses(two, rec(null, '42'), /^key: must be a JSON object of the identifier columns \(region, id\)/);
    refuses(two, rec(null, '{"id": 42}'), /^region: /);
    assert.deepEqual(two(rec(json({ region: 'eu', id: 1, name: 'n' }))), { kind: 'upsert', row: { region: 'eu', id: 1n, name: 'n' } });
  });

  it('an id column that text cannot name (a date) needs a JSON object key', () => {
    const columns: ColumnConfig[] = [{ name: 'day', type: 'date', required: true, source: 'value' }];
    const byDay = compileChanges(entry('upsert', { columns, idColumns: ['day'] }));
    refuses(byDay, rec(null, '2026-01-02'), /^key: must be a JSON object/);
    const c = byDay(rec(null, '{"day": "2026-01-02"}'));
    assert.equal(c.kind, 'delete');
    assert.deepEqual(Object.keys((c as { key: Row }).key), ['day']);
  });

  it('is refused for mode append and without idColumns (a config error, not a dead letter)', () => {
    assert.throws(() => compileChanges(entry('append')), DecoderConfigError);
    assert.throws(
      () => compileChanges(entry('upsert', { idColumns: [] })),
      (e: Error) => e instanceof DecoderConfigError && /needs idColumns/.test(e.message),
    );
    assert.throws(() => compileChanges(entry('upsert', { idColumns: undefined })), DecoderConfigError);
    assert.throws(
      () => compileChanges(entry('upsert', { idColumns: ['nope'] })),
      (e: Error) => e instanceof DecoderConfigError && /nope/.test(e.message),
    );
  });
});

describe('compileChanges: mode cdc (Debezium)', () => {
  const read = compileChanges(entry('cdc'));
  const row = { id: 42, name: 'alice', qty: 3 };
  const typed = { id: 42n, name: 'alice', qty: 3 };
  const source = { connector: 'postgresql', db: 'shop', table: 'customers', lsn: 1234 };

  for (const op of ['c', 'r', 'u']) {
    it(`op ${op}: after is the key's row`, () => {
      const before = op === 'u' ? { id: 42, name: 'old', qty: 1 } : null;
      assert.deepEqual(read(rec(json({ before, after: row, source, op, ts_ms: 1 }), '{"id": 42}')), { kind: 'upsert', row: typed });
    });
  }

  it('op c without after is refused', () => {
    refuses(read, rec(json({ before: null, after: null, op: 'c' }), '{"id": 42}'), /op c has no after/);
  });

  it('op d deletes the key of before', () => {
    assert.deepEqual(read(rec(json({ before: row, after: null, source, op: 'd' }), '{"id": 99}')), { kind: 'delete', key: { id: 42n } });
    // REPLICA IDENTITY DEFAULT: before holds the key columns only
    assert.deepEqual(read(rec(json({ before: { id: 42, name: null, qty: null }, after: null, op: 'd' }))), {
      kind: 'delete',
      key: { id: 42n },
    });
  });

  it('op d with a null before deletes the key of the Kafka key', () => {
    assert.deepEqual(read(rec(json({ before: null, after: null, source, op: 'd' }), '{"id": 42}')), { kind: 'delete', key: { id: 42n } });
    assert.deepEqual(read(rec(json({ before: null, after: null, op: 'd' }), '42')), { kind: 'delete', key: { id: 42n } });
    refuses(read, rec(json({ before: null, after: null, op: 'd' }), null), /^key: /);
  });

  it("the JSON converter's schema wrapper around the event", () => {
    const schema = { type: 'struct', fields: [], optional: false, name: 'shop.customers.Envelope' };
    assert.deepEqual(read(rec(json({ schema, payload: { before: null, after: row, op: 'c' } }), '{"id": 42}')), {
      kind: 'upsert',
      row: typed,
    });
    assert.deepEqual(read(rec(json({ schema, payload: { before: row, after: null, op: 'd' } }), '{"id": 42}')), {
      kind: 'delete',
      key: { id: 42n },
    });
    // a wrapped tombstone deletes the Kafka key
    assert.deepEqual(read(rec(json({ schema: null, payload: null }), '{"schema": {}, "payload": {"id": 42}}')), {
      kind: 'delete',
      key: { id: 42n },
    });
    refuses(read, rec(json({ schema, payload: [1] }), '42'), /payload of a schema-wrapped event is not an object/);
  });

  it('a tombstone deletes the key as in upsert mode', () => {
    assert.deepEqual(read(rec(null, '{"id": 42}')), { kind: 'delete', key: { id: 42n } });
    refuses(read, rec(null, null), /^key: a tombstone/);
  });

  it('the flattened form (ExtractNewRecordState): __deleted "true" and __op "d" delete, __op "u" upserts', () => {
    assert.deepEqual(read(rec(json({ ...row, __deleted: 'true' }), '{"id": 1}')), { kind: 'delete', key: { id: 42n } });
    assert.deepEqual(read(rec(json({ ...row, __deleted: true }))), { kind: 'delete', key: { id: 42n } });
    assert.deepEqual(read(rec(json({ ...row, __op: 'd' }))), { kind: 'delete', key: { id: 42n } });
    assert.deepEqual(read(rec(json({ ...row, __op: 'u' }))), { kind: 'upsert', row: typed });
    assert.deepEqual(read(rec(json({ ...row, __op: 'c', __deleted: 'false' }))), { kind: 'upsert', row: typed });
    assert.deepEqual(read(rec(json({ ...row, __deleted: 'false' }))), { kind: 'upsert', row: typed });
    // schema-wrapped too
    assert.deepEqual(read(rec(json({ schema: {}, payload: { ...row, __op: 'd' } }))), { kind: 'delete', key: { id: 42n } });
  });

  it('a flattened row without its id is refused', () => {
    refuses(read, rec(json({ name: 'alice', __op: 'd' })), /^id: /);
    refuses(read, rec(json({ name: 'alice', __op: 'u' })), /^id: /);
  });

  it('op t (truncate) is refused with the reason: it names no key', () => {
    refuses(
      read,
      rec(json({ before: null, after: null, source, op: 't' }), null),
      /^value: a Debezium truncate event \(op t\) is not applied: it names no key/,
    );
  });

  it('op m (logical decoding message) is refused: it changes no row', () => {
    refuses(
      read,
      rec(json({ op: 'm', message: { prefix: 'p', content: 'aGk=' } }), null),
      /^value: a Debezium logical decoding message \(op m\) changes no row$/,
    );
  });

  it('an unknown op is refused naming the valid ones', () => {
    refuses(read, rec(json({ op: 'x', after: row })), /^value: Debezium op "x" is none of c, r, u, d, t, m$/);
    refuses(read, rec(json({ op: null, after: row })), /^value: Debezium op null is none of/);
  });

  it('before or after that is not an object is refused', () => {
    refuses(read, rec(json({ op: 'c', after: [1] })), /^value: after of a Debezium event is not an object$/);
    refuses(read, rec(json({ op: 'd', before: 'x' }), '42'), /^value: before of a Debezium event is not an object$/);
  });

  it('a value that is no change event is refused, saying what was expected', () => {
    refuses(
      read,
      rec(json(row), '42'),
      /^value: not a Debezium change event \(neither op with before\/after, nor the flattened __op\/__deleted fields\)$/,
    );
    refuses(read, rec(json({ schema: {}, payload: row }), '42'), /^value: not a Debezium change event/);
    refuses(read, rec('[]', '42'), /^value: expected a JSON object/);
  });
});

// ---------- ChangeBuffer

interface FakeLocation {
  file: string;
  pos: number;
}

/** What ChangeBuffer.resolve uses of a KeyIndex: keys by the id column, and the table's rows by key. */
function fakeIndex(live: Record<string, { file: string; pos: number; noPartition?: boolean }>): KeyIndex & { lookups: string[] } {
  const lookups: string[] = [];
  const fake = {
    lookups,
    keysOf: (rows: readonly Row[]) => rows.map((r) => `k${String(r.id)}`),
    lookup: (key: string): FakeLocation | undefined => {
      lookups.push(key);
      const at = live[key];
      if (!at) return undefined;
      return { file: at.file, pos: at.pos };
    },
    dataFile: (path: string) => {
      const at = Object.values(live).find((l) => l.file === path);
      return !at || at.noPartition ? undefined : { filePath: path, specId: 0, partition: {} };
    },
    describe: (key: string) => `key ${key}`,
  };
  return fake as unknown as KeyIndex & { lookups: string[] };
}

const up = (id: number, v: string): Change => ({ kind: 'upsert', row: { id: BigInt(id), v } });
const del = (id: number): Change => ({ kind: 'delete', key: { id: BigInt(id) } });
const deletesOf = (r: ReturnType<ChangeBuffer['resolve']>) => r.deletes.map((d) => [d.dataFile.filePath, d.pos]);

describe('ChangeBuffer', () => {
  const index = () =>
    fakeIndex({
      k1: { file: 'a.parquet', pos: 0 },
      k2: { file: 'a.parquet', pos: 5 },
      k3: { file: 'b.parquet', pos: 2 },
    });

  it('an empty buffer resolves to nothing (and asks the index nothing)', () => {
    const b = new ChangeBuffer();
    assert.equal(b.size, 0);
    const ix = index();
    assert.deepEqual(b.resolve(ix), { rows: [], deletes: [], deletedKeys: 0 });
    assert.deepEqual(ix.lookups, []);
  });

  it('an upsert of a new key writes its row, deletes nothing', () => {
    const b = new ChangeBuffer();
    b.add(up(9, 'new'));
    const r = b.resolve(index());
    assert.deepEqual(r, { rows: [{ id: 9n, v: 'new' }], deletes: [], deletedKeys: 0 });
  });

  it("an upsert of a key the table has writes the row and a position delete of the old one (the old row's file and position)", () => {
    const b = new ChangeBuffer();
    b.add(up(2, 'x'));
    const r = b.resolve(index());
    assert.deepEqual(r.rows, [{ id: 2n, v: 'x' }]);
    assert.deepEqual(r.deletes, [{ dataFile: { filePath: 'a.parquet', specId: 0, partition: {} }, pos: 5n }]);
    assert.equal(typeof r.deletes[0]!.pos, 'bigint');
    assert.equal(r.deletedKeys, 0);
  });

  it('the last change of a key wins; each key is looked up once', () => {
    const b = new ChangeBuffer();
    b.add(up(1, 'first'));
    b.add(up(9, 'a'));
    b.add(up(1, 'second'));
    b.add(up(1, 'third'));
    b.add(up(9, 'b'));
    assert.equal(b.size, 5);
    const ix = index();
    const r = b.resolve(ix);
    assert.deepEqual(
      [...r.rows].sort((x, y) => Number((x.id as bigint) - (y.id as bigint))),
      [
        { id: 1n, v: 'third' },
        { id: 9n, v: 'b' },
      ],
    );
    assert.deepEqual(deletesOf(r), [['a.parquet', 0n]]);
    assert.deepEqual([...ix.lookups].sort(), ['k1', 'k9']);
    assert.equal(r.deletedKeys, 0);
  });

  it('a key updated then deleted in one buffer: no row, one delete of its old row, one deleted key', () => {
    const b = new ChangeBuffer();
    b.add(up(3, 'x'));
    b.add(del(3));
    const r = b.resolve(index());
    assert.deepEqual(r.rows, []);
    assert.deepEqual(deletesOf(r), [['b.parquet', 2n]]);
    assert.equal(r.deletedKeys, 1);
  });

  it('a key deleted then re-inserted in one buffer: its new row, and the old row deleted once', () => {
    const b = new ChangeBuffer();
    b.add(del(3));
    b.add(up(3, 'back'));
    const r = b.resolve(index());
    assert.deepEqual(r.rows, [{ id: 3n, v: 'back' }]);
    assert.deepEqual(deletesOf(r), [['b.parquet', 2n]]);
    assert.equal(r.deletedKeys, 0);
  });

  it('a key new to the table inserted then deleted: nothing written, nothing to delete', () => {
    const b = new ChangeBuffer();
    b.add(up(8, 'x'));
    b.add(del(8));
    const r = b.resolve(index());
    assert.deepEqual(r.rows, []);
    assert.deepEqual(r.deletes, []);
    // deletedKeys counts keys whose last change deletes them, whether or not the table had them
    assert.equal(r.deletedKeys, 1);
  });

  it('deletes of keys the index lacks yield no position deletes; deletedKeys counts each deleted key once', () => {
    const b = new ChangeBuffer();
    b.add(del(7));
    b.add(del(7));
    b.add(del(1));
    b.add(del(2));
    b.add(up(4, 'new'));
    const r = b.resolve(index());
    assert.deepEqual(r.rows, [{ id: 4n, v: 'new' }]);
    assert.deepEqual(deletesOf(r).sort(), [
      ['a.parquet', 0n],
      ['a.parquet', 5n],
    ]);
    assert.equal(r.deletedKeys, 3);
  });

  it('a key in a file whose partition the index does not know fails the resolve, naming the key and file', () => {
    const b = new ChangeBuffer();
    b.add(up(1, 'x'));
    const ix = fakeIndex({ k1: { file: 'lost.parquet', pos: 0, noPartition: true } });
    assert.throws(() => b.resolve(ix), /^Error: key index: key k1 is in lost\.parquet, whose partition the index does not know$/);
  });

  it('takes the changes compileChanges reads', () => {
    const read = compileChanges(entry('upsert'));
    const b = new ChangeBuffer();
    b.add(read(rec(json({ id: 1, name: 'a' }), '1')));
    b.add(read(rec(null, '1')));
    b.add(read(rec(json({ id: 2, name: 'b' }), '2')));
    const r = b.resolve(index());
    assert.deepEqual(r.rows, [{ id: 2n, name: 'b', qty: null }]);
    assert.deepEqual(deletesOf(r).sort(), [
      ['a.parquet', 0n],
      ['a.parquet', 5n],
    ]);
    assert.equal(r.deletedKeys, 1);
  });
});

describe("compileChanges: Debezium's semantic types in the JSON converter's schema", () => {
  const columns: ColumnConfig[] = [
    { name: 'id', type: 'int', required: true, source: 'value' },
    { name: 'at', type: 'timestamp', required: false, source: 'value' },
    { name: 'at_ns', type: 'timestamp', required: false, source: 'value' },
    { name: 'zoned', type: 'timestamptz', required: false, source: 'value' },
    { name: 'day', type: 'date', required: false, source: 'value' },
    { name: 'clock', type: 'time', required: false, source: 'value' },
    { name: 'price', type: 'decimal(10, 2)', required: false, source: 'value' },
    { name: 'any', type: 'decimal(20, 5)', required: false, source: 'value' },
    { name: 'legacy', type: 'timestamp', required: false, source: 'value' },
  ];
  const read = compileChanges(entry('cdc', { columns }));
  const row = {
    type: 'struct',
    optional: true,
    name: 'dbserver1.inventory.t.Value',
    fields: [
      { field: 'id', type: 'int32', optional: false },
      { field: 'at', type: 'int64', optional: true, name: 'io.debezium.time.MicroTimestamp', version: 1 },
      { field: 'at_ns', type: 'int64', optional: true, name: 'io.debezium.time.NanoTimestamp', version: 1 },
      { field: 'zoned', type: 'string', optional: true, name: 'io.debezium.time.ZonedTimestamp', version: 1 },
      { field: 'day', type: 'int32', optional: true, name: 'io.debezium.time.Date', version: 1 },
      { field: 'clock', type: 'int64', optional: true, name: 'io.debezium.time.MicroTime', version: 1 },
      {
        field: 'price',
        type: 'bytes',
        optional: true,
        name: 'org.apache.kafka.connect.data.Decimal',
        version: 1,
        parameters: { scale: '2', 'connect.decimal.precision': '10' },
      },
      { field: 'any', type: 'struct', optional: true, name: 'io.debezium.data.VariableScaleDecimal', fields: [] },
      { field: 'legacy', type: 'int64', optional: true, name: 'org.apache.kafka.connect.data.Timestamp', version: 1 },
    ],
  };
  const schema = {
    type: 'struct',
    name: 'dbserver1.inventory.t.Envelope',
    fields: [
      { ...row, field: 'before' },
      { ...row, field: 'after' },
      { field: 'op', type: 'string', optional: false },
    ],
  };
  // 2026-07-01T12:34:56.123456 as Postgres `timestamp` gives it; 1234.50 as unscaled 123450 (0x01E23A)
  const after = {
    id: 1,
    at: 1782909296123456,
    at_ns: '1782909296123456000',
    zoned: '2026-07-01T12:34:56.123456Z',
    day: 20635,
    clock: 45296123456,
    price: Buffer.from([0x01, 0xe2, 0x3a]).toString('base64'),
    any: { scale: 3, value: Buffer.from([0xff, 0x85]).toString('base64') },
    legacy: 1782909296123,
  };
  const us = 1782909296123456n;

  it('each value is what its schema name says, not what the column reads a bare number as', () => {
    const c = read(rec(json({ schema, payload: { before: null, after, op: 'c' } })));
    assert.deepEqual(c, {
      kind: 'upsert',
      row: {
        id: 1,
        at: us,
        at_ns: us,
        zoned: us,
        day: 20635,
        clock: 45296123456n,
        price: 123450n,
        any: -12300n, // -123 at scale 3 = -0.123 -> -12300 at scale 5
        legacy: 1782909296123000n,
      },
    });
    // the same payload without its schema: a number in a temporal column is refused, never guessed
    refuses(read, rec(json({ before: null, after, op: 'c' })), /at is the number 1782909296123456 in a Debezium event without its schema/);
    refuses(read, rec(json({ ...after, __deleted: 'false' })), /without its schema/);
    const strings = { id: 2, at: '2026-07-01T12:34:56.123456', zoned: '2026-07-01T12:34:56Z', day: '2026-07-01' };
    const plain = read(rec(json({ before: null, after: strings, op: 'c' })));
    assert.ok(plain.kind === 'upsert' && plain.row.at === us && plain.row.day === 20635, 'ISO strings need no schema');
  });

  it("a delete's before is read the same way; a bad semantic payload is a dead letter", () => {
    assert.deepEqual(read(rec(json({ schema, payload: { before: after, after: null, op: 'd' } }))), { kind: 'delete', key: { id: 1 } });
    refuses(read, rec(json({ schema, payload: { before: null, after: { ...after, price: 12 }, op: 'c' } })), /not base64 text/);
    refuses(read, rec(json({ schema, payload: { before: null, after: { ...after, day: 'x' }, op: 'c' } })), /not an integer/);
  });
});
