/**
 * One JSON value -> one primitive column's row value, exactly or not at all: invalid UTF-16
 * (unpaired surrogates), malformed base64, impossible dates and times, digits a decimal or
 * timestamp cannot hold and numbers that overflow are refused as a DecodeError naming the column
 * and the value, never rounded or rolled. Row value types follow iceberg/parquet's writer:
 * long/time/timestamp* -> bigint (micros), int/date -> number (days), float/double -> number,
 * string/uuid -> string, binary/fixed -> Uint8Array, boolean, decimal(P,S) -> unscaled bigint;
 * each checked against the ranges the writer and the column's partition transforms take (ranges.ts).
 */
import { LosslessNumber } from 'lossless-json';
import type { ColumnConfig, NestedTypeConfig } from '../../config/types';
import { parseDecimalType, parseFixedType } from '../../iceberg';
import { DecodeError, DecoderConfigError, show } from './errors';
import { Bounds, INT_MAX, INT_MIN, LONG_MAX, LONG_MIN, dateBounds, decimalBounds, intBounds, longBounds, timestampBounds } from './ranges';
import type { RowValue } from './row';

/** The converter of one JSON value (never null) to a column's row value, or a DecodeError. */
export type Convert = (v: unknown) => RowValue;

/** A primitive column's configured type (the headers map's type included: it is a string too). */
type PrimitiveColumnType = Exclude<ColumnConfig['type'], NestedTypeConfig>;

/** String.prototype.isWellFormed / toWellFormed (ES2024, in Node 20; not in this project's TS lib). */
export type Es2024String = string & { isWellFormed(): boolean; toWellFormed(): string };
const wellFormed = (s: string): boolean => (s as Es2024String).isWellFormed();

const fail = (col: string, expected: string, v: unknown): DecodeError => new DecodeError(`${col}: expected ${expected}, found ${show(v)}`);

// ---------- exact numbers ----------
const INT_MIN_N = BigInt(INT_MIN),
  INT_MAX_N = BigInt(INT_MAX);
const INT_STRING = /^-?\d+$/;
/** JSON's number grammar, plus what decimal strings commonly hold: a leading '+', "1." and ".5". */
const NUMBER_LITERAL = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;

/** An exact decimal literal: (neg ? -1 : 1) * digits * 10^exp, digits without leading or trailing zeros ('' is zero). */
interface Literal {
  neg: boolean;
  digits: string;
  exp: number;
}

function parseLiteral(s: string): Literal | undefined {
  const m = NUMBER_LITERAL.exec(s);
  if (!m) return undefined;
  const int = m[2]!,
    frac = m[3] ?? '';
  if (int === '' && frac === '') return undefined;
  let digits = int + frac;
  let a = 0,
    b = digits.length;
  while (a < b && digits.charCodeAt(a) === 48) a++;
  while (b > a && digits.charCodeAt(b - 1) === 48) b--;
  // a huge exponent stays a (possibly infinite) number: nothing is built from it before a range check
  const exp = (m[4] === undefined ? 0 : Number(m[4])) - frac.length + (digits.length - b);
  digits = digits.slice(a, b);
  return { neg: m[1] === '-', digits, exp };
}

/** The literal text of a JSON number: its own text when lossless, else the shortest form of the double (exact below 16 digits). */
function literalOf(v: unknown): Literal | undefined {
  if (v instanceof LosslessNumber) return parseLiteral(v.value);
  if (typeof v === 'number' && Number.isFinite(v)) return parseLiteral(String(v));
  return undefined;
}

/** Unscaled integer of a literal at `scale`; 'fraction' when it has more fractional digits, 'range' past `digitLimit` digits (never builds 1e1000000000). */
function unscaled(l: Literal, scale: number, digitLimit: number): bigint | 'fraction' | 'range' {
  if (l.digits === '') return 0n;
  const shift = l.exp + scale;
  if (shift < 0) return 'fraction';
  if (l.digits.length + shift > digitLimit) return 'range';
  const u = BigInt(shift === 0 ? l.digits : l.digits + '0'.repeat(shift));
  return l.neg ? -u : u;
}

