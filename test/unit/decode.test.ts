import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { compileDecoder, deadLetterRow, decodeRecord, type DecoderTable, type KafkaRecord, type Row } from '../../ingest/decode';
import { DecodeError, DecoderConfigError } from '../../ingest/formats/errors';
import { MAYBE_UNSAFE_DECIMAL, parseJsonExact } from '../../ingest/formats/json';
import { isoTimestamp, parseIsoTimestamp } from '../../ingest/formats/primitives';
import type { ColumnConfig } from '../../config';
import { schemaOf } from '../../ingest/tables';
import {
  MemoryCatalog,
  MemoryFileIO,
  readParquetTable,
  writePartitionedRows,
  planFiles,
  newTableMetadata,
  fastAppend,
  type Schema,
} from '../../iceberg';

const cols: ColumnConfig[] = [
  { name: 'id', type: 'long', required: true },
  { name: 'n', type: 'int', required: false },
  { name: 'amount', type: 'double', required: false },
  { name: 'ts', type: 'timestamptz', required: true },
  { name: 'day', type: 'date', required: false },
  { name: 'city', type: 'string', required: false, path: 'address.city' },
  { name: 'k', type: 'string', required: false, source: 'key' },
  { name: 'p', type: 'int', required: true, source: 'partition' },
  { name: 'o', type: 'long', required: true, source: 'offset' },
];
const rec = (value: string | Buffer | null, key: string | Buffer | null = 'k1', timestamp = '1782864000000'): KafkaRecord => ({
  partition: 3,
  offset: '9007199254740993',
  timestamp,
  key: key === null ? null : Buffer.from(key),
  value: value === null ? null : Buffer.from(value),
});

/** Asserts decoding `value` throws a DecodeError whose message matches `re`. */
function rejects(
  table: DecoderTable | ColumnConfig[],
  value: string | Buffer | null,
  re: RegExp,
  key: string | Buffer | null = 'k1',
  timestamp?: string,
): void {
  assert.throws(
    () => decodeRecord(table, rec(value, key, timestamp)),
    (e: Error) => {
      assert.ok(e instanceof DecodeError, `a DecodeError, found ${e.name}: ${e.message}`);
      assert.match(e.message, re);
      return true;
    },
  );
}

/**
 * Writes `rows` as a table of `t` would (partitioned Parquet files under the spec) and commits
 * them (manifests with partition values, manifest list with partition summaries): every place a
 * value that decodes can still fail later. Returns the committed rows as the reader sees them.
 */
async function commitRows(t: DecoderTable, rows: Row[]): Promise<Array<Record<string, unknown>>> {
  const io = new MemoryFileIO();
  const catalog = new MemoryCatalog('c', io);
  await catalog.createNamespace(['db']);
  const schema: Schema = {
    type: 'struct',
    'schema-id': 0,
    fields: schemaOf(t.columns).fields,
  };
  const spec = {
    'spec-id': 0,
    fields: (t.partitionBy ?? []).map((p, i) => ({
      'source-id': schema.fields.find((f) => f.name === p.column)!.id,
      'field-id': 1000 + i,
      name: `${p.column}_${i}`,
      transform: p.transform,
    })),
  };
  const id = { namespace: ['db'], name: 't' };
  await catalog.createTable(id, newTableMetadata({ location: 'memory://t', schema, spec, tableUuid: 'u' }));
  let table = await catalog.loadTable(id);
  const files = await writePartitionedRows(io, table.metadata, rows, { fileName: (n) => `f${n}.parquet` });
  table = await fastAppend(catalog, io, table, files);
  const out: Array<Record<string, unknown>> = [];
  for (const f of await planFiles(table.metadata, io)) {
    const data = await readParquetTable(io, f.filePath);
    for (const r of data) out.push(r.toJSON());
  }
  return out;
}

describe('decodeRecord', () => {
  it('maps JSON and Kafka metadata to typed values; 64-bit ids stay exact', () => {
    const row = decodeRecord(
      cols,
      rec(
        '{"id": 9007199254740993, "n": 7, "amount": 1.5, "ts": "2026-07-01T00:00:00.123456Z", "day": "2026-07-01", "address": {"city": "Oslo"}}',
      ),
    );
    assert.equal(row.id, 9007199254740993n);
    assert.equal(row.n, 7);
    assert.equal(row.amount, 1.5);
    assert.equal(row.ts, 1782864000123456n);
    assert.equal(row.day, 20635);
    assert.equal(row.city, 'Oslo');
    assert.equal(row.k, 'k1');
    assert.equal(row.p, 3);
    assert.equal(row.o, 9007199254740993n);
  });
  it('accepts epoch millis and offsets in timestamps', () => {
    assert.equal(decodeRecord(cols, rec('{"id": 1, "ts": 1782864000000}')).ts, 1782864000000000n);
    assert.equal(decodeRecord(cols, rec('{"id": 1, "ts": "2026-07-01T02:00:00+02:00"}')).ts, 1782864000000000n);
    assert.equal(decodeRecord(cols, rec('{"id": 1, "ts": "2026-07-01T02:00:00+0200"}')).ts, 1782864000000000n);
  });
  const bad: Array<[string, string | null, RegExp]> = [
    ['not JSON', '{"id": 1,', /value: not valid JSON/],
    ['not an object', '[1,2]', /expected a JSON object/],
    ['tombstone', null, /null value/],
    ['missing required', '{"ts": "2026-07-01T00:00:00Z"}', /id: required field is missing/],
    ['wrong type', '{"id": "abc", "ts": "2026-07-01T00:00:00Z"}', /id: expected an integer, found "abc"/],
    ['int overflow', '{"id": 1, "n": 3000000000, "ts": "2026-07-01T00:00:00Z"}', /does not fit a 32-bit int/],
    ['fraction in long', '{"id": 1.5, "ts": "2026-07-01T00:00:00Z"}', /id: expected an integer, found 1.5/],
    ['zone-less timestamptz', '{"id": 1, "ts": "2026-07-01T00:00:00"}', /needs a zone/],
    ['bad date', '{"id": 1, "ts": 0, "day": "July 1"}', /expected a date YYYY-MM-DD/],
  ];
  for (const [name, value, re] of bad) {
    it(`rejects ${name} with a reason`, () => rejects(cols, value, re));
  }
  it('one compiled decoder serves every record of a table config', () => {
    const t: DecoderTable = { columns: [{ name: 'x', type: 'int', required: true }] };
    const d = compileDecoder(t);
    assert.deepEqual(d(rec('{"x": 1}')), { x: 1 });
    assert.deepEqual(decodeRecord(t, rec('{"x": 2}')), { x: 2 });
  });
});

