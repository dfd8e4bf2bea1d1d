/**
 * Iceberg column metrics computed from the Arrow data being written (spec "Manifests" data_file
 * fields 108-111, 125, 128; table properties `write.metadata.metrics.*`).
 *
 * Counts follow Parquet's column-chunk semantics, as Iceberg Java and pyiceberg do (they read
 * them from the footer): a leaf's value count is its number of level entries — nulls included,
 * and a null or empty list/map counts as one null entry of each leaf below it. Bounds are kept
 * only for leaves not under a list or map, exclude nulls and NaNs, and are truncated for string
 * and binary per the metrics mode (strings by code point, upper bound incremented so it still
 * bounds every value; when no valid increment exists the upper bound is dropped).
 */
import type * as arrow from 'apache-arrow';
import { IcebergError } from '../errors';
import { compareUnsignedBytes, parseDecimalType, toBytes, type PrimitiveValue } from '../spec/conversions';
import { metricsMaxInferredColumnDefaults, metricsModeColumn, metricsModeDefault } from '../spec/table-properties';
import type { IcebergType, PrimitiveType, Schema } from '../spec/types';

export type MetricsMode = { kind: 'none' } | { kind: 'counts' } | { kind: 'truncate'; length: number } | { kind: 'full' };

export const DEFAULT_METRICS_MODE: MetricsMode = { kind: 'truncate', length: 16 };

export function parseMetricsMode(s: string): MetricsMode {
  const v = s.trim().toLowerCase();
  if (v === 'none' || v === 'counts' || v === 'full') return { kind: v };
  const m = /^truncate\((\d+)\)$/.exec(v);
  if (m && Number(m[1]) > 0) return { kind: 'truncate', length: Number(m[1]) };
  throw IcebergError.mismatch('DataInvalid', 'metrics mode', 'none | counts | truncate(N>0) | full', s);
}

/** Metrics mode per leaf field id. */
export type MetricsConfig = (fieldId: number) => MetricsMode;

/**
 * The table-property rules: `write.metadata.metrics.default` (default truncate(16)),
 * `write.metadata.metrics.column.<dotted name>` overrides, and — when no default is set — only
 * the first `write.metadata.metrics.max-inferred-column-defaults` (100) leaves get the default,
 * the rest `none` (keeps manifests small for very wide tables).
 */
export function metricsConfigFromProperties(schema: Schema, properties: Record<string, string> = {}): MetricsConfig {
  const explicitDefault = metricsModeDefault(properties);
  const dflt = explicitDefault === undefined ? DEFAULT_METRICS_MODE : parseMetricsMode(explicitDefault);
  const limit = metricsMaxInferredColumnDefaults(properties);
  const modes = new Map<number, MetricsMode>();
  const leaves = leafNames(schema);
  leaves.forEach(({ id, name }, idx) => {
    const override = metricsModeColumn(properties, name);
    if (override !== undefined) modes.set(id, parseMetricsMode(override));
    else modes.set(id, explicitDefault === undefined && idx >= limit ? { kind: 'none' } : dflt);
  });
  return (id) => modes.get(id) ?? dflt;
}

function leafNames(schema: Schema): Array<{ id: number; name: string }> {
  const out: Array<{ id: number; name: string }> = [];
  const visit = (id: number, type: IcebergType, name: string): void => {
    if (typeof type === 'string') out.push({ id, name });
    else if (type.type === 'struct') for (const f of type.fields) visit(f.id, f.type, `${name}.${f.name}`);
    else if (type.type === 'list') visit(type['element-id'], type.element, `${name}.element`);
    else {
      visit(type['key-id'], type.key, `${name}.key`);
      visit(type['value-id'], type.value, `${name}.value`);
    }
  };
  for (const f of schema.fields) visit(f.id, f.type, f.name);
  return out;
}

// ---------- truncation (Iceberg UnicodeUtil / BinaryUtil) ----------
/** First `length` code points. */
export function truncateStringLower(s: string, length: number): string {
  const cps = Array.from(s);
  return cps.length <= length ? s : cps.slice(0, length).join('');
}