/** An exact integer from a JSON number, a lossless number or a string of digits; 'range' past 40 digits. */
function integerOf(v: unknown): bigint | 'range' | undefined {
  if (typeof v === 'number') {
    if (Number.isSafeInteger(v)) return BigInt(v);
    if (!Number.isFinite(v)) return 'range'; // JSON has no Infinity literal: this overflowed a double
  } else if (typeof v === 'string') {
    if (!INT_STRING.test(v)) return undefined;
    return v.length > 41 ? 'range' : BigInt(v); // no BigInt of a megabyte of digits
  }
  const l = literalOf(v);
  if (l === undefined) return undefined;
  const u = unscaled(l, 0, 40);
  return u === 'fraction' ? undefined : u;
}

// ---------- calendar ----------
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const isLeap = (y: number): boolean => y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil); undefined if it does not exist. */
function civilDays(y: number, m: number, d: number): number | undefined {
  if (m < 1 || m > 12 || d < 1 || d > (m === 2 && isLeap(y) ? 29 : DAYS_IN_MONTH[m - 1]!)) return undefined;
  const yy = m <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const doy = Math.floor((153 * (m > 2 ? m - 3 : m + 9) + 2) / 5) + d - 1;
  return era * 146097 + yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy - 719468;
}

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const ISO_TIME = /^(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?$/;
const SUB_MICROS = /[1-9]/;

/** Seconds of a clock time h:m:s, or undefined when there is no such time (24:00, 12:60, leap seconds). */
const clockSeconds = (hh: number, mm: number, ss: number): number | undefined =>
  hh > 23 || mm > 59 || ss > 59 ? undefined : hh * 3600 + mm * 60 + ss;

/** The error of a time or timestamp `v` with non-zero digits past the microseconds. */
const subMicrosError = (col: string, v: unknown, what: string): DecodeError =>
  new DecodeError(`${col}: ${show(v)} has sub-microsecond digits; a ${what} holds microseconds`);

/** Fraction digits -> micros; digits beyond the sixth must be zeros (never truncated away). */
function fractionMicros(col: string, frac: string | undefined, v: unknown, what: string): number {
  if (frac === undefined) return 0;
  if (frac.length > 6 && SUB_MICROS.test(frac.slice(6))) throw subMicrosError(col, v, what);
  return Number(frac.length >= 6 ? frac.slice(0, 6) : frac.padEnd(6, '0'));
}

/**
 * An ISO-8601 timestamp's parts, as /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:?\d{2})?$/
 * captures them (as numbers).
 */
interface IsoTimestamp {
  y: number;
  mo: number;
  d: number;
  h: number;
  mi: number;
  s: number;
  /** fraction digits (0 when none) and their value in micros (digits past the sixth dropped) */
  fracDigits: number;
  micros: number;
  /** a non-zero digit past the sixth fraction digit */
  subMicros: boolean;
  /** 0 no zone, 1 'Z', 2 an offset of `zsign` (±1) `zh` hours `zm` minutes */
  zone: number;
  zsign: number;
  zh: number;
  zm: number;
}

/** A record for parseIsoTimestamp to fill (one per converter, reused for every value). */
export const isoTimestamp = (): IsoTimestamp => ({
  y: 0,
  mo: 0,
  d: 0,
  h: 0,
  mi: 0,
  s: 0,
  fracDigits: 0,
  micros: 0,
  subMicros: false,
  zone: 0,
  zsign: 1,
  zh: 0,
  zm: 0,
});

const digit = (s: string, i: number): number => {
  const c = s.charCodeAt(i) - 48;
  return c >= 0 && c <= 9 ? c : -1;
};
/** Two digits at i as a number, or -1. */
const two = (s: string, i: number): number => {
  const a = digit(s, i),
    b = digit(s, i + 1);
  return a < 0 || b < 0 ? -1 : a * 10 + b;
};

/**
 * Parses what that pattern matches (YYYY-MM-DD[T ]hh:mm:ss[.f{1,9}][Z|±hh[:]mm]) into `out`
 * without allocating (a regex match per record made ~280 bytes of garbage on the reading thread);
 * false when the pattern would not match. Ranges (month 13, hour 24, zone 19:00) are the caller's checks.
 */
export function parseIsoTimestamp(v: string, out: IsoTimestamp): boolean {
  const n = v.length;
  if (n < 19) return false;
  const y1 = two(v, 0),
    y2 = two(v, 2);
  if (y1 < 0 || y2 < 0 || v.charCodeAt(4) !== 45 || v.charCodeAt(7) !== 45 || v.charCodeAt(13) !== 58 || v.charCodeAt(16) !== 58)
    return false;
  const sep = v.charCodeAt(10);
  if (sep !== 84 && sep !== 32) return false; // 'T' or ' '
  out.y = y1 * 100 + y2;
  if (
    (out.mo = two(v, 5)) < 0 ||
    (out.d = two(v, 8)) < 0 ||
    (out.h = two(v, 11)) < 0 ||
    (out.mi = two(v, 14)) < 0 ||
    (out.s = two(v, 17)) < 0
  )
    return false;
  let i = 19;
  out.fracDigits = out.micros = 0;
  out.subMicros = false;
  if (i < n && v.charCodeAt(i) === 46) {
    // '.' and 1 to 9 digits
    i++;
    let k = 0;
    for (let c = digit(v, i); c >= 0; c = digit(v, i)) {
      if (++k > 9) return false;
      if (k <= 6) out.micros = out.micros * 10 + c;
      else if (c !== 0) out.subMicros = true;
      i++;
    }
    if (k === 0) return false;
    out.fracDigits = k;
    for (; k < 6; k++) out.micros *= 10;
  }
  out.zone = out.zh = out.zm = 0;
  out.zsign = 1;
  if (i === n) return true;
  const z = v.charCodeAt(i);
  if (z === 90) {
    // 'Z'
    out.zone = 1;
    return i + 1 === n;
  }
  if (z !== 43 && z !== 45) return false; // '+' or '-'
  out.zone = 2;
  out.zsign = z === 45 ? -1 : 1;
  if ((out.zh = two(v, i + 1)) < 0) return false;
  i += 3;
  if (v.charCodeAt(i) === 58) i++; // optional ':'
  if ((out.zm = two(v, i)) < 0) return false;
  return i + 2 === n;
}

// ---------- base64 ----------
/**
 * Buffer's base64 decoder skips characters it does not know; only a canonical encoding that
 * re-encodes to itself (padding optional) is the value the producer meant.
 */
function base64Bytes(col: string, v: unknown, what: string): Uint8Array {
  if (typeof v !== 'string') throw fail(col, what, v);
  const b = Buffer.from(v, 'base64');
  const back = b.toString('base64');
  if (back !== v) {
    let end = back.length;
    while (end > 0 && back.charCodeAt(end - 1) === 61) end--; // '='
    if (v.length !== end || !back.startsWith(v)) throw fail(col, `${what} (canonical base64: A-Z a-z 0-9 + /, optional = padding)`, v);
  }
  return new Uint8Array(b.buffer, b.byteOffset, b.length);
}

// ---------- converters, one per type ----------

/**
 * The converter of column `c` of primitive type `t`, with the ranges of the column's partition
 * `transforms`. Throws DecoderConfigError for a type JSON cannot fill.
 */
export function compilePrimitive(c: ColumnConfig, t: PrimitiveColumnType, transforms: string[]): Convert {
  const col = c.name;
  switch (t) {
    case 'boolean':
      return booleanValue(col);
    case 'int':
      return intValue(col, intBounds(c, transforms));
    case 'long':
      return longValue(col, longBounds(c, transforms));
    case 'float':
    case 'double':
      return floatingValue(col, t);
    case 'string':
      return stringValue(col);
    case 'uuid':
      return uuidValue(col);
    case 'binary':
      return (v) => base64Bytes(col, v, 'base64 binary');
    case 'date':
      return dateValue(col, dateBounds(c, transforms));
    case 'time':
      return timeValue(col);
    case 'timestamp':
    case 'timestamptz':
      return timestampValue(col, t, timestampBounds(c, transforms));
    default: {
      const dec = parseDecimalType(t);
      if (dec) return decimalValue(c, t, dec, transforms);
      const width = parseFixedType(t);
      if (width !== undefined) return fixedValue(col, t, width);
      throw new DecoderConfigError(`column ${col}: type ${t} is not supported for JSON ingest`);
    }
  }
}

function booleanValue(col: string): Convert {
  return (v) => {
    if (typeof v !== 'boolean') throw fail(col, 'a boolean', v);
    return v;
  };
}

function intValue(col: string, bounds: Bounds<number>): Convert {
  return (v) => {
    if (typeof v === 'number' && Number.isInteger(v)) {
      if (v < INT_MIN || v > INT_MAX) throw new DecodeError(`${col}: ${show(v)} does not fit a 32-bit int`);
      return bounds.check(v, v) + 0; // + 0: no -0
    }
    const n = integerOf(v);
    if (n === undefined) throw fail(col, 'an integer', v);
    if (n === 'range' || n < INT_MIN_N || n > INT_MAX_N) throw new DecodeError(`${col}: ${show(v)} does not fit a 32-bit int`);
    return bounds.check(Number(n), v);
  };
}

function longValue(col: string, bounds: Bounds<bigint>): Convert {
  return (v) => {
    const n = integerOf(v);
    if (n === undefined) throw fail(col, 'an integer', v);
    if (n === 'range' || n < LONG_MIN || n > LONG_MAX) throw new DecodeError(`${col}: ${show(v)} does not fit a 64-bit long`);
    return bounds.check(n, v);
  };
}

function floatingValue(col: string, t: 'float' | 'double'): Convert {
  const isFloat = t === 'float';
  return (v) => {
    let x: number;
    if (typeof v === 'number') x = v;
    else if (v instanceof LosslessNumber) x = Number(v.value);
    else if (v === 'NaN' || v === 'Infinity' || v === '-Infinity') return Number(v);
    else throw fail(col, 'a number', v);
    // JSON has no literal for infinities: an infinite result is an overflow, not the value sent
    if (!Number.isFinite(x) || (isFloat && !Number.isFinite(Math.fround(x))))
      throw new DecodeError(`${col}: ${show(v)} is out of range for a ${t}`);
    return x;
  };
}

function stringValue(col: string): Convert {
  return (v) => {
    if (typeof v !== 'string') throw fail(col, 'a string', v);
    // an unpaired surrogate (a "\ud800" escape) has no UTF-8 form: writing it would change it to U+FFFD
    if (!wellFormed(v)) throw fail(col, 'a Unicode string (no unpaired surrogate escapes)', v);
    return v;
  };
}

function uuidValue(col: string): Convert {
  return (v) => {
    if (typeof v !== 'string' || !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v))
      throw fail(col, 'a UUID string', v);
    return v.toLowerCase();
  };
}

