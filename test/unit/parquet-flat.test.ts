/**
 * The flat Parquet encoder (iceberg/parquet/flat-encoder.ts) against independent readers:
 * parquet-rs (parquet-wasm's reader) decodes every value back, the test-only Thrift decoder
 * (parquet-thrift.ts) reads the footer it wrote, pyarrow and DuckDB read values, field ids and
 * statistics when a Python with them is around.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import * as arrow from 'apache-arrow';
import { columnsToRecordBatch, encodeParquet, icebergToArrowSchema, readFooterFacts, writeParquetFile, type Schema } from '../../iceberg';
import { FlatParquetEncoder, flatEncodable, MAX_INFLIGHT_BYTES } from '../../iceberg/parquet/flat-encoder';
import { ParquetStreamWriter } from '../../iceberg/parquet/stream-writer';
import { parquetWasm } from '../../iceberg/parquet/wasm';
import { fromWire, toWire } from '../../iceberg/parquet/wire';
import { parquetFieldIds, parquetFooter, type Thrift } from './parquet-thrift';
import { columns, schema, WORDS } from '../fixtures/flat-table';

const same = (a: unknown, b: unknown): boolean =>
  a instanceof Uint8Array && b instanceof Uint8Array ? Buffer.from(a).equals(Buffer.from(b)) : Object.is(a, b) || a === b;

/** Every value of `want` read back from `bytes` by parquet-rs. */
function assertReadsBack(bytes: Uint8Array, want: arrow.RecordBatch): void {
  const got = arrow.tableFromIPC(parquetWasm.readParquet(bytes).intoIPCStream());
  assert.equal(got.numRows, want.numRows);
  for (const f of schema.fields) {
    const g = got.getChild(f.name)!,
      w = want.getChild(f.name)!;
    for (let k = 0; k < want.numRows; k++) {
      const a = g.get(k) as unknown,
        b = w.get(k) as unknown;
      if (!same(a, b)) assert.fail(`column ${f.name} row ${k}: read ${String(a)}, wrote ${String(b)}`);
    }
  }
}

const chunksOf = (footer: Thrift): Thrift[][] => (footer[4] as Thrift[]).map((rg) => (rg[1] as Thrift[]).map((c) => c[3] as Thrift));

test('flat schemas with zstd/gzip/brotli/none are flat-encodable; nested, decimal, uuid, fixed and snappy are not', () => {
  assert.equal(flatEncodable(schema, 'zstd'), true);
  assert.equal(flatEncodable(schema, 'uncompressed'), true);
  assert.equal(flatEncodable(schema, 'gzip'), true);
  assert.equal(flatEncodable(schema, 'snappy'), false);
  const one = (type: Schema['fields'][number]['type']): Schema => ({
    type: 'struct',
    'schema-id': 0,
    fields: [{ id: 1, name: 'x', required: false, type }],
  });
  assert.equal(flatEncodable(one('decimal(10, 2)')), false);
  assert.equal(flatEncodable(one('uuid')), false);
  assert.equal(flatEncodable(one('fixed[3]')), false);
  assert.equal(flatEncodable(one({ type: 'list', 'element-id': 2, element: 'int', 'element-required': false })), false);
});