/** Smallest string of <= `length` code points that is >= s; undefined when none exists. */
export function truncateStringUpper(s: string, length: number): string | undefined {
  const cps = Array.from(s);
  if (cps.length <= length) return s;
  const kept = cps.slice(0, length).map((c) => c.codePointAt(0)!);
  for (let i = kept.length - 1; i >= 0; i--) {
    let next = kept[i]! + 1;
    if (next >= 0xd800 && next <= 0xdfff) next = 0xe000; // surrogates are not code points
    if (next <= 0x10ffff) return String.fromCodePoint(...kept.slice(0, i), next);
  }
  return undefined;
}

export function truncateBinaryLower(b: Uint8Array, length: number): Uint8Array {
  return b.length <= length ? b : b.slice(0, length);
}

export function truncateBinaryUpper(b: Uint8Array, length: number): Uint8Array | undefined {
  if (b.length <= length) return b;
  for (let i = length - 1; i >= 0; i--) {
    if (b[i]! < 0xff) {
      const out = b.slice(0, i + 1);
      out[i]! += 1;
      return out;
    }
  }
  return undefined;
}

// ---------- collection ----------
/** Per-slot state for a leaf's level entries: 1 live, 0 null because an ancestor is null, 2 not an entry. */
const LIVE = 1,
  NULL = 0,
  ABSENT = 2;

type Bound = number | bigint | boolean | Uint8Array;

interface LeafStats {
  fieldId: number;
  type: PrimitiveType;
  mode: MetricsMode;
  repeated: boolean;
  values: number;
  nulls: number;
  nans: number;
  min?: Bound;
  max?: Bound;
}

export interface ColumnMetrics {
  valueCounts: Map<number, number>;
  nullValueCounts: Map<number, number>;
  nanValueCounts: Map<number, number>;
  lowerBounds: Map<number, Uint8Array>;
  upperBounds: Map<number, Uint8Array>;
}

const utf8 = new TextDecoder('utf-8');

function isValid(data: arrow.Data, i: number): boolean {
  if (data.nullCount === 0 || !data.nullBitmap || data.nullBitmap.length === 0) return true;
  const pos = data.offset + i;
  return (data.nullBitmap[pos >> 3]! & (1 << (pos & 7))) !== 0;
}

/**
 * Accumulates metrics over the record batches of one data file. Batches must have the Arrow
 * layout of `icebergToArrowSchema(schema)` (the writer conforms them first).
 */
export class MetricsCollector {
  private readonly leaves = new Map<number, LeafStats>();

  constructor(
    private readonly schema: Schema,
    private readonly config: MetricsConfig = metricsConfigFromProperties(schema),
  ) {}

  add(batch: arrow.RecordBatch): void {
    const root = batch.data;
    this.schema.fields.forEach((f, k) => {
      const child = root.children[k];
      if (!child) throw IcebergError.mismatch('DataInvalid', `record batch column count`, this.schema.fields.length, root.children.length);
      this.visit(f.id, f.type, child, 0, batch.numRows, null, 0, false);
    });
  }

  private leaf(fieldId: number, type: PrimitiveType, repeated: boolean): LeafStats {
    let s = this.leaves.get(fieldId);
    if (!s) {
      s = { fieldId, type, mode: this.config(fieldId), repeated, values: 0, nulls: 0, nans: 0 };
      this.leaves.set(fieldId, s);
    }
    return s;
  }