function dateValue(col: string, bounds: Bounds<number>): Convert {
  return (v) => {
    const m = typeof v === 'string' ? ISO_DATE.exec(v) : null;
    if (!m) throw fail(col, 'a date YYYY-MM-DD', v);
    const days = civilDays(Number(m[1]), Number(m[2]), Number(m[3]));
    if (days === undefined) throw fail(col, 'a date that exists (YYYY-MM-DD)', v);
    return bounds.check(days, v);
  };
}

function timeValue(col: string): Convert {
  return (v) => {
    const m = typeof v === 'string' ? ISO_TIME.exec(v) : null;
    if (!m) throw fail(col, 'a time HH:MM:SS[.ffffff]', v);
    const s = clockSeconds(Number(m[1]), Number(m[2]), Number(m[3]));
    if (s === undefined) throw fail(col, 'a time of day from 00:00:00 to 23:59:59.999999', v);
    return BigInt(s) * 1_000_000n + BigInt(fractionMicros(col, m[4], v, 'time'));
  };
}

/** An ISO-8601 string (timestamptz: with a zone), or a number of epoch millis. */
function timestampValue(col: string, t: 'timestamp' | 'timestamptz', bounds: Bounds<bigint>): Convert {
  const withZone = t === 'timestamptz';
  const iso = isoTimestamp();
  return (v) => {
    if (typeof v !== 'string') {
      const ms = integerOf(v);
      if (ms === undefined) throw fail(col, 'an ISO-8601 timestamp or epoch millis', v);
      if (ms === 'range') throw new DecodeError(`${col}: ${show(v)} ms is out of range for ${bounds.ranges[0]!.why}`);
      const us = ms * 1000n;
      return us >= bounds.lo && us <= bounds.hi ? us : bounds.check(us, v, `${show(v)} ms`);
    }
    if (!parseIsoTimestamp(v, iso)) throw fail(col, 'an ISO-8601 timestamp', v);
    if (withZone && iso.zone === 0) throw new DecodeError(`${col}: timestamptz needs a zone (Z or ±hh:mm), found ${show(v)}`);
    const days = civilDays(iso.y, iso.mo, iso.d);
    const secs = clockSeconds(iso.h, iso.mi, iso.s);
    if (days === undefined || secs === undefined) throw fail(col, 'a timestamp that exists (no Feb 30, no 24:00, no leap second)', v);
    let offset = 0;
    if (iso.zone === 2) {
      if (iso.zh > 18 || iso.zm > 59) throw fail(col, 'a zone offset within ±18:00', v);
      offset = iso.zsign * (iso.zh * 3600 + iso.zm * 60);
    }
    if (iso.subMicros) throw subMicrosError(col, v, 'timestamp');
    const sec = days * 86_400 + secs - offset;
    // within ±9e9 s (years 1685 to 2255) the micros are a safe integer: one bigint, not four
    const us = sec > -9e9 && sec < 9e9 ? BigInt(sec * 1_000_000 + iso.micros) : BigInt(sec) * 1_000_000n + BigInt(iso.micros);
    return bounds.check(us, v);
  };
}

