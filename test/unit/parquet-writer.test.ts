import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as arrow from 'apache-arrow';
import {
  MemoryFileIO,
  isIcebergError,
  conformBatch,
  icebergToArrowSchema,
  metricsConfigFromProperties,
  readParquetBatches,
  readParquetInfo,
  readParquetTable,
  truncateStringUpper,
  writeParquetFile,
  fromBytes,
  toBytes,
  type PrimitiveType,
  type Schema,
} from '../../iceberg';
import { parquetFieldIds, rowGroupStarts } from './parquet-thrift';

const PRIMITIVES: PrimitiveType[] = [
  'boolean',
  'int',
  'long',
  'float',
  'double',
  'date',
  'time',
  'timestamp',
  'timestamptz',
  'timestamp_ns',
  'timestamptz_ns',
  'string',
  'uuid',
  'binary',
  'decimal(10, 2)',
  'decimal(38, 6)',
  'fixed[3]',
];
const colName = (t: PrimitiveType): string => `c_${t.replace(/[^a-z0-9]/g, '_')}`;
const allTypes: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: PRIMITIVES.map((t, i) => ({ id: i + 1, name: colName(t), required: false, type: t })),
};

/** Three non-null values per type, ascending, plus what the reader should give back. */
const VALUES: Record<string, unknown[]> = {
  boolean: [false, true, true],
  int: [-5, 0, 2 ** 31 - 1],
  long: [-(2n ** 63n), 1n, 2n ** 62n],
  float: [-1.5, 0.25, 3],
  double: [-Infinity, 1e-300, 2.5],
  date: [-1, 0, 19000],
  time: [0n, 1n, 86_399_999_999n],
  timestamp: [-1n, 0n, 1_700_000_000_123_456n],
  timestamptz: [0n, 5n, 1_700_000_000_000_000n],
  timestamp_ns: [1n, 2n, 1_700_000_000_000_000_001n],
  timestamptz_ns: [-10n, 0n, 10n],
  string: ['', 'abc', 'zz-a-string-longer-than-sixteen-chars'],
  uuid: ['00000000-0000-0000-0000-000000000001', '7f000000-0000-0000-0000-000000000000', 'ff000000-0000-0000-0000-000000000000'],
  binary: [Uint8Array.of(), Uint8Array.of(1, 2), Uint8Array.of(0xff)],
  'decimal(10, 2)': [-12345n, 0n, 99_999_999n],
  'decimal(38, 6)': [-(10n ** 37n), 1n, 10n ** 37n],
  'fixed[3]': [Uint8Array.of(0, 0, 1), Uint8Array.of(1, 2, 3), Uint8Array.of(255, 255, 255)],
};

function rows(): Array<Record<string, unknown>> {
  // row order scrambled so min/max are not simply first/last; row 3 is all nulls
  const order = [1, 0, 2];
  const out: Array<Record<string, unknown>> = order.map((k) => Object.fromEntries(PRIMITIVES.map((t) => [colName(t), VALUES[t]![k]])));
  out.push({});
  out[0]![colName('double')] = NaN; // replaces 1e-300 on row 0
  out[1]![colName('float')] = NaN; // replaces -1.5 on row 1
  return out;
}

/** What Arrow JS hands back for a value we wrote, as comparable JS. */
function normalize(t: PrimitiveType, v: unknown): unknown {
  if (v === null) return null;
  if (t.startsWith('decimal')) {
    const w = v as Uint32Array; // Arrow JS Decimal128 values are 4 little-endian 32-bit words
    return BigInt.asIntN(128, (BigInt(w[3]!) << 96n) | (BigInt(w[2]!) << 64n) | (BigInt(w[1]!) << 32n) | BigInt(w[0]!));
  }
  if (t === 'uuid') return Buffer.from(v as Uint8Array).toString('hex');
  if (v instanceof Uint8Array) return [...v];
  return v;
}

function expectedOf(t: PrimitiveType, v: unknown): unknown {
  if (v === undefined || v === null) return null;
  if (t === 'uuid') return (v as string).replace(/-/g, '');
  if (v instanceof Uint8Array) return [...v];
  return v;
}