  /** Visits slots [start, end) of `data`; `mask` (indexed i - start) and `extra` carry ancestor nulls. */
  private visit(
    id: number,
    type: IcebergType,
    data: arrow.Data,
    start: number,
    end: number,
    mask: Uint8Array | null,
    extra: number,
    repeated: boolean,
  ): void {
    if (typeof type === 'string') {
      this.visitLeaf(this.leaf(id, type, repeated), data, start, end, mask, extra);
      return;
    }
    if (type.type === 'struct') {
      let childMask = mask;
      if (data.nullCount > 0) {
        childMask = new Uint8Array(end - start);
        for (let i = start; i < end; i++) {
          const m = mask ? mask[i - start]! : LIVE;
          childMask[i - start] = m === LIVE && !isValid(data, i) ? NULL : m;
        }
      }
      type.fields.forEach((f, k) => this.visit(f.id, f.type, data.children[k]!, start, end, childMask, extra, repeated));
      return;
    }
    // list or map: one level entry per element; a null/empty/ancestor-null slot is one null entry
    const offsets = data.valueOffsets as Int32Array;
    const cStart = offsets[start]!,
      cEnd = offsets[end]!;
    const childMask = new Uint8Array(cEnd - cStart).fill(ABSENT);
    let childExtra = extra;
    for (let i = start; i < end; i++) {
      const m = mask ? mask[i - start]! : LIVE;
      if (m === ABSENT) continue;
      const a = offsets[i]!,
        b = offsets[i + 1]!;
      if (m === NULL || !isValid(data, i) || a === b) childExtra++;
      else childMask.fill(LIVE, a - cStart, b - cStart);
    }
    const child = data.children[0]!;
    if (type.type === 'list') {
      this.visit(type['element-id'], type.element, child, cStart, cEnd, childMask, childExtra, true);
    } else {
      this.visit(type['key-id'], type.key, child.children[0]!, cStart, cEnd, childMask, childExtra, true);
      this.visit(type['value-id'], type.value, child.children[1]!, cStart, cEnd, childMask, childExtra, true);
    }
  }

  private visitLeaf(s: LeafStats, data: arrow.Data, start: number, end: number, mask: Uint8Array | null, extra: number): void {
    s.values += extra;
    s.nulls += extra;
    // Slot i in [start, end) holds a value when `bits` is null or bit (bitOff + i) of it is set:
    // a top-level column reads its Arrow validity bitmap in place; under a null struct or a list,
    // a bitmap of the level entries is built here (indexed i - start).
    let bits: Uint8Array | null = null,
      bitOff = 0;
    if (mask !== null) {
      bits = new Uint8Array((end - start + 7) >> 3);
      bitOff = -start;
      for (let i = start; i < end; i++) {
        const m = mask[i - start]!;
        if (m === ABSENT) continue;
        s.values++;
        if (m === NULL || !isValid(data, i)) s.nulls++;
        else bits[(i - start) >> 3]! |= 1 << ((i - start) & 7);
      }
    } else {
      s.values += end - start;
      if (data.nullCount > 0 && data.nullBitmap && data.nullBitmap.length > 0) {
        bits = data.nullBitmap;
        bitOff = data.offset;
        s.nulls += start === 0 && end === data.length ? data.nullCount : end - start - countSetBits(bits, bitOff + start, bitOff + end);
      }
    }
    const t = s.type;
    if (t === 'float' || t === 'double') {
      s.nans += countNaNs(data.values as Float32Array | Float64Array, start, end, bits, bitOff);
    }
    if (s.repeated || (s.mode.kind !== 'truncate' && s.mode.kind !== 'full')) return;
    if (t === 'string' || t === 'binary') {
      const r = byteRangeMinMax(
        data.valueOffsets as Int32Array | BigInt64Array,
        data.values as Uint8Array,
        start,
        end,
        bits,
        bitOff,
        boundPrefixBytes(s.mode, t),
      );
      if (r) {
        if (s.min === undefined || compareUnsignedBytes(r.min, s.min as Uint8Array) < 0) s.min = r.min;
        if (s.max === undefined || compareUnsignedBytes(r.max, s.max as Uint8Array) > 0) s.max = r.max;
      }
      return;
    }
    if (t === 'uuid' || t.startsWith('fixed')) {
      const w = (data.type as arrow.FixedSizeBinary).byteWidth;
      const bytes = data.values as Uint8Array;
      for (let i = start; i < end; i++) {
        if (bits !== null && !isSet(bits, bitOff + i)) continue;
        const v = bytes.subarray(i * w, (i + 1) * w);
        if (s.min === undefined || compareUnsignedBytes(v, s.min as Uint8Array) < 0) s.min = v.slice();
        if (s.max === undefined || compareUnsignedBytes(v, s.max as Uint8Array) > 0) s.max = v.slice();
      }
      return;
    }
    if (t === 'boolean') {
      const r = boolMinMax(data.values as Uint8Array, data.offset, start, end, bits, bitOff);
      if (r === NONE) return;
      const hasFalse = (r & HAS_FALSE) !== 0,
        hasTrue = (r & HAS_TRUE) !== 0;
      s.min = (s.min === undefined || s.min === true) && !hasFalse;
      s.max = s.max === true || hasTrue;
      return;
    }
    if (parseDecimalType(t)) {
      const words = data.values as Uint32Array;
      for (let i = start; i < end; i++) {
        if (bits !== null && !isSet(bits, bitOff + i)) continue;
        const o = i * 4;
        const v = BigInt.asIntN(
          128,
          (BigInt(words[o + 3]!) << 96n) | (BigInt(words[o + 2]!) << 64n) | (BigInt(words[o + 1]!) << 32n) | BigInt(words[o]!),
        );
        if (s.min === undefined || v < (s.min as bigint)) s.min = v;
        if (s.max === undefined || v > (s.max as bigint)) s.max = v;
      }
      return;
    }
    const r =
      t === 'float' || t === 'double'
        ? floatMinMax(data.values as Float32Array | Float64Array, start, end, bits, bitOff)
        : data.values instanceof BigInt64Array
          ? bigintMinMax(data.values, start, end, bits, bitOff)
          : intMinMax(data.values as Int32Array, start, end, bits, bitOff);
    if (!r) return;
    if (
      s.min === undefined ||
      (t === 'float' || t === 'double' ? javaLess(r.min as number, s.min as number) : r.min < (s.min as number | bigint))
    )
      s.min = r.min;
    if (
      s.max === undefined ||
      (t === 'float' || t === 'double' ? javaLess(s.max as number, r.max as number) : r.max > (s.max as number | bigint))
    )
      s.max = r.max;
  }