for (const codec of ['zstd', 'gzip', 'brotli', 'uncompressed'] as const) {
  test(`every flat type round-trips through parquet-rs (${codec}): nulls, NaN, unicode, empty strings, slices, pages, row groups, dictionary fallback`, async () => {
    const n = 5000;
    const arrowSchema = icebergToArrowSchema(schema);
    const batch = columnsToRecordBatch(schema, columns(n), n, arrowSchema);
    // small pages and row groups, a dictionary that overflows on `u` (all distinct) but not on `s`
    const enc = new FlatParquetEncoder(schema, { codec, pageSizeBytes: 4096, rowGroupRows: 3000, dictSizeBytes: 2000 });
    await enc.write(batch.slice(0, 1234)); // sliced batches: validity and booleans at a bit offset
    await enc.write(batch.slice(1234, 1235));
    await enc.write(batch.slice(1235));
    const { bytes, footer } = await enc.finish();
    assertReadsBack(bytes, batch);
    // the facts the encoder reports are the ones parquet-rs reads from the footer
    assert.deepEqual(await readFooterFacts(schema, bytes), footer);
    assert.deepEqual(footer.splitOffsets.length, 2);

    const meta = parquetFooter(bytes);
    assert.deepEqual(Object.fromEntries(parquetFieldIds(bytes)), Object.fromEntries(schema.fields.map((f) => [f.name, f.id])));
    const [first, second] = chunksOf(meta);
    const col = (name: string, rg = first!) => rg[schema.fields.findIndex((f) => f.name === name)]!;
    // s: 5 distinct values, dictionary-encoded in every row group; u: overflows, falls back to PLAIN
    assert.ok(col('s')[11] !== undefined && col('s', second)[11] !== undefined, 'dictionary page for s');
    assert.deepEqual(col('s')[2], [0, 3, 8]); // PLAIN (dictionary page), RLE (levels), RLE_DICTIONARY
    assert.ok((col('u')[2] as number[]).includes(0), 'u falls back to PLAIN');
    // statistics: null counts everywhere, exact min/max of numbers (NaN left out)
    const stats = (name: string) => col(name)[12] as Thrift;
    assert.equal(stats('b')[3], BigInt([...Array(3000).keys()].filter((k) => k % 7 === 3).length));
    assert.equal(stats('i')[3], 0n);
    assert.equal(Buffer.from(stats('i')[6] as Uint8Array).readInt32LE(), -2500);
    assert.equal(Buffer.from(stats('i')[5] as Uint8Array).readInt32LE(), 499);
    const ls = batch.getChild('l')!.toArray().slice(0, 3000) as unknown as Array<bigint | null>;
    const nonNull = [...ls].filter((v, k) => v !== null && k % 7 !== 3) as bigint[];
    assert.equal(
      Buffer.from(stats('l')[6] as Uint8Array).readBigInt64LE(),
      nonNull.reduce((a, b) => (b < a ? b : a)),
    );
    assert.equal(
      Buffer.from(stats('l')[5] as Uint8Array).readBigInt64LE(),
      nonNull.reduce((a, b) => (b > a ? b : a)),
    );
    assert.equal(Buffer.from(stats('d')[6] as Uint8Array).readDoubleLE(), -148.5); // row 0 is NaN
    assert.equal(Buffer.from(stats('d')[5] as Uint8Array).readDoubleLE(), 2998 * 1.5 - 150);
    assert.equal(stats('s')[5], undefined); // no string bounds
  });
}

test('pages compress off the thread while the next are encoded, with a bounded queue; the file reads back whole', async () => {
  // ~50 MiB of page bodies from one batch: 200k rows of a 240-byte string and a long
  const s: Schema = {
    type: 'struct',
    'schema-id': 0,
    fields: [
      { id: 1, name: 'id', required: true, type: 'long' },
      { id: 2, name: 'text', required: true, type: 'string' },
    ],
  };
  const n = 200_000;
  const batch = columnsToRecordBatch(
    s,
    { id: BigInt64Array.from({ length: n }, (_, k) => BigInt(k)), text: Array.from({ length: n }, (_, k) => `${k}:`.padEnd(240, 'x')) },
    n,
  );
  const enc = new FlatParquetEncoder(s, { codec: 'zstd', plainColumns: ['text'] });
  let most = 0,
    samples = 0;
  const sample = (): void => {
    most = Math.max(most, enc.compressingBytes);
    samples++;
  };
  const writing = enc.write(batch);
  // the write yields while pages compress: sample the queue at each turn of the event loop
  let writeDone = false;
  void writing.then(() => (writeDone = true));
  while (!writeDone) {
    sample();
    await new Promise((r) => setImmediate(r));
  }
  await writing;
  assert.ok(samples > 1, 'write() yielded to the event loop while pages were compressing');
  assert.ok(most > 0, 'pages were still compressing when write() yielded');
  // at most the limit plus one step of rows (8192 rows x ~250 bytes, ~2 MiB)
  assert.ok(most <= MAX_INFLIGHT_BYTES + (4 << 20), `${most} bytes of pages compressing at once`);
  const { bytes, footer } = await enc.finish();
  assert.equal(enc.compressingBytes, 0);
  assert.equal(footer.numRows, n);
  const got = arrow.tableFromIPC(parquetWasm.readParquet(bytes).intoIPCStream());
  assert.equal(got.numRows, n);
  for (const k of [0, 1, 65_535, 123_456, n - 1]) {
    assert.equal(got.getChild('id')!.get(k), BigInt(k));
    assert.equal(got.getChild('text')!.get(k), `${k}:`.padEnd(240, 'x'));
  }
});