test('round trip of every primitive type with nulls and NaNs, field ids in the Parquet schema', async () => {
  const input = rows();
  const w = await writeParquetFile(allTypes, { rows: input });
  const io = new MemoryFileIO();
  await io.write('memory://t/all.parquet', w.bytes);

  // field ids as written into the Parquet schema itself (footer Thrift), not via the Arrow hint
  const ids = parquetFieldIds(w.bytes);
  for (const f of allTypes.fields) assert.equal(ids.get(f.name), f.id, `field id of ${f.name}`);

  const table = await readParquetTable(io, 'memory://t/all.parquet');
  assert.equal(table.numRows, 4);
  for (const f of allTypes.fields) {
    const t = f.type as PrimitiveType;
    const col = table.getChild(f.name)!;
    const got = [...col].map((v) => normalize(t, v));
    const want = input.map((r) => expectedOf(t, r[f.name]));
    if (t === 'float' || t === 'double') {
      got.forEach((g, i) => (Number.isNaN(want[i]) ? assert.ok(Number.isNaN(g as number)) : assert.equal(g, want[i])));
    } else if (t === 'timestamp' || t === 'timestamptz' || t === 'time' || t === 'timestamp_ns' || t === 'timestamptz_ns') {
      // Arrow JS renders temporal values as numbers; compare the raw 64-bit storage instead
      const raw = [...Array(4).keys()].map((i) => (col.isValid(i) ? (col.data[0]!.values as BigInt64Array)[i] : null));
      assert.deepEqual(raw, want, f.name);
    } else if (t === 'date') {
      const raw = [...Array(4).keys()].map((i) => (col.isValid(i) ? (col.data[0]!.values as Int32Array)[i] : null));
      assert.deepEqual(raw, want, f.name);
    } else {
      assert.deepEqual(got, want, f.name);
    }
  }
});

test('metrics: counts, NaN counts and bounds decode to the true min/max', async () => {
  const w = await writeParquetFile(allTypes, { rows: rows() });
  const s = w.stats;
  assert.equal(s.recordCount, 4);
  assert.equal(s.fileSizeInBytes, w.bytes.length);
  assert.equal(s.fileFormat, 'PARQUET');
  assert.deepEqual(s.splitOffsets, rowGroupStarts(w.bytes));
  for (const [i, t] of PRIMITIVES.entries()) {
    const id = i + 1;
    assert.equal(s.valueCounts!.get(id), 4, `value count ${t}`);
    assert.equal(s.nullValueCounts!.get(id), 1, `null count ${t}`);
    assert.ok((s.columnSizes!.get(id) ?? 0) > 0, `column size ${t}`);
    if (t === 'float' || t === 'double') assert.equal(s.nanValueCounts!.get(id), 1);
    else assert.equal(s.nanValueCounts!.has(id), false);
  }
  const sum = [...s.columnSizes!.values()].reduce((a, b) => a + b, 0);
  // chunks sit between the leading magic and the footer (page indexes may follow them)
  const footerStart = w.bytes.length - 8 - new DataView(w.bytes.buffer, w.bytes.byteOffset + w.bytes.length - 8, 4).getUint32(0, true);
  assert.ok(4 + sum <= footerStart, `column sizes ${sum} vs footer start ${footerStart}`);

  const lower = (t: PrimitiveType) => fromBytes(t, s.lowerBounds!.get(PRIMITIVES.indexOf(t) + 1)!);
  const upper = (t: PrimitiveType) => fromBytes(t, s.upperBounds!.get(PRIMITIVES.indexOf(t) + 1)!);
  for (const t of PRIMITIVES) {
    const [lo, , hi] = VALUES[t]!;
    if (t === 'float') {
      assert.equal(lower(t), 0.25);
      assert.equal(upper(t), 3);
      continue;
    } // -1.5 was NaN'd
    if (t === 'double') {
      assert.equal(lower(t), -Infinity);
      assert.equal(upper(t), 2.5);
      continue;
    }
    if (t === 'string') {
      assert.equal(lower(t), '');
      // truncate(16): first 16 chars with the last incremented ('zz-a-string-lon' + 'g'+1)
      assert.equal(upper(t), 'zz-a-string-lonh');
      continue;
    }
    if (t === 'uuid' || t === 'binary' || t === 'fixed[3]') {
      assert.deepEqual(s.lowerBounds!.get(PRIMITIVES.indexOf(t) + 1), toBytes(t, lo as never), t);
      assert.deepEqual(s.upperBounds!.get(PRIMITIVES.indexOf(t) + 1), toBytes(t, hi as never), t);
      continue;
    }
    assert.deepEqual(lower(t), lo, `lower ${t}`);
    assert.deepEqual(upper(t), hi, `upper ${t}`);
  }
});