  result(): ColumnMetrics {
    const out: ColumnMetrics = {
      valueCounts: new Map(),
      nullValueCounts: new Map(),
      nanValueCounts: new Map(),
      lowerBounds: new Map(),
      upperBounds: new Map(),
    };
    for (const s of [...this.leaves.values()].sort((a, b) => a.fieldId - b.fieldId)) {
      if (s.mode.kind === 'none') continue;
      out.valueCounts.set(s.fieldId, s.values);
      out.nullValueCounts.set(s.fieldId, s.nulls);
      if (s.type === 'float' || s.type === 'double') out.nanValueCounts.set(s.fieldId, s.nans);
      if (s.min === undefined || s.max === undefined) continue;
      const bounds = encodeBounds(s);
      if (bounds.lower) out.lowerBounds.set(s.fieldId, bounds.lower);
      if (bounds.upper) out.upperBounds.set(s.fieldId, bounds.upper);
    }
    return out;
  }
}

/** Bit k of an Arrow-style (LSB-first) bitmap. */
function isSet(bits: Uint8Array, k: number): boolean {
  return ((bits[k >> 3]! >> (k & 7)) & 1) !== 0;
}

/** Set bits in positions [from, to) of a bitmap. */
function countSetBits(bits: Uint8Array, from: number, to: number): number {
  let n = 0,
    k = from;
  for (; k < to && (k & 7) !== 0; k++) if (isSet(bits, k)) n++;
  for (; k + 8 <= to; k += 8) {
    let b = bits[k >> 3]!;
    b = b - ((b >> 1) & 0x55);
    b = (b & 0x33) + ((b >> 2) & 0x33);
    n += (b + (b >> 4)) & 0x0f;
  }
  for (; k < to; k++) if (isSet(bits, k)) n++;
  return n;
}