test('long dictionary values (compared natively) dedupe exactly: values that differ only in their last byte stay apart', async () => {
  const s: Schema = {
    type: 'struct',
    'schema-id': 0,
    fields: [{ id: 1, name: 'doc', required: false, type: 'string' }],
  };
  // two distinct 72-byte values with the same FNV-1a hash (the dictionary's): only the byte
  // comparison tells them apart
  const fnv = (str: string): number => {
    let h = 0x811c9dc5 | 0;
    for (const c of Buffer.from(str)) h = Math.imul(h ^ c, 0x01000193);
    return h;
  };
  const seen = new Map<number, string>();
  let twins: [string, string] | undefined;
  for (let i = 0; !twins; i++) {
    const str = `${'p'.repeat(64)}${i.toString(36).padStart(8, '0')}`;
    const other = seen.get(fnv(str));
    if (other !== undefined) twins = [other, str];
    else seen.set(fnv(str), str);
  }
  const n = 6000;
  // 5 distinct 300-byte values, equal but for the last character, and the twins, in two batches
  // (two value buffers)
  const value = (k: number): string | null =>
    k % 7 === 6 ? null : k % 11 === 3 ? twins[k & 1]! : `${'{"body":"'.padEnd(299, 'z')}${k % 5}`;
  const doc = Array.from({ length: n }, (_, k) => value(k));
  const arrowSchema = icebergToArrowSchema(s);
  const enc = new FlatParquetEncoder(s, { codec: 'uncompressed' });
  await enc.write(columnsToRecordBatch(s, { doc: doc.slice(0, 2500) }, 2500, arrowSchema).slice(1));
  await enc.write(columnsToRecordBatch(s, { doc: doc.slice(2500) }, n - 2500, arrowSchema));
  const { bytes } = await enc.finish();
  const got = arrow.tableFromIPC(parquetWasm.readParquet(bytes).intoIPCStream());
  const want = [...doc.slice(1, 2500), ...doc.slice(2500)];
  assert.deepEqual([...got.getChild('doc')!], want);
  const [chunk] = chunksOf(parquetFooter(bytes))[0]!;
  assert.ok((chunk![2] as number[]).includes(8), 'RLE_DICTIONARY');
  // 7 entries of up to 304 bytes plus ~1 byte of indices per value: far below 300 bytes per value
  assert.ok(Number(chunk![6]) < 20_000, `column chunk of ${String(chunk![6])} bytes`);
});

test('required columns without nulls, one row, and a page per value all round-trip', async () => {
  const s: Schema = {
    type: 'struct',
    'schema-id': 0,
    fields: [
      { id: 1, name: 'id', required: true, type: 'long' },
      { id: 2, name: 'name', required: true, type: 'string' },
    ],
  };
  for (const n of [1, 9, 1000]) {
    const batch = columnsToRecordBatch(
      s,
      { id: BigInt64Array.from({ length: n }, (_, k) => BigInt(k)), name: Array.from({ length: n }, (_, k) => `n${k}`) },
      n,
    );
    const enc = new FlatParquetEncoder(s, { codec: 'zstd', pageSizeBytes: 1 });
    await enc.write(batch);
    const { bytes } = await enc.finish();
    const got = arrow.tableFromIPC(parquetWasm.readParquet(bytes).intoIPCStream());
    assert.deepEqual([...got.getChild('id')!], [...batch.getChild('id')!]);
    assert.deepEqual([...got.getChild('name')!], [...batch.getChild('name')!]);
  }
});

