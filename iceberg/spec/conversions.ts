/**
 * Single-value binary serialization (spec "Appendix D: Single-value serialization"), used for
 * data file lower/upper bounds and manifest-list partition summaries, plus the ordering those
 * bounds are compared with.
 *
 * In-memory values (what `toBytes` accepts and `fromBytes` returns):
 *   boolean -> boolean; int, date (days) -> number; float, double -> number;
 *   long, time (µs), timestamp/timestamptz (µs), timestamp_ns/timestamptz_ns (ns) -> bigint
 *     (`toBytes` also takes a safe-integer `number`);
 *   string -> string; uuid -> string "8-4-4-4-12" (`toBytes` also takes 16 bytes);
 *   fixed[L], binary -> Uint8Array;
 *   decimal(P, S) -> bigint unscaled value (`toBytes` also takes the unscaled two's-complement
 *     big-endian bytes that PartitionValue uses, or a decimal string/number such as "-12.30").
 */
import { IcebergError } from '../errors';
import type { PrimitiveType } from './types';

export type PrimitiveValue = boolean | number | bigint | string | Uint8Array;

const DECIMAL_RE = /^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$/;
const FIXED_RE = /^fixed\[\s*(\d+)\s*\]$/;

/** `decimal(P, S)` -> {precision, scale}; undefined for any other type. */
export function parseDecimalType(type: string): { precision: number; scale: number } | undefined {
  const m = DECIMAL_RE.exec(type);
  return m ? { precision: Number(m[1]), scale: Number(m[2]) } : undefined;
}

/** `fixed[L]` -> L; undefined for any other type. */
export function parseFixedType(type: string): number | undefined {
  const m = FIXED_RE.exec(type);
  return m ? Number(m[1]) : undefined;
}

const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8', { fatal: true });

function invalid(type: PrimitiveType, expected: string, value: unknown): IcebergError {
  const shown =
    typeof value === 'bigint' ? `${value}n` : value instanceof Uint8Array ? `Uint8Array(${value.length})` : JSON.stringify(value);
  return new IcebergError('DataInvalid', `${type} value: expected ${expected}, found ${shown}`, {
    context: { type, expected, found: shown },
  });
}

function asBigInt(type: PrimitiveType, value: PrimitiveValue): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value);
  throw invalid(type, 'a bigint (or safe-integer number)', value);
}

function int64Bytes(type: PrimitiveType, value: PrimitiveValue): Uint8Array {
  const v = asBigInt(type, value);
  if (v < -(2n ** 63n) || v >= 2n ** 63n) throw invalid(type, 'a 64-bit signed integer', value);
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigInt64(0, v, true);
  return out;
}

// ---------- UUID ----------
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function uuidToBytes(uuid: string): Uint8Array {
  if (!UUID_RE.test(uuid)) throw invalid('uuid', 'a UUID string 8-4-4-4-12', uuid);
  return new Uint8Array(Buffer.from(uuid.replace(/-/g, ''), 'hex'));
}