// Monomorphic loops, one per array kind: a shared loop over a union of typed arrays is several
// times slower in V8. A slot i is skipped when `bits` is set and bit (bitOff + i) of it is not.
function intMinMax(
  v: Int32Array,
  start: number,
  end: number,
  bits: Uint8Array | null,
  bitOff: number,
): { min: number; max: number } | undefined {
  let min = 0,
    max = 0,
    seen = false;
  for (let i = start; i < end; i++) {
    if (bits !== null && ((bits[(bitOff + i) >> 3]! >> ((bitOff + i) & 7)) & 1) === 0) continue;
    const x = v[i]!;
    if (!seen) {
      min = max = x;
      seen = true;
    } else if (x < min) min = x;
    else if (x > max) max = x;
  }
  return seen ? { min, max } : undefined;
}

function bigintMinMax(
  v: BigInt64Array,
  start: number,
  end: number,
  bits: Uint8Array | null,
  bitOff: number,
): { min: bigint; max: bigint } | undefined {
  // Compared as (signed high word, unsigned low word) pairs: reading an element as a bigint
  // allocates one (~37 MB of garbage per 1M values); only the two winners are read as bigints.
  const w = new Int32Array(v.buffer, v.byteOffset, v.length * 2);
  let minI = -1,
    maxI = -1,
    minHi = 0,
    minLo = 0,
    maxHi = 0,
    maxLo = 0;
  for (let i = start; i < end; i++) {
    if (bits !== null && ((bits[(bitOff + i) >> 3]! >> ((bitOff + i) & 7)) & 1) === 0) continue;
    const hi = w[2 * i + 1]!,
      lo = w[2 * i]! >>> 0;
    if (minI < 0) {
      minI = maxI = i;
      minHi = maxHi = hi;
      minLo = maxLo = lo;
    } else if (hi < minHi || (hi === minHi && lo < minLo)) {
      minI = i;
      minHi = hi;
      minLo = lo;
    } else if (hi > maxHi || (hi === maxHi && lo > maxLo)) {
      maxI = i;
      maxHi = hi;
      maxLo = lo;
    }
  }
  return minI < 0 ? undefined : { min: v[minI]!, max: v[maxI]! };
}

/** Java Float.compare's a < b for non-NaN values: -0.0 < 0.0. */
function javaLess(a: number, b: number): boolean {
  return a < b || (a === 0 && b === 0 && Object.is(a, -0) && !Object.is(b, -0));
}

function floatMinMax(
  v: Float32Array | Float64Array,
  start: number,
  end: number,
  bits: Uint8Array | null,
  bitOff: number,
): { min: number; max: number } | undefined {
  let min = 0,
    max = 0,
    seen = false;
  for (let i = start; i < end; i++) {
    if (bits !== null && ((bits[(bitOff + i) >> 3]! >> ((bitOff + i) & 7)) & 1) === 0) continue;
    const x = v[i]!;
    if (x !== x) continue; // NaN: counted, never a bound
    if (!seen) {
      min = max = x;
      seen = true;
      continue;
    }
    if (x < min || (x === 0 && min === 0 && Object.is(x, -0))) min = x;
    if (x > max || (x === 0 && max === 0 && Object.is(max, -0))) max = x;
  }
  return seen ? { min, max } : undefined;
}

function countNaNs(v: Float32Array | Float64Array, start: number, end: number, bits: Uint8Array | null, bitOff: number): number {
  let n = 0;
  for (let i = start; i < end; i++) {
    const x = v[i]!;
    if (x !== x && (bits === null || ((bits[(bitOff + i) >> 3]! >> ((bitOff + i) & 7)) & 1) !== 0)) n++;
  }
  return n;
}

const NONE = 0,
  HAS_FALSE = 1,
  HAS_TRUE = 2;

/** Which of false/true occur among the valid slots (bit-packed values at `valueOff`); stops once both have. */
function boolMinMax(values: Uint8Array, valueOff: number, start: number, end: number, bits: Uint8Array | null, bitOff: number): number {
  let r = NONE;
  for (let i = start; i < end && r !== (HAS_FALSE | HAS_TRUE); i++) {
    if (bits !== null && ((bits[(bitOff + i) >> 3]! >> ((bitOff + i) & 7)) & 1) === 0) continue;
    r |= ((values[(valueOff + i) >> 3]! >> ((valueOff + i) & 7)) & 1) !== 0 ? HAS_TRUE : HAS_FALSE;
  }
  return r;
}