test('encodeParquet and the stream writer take the flat encoder for flat schemas, parquet-wasm for the rest', async () => {
  const n = 2000;
  const batch = columnsToRecordBatch(schema, columns(n), n);
  const createdBy = (bytes: Uint8Array) => Buffer.from(parquetFooter(bytes)[6] as Uint8Array).toString();
  const one = await encodeParquet(schema, icebergToArrowSchema(schema), [batch], { codec: 'zstd' });
  assert.match(createdBy(one.bytes), /floe/);
  assert.equal(one.stats.recordCount, n);
  assertReadsBack(one.bytes, batch);
  // many small batches, as compaction feeds them
  const w = new ParquetStreamWriter(schema, icebergToArrowSchema(schema), { codec: 'zstd' });
  for (let a = 0; a < n; a += 37) await w.write(batch.slice(a, Math.min(n, a + 37)));
  const streamed = await w.finish();
  assert.equal(streamed.stats.recordCount, n);
  assert.deepEqual(streamed.stats.valueCounts, one.stats.valueCounts);
  assert.deepEqual(streamed.stats.lowerBounds, one.stats.lowerBounds);
  assertReadsBack(streamed.bytes, batch);
  const nested: Schema = {
    type: 'struct',
    'schema-id': 0,
    fields: [{ id: 1, name: 'x', required: false, type: { type: 'list', 'element-id': 2, element: 'int', 'element-required': false } }],
  };
  const wasm = await writeParquetFile(nested, { rows: [{ x: [1, 2] }] });
  assert.match(createdBy(wasm.bytes), /parquet-rs/);
  const snappy = await writeParquetFile(schema, { batches: [batch] }, { codec: 'snappy' });
  assert.match(createdBy(snappy.bytes), /parquet-rs/);
});

function findPython(): string | undefined {
  const p = process.env.FLOE_PYTHON ?? join(process.env.FLOE_HOME ?? join(homedir(), '.cache', 'floe'), 'venv', 'bin', 'python');
  if (!existsSync(p)) return undefined;
  try {
    execFileSync(p, ['-c', 'import pyarrow, duckdb'], { stdio: 'ignore' });
    return p;
  } catch {
    return undefined;
  }
}
const python = findPython();

