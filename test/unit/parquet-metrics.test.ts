/**
 * MetricsCollector against a value-by-value reference (Arrow JS `vec.get(i)`): random columns
 * with nulls, NaNs, -0.0, shared prefixes and empty strings, whole and sliced batches (a slice
 * reads its parent's validity and boolean bitmaps at a non-zero bit offset).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as arrow from 'apache-arrow';
import {
  columnsToRecordBatch,
  icebergToArrowSchema,
  MetricsCollector,
  truncateBinaryLower,
  truncateBinaryUpper,
  truncateStringLower,
  truncateStringUpper,
  compareUnsignedBytes,
  toBytes,
  type PrimitiveValue,
  type PrimitiveType,
  type Schema,
} from '../../iceberg';
import { prng } from '../../bench/support/prng';

const TYPES: PrimitiveType[] = ['boolean', 'int', 'long', 'float', 'double', 'string', 'binary'];
const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: TYPES.map((t, i) => ({ id: i + 1, name: `c${i}`, required: false, type: t })),
};

function value(t: PrimitiveType, r: () => number): unknown {
  const k = Math.floor(r() * 1000) - 500;
  switch (t) {
    case 'boolean':
      return r() < 0.5;
    case 'int':
      return k * 4_000_000;
    case 'long': {
      // large magnitudes, values around 2^32 (equal high words, low words past 2^31) and the extremes
      const x = r();
      if (x < 0.02) return x < 0.01 ? -(2n ** 63n) : 2n ** 63n - 1n;
      return x < 0.5 ? BigInt(k) * 10n ** 15n : BigInt(k) * 8_388_609n;
    }
    case 'float':
    case 'double': {
      const x = r();
      return x < 0.05 ? NaN : x < 0.1 ? -0 : x < 0.15 ? 0 : k / 8;
    }
    case 'string': {
      const x = r();
      return x < 0.05 ? '' : `${'ab'.repeat(Math.floor(r() * 3))}${String.fromCharCode(97 + Math.floor(r() * 4))}é${k}`;
    }
    default:
      return Uint8Array.from({ length: Math.floor(r() * 4) }, () => Math.floor(r() * 4) * 85);
  }
}

/** The metrics of a batch computed value by value (no truncation needed: all values are short). */
function reference(
  batch: arrow.RecordBatch,
): Map<number, { values: number; nulls: number; nans: number; lo?: Uint8Array; hi?: Uint8Array }> {
  const out = new Map<number, { values: number; nulls: number; nans: number; lo?: Uint8Array; hi?: Uint8Array }>();
  TYPES.forEach((t, k) => {
    const vec = batch.getChildAt(k)!;
    let nulls = 0,
      nans = 0;
    let lo: Uint8Array | undefined, hi: Uint8Array | undefined;
    let loV: unknown, hiV: unknown;
    for (let i = 0; i < batch.numRows; i++) {
      let v = vec.get(i) as unknown;
      if (v === null) {
        nulls++;
        continue;
      }
      if (typeof v === 'number' && Number.isNaN(v)) {
        nans++;
        continue;
      }
      if (t === 'string') v = new TextEncoder().encode(v as string);
      const less = (a: unknown, b: unknown): boolean =>
        a instanceof Uint8Array
          ? compareUnsignedBytes(a, b as Uint8Array) < 0
          : typeof a === 'number'
            ? a < (b as number) || (a === 0 && b === 0 && Object.is(a, -0) && !Object.is(b, -0))
            : (a as bigint | boolean) < (b as bigint | boolean);
      if (loV === undefined || less(v, loV)) loV = v;
      if (hiV === undefined || less(hiV, v)) hiV = v;
    }
    if (loV !== undefined) {
      lo = loV instanceof Uint8Array ? loV : toBytes(t, loV as PrimitiveValue);
      hi = hiV instanceof Uint8Array ? (hiV as Uint8Array) : toBytes(t, hiV as PrimitiveValue);
    }
    out.set(k + 1, { values: batch.numRows, nulls, nans, lo, hi });
  });
  return out;
}

test('metrics match a value-by-value reference on whole and sliced batches', () => {
  const r = prng(7);
  for (const [n, nullRate] of [
    [1000, 0.1],
    [777, 0],
    [300, 0.97],
    [64, 1],
  ] as const) {
    const cols = Object.fromEntries(TYPES.map((t, k) => [`c${k}`, Array.from({ length: n }, () => (r() < nullRate ? null : value(t, r)))]));
    const batch = columnsToRecordBatch(schema, cols, n, icebergToArrowSchema(schema));
    const slices: Array<[number, number]> = [
      [0, n],
      [3, n],
      [5, Math.max(5, n - 11)],
      [9, Math.min(n, 17)],
    ];
    for (const [a, b] of slices) {
      const part = batch.slice(a, b);
      const m = new MetricsCollector(schema, () => ({ kind: 'full' }));
      m.add(part);
      const got = m.result();
      for (const [id, ref] of reference(part)) {
        const what = `${TYPES[id - 1]} rows ${n} null rate ${nullRate} slice [${a}, ${b})`;
        assert.equal(got.valueCounts.get(id), ref.values, `values ${what}`);
        assert.equal(got.nullValueCounts.get(id), ref.nulls, `nulls ${what}`);
        if (TYPES[id - 1] === 'float' || TYPES[id - 1] === 'double') assert.equal(got.nanValueCounts.get(id), ref.nans, `NaNs ${what}`);
        assert.deepEqual(got.lowerBounds.get(id), ref.lo, `lower ${what}`);
        assert.deepEqual(got.upperBounds.get(id), ref.hi, `upper ${what}`);
      }
    }
  }
});