/** A JSON number or a decimal string, exact: more fractional digits than the scale are refused, never rounded. */
function decimalValue(c: ColumnConfig, t: string, dec: { precision: number; scale: number }, transforms: string[]): Convert {
  const col = c.name;
  const { precision: p, scale: s } = dec;
  if (p < 1 || p > 38) throw new DecoderConfigError(`column ${col}: ${t} needs a precision from 1 to 38`);
  const bounds = decimalBounds(c, p, s, transforms);
  return (v) => {
    const l = typeof v === 'string' ? parseLiteral(v) : literalOf(v);
    if (l === undefined) throw fail(col, `a decimal number or string for ${t}`, v);
    const u = unscaled(l, s, p + 1);
    if (u === 'fraction') throw new DecodeError(`${col}: ${show(v)} has more than ${s} fractional digits for ${t}`);
    if (u === 'range') throw new DecodeError(`${col}: ${show(v)} is out of range for ${bounds.ranges[0]!.why}`);
    return bounds.check(u, v);
  };
}

function fixedValue(col: string, t: string, width: number): Convert {
  return (v) => {
    const b = base64Bytes(col, v, `base64 of ${width} bytes`);
    if (b.length !== width)
      throw new DecodeError(`${col}: expected base64 of exactly ${width} bytes for ${t}, found ${b.length} bytes in ${show(v)}`);
    return b;
  };
}