test('string truncation keeps code points whole and drops an upper bound it cannot increment', async () => {
  assert.equal(truncateStringUpper('ab', 1), 'b');
  assert.equal(truncateStringUpper('a\u{10ffff}\u{10ffff}', 2), 'b');
  assert.equal(truncateStringUpper('\u{10ffff}\u{10ffff}', 1), undefined);
  assert.equal(truncateStringUpper('a\ud7ffz', 2), 'a\ue000'); // skips the surrogate range
  const schema: Schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 's', required: true, type: 'string' }] };
  const emoji = '😀'.repeat(20);
  const w = await writeParquetFile(schema, { rows: [{ s: emoji }, { s: 'a' }] });
  assert.equal(fromBytes('string', w.stats.lowerBounds!.get(1)!), 'a');
  assert.equal(fromBytes('string', w.stats.upperBounds!.get(1)!), '😀'.repeat(15) + '😁');
  const full = await writeParquetFile(
    schema,
    { rows: [{ s: emoji }] },
    {
      metrics: metricsConfigFromProperties(schema, { 'write.metadata.metrics.column.s': 'full' }),
    },
  );
  assert.equal(fromBytes('string', full.stats.upperBounds!.get(1)!), emoji);
  const counts = await writeParquetFile(
    schema,
    { rows: [{ s: emoji }] },
    {
      metrics: metricsConfigFromProperties(schema, { 'write.metadata.metrics.default': 'counts' }),
    },
  );
  assert.equal(counts.stats.valueCounts!.get(1), 1);
  assert.equal(counts.stats.lowerBounds!.size, 0);
});

test('nested struct/list/map: ids on every level, Parquet-style counts, no bounds under lists', async () => {
  const schema: Schema = {
    type: 'struct',
    'schema-id': 0,
    fields: [
      { id: 1, name: 'st', required: false, type: { type: 'struct', fields: [{ id: 2, name: 'x', required: true, type: 'int' }] } },
      { id: 3, name: 'l', required: false, type: { type: 'list', 'element-id': 4, element: 'string', 'element-required': false } },
      {
        id: 5,
        name: 'm',
        required: false,
        type: { type: 'map', 'key-id': 6, key: 'string', 'value-id': 7, value: 'long', 'value-required': false },
      },
    ],
  };
  const input = [
    { st: { x: 1 }, l: ['a', null], m: new Map([['k', 1n]]) },
    { st: null, l: null, m: { z: null } },
    { st: { x: 7 }, l: [], m: null },
  ];
  const w = await writeParquetFile(schema, { rows: input });
  assert.deepEqual(
    [...parquetFieldIds(w.bytes).values()].sort((a, b) => a - b),
    [1, 2, 3, 4, 5, 6, 7],
  );
  const s = w.stats;
  // same numbers pyarrow reports for this file's column chunks (num_values / null_count)
  assert.deepEqual(Object.fromEntries(s.valueCounts!), { 2: 3, 4: 4, 6: 3, 7: 3 });
  assert.deepEqual(Object.fromEntries(s.nullValueCounts!), { 2: 1, 4: 3, 6: 1, 7: 2 });
  assert.deepEqual([...s.lowerBounds!.keys()], [2]);
  assert.equal(fromBytes('int', s.upperBounds!.get(2)!), 7);
  const io = new MemoryFileIO();
  await io.write('memory://n.parquet', w.bytes);
  const back = (await readParquetTable(io, 'memory://n.parquet'))
    .toArray()
    .map((r) => JSON.parse(JSON.stringify(r.toJSON(), (_k, v) => (typeof v === 'bigint' ? String(v) : v))));
  assert.deepEqual(back, [
    { st: { x: 1 }, l: ['a', null], m: { k: '1' } },
    { st: null, l: null, m: { z: null } },
    { st: { x: 7 }, l: [], m: null },
  ]);
});

test('required columns reject nulls; wrong JS types say expected vs found', async () => {
  const schema: Schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'id', required: true, type: 'long' }] };
  await assert.rejects(writeParquetFile(schema, { rows: [{ id: null }] }), /column id: required, found null at row 0/);
  await assert.rejects(
    writeParquetFile(schema, { rows: [{ id: 'x' }] }),
    (e) => isIcebergError(e, 'DataInvalid') && /expected a bigint/.test(e.message),
  );
});

test('a string with an unpaired surrogate fails the write instead of landing as U+FFFD (or shifting its neighbours)', async () => {
  const schema: Schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 's', required: false, type: 'string' }] };
  await assert.rejects(
    writeParquetFile(schema, { rows: [{ s: 'é' }, { s: 'a\ud800' }] }),
    /column s: expected a Unicode string \(no unpaired surrogates\)/,
  );
  // two halves in neighbouring values would pair up once joined: still refused, value by value
  await assert.rejects(writeParquetFile(schema, { rows: [{ s: 'x\ud83d' }, { s: '\ude00y' }] }), /no unpaired surrogates/);
  const ok = await writeParquetFile(schema, { rows: [{ s: '😀' }, { s: 'é' }] });
  const io = new MemoryFileIO();
  await io.write('memory://s.parquet', ok.bytes);
  assert.deepEqual([...(await readParquetTable(io, 'memory://s.parquet')).getChild('s')!], ['😀', 'é']);
});