test(
  'pyarrow and DuckDB read the flat encoder: field ids, types, values, statistics',
  { skip: python ? false : 'no python with pyarrow and duckdb' },
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'floe-flat-'));
    try {
      const n = 5000;
      const batch = columnsToRecordBatch(schema, columns(n), n);
      const w = await writeParquetFile(schema, { batches: [batch] }, { codec: 'zstd', pageSizeBytes: 8192 });
      const file = join(dir, 'f.parquet');
      writeFileSync(file, w.bytes);
      const out = execFileSync(python!, [
        '-c',
        `
import json, sys, duckdb, pyarrow.parquet as pq, pyarrow.compute as pc
f = pq.ParquetFile(sys.argv[1])
t = f.read()
ids = {fld.name: int(fld.metadata[b'PARQUET:field_id']) for fld in f.schema_arrow}
st = f.metadata.row_group(0).column(2).statistics
d = duckdb.sql(f"select count(*), count(l), sum(i), count(distinct s), count(distinct u), max(tz), sum(octet_length(bin)) from '{sys.argv[1]}'").fetchone()
print(json.dumps({'ids': ids, 'types': {fld.name: str(fld.type) for fld in t.schema}, 'rows': t.slice(0, 10).to_pylist(),
  'lmin': str(st.min), 'lmax': str(st.max), 'lnulls': st.null_count, 'nulls': {c: t.column(c).null_count for c in t.column_names},
  'duck': [str(x) for x in d]}, default=str).replace('NaN', 'null'))
`,
        file,
      ]).toString();
      const r = JSON.parse(out) as {
        ids: Record<string, number>;
        types: Record<string, string>;
        rows: Array<Record<string, unknown>>;
        lmin: string;
        lmax: string;
        lnulls: number;
        nulls: Record<string, number>;
        duck: string[];
      };
      assert.deepEqual(r.ids, Object.fromEntries(schema.fields.map((f) => [f.name, f.id])));
      assert.deepEqual(r.types, {
        b: 'bool',
        i: 'int32',
        l: 'int64',
        f: 'float',
        d: 'double',
        day: 'date32[day]',
        t: 'time64[us]',
        ts: 'timestamp[us]',
        tz: 'timestamp[us, tz=UTC]',
        s: 'string',
        bin: 'binary',
        tzn: 'timestamp[ns, tz=UTC]',
        u: 'string',
      });
      assert.deepEqual(r.rows[3], {
        b: null,
        i: -2497,
        l: null,
        f: null,
        d: null,
        day: null,
        t: null,
        ts: null,
        tz: '1970-01-01 00:00:00.000021+00:00',
        s: null,
        bin: null,
        tzn: null,
        u: 'user-3-xxx',
      });
      assert.equal(r.rows[2]!.s, 'ccc');
      assert.equal(r.rows[3 + 5]!.s, 'é€😀');
      const nullRows = [...Array(n).keys()].filter((k) => k % 7 === 3).length;
      assert.equal(r.lnulls, nullRows);
      assert.equal(r.nulls.s, nullRows);
      assert.equal(r.nulls.u, 0);
      const ls = [...Array(n).keys()]
        .filter((k) => k % 7 !== 3)
        .map((k) => BigInt(k) * -123_456_789_012n + (k % 2 ? 9_223_372_036_854_775_000n : 0n));
      assert.equal(
        BigInt(r.lmin),
        ls.reduce((a, b) => (b < a ? b : a)),
      );
      assert.equal(
        BigInt(r.lmax),
        ls.reduce((a, b) => (b > a ? b : a)),
      );
      const sumI = [...Array(n).keys()].reduce((a, k) => a + (k - 2500), 0);
      const binLen = [...Array(n).keys()].filter((k) => k % 7 !== 3).reduce((a, k) => a + Math.min(3, k % 4), 0);
      assert.deepEqual(r.duck.slice(0, 5), [String(n), String(n - nullRows), String(sumI), String(WORDS.length), String(n)]);
      assert.match(r.duck[5]!, /^1970-01-01 00:00:00\.034993/);
      assert.equal(r.duck[6], String(binLen));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
);

test('flat batches cross to encoder threads as copied buffers: slices at any bit offset arrive equal, the source untouched', async () => {
  const n = 1000;
  const batch = columnsToRecordBatch(schema, columns(n), n);
  for (const [a, b] of [
    [0, n],
    [3, 517],
    [517, 518],
    [999, 1000],
  ] as const) {
    const slice = batch.slice(a, b);
    const { wire, transfer } = toWire(slice);
    // what postMessage does with a transfer list: the copies move, the batch keeps its buffers
    const moved = structuredClone(wire, { transfer });
    const back = fromWire(icebergToArrowSchema(schema), moved);
    assert.equal(back.numRows, b - a);
    for (const f of schema.fields) {
      const g = back.getChild(f.name)!,
        w = slice.getChild(f.name)!;
      for (let k = 0; k < b - a; k++)
        if (!same(g.get(k), w.get(k))) assert.fail(`${f.name}[${a + k}]: ${String(g.get(k))} != ${String(w.get(k))}`);
    }
  }
  assertReadsBack(await encodeFlat(batch), batch); // the source batch is still whole
});