/**
 * How many leading bytes of a string/binary value can decide its truncated bounds: values equal
 * in their first `n` bytes get the same lower and upper bound. truncate(L) on a string keeps L code
 * points (at most 4L UTF-8 bytes); two values equal in their first 4L+1 bytes both hold more than
 * L code points, so both bounds are those of the shared prefix (lower = the L code points, upper =
 * them incremented). Binary: L+1 bytes. Full bounds: every byte (Infinity).
 * Event payloads often share long prefixes: comparing whole values made the min/max scan the
 * largest cost of the encoder thread (bench/cycle-phases.ts profile: 703 ms of 5.6 s).
 */
function boundPrefixBytes(mode: MetricsMode, type: string): number {
  if (mode.kind !== 'truncate') return Infinity;
  return type === 'string' ? 4 * mode.length + 1 : mode.length + 1;
}

function byteRangeMinMax(
  offs: Int32Array | BigInt64Array,
  bytes: Uint8Array,
  start: number,
  end: number,
  bits: Uint8Array | null,
  bitOff: number,
  prefix = Infinity,
): { min: Uint8Array; max: Uint8Array } | undefined {
  let minA = -1,
    minB = -1,
    maxA = -1,
    maxB = -1,
    // first byte of the current min/max (-1: empty); a value whose first byte differs is decided
    // without a full comparison
    minF = -1,
    maxF = -1;
  const big = offs instanceof BigInt64Array;
  for (let i = start; i < end; i++) {
    if (bits !== null && ((bits[(bitOff + i) >> 3]! >> ((bitOff + i) & 7)) & 1) === 0) continue;
    const a = big ? Number(offs[i]!) : (offs[i] as number),
      b = big ? Number(offs[i + 1]!) : (offs[i + 1] as number);
    const f = a < b ? bytes[a]! : -1;
    if (minA < 0) {
      minA = maxA = a;
      minB = maxB = b;
      minF = maxF = f;
      continue;
    }
    if (f <= minF && compareRange(bytes, a, b, minA, minB, prefix) < 0) {
      minA = a;
      minB = b;
      minF = f;
    } else if (f >= maxF && compareRange(bytes, a, b, maxA, maxB, prefix) > 0) {
      maxA = a;
      maxB = b;
      maxF = f;
    }
  }
  return minA < 0 ? undefined : { min: bytes.slice(minA, minB), max: bytes.slice(maxA, maxB) };
}

/** Byte order of two ranges of `b`; ranges equal in their first `prefix` bytes compare equal. */
function compareRange(b: Uint8Array, a0: number, a1: number, c0: number, c1: number, prefix: number): number {
  const n = Math.min(a1 - a0, c1 - c0);
  const m = Math.min(n, prefix);
  for (let k = 0; k < m; k++) {
    const d = b[a0 + k]! - b[c0 + k]!;
    if (d !== 0) return d;
  }
  return n >= prefix ? 0 : a1 - a0 - (c1 - c0);
}

function encodeBounds(s: LeafStats): { lower?: Uint8Array; upper?: Uint8Array } {
  const limit = s.mode.kind === 'truncate' ? s.mode.length : Infinity;
  if (s.type === 'string') {
    const lo = utf8.decode(s.min as Uint8Array),
      hi = utf8.decode(s.max as Uint8Array);
    if (limit === Infinity) return { lower: toBytes('string', lo), upper: toBytes('string', hi) };
    const upper = truncateStringUpper(hi, limit);
    return { lower: toBytes('string', truncateStringLower(lo, limit)), upper: upper === undefined ? undefined : toBytes('string', upper) };
  }
  if (s.type === 'binary') {
    if (limit === Infinity) return { lower: s.min as Uint8Array, upper: s.max as Uint8Array };
    return { lower: truncateBinaryLower(s.min as Uint8Array, limit), upper: truncateBinaryUpper(s.max as Uint8Array, limit) };
  }
  return { lower: toBytes(s.type, s.min as PrimitiveValue), upper: toBytes(s.type, s.max as PrimitiveValue) };
}