test('columnar input and Arrow input from another layout give the same file contents', async () => {
  const schema: Schema = {
    type: 'struct',
    'schema-id': 0,
    fields: [
      { id: 1, name: 'id', required: true, type: 'long' },
      { id: 2, name: 'name', required: false, type: 'string' },
      { id: 3, name: 'ts', required: false, type: 'timestamptz' },
      { id: 4, name: 'extra', required: false, type: 'double' },
    ],
  };
  const n = 1000;
  const ids = new BigInt64Array(n).map((_, i) => BigInt(i));
  const names = Array.from({ length: n }, (_, i) => (i % 7 === 0 ? null : `name-${i}`));
  const ts = Array.from({ length: n }, (_, i) => BigInt(i) * 1000n);
  const a = await writeParquetFile(schema, { columns: { id: ids, name: names, ts }, numRows: n });
  // pyarrow-like layout: large_string, timestamp in ms with another zone spelling, int32 ids, no field ids
  const foreign = new arrow.Table({
    id: arrow.vectorFromArray(
      Array.from({ length: n }, (_, i) => i),
      new arrow.Int32(),
    ),
    name: arrow.vectorFromArray(names, new arrow.LargeUtf8()),
    ts: arrow.vectorFromArray(
      Array.from({ length: n }, (_, i) => i),
      new arrow.TimestampMillisecond('+00:00'),
    ),
  });
  const b = await writeParquetFile(schema, { table: foreign });
  assert.deepEqual(b.stats.valueCounts, a.stats.valueCounts);
  assert.deepEqual(b.stats.nullValueCounts, a.stats.nullValueCounts);
  assert.deepEqual(b.stats.lowerBounds, a.stats.lowerBounds);
  assert.deepEqual(b.stats.upperBounds, a.stats.upperBounds);
  assert.equal(a.stats.nullValueCounts!.get(4), n); // missing optional column is all null
  const conformed = conformBatch(schema, foreign.batches[0]!);
  assert.equal(String(conformed.schema.fields[2]!.type), String(icebergToArrowSchema(schema).fields[2]!.type));
  const narrow: Schema = { ...schema, fields: [{ id: 9, name: 'ts', required: false, type: 'timestamp' }] };
  assert.throws(() => conformBatch(narrow, foreign.batches[0]!), /expected Timestamp<MICROSECOND>, found Timestamp<MILLISECOND, \+00:00>/);
});

test('reader streams row group by row group and can select columns', async () => {
  const schema: Schema = {
    type: 'struct',
    'schema-id': 0,
    fields: [
      { id: 1, name: 'id', required: true, type: 'long' },
      { id: 2, name: 'v', required: false, type: 'string' },
    ],
  };
  const n = 50_000;
  const w = await writeParquetFile(
    schema,
    {
      columns: { id: new BigInt64Array(n).map((_, i) => BigInt(i)), v: Array.from({ length: n }, (_, i) => `v${i % 100}`) },
      numRows: n,
    },
    { rowGroupRows: 10_000 },
  );
  assert.equal(w.stats.splitOffsets!.length, 5);
  assert.deepEqual(w.stats.splitOffsets, rowGroupStarts(w.bytes));
  const io = new MemoryFileIO();
  await io.write('memory://rg.parquet', w.bytes);
  const info = await readParquetInfo(io, 'memory://rg.parquet');
  assert.deepEqual(info.rowGroupRows, [10_000, 10_000, 10_000, 10_000, 10_000]);
  assert.equal(info.schema.fields[0]!.metadata.get('PARQUET:field_id'), '1');
  let seen = 0,
    batches = 0;
  for await (const b of readParquetBatches(io, 'memory://rg.parquet', { columns: ['id'], wholeFileBelowBytes: 0 })) {
    assert.deepEqual(
      b.schema.fields.map((f) => f.name),
      ['id'],
    );
    assert.equal(b.getChild('id')!.get(0), BigInt(seen));
    seen += b.numRows;
    batches++;
  }
  assert.equal(seen, n);
  assert.ok(batches >= 5);
  const only = [];
  for await (const b of readParquetBatches(io, 'memory://rg.parquet', { rowGroups: [3] })) only.push(b);
  assert.equal(
    only.reduce((a, b) => a + b.numRows, 0),
    10_000,
  );
  assert.equal(only[0]!.getChild('id')!.get(0), 30_000n);
});