export function uuidFromBytes(bytes: Uint8Array): string {
  if (bytes.length !== 16) throw invalid('uuid', '16 bytes', bytes);
  const h = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

// ---------- decimals ----------
/** Unscaled value -> minimal two's-complement big-endian bytes (what Java's BigInteger.toByteArray gives). */
export function decimalToBytes(unscaled: bigint): Uint8Array {
  let n = 1;
  // smallest n with -2^(8n-1) <= v < 2^(8n-1)
  while (unscaled >= 1n << BigInt(8 * n - 1) || unscaled < -(1n << BigInt(8 * n - 1))) n++;
  const out = new Uint8Array(n);
  let v = BigInt.asUintN(8 * n, unscaled);
  for (let i = n - 1; i >= 0; i--) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return out;
}

/** Two's-complement big-endian bytes (any length >= 1) -> unscaled value. */
export function decimalFromBytes(bytes: Uint8Array): bigint {
  if (bytes.length === 0) throw invalid('decimal(0, 0)', 'at least one byte', bytes);
  let v = 0n;
  for (const b of bytes) v = (v << 8n) | BigInt(b);
  return BigInt.asIntN(8 * bytes.length, v);
}

/**
 * A decimal string ("-12.3", "7", "1e2" not accepted) or number -> unscaled value at `scale`.
 * Rejects values that need more fractional digits than the scale instead of rounding silently.
 */
export function unscaledDecimal(value: string | number, scale: number): bigint {
  const s = typeof value === 'number' ? String(value) : value.trim();
  const m = /^([+-]?)(\d*)(?:\.(\d*))?$/.exec(s);
  if (!m || (m[2] === '' && (m[3] ?? '') === '')) throw invalid(`decimal(38, ${scale})` as PrimitiveType, 'a decimal string', value);
  const frac = m[3] ?? '';
  const extra = frac.slice(scale);
  if (/[1-9]/.test(extra)) {
    throw invalid(`decimal(38, ${scale})` as PrimitiveType, `at most ${scale} fractional digits`, value);
  }
  const digits = `${m[2] || '0'}${frac.slice(0, scale).padEnd(scale, '0')}`;
  const v = BigInt(digits);
  return m[1] === '-' ? -v : v;
}

/** Unscaled value + scale -> plain decimal string ("-0.05"). */
export function formatDecimal(unscaled: bigint, scale: number): string {
  const neg = unscaled < 0n;
  const digits = (neg ? -unscaled : unscaled).toString().padStart(scale + 1, '0');
  const body = scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
  return neg ? `-${body}` : body;
}

function decimalUnscaled(type: PrimitiveType, value: PrimitiveValue, scale: number): bigint {
  if (typeof value === 'bigint') return value;
  if (value instanceof Uint8Array) return decimalFromBytes(value);
  // strings and numbers are decimal values (1.5 at scale 2 is unscaled 150), never unscaled
  if (typeof value === 'string' || typeof value === 'number') return unscaledDecimal(value, scale);
  throw invalid(type, 'an unscaled bigint, unscaled bytes or a decimal string/number', value);
}

// ---------- encode / decode ----------
/** Encodes one value with Appendix D. Throws DataInvalid when the value does not fit the type. */
export function toBytes(type: PrimitiveType, value: PrimitiveValue): Uint8Array {
  switch (type) {
    case 'boolean':
      if (typeof value !== 'boolean') throw invalid(type, 'a boolean', value);
      return Uint8Array.of(value ? 1 : 0);
    case 'int':
    case 'date': {
      if (typeof value !== 'number' || !Number.isInteger(value) || value < -(2 ** 31) || value >= 2 ** 31) {
        throw invalid(type, 'a 32-bit integer number', value);
      }
      const out = new Uint8Array(4);
      new DataView(out.buffer).setInt32(0, value, true);
      return out;
    }
    case 'long':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
    case 'timestamp_ns':
    case 'timestamptz_ns':
      return int64Bytes(type, value);
    case 'float': {
      if (typeof value !== 'number') throw invalid(type, 'a number', value);
      const out = new Uint8Array(4);
      new DataView(out.buffer).setFloat32(0, value, true);
      return out;
    }
    case 'double': {
      if (typeof value !== 'number') throw invalid(type, 'a number', value);
      const out = new Uint8Array(8);
      new DataView(out.buffer).setFloat64(0, value, true);
      return out;
    }
    case 'string':
      if (typeof value !== 'string') throw invalid(type, 'a string', value);
      return utf8Encoder.encode(value);
    case 'uuid':
      if (typeof value === 'string') return uuidToBytes(value);
      if (value instanceof Uint8Array && value.length === 16) return value.slice();
      throw invalid(type, 'a UUID string or 16 bytes', value);
    case 'binary':
      if (!(value instanceof Uint8Array)) throw invalid(type, 'a Uint8Array', value);
      return value.slice();
    default: {
      const dec = parseDecimalType(type);
      if (dec) {
        const v = decimalUnscaled(type, value, dec.scale);
        if ((v < 0n ? -v : v) >= 10n ** BigInt(dec.precision)) throw invalid(type, `at most ${dec.precision} digits`, value);
        return decimalToBytes(v);
      }
      const len = parseFixedType(type);
      if (len !== undefined) {
        if (!(value instanceof Uint8Array) || value.length !== len) throw invalid(type, `${len} bytes`, value);
        return value.slice();
      }
      throw new IcebergError('FeatureUnsupported', `single-value serialization of type ${String(type)}`);
    }
  }
}

function view(type: PrimitiveType, bytes: Uint8Array, length: number): DataView {
  if (bytes.length !== length) throw invalid(type, `${length} bytes`, bytes);
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Decodes one Appendix D value (see the header for the in-memory representation). */
export function fromBytes(type: PrimitiveType, bytes: Uint8Array): PrimitiveValue {
  switch (type) {
    case 'boolean':
      if (bytes.length !== 1) throw invalid(type, '1 byte', bytes);
      return bytes[0] !== 0;
    case 'int':
    case 'date':
      return view(type, bytes, 4).getInt32(0, true);
    case 'long':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
    case 'timestamp_ns':
    case 'timestamptz_ns':
      // v1 writers stored int bounds for promoted int->long columns as 4 bytes; accept those.
      if (type === 'long' && bytes.length === 4) return BigInt(view(type, bytes, 4).getInt32(0, true));
      return view(type, bytes, 8).getBigInt64(0, true);
    case 'float':
      return view(type, bytes, 4).getFloat32(0, true);
    case 'double':
      // float->double promotion: older bounds may be 4-byte floats.
      if (bytes.length === 4) return view(type, bytes, 4).getFloat32(0, true);
      return view(type, bytes, 8).getFloat64(0, true);
    case 'string':
      return utf8Decoder.decode(bytes);
    case 'uuid':
      return uuidFromBytes(bytes);
    case 'binary':
      return bytes.slice();
    default: {
      if (parseDecimalType(type)) return decimalFromBytes(bytes);
      const len = parseFixedType(type);
      if (len !== undefined) return bytes.slice();
      throw new IcebergError('FeatureUnsupported', `single-value serialization of type ${String(type)}`);
    }
  }
}

// ---------- ordering ----------
/** Unsigned lexicographic byte order (binary, fixed, uuid; and strings as UTF-8). */
export function compareUnsignedBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const d = (a[i] as number) - (b[i] as number);
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

/**
 * Strings order by Unicode code point (= UTF-8 byte order), not by UTF-16 code unit as JS `<`
 * does: the two differ for supplementary characters vs U+E000..U+FFFF.
 */
export function compareStrings(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i),
      y = b.charCodeAt(i);
    if (x === y) continue;
    // only differing surrogates need care: a surrogate (a code point >= U+10000) sorts after any BMP char
    const xs = x >= 0xd800 && x <= 0xdfff,
      ys = y >= 0xd800 && y <= 0xdfff;
    if (xs !== ys) return xs ? 1 : -1;
    return x < y ? -1 : 1;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

/** Java's Float.compare/Double.compare order: -0 < +0 and NaN above +Infinity. */
function compareFloating(a: number, b: number): number {
  if (a < b) return -1;
  if (a > b) return 1;
  const an = Number.isNaN(a),
    bn = Number.isNaN(b);
  if (an || bn) return an === bn ? 0 : an ? 1 : -1;
  if (a === 0 && b === 0) {
    const an0 = Object.is(a, -0),
      bn0 = Object.is(b, -0);
    return an0 === bn0 ? 0 : an0 ? -1 : 1;
  }
  return 0;
}

/** Orders two in-memory values of `type` the way Iceberg orders bounds. */
export function compareValues(type: PrimitiveType, a: PrimitiveValue, b: PrimitiveValue): number {
  switch (type) {
    case 'boolean':
      return a === b ? 0 : a ? 1 : -1;
    case 'int':
    case 'date':
      return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
    case 'float':
    case 'double':
      return compareFloating(a as number, b as number);
    case 'string':
      return compareStrings(a as string, b as string);
    case 'uuid':
    case 'binary':
      return compareUnsignedBytes(toBytes(type, a), toBytes(type, b));
    case 'long':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
    case 'timestamp_ns':
    case 'timestamptz_ns': {
      const x = asBigInt(type, a),
        y = asBigInt(type, b);
      return x < y ? -1 : x > y ? 1 : 0;
    }
    default: {
      const dec = parseDecimalType(type);
      if (dec) {
        const x = decimalUnscaled(type, a, dec.scale),
          y = decimalUnscaled(type, b, dec.scale);
        return x < y ? -1 : x > y ? 1 : 0;
      }
      if (parseFixedType(type) !== undefined) return compareUnsignedBytes(a as Uint8Array, b as Uint8Array);
      throw new IcebergError('FeatureUnsupported', `ordering of type ${String(type)}`);
    }
  }
}

/** Orders two Appendix D encodings of `type` (e.g. bounds from different files). */
export function compareBytes(type: PrimitiveType, a: Uint8Array, b: Uint8Array): number {
  if (type === 'string' || type === 'binary' || type === 'uuid' || parseFixedType(type) !== undefined) {
    return compareUnsignedBytes(a, b);
  }
  return compareValues(type, fromBytes(type, a), fromBytes(type, b));
}