test('an owned flat batch moves to the thread without copies; a slice of it, a borrowed one or a pooled Buffer is copied', () => {
  const n = 1000;
  const arrowSchema = icebergToArrowSchema(schema);
  const buffersOf = (b: arrow.RecordBatch): Set<ArrayBufferLike> => {
    const out = new Set<ArrayBufferLike>();
    for (const d of b.data.children) for (const v of [d.values, d.valueOffsets, d.nullBitmap]) if (v && v.byteLength > 0) out.add(v.buffer);
    return out;
  };
  // owned: every buffer of the batch is in the transfer list itself, and arrives equal
  const owned = columnsToRecordBatch(schema, columns(n), n);
  const expected = columnsToRecordBatch(schema, columns(n), n);
  const own = buffersOf(owned);
  const { wire, transfer } = toWire(owned, true);
  assert.deepEqual(new Set(transfer), own, 'the batch buffers move as they are');
  const back = fromWire(arrowSchema, structuredClone(wire, { transfer }));
  for (const f of schema.fields) {
    const g = back.getChild(f.name)!,
      w = expected.getChild(f.name)!;
    for (let k = 0; k < n; k++) if (!same(g.get(k), w.get(k))) assert.fail(`${f.name}[${k}]: ${String(g.get(k))} != ${String(w.get(k))}`);
  }
  // borrowed (owned false) or sliced: nothing of the batch moves
  const batch = columnsToRecordBatch(schema, columns(n), n);
  for (const [b, isOwned] of [
    [batch, false],
    [batch.slice(10, 500), true],
  ] as const) {
    const r = toWire(b, isOwned);
    const mine = buffersOf(batch);
    for (const t of r.transfer) assert.ok(!mine.has(t), 'a buffer of the batch would be detached');
  }
  // a small Buffer sits in a slab of Buffer's shared pool: never moved, even when offered (the
  // view below starts the slab, as the first Buffer cut from a fresh slab does)
  const pooled = new Uint8Array(Buffer.from('abcdef').buffer, 0, 6);
  assert.equal(pooled.buffer.byteLength, Buffer.poolSize, 'Buffer.from of 6 bytes is pooled');
  const strType = new arrow.Utf8();
  const one = new arrow.RecordBatch(
    new arrow.Schema([new arrow.Field('s', strType, false)]),
    arrow.makeData({
      type: new arrow.Struct([new arrow.Field('s', strType, false)]),
      length: 1,
      nullCount: 0,
      children: [arrow.makeData({ type: strType, length: 1, nullCount: 0, valueOffsets: new Int32Array([0, 6]), data: pooled })],
    }),
  );
  const r = toWire(one, true);
  assert.ok(!r.transfer.includes(pooled.buffer as ArrayBuffer), 'the pool slab stays');
});

async function encodeFlat(batch: arrow.RecordBatch): Promise<Uint8Array> {
  const enc = new FlatParquetEncoder(schema);
  await enc.write(batch);
  return (await enc.finish()).bytes;
}

test(
  'string columns of nulls only, or whose first pages are all null, read back in pyarrow and DuckDB (no dictionary page without entries)',
  { skip: python ? false : 'no python with pyarrow and duckdb' },
  async () => {
    const s: Schema = {
      type: 'struct',
      'schema-id': 0,
      fields: [
        { id: 1, name: 'id', required: true, type: 'long' },
        { id: 2, name: 'none', required: false, type: 'string' },
        { id: 3, name: 'late', required: false, type: 'string' },
      ],
    };
    const n = 3000;
    const batch = columnsToRecordBatch(
      s,
      {
        id: BigInt64Array.from({ length: n }, (_, k) => BigInt(k)),
        none: new Array<null>(n).fill(null),
        late: Array.from({ length: n }, (_, k) => (k < 2000 ? null : `v${k % 3}`)),
      },
      n,
    );
    const dir = mkdtempSync(join(tmpdir(), 'floe-flat-'));
    try {
      const file = join(dir, 'n.parquet');
      const enc = new FlatParquetEncoder(s, { codec: 'zstd', pageSizeBytes: 1024 });
      await enc.write(batch);
      writeFileSync(file, (await enc.finish()).bytes);
      const out = execFileSync(python!, [
        '-c',
        `
import json, sys, duckdb, pyarrow.parquet as pq
t = pq.read_table(sys.argv[1])
d = duckdb.sql(f"select count(*), count(none), count(late), count(distinct late) from '{sys.argv[1]}'").fetchone()
print(json.dumps({'py': [t.num_rows, t.column('none').null_count, t.column('late').null_count], 'duck': list(d)}))
`,
        file,
      ]).toString();
      assert.deepEqual(JSON.parse(out), { py: [n, n, 2000], duck: [n, 0, 1000, 3] });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