describe('no value may stall a table', () => {
  const dayTable: DecoderTable = {
    columns: [
      { name: 'ts', type: 'timestamptz', required: true },
      { name: 'id', type: 'long', required: true },
    ],
    partitionBy: [
      { column: 'ts', transform: 'day' },
      { column: 'id', transform: 'bucket[4]' },
    ],
  };

  it('a timestamp of 1e16 ms becomes a dead letter instead of stalling the table', async () => {
    // 1e16 ms is 1e19 µs: beyond int64, which the Parquet writer refuses (old decode returned it)
    rejects(
      dayTable,
      '{"ts": 10000000000000000, "id": 1}',
      /^ts: 10000000000000000 ms is out of range for a timestamp \(64-bit microseconds/,
    );
    rejects(dayTable, '{"ts": 1e16, "id": 1}', /^ts: 10000000000000000 ms is out of range/);
    rejects(dayTable, '{"ts": -1e16, "id": 1}', /^ts: -10000000000000000 ms is out of range/);
    rejects(dayTable, '{"ts": 1e400, "id": 1}', /^ts: Infinity ms is out of range/); // JSON.parse already overflowed it
    // what the old decoder returned fails every write: the day's partition path, the Parquet column
    await assert.rejects(commitRows(dayTable, [{ ts: 10n ** 19n, id: 1n }]), /Invalid time value/);
    await assert.rejects(
      commitRows({ columns: dayTable.columns }, [{ ts: 10n ** 19n, id: 1n }]),
      /column ts: expected a 64-bit signed integer/,
    );
  });

  it("a timestamp past the day transform's range becomes a dead letter instead of a partition path that throws", async () => {
    // day transform results are printed through JS Date (partition paths): ±1e8 days of 1970
    const lastMs = (100_000_000 + 1) * 86_400_000 - 1;
    const row = decodeRecord(dayTable, rec(`{"ts": ${lastMs}, "id": 1}`));
    assert.equal(row.ts, BigInt(lastMs) * 1000n);
    assert.equal((await commitRows(dayTable, [row])).length, 1);
    rejects(dayTable, `{"ts": ${lastMs + 1}, "id": 1}`, /^ts: 8640000086400000 ms is out of range for partition transform day/);
    await assert.rejects(commitRows(dayTable, [{ ts: BigInt(lastMs + 1) * 1000n, id: 1n }]), RangeError);
    rejects(dayTable, `{"ts": ${-100_000_000 * 86_400_000 - 1}, "id": 1}`, /out of range for partition transform day/);
  });

  it('a timestamp whose hour does not fit an int becomes a dead letter instead of a commit that fails forever', async () => {
    const t: DecoderTable = {
      columns: [{ name: 'ts', type: 'timestamp', required: true }],
      partitionBy: [{ column: 'ts', transform: 'hour' }],
    };
    const lastMs = 2 ** 31 * 3_600_000 - 1; // hour 2^31 - 1
    const row = decodeRecord(t, rec(`{"ts": ${lastMs}}`));
    assert.equal((await commitRows(t, [row])).length, 1);
    rejects(
      t,
      `{"ts": ${lastMs + 1}}`,
      /^ts: 7730941132800000 ms is out of range for partition transform hour \(hours since 1970 must fit a 32-bit int\)/,
    );
    // the old decoder's value: the hour 2^31 fails only at commit (manifest partition summary)
    await assert.rejects(commitRows(t, [{ ts: BigInt(lastMs + 1) * 1000n }]), /invalid "int": 2147483648/);
    rejects(t, `{"ts": ${-(2 ** 31) * 3_600_000 - 1}}`, /out of range for partition transform hour/);
  });

  it('a timestamp beyond what an identity partition path can print becomes a dead letter', async () => {
    const t: DecoderTable = {
      columns: [{ name: 'ts', type: 'timestamptz', required: true }],
      partitionBy: [{ column: 'ts', transform: 'identity' }],
    };
    const last = 8_640_000_000_000_000;
    assert.equal((await commitRows(t, [decodeRecord(t, rec(`{"ts": ${last}}`))])).length, 1);
    rejects(t, `{"ts": ${last + 1}}`, /out of range for partition transform identity/);
    await assert.rejects(commitRows(t, [{ ts: BigInt(last + 1) * 1000n }]), RangeError);
  });

  it('the Kafka timestamp of a record is range-checked like a JSON one', () => {
    const t: DecoderTable = {
      columns: [{ name: 'kts', type: 'timestamptz', required: true, source: 'timestamp' }],
      partitionBy: [{ column: 'kts', transform: 'hour' }],
    };
    assert.equal(decodeRecord(t, rec(null, null, '1782864000000')).kts, 1782864000000000n);
    rejects(
      t,
      null,
      /^kts: the Kafka timestamp 9223372036854775 ms is out of range for partition transform hour/,
      null,
      '9223372036854775',
    );
  });

  it('an int whose truncate result underflows 32 bits becomes a dead letter instead of a commit that fails forever', async () => {
    const t: DecoderTable = {
      columns: [{ name: 'n', type: 'int', required: true }],
      partitionBy: [{ column: 'n', transform: 'truncate[10]' }],
    };
    const row = decodeRecord(t, rec('{"n": -2147483640}'));
    assert.equal((await commitRows(t, [row, decodeRecord(t, rec('{"n": 2147483647}'))])).length, 2);
    rejects(
      t,
      '{"n": -2147483641}',
      /^n: -2147483641 is out of range for partition transform truncate\[10\] \(the truncated value must fit a 32-bit int\)/,
    );
    await assert.rejects(commitRows(t, [{ n: -2147483641 }]), /invalid "int": -2147483650/);
  });

  it('a long whose truncate result underflows 64 bits becomes a dead letter instead of a commit that fails forever', async () => {
    const t: DecoderTable = {
      columns: [{ name: 'n', type: 'long', required: true }],
      partitionBy: [{ column: 'n', transform: 'truncate[1000]' }],
    };
    assert.equal((await commitRows(t, [decodeRecord(t, rec('{"n": -9223372036854775000}'))])).length, 1);
    rejects(t, '{"n": -9223372036854775001}', /^n: -9223372036854775001 is out of range for partition transform truncate\[1000\]/);
    await assert.rejects(commitRows(t, [{ n: -9223372036854775001n }]), /does not match the Avro schema/);
    rejects(t, '{"n": 9223372036854775808}', /^n: 9223372036854775808 does not fit a 64-bit long/);
  });

  it('a decimal whose truncate result needs more digits than its precision becomes a dead letter', async () => {
    const t: DecoderTable = {
      columns: [{ name: 'd', type: 'decimal(4, 2)', required: true }],
      partitionBy: [{ column: 'd', transform: 'truncate[10]' }],
    };
    assert.equal((await commitRows(t, [decodeRecord(t, rec('{"d": -99.90}')), decodeRecord(t, rec('{"d": 99.99}'))])).length, 2);
    rejects(
      t,
      '{"d": -99.91}',
      /^d: -99.91 is out of range for partition transform truncate\[10\] \(the truncated value must keep at most 4 digits\)/,
    );
    await assert.rejects(commitRows(t, [{ d: -9991n }]), /at most 4 digits/);
  });

  it('a double that overflows to Infinity, or a double too big for a float column, becomes a dead letter', () => {
    const t: DecoderTable = {
      columns: [
        { name: 'f', type: 'float', required: false },
        { name: 'd', type: 'double', required: false },
      ],
    };
    rejects(t, '{"d": 1e400}', /^d: Infinity is out of range for a double/); // JSON.parse already overflowed it
    rejects(t, '{"d": 12345678901234567890e400}', /^d: 12345678901234567890e400 is out of range for a double/); // lossless path
    rejects(t, '{"f": 1e39}', /^f: 1e\+39 is out of range for a float/);
    assert.equal(decodeRecord(t, rec('{"f": 3e38, "d": "-Infinity"}')).d, -Infinity);
  });

  it('a row of every accepted extreme writes and commits (decode pre-empts every writer and transform failure)', async () => {
    const t: DecoderTable = {
      columns: [
        { name: 'ts', type: 'timestamptz', required: true },
        { name: 'n', type: 'int', required: true },
        { name: 'l', type: 'long', required: true },
        { name: 'd', type: 'date', required: true },
        { name: 'dec', type: 'decimal(38, 0)', required: true },
        { name: 'tm', type: 'time', required: true },
        { name: 's', type: 'string', required: true },
        { name: 'u', type: 'uuid', required: true },
        { name: 'fx', type: 'fixed[2]', required: true },
        { name: 'b', type: 'binary', required: true },
      ],
      partitionBy: [
        { column: 'ts', transform: 'hour' },
        { column: 'ts', transform: 'year' },
        { column: 'n', transform: 'truncate[7]' },
        { column: 'l', transform: 'truncate[3]' },
        { column: 'd', transform: 'month' },
        { column: 'dec', transform: 'truncate[9]' },
        { column: 'tm', transform: 'identity' },
        { column: 's', transform: 'truncate[1]' },
        { column: 'u', transform: 'bucket[3]' },
        { column: 'fx', transform: 'identity' },
        { column: 'b', transform: 'truncate[1]' },
      ],
    };
    const lo = `{"ts": ${-(2 ** 31) * 3_600_000}, "n": ${-(2 ** 31) + 2}, "l": -9223372036854775806, "d": "0000-01-01", "dec": "-${'9'.repeat(38).replace(/9$/, '0')}", "tm": "00:00:00", "s": "", "u": "00000000-0000-0000-0000-000000000000", "fx": "AAA=", "b": ""}`;
    const hi = `{"ts": ${2 ** 31 * 3_600_000 - 1}, "n": 2147483647, "l": 9223372036854775807, "d": "9999-12-31", "dec": "${'9'.repeat(38)}", "tm": "23:59:59.999999", "s": "\u{10ffff}x", "u": "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF", "fx": "//8", "b": "/w=="}`;
    const rows = [decodeRecord(t, rec(lo)), decodeRecord(t, rec(hi))];
    assert.equal(rows[0]!.d, -719528);
    assert.equal(rows[1]!.tm, 86_399_999_999n);
    assert.equal((await commitRows(t, rows)).length, 2);
  });
});

describe('decoding one record never fails the batch', () => {
  it("an unforeseen error while decoding one record becomes that record's dead letter with its reason", () => {
    const r = rec('{"x": 1}', null, '1782864000000');
    const dl = deadLetterRow('orders', r, new TypeError('Cannot read properties of undefined'));
    assert.equal(dl.error, 'unexpected TypeError: Cannot read properties of undefined');
    assert.equal(dl.offset, 9007199254740993n);
    assert.equal(dl.kafka_timestamp, 1782864000000000n);
    assert.deepEqual(dl.value, new Uint8Array(Buffer.from('{"x": 1}')));
    assert.equal(deadLetterRow('orders', r, new DecodeError('x: expected a string, found 1')).error, 'x: expected a string, found 1');
  });

  it('a dead letter whose Kafka timestamp does not fit micros, or whose reason holds a broken surrogate, still writes', () => {
    const dl = deadLetterRow('orders', rec('{}', null, '9223372036854775807'), new DecodeError(`x: found "\ud83d"`));
    assert.equal(dl.kafka_timestamp, null);
    assert.equal(dl.error, 'x: found "\ufffd"');
    assert.ok((deadLetterRow('t', rec('{}'), new DecodeError('y'.repeat(5000))).error as string).length <= 1001);
  });

  it('a config no record can decode fails the cycle instead of dead-lettering every record', () => {
    const configErr = (t: DecoderTable, re: RegExp) =>
      assert.throws(
        () => compileDecoder(t),
        (e: Error) => e instanceof DecoderConfigError && e.name === 'ConfigError' && re.test(e.message),
      );
    configErr(
      { columns: [{ name: 'o', type: 'int', required: true, source: 'offset' }] },
      /column o: the Kafka offset fills a long column/,
    );
    configErr(
      { columns: [{ name: 'p', type: 'string', required: true, source: 'partition' }] },
      /column p: the Kafka partition fills an int or long column/,
    );
    configErr(
      { columns: [{ name: 'd', type: 'date', required: true }], partitionBy: [{ column: 'd', transform: 'hour' }] },
      /column d: partition transform hour cannot apply to type date/,
    );
    configErr({ columns: [{ name: 'x', type: 'decimal(40, 2)', required: true }] }, /decimal\(40, 2\) needs a precision from 1 to 38/);
    configErr(
      { columns: [{ name: 'x', type: 'int', required: true }], partitionBy: [{ column: 'y', transform: 'identity' }] },
      /no such column/,
    );
    configErr({ columns: [{ name: '__proto__', type: 'int', required: true }] }, /__proto__/);
    assert.throws(() => deadLetterRow('t', rec('{}'), new DecoderConfigError('bad')), DecoderConfigError);
  });
});

describe('input is never silently mangled', () => {
  const s: DecoderTable = {
    columns: [
      { name: 's', type: 'string', required: false },
      { name: 'k', type: 'string', required: false, source: 'key' },
    ],
  };

  it('invalid UTF-8 in the message becomes a dead letter instead of U+FFFD in the row', () => {
    rejects(s, Buffer.concat([Buffer.from('{"s": "caf'), Buffer.from([0xe9]), Buffer.from('"}')]), /^value: not valid UTF-8/);
    rejects(s, Buffer.from([0x7b, 0x22, 0x73, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d]), /^value: not valid UTF-8/); // an encoded surrogate
    assert.equal(decodeRecord(s, rec('{"s": "café 😀"}')).s, 'café 😀');
  });

  it('an unpaired surrogate escape in a string becomes a dead letter instead of U+FFFD in the file', () => {
    rejects(s, '{"s": "a\\ud800b"}', /^s: expected a Unicode string \(no unpaired surrogate escapes\), found "a\\ud800b"/);
    rejects(s, '{"s": "\\udc00"}', /^s: expected a Unicode string/);
    assert.equal(decodeRecord(s, rec('{"s": "\\ud83d\\ude00"}')).s, '😀');
  });

  it('a record key that is not UTF-8 becomes a dead letter instead of U+FFFD in a string key column', () => {
    rejects(s, '{}', /^k: the record key is not valid UTF-8 \("\/w=="/, Buffer.from([0xff]));
    const raw: DecoderTable = { columns: [{ name: 'k', type: 'binary', required: true, source: 'key' }] };
    assert.deepEqual(decodeRecord(raw, rec(null, Buffer.from([0xff]))).k, Uint8Array.of(0xff));
  });

  it('malformed base64 in a binary column becomes a dead letter instead of the bytes of the characters Buffer kept', () => {
    const b: DecoderTable = { columns: [{ name: 'b', type: 'binary', required: false }] };
    assert.deepEqual(decodeRecord(b, rec('{"b": "AQID"}')).b, Uint8Array.of(1, 2, 3));
    assert.deepEqual(decodeRecord(b, rec('{"b": "AQI="}')).b, Uint8Array.of(1, 2));
    assert.deepEqual(decodeRecord(b, rec('{"b": "AQI"}')).b, Uint8Array.of(1, 2), 'padding is optional');
    assert.deepEqual(decodeRecord(b, rec('{"b": ""}')).b, Uint8Array.of());
    for (const v of ['AQ!D', 'AQ ID', 'AQI==', 'AQ-_', 'A', 'AQJ=', '=AQI'])
      rejects(b, JSON.stringify({ b: v }), /^b: expected base64 binary \(canonical base64/);
    rejects(b, '{"b": 5}', /^b: expected base64 binary, found 5/);
  });

  it('an impossible date (2026-02-31, 2025-02-29, month 13) becomes a dead letter instead of rolling into March', () => {
    const d: DecoderTable = { columns: [{ name: 'd', type: 'date', required: false }] };
    for (const v of ['2026-02-31', '2025-02-29', '2026-13-01', '2026-00-10', '2026-04-31', '2026-01-00']) {
      rejects(d, JSON.stringify({ d: v }), /^d: expected a date that exists \(YYYY-MM-DD\), found/);
    }
    assert.equal(decodeRecord(d, rec('{"d": "2024-02-29"}')).d, 19782);
    assert.equal(decodeRecord(d, rec('{"d": "1969-12-31"}')).d, -1);
  });

  it('year 0050 stays year 50 instead of becoming 1950', () => {
    const d: DecoderTable = {
      columns: [
        { name: 'd', type: 'date', required: true },
        { name: 'ts', type: 'timestamp', required: true },
      ],
    };
    const row = decodeRecord(d, rec('{"d": "0050-03-01", "ts": "0050-03-01T00:00:00"}'));
    assert.equal(row.d, -701_206); // Date.UTC(50, ...) says 1950-03-01 (-7246)
    assert.equal(row.ts, -701_206n * 86_400_000_000n);
  });

  it('T24:00, minute 60 and second 60 become dead letters instead of rolling into the next minute or day', () => {
    for (const v of ['2026-07-01T24:00:00Z', '2026-07-01T23:60:00Z', '2026-07-01T23:59:60Z', '2026-02-30T00:00:00Z']) {
      rejects(cols, JSON.stringify({ id: 1, ts: v }), /^ts: expected a timestamp that exists/);
    }
    rejects(cols, '{"id": 1, "ts": "2026-07-01T00:00:00+19:00"}', /^ts: expected a zone offset within ±18:00/);
  });

  it('sub-microsecond digits become a dead letter instead of being truncated away', () => {
    rejects(
      cols,
      '{"id": 1, "ts": "2026-07-01T00:00:00.123456789Z"}',
      /^ts: "2026-07-01T00:00:00.123456789Z" has sub-microsecond digits; a timestamp holds microseconds/,
    );
    assert.equal(decodeRecord(cols, rec('{"id": 1, "ts": "2026-07-01T00:00:00.123456000Z"}')).ts, 1782864000123456n);
    assert.equal(decodeRecord(cols, rec('{"id": 1, "ts": "2026-07-01T00:00:00.5Z"}')).ts, 1782864000500000n);
  });

  it("a path through the prototype chain (constructor, __proto__, toString) is missing, never one of Object's members", () => {
    const t: DecoderTable = {
      columns: [
        { name: 'a', type: 'string', required: false, path: 'constructor' },
        { name: 'b', type: 'string', required: false, path: 'x.__proto__' },
        { name: 'c', type: 'string', required: false, path: 'x.toString' },
        { name: 'd', type: 'string', required: false, path: 'prototype' },
      ],
    };
    assert.deepEqual(decodeRecord(t, rec('{"x": {}}')), { a: null, b: null, c: null, d: null });
    const req: DecoderTable = { columns: [{ name: 'a', type: 'string', required: true, path: 'x.constructor' }] };
    rejects(req, '{"x": {"y": 1}}', /^a: required field is missing/);
    // a message that does hold such a key has it, through either JSON parser
    assert.deepEqual(decodeRecord(t, rec('{"constructor": "c", "x": {"__proto__": "p", "toString": "t"}}')), {
      a: 'c',
      b: 'p',
      c: 't',
      d: null,
    });
    assert.deepEqual(decodeRecord(t, rec('{"constructor": "c", "x": {"__proto__": "p", "toString": "t"}, "big": 12345678901234567890}')), {
      a: 'c',
      b: 'p',
      c: 't',
      d: null,
    });
  });

  it('a path never resolves inside a 64-bit number, and a look-alike object is not taken for one', () => {
    const t: DecoderTable = {
      columns: [
        { name: 'v', type: 'string', required: false, path: 'n.value' },
        { name: 'l', type: 'long', required: false, path: 'o' },
      ],
    };
    assert.deepEqual(decodeRecord(t, rec('{"n": 12345678901234567890}')), { v: null, l: null });
    rejects(
      t,
      '{"o": {"isLosslessNumber": true, "value": "5"}, "n": 12345678901234567890}',
      /^l: expected an integer, found \{"isLosslessNumber":true,"value":"5"\}/,
    );
  });

  it('a decimal with more fractional digits than its scale becomes a dead letter instead of being rounded', () => {
    const t: DecoderTable = { columns: [{ name: 'd', type: 'decimal(9, 2)', required: false }] };
    rejects(t, '{"d": 1.005}', /^d: 1.005 has more than 2 fractional digits for decimal\(9, 2\)/);
    rejects(t, '{"d": "0.001"}', /^d: "0.001" has more than 2 fractional digits/);
    rejects(t, '{"d": 1e-400}', /^d: 1e-400 has more than 2 fractional digits/); // natively 0
    rejects(t, '{"d": 12345678.9}', /^d: 12345678.9 is out of range for decimal\(9, 2\) \(at most 9 digits\)/);
    rejects(t, '{"d": 1e400}', /^d: 1e400 is out of range for decimal\(9, 2\)/);
    assert.equal(decodeRecord(t, rec('{"d": 1.50}')).d, 150n, 'trailing zeros are not digits lost');
    assert.equal(decodeRecord(t, rec('{"d": "1.2300"}')).d, 123n);
  });

  it('a 17-digit decimal split by a dot keeps every digit instead of the double nearest to it', () => {
    const t: DecoderTable = {
      columns: [
        { name: 'd', type: 'decimal(38, 7)', required: true },
        { name: 'l', type: 'long', required: false },
      ],
    };
    assert.equal(decodeRecord(t, rec('{"d": 1234567890.1234567}')).d, 12345678901234567n);
    assert.equal(decodeRecord(t, rec('{"d": 0, "l": 9007199254.740993e6}')).l, 9007199254740993n);
  });
});

describe('decimal, fixed and time columns decode instead of dead-lettering every record', () => {
  const t: DecoderTable = {
    columns: [
      { name: 'amount', type: 'decimal(10, 3)', required: false },
      { name: 'hash', type: 'fixed[4]', required: false },
      { name: 'at', type: 'time', required: false },
    ],
  };

  it('decimal(P,S) from a JSON number, a long literal or a string, as the exact unscaled value', () => {
    const d = (v: string) => decodeRecord(t, rec(`{"amount": ${v}}`)).amount;
    assert.equal(d('12.5'), 12500n);
    assert.equal(d('-0.001'), -1n);
    assert.equal(d('"-1234567.891"'), -1234567891n);
    assert.equal(d('1.5e3'), 1500000n);
    assert.equal(d('"+7"'), 7000n);
    assert.equal(d('0'), 0n);
    assert.equal(d('9999999.999'), 9999999999n);
    rejects(t, '{"amount": 10000000}', /^amount: 10000000 is out of range for decimal\(10, 3\) \(at most 10 digits\)/);
    rejects(t, '{"amount": "12,5"}', /^amount: expected a decimal number or string for decimal\(10, 3\), found "12,5"/);
    rejects(t, '{"amount": true}', /^amount: expected a decimal number or string/);
  });

  it('fixed[N] from base64 of exactly N bytes', () => {
    assert.deepEqual(decodeRecord(t, rec('{"hash": "3q2+7w=="}')).hash, Uint8Array.of(0xde, 0xad, 0xbe, 0xef));
    rejects(t, '{"hash": "3q2+"}', /^hash: expected base64 of exactly 4 bytes for fixed\[4\], found 3 bytes in "3q2\+"/);
    rejects(t, '{"hash": "3q2+7+8="}', /^hash: expected base64 of exactly 4 bytes/);
  });

  it('time from HH:MM:SS[.ffffff] to microseconds since midnight', () => {
    assert.equal(decodeRecord(t, rec('{"at": "00:00:00"}')).at, 0n);
    assert.equal(decodeRecord(t, rec('{"at": "13:45:07.25"}')).at, 49_507_250_000n);
    assert.equal(decodeRecord(t, rec('{"at": "23:59:59.999999"}')).at, 86_399_999_999n);
    for (const v of ['24:00:00', '12:60:00', '12:00:60'])
      rejects(t, JSON.stringify({ at: v }), /^at: expected a time of day from 00:00:00 to 23:59:59.999999/);
    for (const v of ['12:00', '1:00:00', 'noon', '12:00:00Z'])
      rejects(t, JSON.stringify({ at: v }), /^at: expected a time HH:MM:SS\[.ffffff\]/);
    rejects(t, '{"at": "12:00:00.0000001"}', /^at: "12:00:00.0000001" has sub-microsecond digits/);
  });

  it('decimal, fixed and time rows write, commit and read back as the values sent', async () => {
    const rows = [decodeRecord(t, rec('{"amount": "-12.345", "hash": "AAECAw==", "at": "01:02:03.000004"}')), decodeRecord(t, rec('{}'))];
    const back = await commitRows(t, rows);
    assert.equal(back.length, 2);
    const got = back.find((r) => r.amount !== null)!;
    assert.deepEqual([...(got.hash as Uint8Array)], [0, 1, 2, 3]);
    const words = got.amount as Uint32Array; // Arrow JS Decimal128: four little-endian 32-bit words
    assert.equal(
      BigInt.asIntN(128, (BigInt(words[3]!) << 96n) | (BigInt(words[2]!) << 64n) | (BigInt(words[1]!) << 32n) | BigInt(words[0]!)),
      -12345n,
    );
  });
});

describe('columns from the topic and from headers', () => {
  const t: DecoderTable = {
    columns: [
      { name: 'id', type: 'long', required: true },
      { name: 'topic', type: 'string', required: true, source: 'topic' },
      { name: 'trace', type: 'string', required: false, source: 'header', header: 'trace-id' },
      { name: 'tenant', type: 'long', required: true, source: 'header', header: 'tenant' },
      { name: 'sig', type: 'binary', required: false, source: 'header', header: 'sig' },
    ],
  };
  const withHeaders = (headers: KafkaRecord['headers'], topic: string | null = 'orders'): KafkaRecord => ({
    ...rec('{"id": 1}'),
    ...(topic === null ? {} : { topic }),
    headers,
  });

  it('fills the topic, a header as text converted to the column type, and a header as bytes', () => {
    const row = decodeRecord(t, withHeaders({ 'trace-id': Buffer.from('abc-1'), tenant: Buffer.from('42'), sig: Buffer.from([0xff, 0]) }));
    assert.deepEqual(row, { id: 1n, topic: 'orders', trace: 'abc-1', tenant: 42n, sig: Uint8Array.of(0xff, 0) });
  });

  it('a repeated header gives its last value; an absent optional header is null', () => {
    const row = decodeRecord(t, withHeaders({ 'trace-id': [Buffer.from('first'), Buffer.from('last')], tenant: Buffer.from('7') }));
    assert.equal(row.trace, 'last');
    assert.equal(row.sig, null);
  });

  it('bad or missing header values are dead letters naming the column and the header', () => {
    assert.throws(
      () => decodeRecord(t, withHeaders(undefined)),
      (e: Error) => e instanceof DecodeError && /^tenant: header "tenant" is required but absent/.test(e.message),
    );
    assert.throws(
      () => decodeRecord(t, withHeaders({ tenant: Buffer.from('1') }, null)),
      (e: Error) => e instanceof DecodeError && /^topic: the record has no topic/.test(e.message),
    );
    assert.throws(
      () => decodeRecord(t, withHeaders({ tenant: Buffer.from('seven') })),
      (e: Error) => e instanceof DecodeError && /^tenant: expected an integer, found "seven"/.test(e.message),
    );
    assert.throws(
      () => decodeRecord(t, withHeaders({ tenant: Buffer.from('1'), 'trace-id': Buffer.from([0xff]) })),
      (e: Error) => e instanceof DecodeError && /^trace: header "trace-id" is not valid UTF-8/.test(e.message),
    );
  });

  it('every header as a map: text or bytes, last value of a repeated name, null values kept, empty without headers', async () => {
    const m: DecoderTable = {
      columns: [
        { name: 'id', type: 'long', required: true },
        { name: 'h', type: 'map<string, string>', required: false, source: 'headers' },
        { name: 'hb', type: 'map<string, binary>', required: false, source: 'headers' },
      ],
    };
    const r1 = decodeRecord(m, withHeaders({ a: Buffer.from('1'), b: [Buffer.from('x'), Buffer.from('y')], n: undefined }));
    assert.deepEqual(r1.h, [
      ['a', '1'],
      ['b', 'y'],
      ['n', null],
    ]);
    assert.deepEqual(r1.hb, [
      ['a', Uint8Array.of(0x31)],
      ['b', Uint8Array.of(0x79)],
      ['n', null],
    ]);
    const r2 = decodeRecord(m, withHeaders(undefined));
    assert.deepEqual(r2.h, []);
    assert.throws(
      () => decodeRecord(m, withHeaders({ bad: Buffer.from([0xff]) })),
      (e: Error) => e instanceof DecodeError && /^h: header "bad" is not valid UTF-8/.test(e.message),
    );
    // written to Parquet as an Iceberg map and read back
    const back = await commitRows(m, [r1, r2]);
    // Arrow's MapRow: its JSON form is the map as an object
    const maps = back.map((row) => JSON.parse(JSON.stringify(row.h)) as Record<string, string | null>);
    assert.deepEqual(
      maps.sort((x, y) => Object.keys(y).length - Object.keys(x).length),
      [{ a: '1', b: 'y', n: null }, {}],
    );
  });

  it('a config no record could satisfy fails at compile time, naming the column', () => {
    assert.throws(
      () => compileDecoder({ columns: [{ name: 't', type: 'long', required: false, source: 'topic' }] }),
      (e: Error) => e instanceof DecoderConfigError && /column t: the Kafka topic fills a string column, not long/.test(e.message),
    );
    assert.throws(
      () => compileDecoder({ columns: [{ name: 'h', type: 'double', required: false, source: 'header', header: 'x' }] }),
      (e: Error) =>
        e instanceof DecoderConfigError &&
        /column h: a header fills string, uuid, int, long, binary or fixed\[N\] columns, not double/.test(e.message),
    );
  });
});

describe('nested columns (struct, list, map) from JSON', () => {
  const orders: DecoderTable = {
    columns: [
      { name: 'id', type: 'long', required: true },
      {
        name: 'customer',
        type: {
          type: 'struct',
          fields: [
            { name: 'id', type: 'long', required: true },
            { name: 'name', type: 'string', required: false },
            { name: 'city', type: 'string', required: false, path: 'address.city' },
          ],
        },
        required: false,
      },
      {
        name: 'items',
        type: {
          type: 'list',
          element: {
            type: 'struct',
            fields: [
              { name: 'sku', type: 'string', required: true },
              { name: 'qty', type: 'int', required: true },
              { name: 'price', type: 'decimal(10, 2)', required: false },
            ],
          },
          elementRequired: true,
        },
        required: false,
      },
      { name: 'counts', type: { type: 'map', key: 'string', value: 'long', valueRequired: false }, required: false },
      { name: 'tags', type: { type: 'list', element: 'string', elementRequired: false }, required: false },
    ],
  };
  const decode = (v: unknown) => decodeRecord(orders, rec(typeof v === 'string' ? v : JSON.stringify(v)));

  it('decodes every level through the primitive converters: longs and decimals exact, nested path fields, nulls kept', () => {
    const row = decode(
      '{"id": 1, "customer": {"id": 9007199254740993, "name": "Ann", "address": {"city": "Oslo"}, "extra": true},' +
        ' "items": [{"sku": "a", "qty": 2, "price": "1.50"}, {"sku": "b", "qty": 1, "price": 12345678.99}, {"sku": "c", "qty": 3}],' +
        ' "counts": {"x": 1, "y": 9007199254740993, "z": null}, "tags": ["a", null, "b"]}',
    );
    assert.deepEqual(row, {
      id: 1n,
      customer: { id: 9007199254740993n, name: 'Ann', city: 'Oslo' },
      items: [
        { sku: 'a', qty: 2, price: 150n },
        { sku: 'b', qty: 1, price: 1234567899n },
        { sku: 'c', qty: 3, price: null },
      ],
      counts: [
        ['x', 1n],
        ['y', 9007199254740993n],
        ['z', null],
      ],
      tags: ['a', null, 'b'],
    });
    // absent or null optional columns and fields are null; empty list and map stay empty
    assert.deepEqual(decode({ id: 2, customer: { id: 5, name: null }, items: [], counts: {} }), {
      id: 2n,
      customer: { id: 5n, name: null, city: null },
      items: [],
      counts: [],
      tags: null,
    });
  });

  it('a decimal inside a list keeps every digit of a long literal, and refuses digits its scale cannot hold', () => {
    const row = decode('{"id": 1, "items": [{"sku": "a", "qty": 1, "price": 12345678.91}, {"sku": "b", "qty": 1, "price": 1.5e2}]}');
    assert.deepEqual(
      (row.items as Array<Record<string, unknown>>).map((i) => i.price),
      [1234567891n, 15000n],
    );
    rejects(
      orders,
      '{"id": 1, "items": [{"sku": "a", "qty": 1, "price": 0.12345678901234567}]}',
      /^items\[0\]\.price: 0\.12345678901234567 has more than 2 fractional digits for decimal\(10, 2\)/,
    );
    rejects(
      orders,
      '{"id": 1, "items": [{"sku": "a", "qty": 1, "price": 123456789.5}]}',
      /^items\[0\]\.price: 123456789\.5 is out of range for decimal\(10, 2\)/,
    );
  });

  it('a missing required field, a null required element and a wrong type name the path inside the value', () => {
    const items = (...xs: unknown[]) => JSON.stringify({ id: 1, items: xs });
    const ok = { sku: 'a', qty: 1 };
    rejects(orders, items(ok, ok, ok, { sku: 'd' }), /^items\[3\]\.qty: required field is missing$/);
    rejects(orders, items(ok, null), /^items\[1\]: required element is null$/);
    rejects(orders, items(ok, 'x'), /^items\[1\]: expected a JSON object, found "x"$/);
    rejects(orders, items({ sku: 'a', qty: 2 ** 31 }), /^items\[0\]\.qty: 2147483648 does not fit a 32-bit int$/);
    rejects(orders, JSON.stringify({ id: 1, items: { sku: 'a' } }), /^items: expected a JSON array, found \{"sku":"a"\}$/);
    rejects(orders, JSON.stringify({ id: 1, customer: { name: 'Ann' } }), /^customer\.id: required field is missing$/);
    rejects(orders, JSON.stringify({ id: 1, customer: 7 }), /^customer: expected a JSON object, found 7$/);
    rejects(orders, JSON.stringify({ id: 1, counts: { a: 'many' } }), /^counts\["a"\]: expected an integer, found "many"$/);
    rejects(orders, JSON.stringify({ id: 1, tags: ['a', 1] }), /^tags\[1\]: expected a string, found 1$/);
    // a field read through a path says which
    const deep: DecoderTable = {
      columns: [
        {
          name: 'order',
          type: { type: 'struct', fields: [{ name: 'qty', type: 'int', required: true, path: 'line.qty' }] },
          required: true,
        },
      ],
    };
    rejects(deep, '{"order": {"line": {}}}', /^order\.qty: required field is missing \(path line\.qty\)$/);
    rejects(deep, '{}', /^order: required field is missing$/);
  });

  it('a whole JSON object lands in a struct column through the column path; nesting goes any depth', () => {
    const t: DecoderTable = {
      columns: [
        {
          name: 'order',
          path: 'payload.order',
          required: true,
          type: {
            type: 'struct',
            fields: [
              {
                name: 'lines',
                required: false,
                type: {
                  type: 'list',
                  element: {
                    type: 'map',
                    key: 'string',
                    value: { type: 'list', element: 'int', elementRequired: true },
                    valueRequired: true,
                  },
                  elementRequired: false,
                },
              },
            ],
          },
        },
      ],
    };
    assert.deepEqual(decodeRecord(t, rec('{"payload": {"order": {"lines": [{"a": [1, 2]}, null, {}]}}}')), {
      order: { lines: [[['a', [1, 2]]], null, []] },
    });
    rejects(
      t,
      '{"payload": {"order": {"lines": [{"a": [1]}, {"b": [1, null]}]}}}',
      /^order\.lines\[1\]\["b"\]\[1\]: required element is null$/,
    );
    rejects(t, '{"payload": {"order": {"lines": [{"b": null}]}}}', /^order\.lines\[0\]\["b"\]: required map value is null$/);
  });

  it('map keys convert from their text: digits to int and long, dates to days, UUIDs lower-cased; one key twice after conversion is refused', () => {
    const t: DecoderTable = {
      columns: [
        { name: 'by_id', type: { type: 'map', key: 'long', value: 'string', valueRequired: false }, required: false },
        { name: 'by_day', type: { type: 'map', key: 'date', value: 'int', valueRequired: false }, required: false },
        { name: 'by_uuid', type: { type: 'map', key: 'uuid', value: 'boolean', valueRequired: false }, required: false },
        { name: 'by_n', type: { type: 'map', key: 'int', value: 'decimal(5, 1)', valueRequired: false }, required: false },
      ],
    };
    const row = decodeRecord(
      t,
      rec(
        JSON.stringify({
          by_id: { '9007199254740993': 'big', '-2': 'neg' },
          by_day: { '1970-01-02': 1, '2024-02-29': 2 },
          by_uuid: { 'AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE': true },
          by_n: { '7': '1.5' },
        }),
      ),
    );
    assert.deepEqual(row.by_id, [
      [9007199254740993n, 'big'],
      [-2n, 'neg'],
    ]);
    assert.deepEqual(row.by_day, [
      [1, 1],
      [19782, 2],
    ]);
    assert.deepEqual(row.by_uuid, [['aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee', true]]);
    assert.deepEqual(row.by_n, [[7, 15n]]);
    rejects(t, JSON.stringify({ by_id: { x1: 'a' } }), /^by_id\["x1"\]: invalid map key \(expected an integer, found "x1"\)$/);
    rejects(t, JSON.stringify({ by_day: { '2025-02-29': 1 } }), /^by_day\["2025-02-29"\]: invalid map key \(expected a date that exists/);
    rejects(
      t,
      JSON.stringify({ by_n: { '2147483648': '1' } }),
      /^by_n\["2147483648"\]: invalid map key \("2147483648" does not fit a 32-bit int\)$/,
    );
    rejects(t, JSON.stringify({ by_id: { '7': 'a', '07': 'b' } }), /^by_id\["07"\]: map key is the same long as key "7"$/);
  });

  it('decoded nested rows write with ids at every level, per-leaf metrics, and read back as sent', async () => {
    const rows = [
      decode({ id: 1, customer: { id: 7, name: 'Ann' }, items: [{ sku: 'a', qty: 2, price: '1.50' }], counts: { x: 3 }, tags: ['t'] }),
      decode({ id: 2, customer: { id: 9 }, items: [], counts: {}, tags: [null] }),
      decode({ id: 3 }),
    ];
    const schema = schemaOf(orders.columns);
    const io = new MemoryFileIO();
    const metadata = newTableMetadata({ location: 'memory://t', schema, tableUuid: 'u' });
    const [file] = await writePartitionedRows(io, metadata, rows, { fileName: (n) => `f${n}.parquet` });
    // ids: columns 1-5; customer.id 6, .name 7, .city 8; items.element 9, its sku 10, qty 11, price 12;
    // counts.key 13, .value 14; tags.element 15 — a value count for every leaf
    assert.deepEqual(
      [...file!.valueCounts!.keys()].sort((a, b) => a - b),
      [1, 6, 7, 8, 10, 11, 12, 13, 14, 15],
    );
    assert.deepEqual(Object.fromEntries(file!.nullValueCounts!), { 1: 0, 6: 1, 7: 2, 8: 3, 10: 2, 11: 2, 12: 2, 13: 2, 14: 2, 15: 2 });
    // bounds for leaves outside lists and maps (as Iceberg Java keeps them)
    assert.deepEqual(
      [...file!.lowerBounds!.keys()].sort((a, b) => a - b),
      [1, 6, 7],
    );
    const back = (await readParquetTable(io, file!.filePath))
      .toArray()
      .map((r) => JSON.parse(JSON.stringify(r.toJSON(), (_k, v) => (typeof v === 'bigint' ? String(v) : v))));
    assert.deepEqual(back, [
      {
        id: '1',
        customer: { id: '7', name: 'Ann', city: null },
        items: [{ sku: 'a', qty: 2, price: '"150"' }], // Arrow JS shows a decimal as its unscaled value, quoted
        counts: { x: '3' },
        tags: ['t'],
      },
      { id: '2', customer: { id: '9', name: null, city: null }, items: [], counts: {}, tags: [null] },
      { id: '3', customer: null, items: null, counts: null, tags: null },
    ]);
  });

  it('a nested config no record could satisfy fails at compile time, naming the nested path', () => {
    assert.throws(
      () =>
        compileDecoder({
          columns: [{ name: 'k', type: { type: 'list', element: 'string', elementRequired: false }, required: false, source: 'key' }],
        }),
      (e: Error) => e instanceof DecoderConfigError && /column k: source key fills a primitive column, not list<string>/.test(e.message),
    );
    assert.throws(
      () =>
        compileDecoder({
          columns: [{ name: 's', type: { type: 'list', element: 'decimal(40, 2)', elementRequired: false }, required: false }],
        }),
      (e: Error) => e instanceof DecoderConfigError && /column s\.element: decimal\(40, 2\) needs a precision from 1 to 38/.test(e.message),
    );
    assert.throws(
      () =>
        compileDecoder({
          columns: [
            { name: 's', type: { type: 'struct', fields: [{ name: '__proto__', type: 'int', required: false }] }, required: false },
          ],
        }),
      (e: Error) => e instanceof DecoderConfigError && /field s\.__proto__: the name cannot be a row key/.test(e.message),
    );
  });
});

describe('which texts take the exact (lossless) parse', () => {
  it('the unrolled digit-run checks match exactly what /\\d[\\d.]{15,}/ (and the exponent rule) match', () => {
    const reference = /\d[\d.]{15,}/,
      referenceDecimal = /\d[\d.]{15,}|\d[eE][+-]?\d{3}/;
    const alphabet = '0123456789.eE+-x" ';
    let seed = 7;
    const next = (): number => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
    for (let i = 0; i < 20_000; i++) {
      let s = '';
      const len = 1 + Math.floor(next() * 40);
      // mostly digits and dots, so that long runs occur
      for (let k = 0; k < len; k++) s += alphabet[Math.floor(next() * (next() < 0.7 ? 11 : alphabet.length))];
      assert.equal(MAYBE_UNSAFE_DECIMAL.test(s), referenceDecimal.test(s), s);
      assert.equal(parseJsonExactNeedsLossless(s), reference.test(s), s);
    }
  });

  it('a 16-digit id or a 16-digit split decimal anywhere in the text keeps its digits; 15 digits parse natively', () => {
    const t: DecoderTable = { columns: [{ name: 'id', type: 'long', required: true }] };
    assert.equal(decodeRecord(t, rec('{"pad": "xxxxxxxx", "id": 1234567890123456789}')).id, 1234567890123456789n);
    assert.equal(decodeRecord(t, rec('{"id": 999999999999999}')).id, 999999999999999n);
    // a non-integer with 17 significant digits is not rounded to an integer
    rejects(t, '{"id": 1.0000000000000001}', /^id: expected an integer, found 1\.0000000000000001/);
  });
});

/** Whether parseJsonExact takes lossless-json for `text` (it returns LosslessNumbers where JSON.parse returns numbers). */
function parseJsonExactNeedsLossless(text: string): boolean {
  const v = parseJsonExact(`{"probe": 1, "s": ${JSON.stringify(text)}}`) as { probe: unknown };
  return typeof v.probe !== 'number';
}

describe('ISO timestamps are parsed without a regex, exactly as the pattern reads them', () => {
  const ISO_TS = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:?\d{2})?$/;
  it('agrees with the pattern on every string built from timestamp pieces', () => {
    const pieces = [
      '2026',
      '-',
      '07',
      '01',
      'T',
      ' ',
      't',
      '13',
      ':',
      '59',
      '60',
      '.',
      '1',
      '123456',
      '1234567',
      '000',
      'Z',
      'z',
      '+',
      '-05',
      '05:30',
      '0530',
      '1',
      'x',
      '',
    ];
    let seed = 11;
    const next = (): number => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
    const out = isoTimestamp();
    const valid = [
      '2026-07-01T13:59:59',
      '2026-07-01 00:00:00.1',
      '1999-12-31T23:59:59.123456789-05:30',
      '2026-07-01T13:59:59+0530',
      '0001-01-01T00:00:00Z',
    ];
    let matched = 0;
    for (let i = 0; i < 60_000; i++) {
      let s: string;
      if (i % 3 === 0) {
        // a valid one with one piece changed, added or removed
        const base = valid[i % valid.length]!;
        const at = Math.floor(next() * (base.length + 1));
        const piece = pieces[Math.floor(next() * pieces.length)]!;
        const cut = Math.floor(next() * 3);
        s = base.slice(0, at) + piece + base.slice(at + cut);
      } else {
        s = valid[i % valid.length]!;
        if (i % 3 === 2) s += pieces[Math.floor(next() * pieces.length)]!;
      }
      const m = ISO_TS.exec(s);
      const ok = parseIsoTimestamp(s, out);
      assert.equal(ok, m !== null, s);
      if (!m) continue;
      matched++;
      const frac = m[7] ?? '';
      const zone = m[8];
      assert.deepEqual(
        [out.y, out.mo, out.d, out.h, out.mi, out.s, out.fracDigits, out.micros, out.subMicros],
        [...m.slice(1, 7).map(Number), frac.length, frac === '' ? 0 : Number(frac.slice(0, 6).padEnd(6, '0')), /[1-9]/.test(frac.slice(6))],
        s,
      );
      assert.deepEqual(
        [out.zone, out.zone === 2 ? out.zsign : 0, out.zh, out.zm],
        zone === undefined
          ? [0, 0, 0, 0]
          : zone === 'Z'
            ? [1, 0, 0, 0]
            : [2, zone[0] === '-' ? -1 : 1, Number(zone.slice(1, 3)), Number(zone.slice(-2))],
        s,
      );
    }
    assert.ok(matched > 20_000, `only ${matched} matched`);
  });

  it('timestamps far from 1970 take the bigint path and stay exact', () => {
    const t: DecoderTable = { columns: [{ name: 'ts', type: 'timestamptz', required: true }] };
    assert.equal(decodeRecord(t, rec('{"ts": "2026-07-01T00:00:00.123456Z"}')).ts, 1782864000123456n);
    assert.equal(decodeRecord(t, rec('{"ts": "9999-12-31T23:59:59.999999Z"}')).ts, 253402300799999999n);
    assert.equal(decodeRecord(t, rec('{"ts": "0001-01-01T00:00:00+01:00"}')).ts, -62135600400000000n);
    assert.equal(decodeRecord(t, rec('{"ts": "1969-12-31T23:59:59.999999Z"}')).ts, -1n);
  });
});