test('metrics over several batches combine like one batch', () => {
  const r = prng(11);
  const n = 500;
  const cols = Object.fromEntries(TYPES.map((t, k) => [`c${k}`, Array.from({ length: n }, () => (r() < 0.2 ? null : value(t, r)))]));
  const batch = columnsToRecordBatch(schema, cols, n, icebergToArrowSchema(schema));
  const whole = new MetricsCollector(schema);
  whole.add(batch);
  const parts = new MetricsCollector(schema);
  for (let a = 0; a < n; a += 37) parts.add(batch.slice(a, Math.min(n, a + 37)));
  assert.deepEqual(parts.result(), whole.result());
});

test('truncated bounds of long values sharing long prefixes equal the bounds of the whole values, truncated', () => {
  // The min/max scan compares only the bytes that can decide a truncated bound (boundPrefixBytes):
  // values that differ only after 4L+1 bytes (strings) or L+1 bytes (binary) tie. Edge cases: a
  // value of exactly L 4-byte code points beside the same value extended (a tie there would pick
  // an upper bound below the real max), values equal for hundreds of bytes, and very short ones.
  const r = prng(23);
  const L = 4;
  const strSchema: Schema = {
    type: 'struct',
    'schema-id': 0,
    fields: [
      { id: 1, name: 's', required: false, type: 'string' },
      { id: 2, name: 'b', required: false, type: 'binary' },
    ],
  };
  const shared = 'x'.repeat(300);
  const emoji = '😀'.repeat(L); // L code points, 4L bytes
  const pick = <T>(xs: T[]): T => xs[Math.floor(r() * xs.length)]!;
  for (let round = 0; round < 40; round++) {
    const n = 50 + Math.floor(r() * 200);
    const strings = Array.from({ length: n }, () =>
      pick([
        () => shared + String.fromCharCode(97 + Math.floor(r() * 26)),
        () => shared.slice(0, Math.floor(r() * 20)),
        () => emoji,
        () => emoji + pick(['a', '😀', '']),
        () => '😀'.repeat(Math.floor(r() * 6)) + 'z',
        () => null,
      ])(),
    );
    const binaries: (Uint8Array | null)[] = Array.from({ length: n }, (): Uint8Array | null =>
      pick([
        () => Uint8Array.from({ length: L + 1 + Math.floor(r() * 40) }, (_, i) => (i < L + 1 ? 0xff : Math.floor(r() * 256))),
        () => Uint8Array.from({ length: Math.floor(r() * (L + 2)) }, () => 0xff),
        () => Uint8Array.from({ length: Math.floor(r() * 60) }, () => Math.floor(r() * 2) * 0xff),
        () => null,
      ])(),
    );
    const batch = columnsToRecordBatch(strSchema, { s: strings, b: binaries }, n, icebergToArrowSchema(strSchema));
    const m = new MetricsCollector(strSchema, () => ({ kind: 'truncate', length: L }));
    m.add(batch);
    const got = m.result();
    const enc = new TextEncoder();
    const present: Uint8Array[] = strings.filter((x): x is string => x !== null).map((x) => enc.encode(x));
    const bins = binaries.filter((x): x is Uint8Array => x !== null);
    const lo = (xs: Uint8Array[]) => xs.reduce((a, b) => (compareUnsignedBytes(b, a) < 0 ? b : a));
    const hi = (xs: Uint8Array[]) => xs.reduce((a, b) => (compareUnsignedBytes(b, a) > 0 ? b : a));
    const dec = new TextDecoder();
    if (present.length) {
      assert.deepEqual(got.lowerBounds.get(1), enc.encode(truncateStringLower(dec.decode(lo(present)), L)), `string lower, round ${round}`);
      const up = truncateStringUpper(dec.decode(hi(present)), L);
      assert.deepEqual(got.upperBounds.get(1), up === undefined ? undefined : enc.encode(up), `string upper, round ${round}`);
    }
    if (bins.length) {
      assert.deepEqual(got.lowerBounds.get(2), truncateBinaryLower(lo(bins), L), `binary lower, round ${round}`);
      assert.deepEqual(got.upperBounds.get(2), truncateBinaryUpper(hi(bins), L), `binary upper, round ${round}`);
    }
  }
});
