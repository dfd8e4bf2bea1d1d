/**
 * Kafka message -> table row, with a reason for every rejection (the dead-letter table stores it).
 *
 * Two promises, both per column and compiled once per table (`compileDecoder`):
 * - Every row returned is writable. Anything the Parquet writer (iceberg/parquet/columns.ts,
 *   metrics.ts) or the table's partition transforms (iceberg/spec/partition.ts: transform results,
 *   partition paths, manifest bounds) would refuse is refused here as a DecodeError naming the
 *   column and the value, so one bad value becomes a dead letter instead of failing every retry
 *   of the batch (a stalled table).
 * - Input is never silently changed: invalid UTF-8, unpaired surrogates, malformed base64,
 *   impossible dates and times, digits a decimal or timestamp cannot hold, numbers that overflow,
 *   and paths that only resolve through the prototype chain are rejected, never rounded or rolled.
 *
 * Values are parsed with lossless-json when the text may hold a number with more than 15
 * significant digits, so a 64-bit id or a long decimal stays exact. Row value types follow
 * iceberg/parquet's writer: long/time/timestamp* -> bigint (micros), int/date -> number (days),
 * float/double -> number, string/uuid -> string, binary/fixed -> Uint8Array, boolean,
 * decimal(P,S) -> unscaled bigint; struct -> object keyed by field name, list -> array, map ->
 * [key, value] pairs, every leaf through the same primitive converters (compileNested), errors
 * naming the path inside the value (`items[3].qty`).
 */
import { LosslessNumber, parse as parseLossless, stringify as stringifyLossless } from 'lossless-json';
import {
  columnTypeString,
  type ColumnConfig,
  type ColumnType,
  type ListTypeConfig,
  type MapTypeConfig,
  type NestedTypeConfig,
  type PartitionFieldConfig,
  type StructTypeConfig,
} from '../config/types';
import { FailureType } from '../contract';
import { parseTransform, transformResultType } from '../iceberg/spec/partition';
import { parseDecimalType, parseFixedType } from '../iceberg/spec/conversions';
import type { PrimitiveType } from '../iceberg/spec/types';

/**
 * A row's value as iceberg/parquet's writer takes it: a primitive (module comment), or a nested
 * value: a struct as an object keyed by field name, a list as an array, a map (and the headers
 * map) as an array of [key, value] pairs.
 */
export type RowValue = null | boolean | number | bigint | string | Uint8Array | RowValue[] | { [field: string]: RowValue };
export type Row = Record<string, RowValue>;

export interface KafkaRecord {
  partition: number;
  offset: string;
  timestamp: string; // epoch millis as string (kafkajs)
  key: Buffer | null;
  value: Buffer | null;
  /** The record's topic (`source: topic`); absent where a caller has no topic (tests). */
  topic?: string;
  /** kafkajs' headers: a repeated name arrives as an array (`source: header` takes the last). */
  headers?: Record<string, Buffer | string | (Buffer | string)[] | undefined>;
}

type HeaderValue = NonNullable<KafkaRecord['headers']>[string];

/** A header's value as bytes (the last one of a repeated name), or null when absent. */
function lastHeaderBytes(v: HeaderValue): Buffer | null {
  if (Array.isArray(v)) v = v[v.length - 1];
  if (v === undefined || v === null) return null;
  return typeof v === 'string' ? Buffer.from(v, 'utf8') : v;
}

/** The last value of header `name` as bytes, or null when the record has none. */
export function headerBytes(rec: KafkaRecord, name: string): Buffer | null {
  return lastHeaderBytes(rec.headers?.[name]);
}

/** One record cannot become a row; the message says which column and value, and why. */
export class DecodeError extends Error {
  override name = 'DecodeError';
}

/**
 * A problem inside a nested value, located relative to the value being converted: `at` is '' or
 * segments such as `.qty`, `[3]`, `["sku-1"]`. Each enclosing struct, list and map prefixes its
 * segment on the way out, and the column turns it into `items[3].qty: <tail>` (compileConvert).
 */
class NestedDecodeError extends DecodeError {
  constructor(
    readonly at: string,
    readonly tail: string,
  ) {
    super(`${at}: ${tail}`);
  }
}

/**
 * The table's config cannot decode any record (a column type its source cannot fill, a partition
 * transform its column type does not allow). Not one record's fault: the caller fails the cycle
 * with it instead of dead-lettering the whole stream. Named after the Temporal failure type it is.
 */
export class DecoderConfigError extends Error {
  override name = FailureType.ConfigError;
}

/** What a decoder needs of a table's config. */
export interface DecoderTable {
  columns: readonly ColumnConfig[];
  partitionBy?: readonly PartitionFieldConfig[];
}
export type Decoder = (rec: KafkaRecord) => Row;

// ---------- JSON ----------
/**
 * Native JSON.parse is exact for every number of at most 15 significant digits, and its strings
 * are flat. A literal with more (a 64-bit id, a long decimal, also split by a dot:
 * 1234567890.1234567) needs lossless-json, whose strings are built piecewise: retained in bulk they
 * cost ~10x in GC (measured: 3.8k vs 39k rec/s), so only such texts take it.
 */
// A digit and 15 more digits or dots (/\d[\d.]{15,}/ as a test), spelled out: V8 scans the unrolled
// form ~2x faster (0.20 against 0.36 us per 1 KiB record; 0.19 against 0.65 when the text holds
// 13-digit epoch millis), and every check runs over each record's whole text.
const DIGIT_RUN_16 = `\\d${'[\\d.]'.repeat(15)}`;
const MAYBE_UNSAFE_NUMBER = new RegExp(DIGIT_RUN_16);
/** Tables with decimals also route 3-digit exponents: 1e-400 parses to 0 natively, 1e400 to Infinity. */
export const MAYBE_UNSAFE_DECIMAL = new RegExp(`${DIGIT_RUN_16}|\\d[eE][+-]?\\d\\d\\d`);
export function parseJsonExact(text: string, unsafe: RegExp = MAYBE_UNSAFE_NUMBER): unknown {
  return unsafe.test(text) ? parseLossless(text) : JSON.parse(text);
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
/** String.prototype.isWellFormed / toWellFormed (ES2024, in Node 20; not in this project's TS lib). */
type Es2024String = string & { isWellFormed(): boolean; toWellFormed(): string };
const wellFormed = (s: string): boolean => (s as Es2024String).isWellFormed();

const MAX_SHOWN = 120;
const clip = (s: string): string => (s.length > MAX_SHOWN ? `${s.slice(0, MAX_SHOWN)}… (${s.length} chars)` : s);
/** A value as an error message shows it: JSON-ish and bounded (a 1 MiB string must not become a 1 MiB reason). */
function show(v: unknown): string {
  let s: string;
  if (typeof v === 'string') s = JSON.stringify(v);
  else if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') s = String(v);
  else if (v instanceof LosslessNumber) s = v.value;
  else if (v === undefined) s = 'nothing';
  else {
    try {
      s = stringifyLossless(v) ?? String(v);
    } catch {
      s = Object.prototype.toString.call(v);
    }
  }
  return clip(s);
}

const fail = (col: string, expected: string, v: unknown): DecodeError => new DecodeError(`${col}: expected ${expected}, found ${show(v)}`);

// ---------- exact numbers ----------
const INT_MIN = -(2 ** 31),
  INT_MAX = 2 ** 31 - 1;
const INT_MIN_N = BigInt(INT_MIN),
  INT_MAX_N = BigInt(INT_MAX);
const LONG_MIN = -(2n ** 63n),
  LONG_MAX = 2n ** 63n - 1n;
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

// ---------- ranges (what the writer and the table's partition transforms accept) ----------
interface Range<T> {
  lo: T;
  hi: T;
  why: string;
}

/** Intersects `ranges`; on a miss, the first range that excludes the value explains why. */
class Bounds<T extends number | bigint> {
  readonly lo: T;
  readonly hi: T;
  constructor(
    readonly col: string,
    readonly ranges: Array<Range<T>>,
  ) {
    this.lo = ranges.reduce((m, r) => (r.lo > m ? r.lo : m), ranges[0]!.lo);
    this.hi = ranges.reduce((m, r) => (r.hi < m ? r.hi : m), ranges[0]!.hi);
  }
  /** `x` when in range; `input` (or `shown`) is what the error names. */
  check(x: T, input: unknown, shown?: string): T {
    if (x >= this.lo && x <= this.hi) return x;
    const r = this.ranges.find((q) => x < q.lo || x > q.hi)!;
    throw new DecodeError(`${this.col}: ${shown ?? show(input)} is out of range for ${r.why}`);
  }
}

/** The smallest multiple of w at or above lo: truncate[w] floors to multiples of w, so anything below underflows. */
const ceilMultiple = (lo: bigint, w: bigint): bigint => {
  const q = lo / w;
  return (q * w < lo ? q + 1n : q) * w;
};

const MICROS_PER_DAY = 86_400_000_000n;
const MICROS_PER_HOUR = 3_600_000_000n;
/** JS Date's range, which partition paths (day, hour, identity: Transform.toHumanString) go through: ±1e8 days. */
const DATE_DAYS = 100_000_000;

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
export interface IsoTimestamp {
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

// ---------- per-column compilation ----------
type Convert = (v: unknown) => RowValue;

function transformsOn(c: ColumnConfig, partitionBy: readonly PartitionFieldConfig[]): string[] {
  const out: string[] = [];
  for (const p of partitionBy) {
    if (p.column !== c.name) continue;
    try {
      // the config refuses partitions on a headers map or a nested type
      if (typeof c.type !== 'string') throw new Error('a partition source is a primitive column');
      transformResultType(p.transform, c.type as PrimitiveType);
    } catch (e) {
      throw new DecoderConfigError(
        `column ${c.name}: partition transform ${p.transform} cannot apply to type ${columnTypeString(c.type)} (${(e as Error).message})`,
      );
    }
    out.push(p.transform.trim().toLowerCase());
  }
  return out;
}

function intBounds(c: ColumnConfig, transforms: string[]): Bounds<number> {
  const ranges: Array<Range<number>> = [{ lo: INT_MIN, hi: INT_MAX, why: 'a 32-bit int' }];
  for (const t of transforms) {
    const p = parseTransform(t);
    if (p.kind === 'truncate')
      ranges.push({
        lo: Number(ceilMultiple(BigInt(INT_MIN), BigInt(p.width))),
        hi: INT_MAX,
        why: `partition transform ${t} (the truncated value must fit a 32-bit int)`,
      });
  }
  return new Bounds(c.name, ranges);
}

function longBounds(c: ColumnConfig, transforms: string[]): Bounds<bigint> {
  const ranges: Array<Range<bigint>> = [{ lo: LONG_MIN, hi: LONG_MAX, why: 'a 64-bit long' }];
  for (const t of transforms) {
    const p = parseTransform(t);
    if (p.kind === 'truncate')
      ranges.push({
        lo: ceilMultiple(LONG_MIN, BigInt(p.width)),
        hi: LONG_MAX,
        why: `partition transform ${t} (the truncated value must fit a 64-bit long)`,
      });
  }
  return new Bounds(c.name, ranges);
}

function dateBounds(c: ColumnConfig, transforms: string[]): Bounds<number> {
  const ranges: Array<Range<number>> = [{ lo: INT_MIN, hi: INT_MAX, why: 'a date (32-bit days since 1970-01-01)' }];
  for (const t of transforms) {
    const k = parseTransform(t).kind;
    if (k === 'identity' || k === 'year' || k === 'month' || k === 'day') {
      ranges.push({
        lo: -DATE_DAYS,
        hi: DATE_DAYS,
        why: `partition transform ${t} (its partition value needs a date within ${DATE_DAYS} days of 1970-01-01)`,
      });
    }
  }
  return new Bounds(c.name, ranges);
}

/** Micros since 1970: int64 for the writer, narrower for transforms whose results are ints or dates. */
function timestampBounds(c: ColumnConfig, transforms: string[]): Bounds<bigint> {
  const ranges: Array<Range<bigint>> = [{ lo: LONG_MIN, hi: LONG_MAX, why: 'a timestamp (64-bit microseconds since 1970)' }];
  const days = BigInt(DATE_DAYS);
  for (const t of transforms) {
    const k = parseTransform(t).kind;
    if (k === 'hour') {
      ranges.push({
        lo: BigInt(INT_MIN) * MICROS_PER_HOUR,
        hi: (BigInt(INT_MAX) + 1n) * MICROS_PER_HOUR - 1n,
        why: `partition transform ${t} (hours since 1970 must fit a 32-bit int)`,
      });
    } else if (k === 'year' || k === 'month' || k === 'day') {
      ranges.push({
        lo: -days * MICROS_PER_DAY,
        hi: (days + 1n) * MICROS_PER_DAY - 1n,
        why: `partition transform ${t} (its partition value needs a time within ${DATE_DAYS} days of 1970)`,
      });
    } else if (k === 'identity') {
      ranges.push({
        lo: -days * MICROS_PER_DAY,
        hi: days * MICROS_PER_DAY + 999n,
        why: `partition transform ${t} (its partition value needs a time within ${DATE_DAYS} days of 1970)`,
      });
    }
  }
  return new Bounds(c.name, ranges);
}

function decimalBounds(c: ColumnConfig, precision: number, scale: number, transforms: string[]): Bounds<bigint> {
  const max = 10n ** BigInt(precision) - 1n;
  const ranges: Array<Range<bigint>> = [{ lo: -max, hi: max, why: `decimal(${precision}, ${scale}) (at most ${precision} digits)` }];
  for (const t of transforms) {
    const p = parseTransform(t);
    if (p.kind === 'truncate')
      ranges.push({
        lo: ceilMultiple(-max, BigInt(p.width)),
        hi: max,
        why: `partition transform ${t} (the truncated value must keep at most ${precision} digits)`,
      });
  }
  return new Bounds(c.name, ranges);
}

/** The converter of one JSON value (never null) to the column's row value, or a DecodeError. */
function compileConvert(c: ColumnConfig, transforms: string[]): Convert {
  const col = c.name;
  const t = c.type;
  if (typeof t !== 'string') return compileNestedColumn(t, col);
  switch (t) {
    case 'boolean':
      return (v) => {
        if (typeof v !== 'boolean') throw fail(col, 'a boolean', v);
        return v;
      };
    case 'int': {
      const bounds = intBounds(c, transforms);
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
    case 'long': {
      const bounds = longBounds(c, transforms);
      return (v) => {
        const n = integerOf(v);
        if (n === undefined) throw fail(col, 'an integer', v);
        if (n === 'range' || n < LONG_MIN || n > LONG_MAX) throw new DecodeError(`${col}: ${show(v)} does not fit a 64-bit long`);
        return bounds.check(n, v);
      };
    }
    case 'float':
    case 'double': {
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
    case 'string':
      return (v) => {
        if (typeof v !== 'string') throw fail(col, 'a string', v);
        // an unpaired surrogate (a "\ud800" escape) has no UTF-8 form: writing it would change it to U+FFFD
        if (!wellFormed(v)) throw fail(col, 'a Unicode string (no unpaired surrogate escapes)', v);
        return v;
      };
    case 'uuid':
      return (v) => {
        if (typeof v !== 'string' || !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v))
          throw fail(col, 'a UUID string', v);
        return v.toLowerCase();
      };
    case 'binary':
      return (v) => base64Bytes(col, v, 'base64 binary');
    case 'date': {
      const bounds = dateBounds(c, transforms);
      return (v) => {
        const m = typeof v === 'string' ? ISO_DATE.exec(v) : null;
        if (!m) throw fail(col, 'a date YYYY-MM-DD', v);
        const days = civilDays(Number(m[1]), Number(m[2]), Number(m[3]));
        if (days === undefined) throw fail(col, 'a date that exists (YYYY-MM-DD)', v);
        return bounds.check(days, v);
      };
    }
    case 'time':
      return (v) => {
        const m = typeof v === 'string' ? ISO_TIME.exec(v) : null;
        if (!m) throw fail(col, 'a time HH:MM:SS[.ffffff]', v);
        const s = clockSeconds(Number(m[1]), Number(m[2]), Number(m[3]));
        if (s === undefined) throw fail(col, 'a time of day from 00:00:00 to 23:59:59.999999', v);
        return BigInt(s) * 1_000_000n + BigInt(fractionMicros(col, m[4], v, 'time'));
      };
    case 'timestamp':
    case 'timestamptz': {
      const bounds = timestampBounds(c, transforms);
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
    default: {
      const dec = parseDecimalType(t);
      if (dec) {
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
      const width = parseFixedType(t);
      if (width !== undefined) {
        return (v) => {
          const b = base64Bytes(col, v, `base64 of ${width} bytes`);
          if (b.length !== width)
            throw new DecodeError(`${col}: expected base64 of exactly ${width} bytes for ${t}, found ${b.length} bytes in ${show(v)}`);
          return b;
        };
      }
      throw new DecoderConfigError(`column ${col}: type ${t} is not supported for JSON ingest`);
    }
  }
}

/**
 * A JSON value's converter for a primitive column, as `source: value` columns use it: for decoders
 * of other framings of JSON (JSON Schema through a registry, ingest/formats).
 */
export function compileJsonValue(c: ColumnConfig, partitionBy: readonly PartitionFieldConfig[] = []): Convert {
  return compileConvert(c, transformsOn(c, partitionBy));
}

/**
 * The range check of a numeric column (what the writer and the column's partition transforms
 * take), for decoders that build the value themselves (Avro, Protobuf): returns the value, or
 * throws a DecodeError naming the column and `shown`. Undefined for types without a range.
 */
export function columnRange(
  c: ColumnConfig,
  partitionBy: readonly PartitionFieldConfig[] = [],
): ((x: number | bigint, shown: string) => number | bigint) | undefined {
  if (typeof c.type !== 'string') return undefined;
  const tr = transformsOn(c, partitionBy);
  const dec = parseDecimalType(c.type);
  const b: Bounds<number> | Bounds<bigint> | undefined =
    c.type === 'int'
      ? intBounds(c, tr)
      : c.type === 'long'
        ? longBounds(c, tr)
        : c.type === 'date'
          ? dateBounds(c, tr)
          : c.type === 'timestamp' || c.type === 'timestamptz'
            ? timestampBounds(c, tr)
            : dec
              ? decimalBounds(c, dec.precision, dec.scale, tr)
              : undefined;
  if (b === undefined) return undefined;
  return (x, shown) => (b as Bounds<number | bigint>).check(x, undefined, shown);
}

// ---------- nested types ----------
const isJsonObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof LosslessNumber);

/**
 * A child's error located one segment further out. A primitive converter's DecodeError reads
 * `<label>: <tail>` (compiled under the child's static label, which config errors name).
 */
function within(e: unknown, seg: string, label: string): unknown {
  if (e instanceof NestedDecodeError) return new NestedDecodeError(seg + e.at, e.tail);
  if (e instanceof DecodeError)
    return new NestedDecodeError(seg, e.message.startsWith(`${label}: `) ? e.message.slice(label.length + 2) : e.message);
  return e;
}

/**
 * The converter of a configured type at a static `label` (`items.element.price`): primitives
 * through compileConvert (exact, range-checked; no partition transform applies inside a nested
 * type), nested types through compileNested.
 */
function compileType(t: ColumnType, label: string): Convert {
  return typeof t === 'string' ? compileConvert({ name: label, type: t, required: true }, []) : compileNested(t, label);
}

/** A nested column's converter: its errors name the path inside the value (`items[3].qty: …`). */
function compileNestedColumn(t: NestedTypeConfig, col: string): Convert {
  const convert = compileNested(t, col);
  return (v) => {
    try {
      return convert(v);
    } catch (e) {
      throw e instanceof NestedDecodeError ? new DecodeError(`${col}${e.at}: ${e.tail}`) : e;
    }
  };
}

/**
 * A struct from a JSON object, a list from a JSON array, a map from a JSON object; every leaf
 * through compileConvert. Errors are NestedDecodeErrors located inside `t`.
 */
function compileNested(t: NestedTypeConfig, label: string): Convert {
  switch (t.type) {
    case 'struct':
      return compileStruct(t, label);
    case 'list':
      return compileList(t, label);
    case 'map':
      return compileMap(t, label);
  }
}

/** Each field by its name or its `path` inside the object; missing or null is null, or an error for a required field. */
function compileStruct(t: StructTypeConfig, label: string): Convert {
  const fields = t.fields.map((f) => {
    const fieldLabel = `${label}.${f.name}`;
    // assigning out.__proto__ would set the struct's prototype, not a field
    if (f.name === '__proto__') throw new DecoderConfigError(`field ${fieldLabel}: the name cannot be a row key`);
    return {
      name: f.name,
      seg: `.${f.name}`,
      label: fieldLabel,
      get: compilePath(f.path ?? f.name),
      convert: compileType(f.type, fieldLabel),
      required: f.required,
      missing: f.path === undefined ? 'required field is missing' : `required field is missing (path ${f.path})`,
    };
  });
  return (v) => {
    if (!isJsonObject(v)) throw new NestedDecodeError('', `expected a JSON object, found ${show(v)}`);
    const out: { [field: string]: RowValue } = {};
    for (const f of fields) {
      const x = f.get(v);
      if (x === null || x === undefined) {
        if (f.required) throw new NestedDecodeError(f.seg, f.missing);
        out[f.name] = null;
        continue;
      }
      try {
        out[f.name] = f.convert(x);
      } catch (e) {
        throw within(e, f.seg, f.label);
      }
    }
    return out;
  };
}

/** A JSON array; a null element only when elements are optional. */
function compileList(t: ListTypeConfig, label: string): Convert {
  const elementLabel = `${label}.element`;
  const element = compileType(t.element, elementLabel);
  const required = t.elementRequired;
  return (v) => {
    if (!Array.isArray(v)) throw new NestedDecodeError('', `expected a JSON array, found ${show(v)}`);
    const out: RowValue[] = new Array<RowValue>(v.length);
    for (let i = 0; i < v.length; i++) {
      const x: unknown = v[i];
      if (x === null) {
        if (required) throw new NestedDecodeError(`[${i}]`, 'required element is null');
        out[i] = null;
        continue;
      }
      try {
        out[i] = element(x);
      } catch (e) {
        throw within(e, `[${i}]`, elementLabel);
      }
    }
    return out;
  };
}

/**
 * A JSON object: each key converted from its text to the key type as a JSON string of that type
 * would be (`"42"` to a long), each value by the value type; [key, value] pairs for the writer.
 */
function compileMap(t: MapTypeConfig, label: string): Convert {
  const keyLabel = `${label}.key`,
    valueLabel = `${label}.value`;
  const key = compileType(t.key, keyLabel);
  const value = compileType(t.value, valueLabel);
  const required = t.valueRequired;
  // An object's keys are distinct strings; converted, "7" and "07" (or two spellings of one UUID
  // or instant) would be one key twice, which a map cannot hold.
  const canCollide = t.key !== 'string';
  return (v) => {
    if (!isJsonObject(v)) throw new NestedDecodeError('', `expected a JSON object, found ${show(v)}`);
    const out: RowValue[] = [];
    const seen = canCollide ? new Map<string, string>() : undefined;
    for (const k of Object.keys(v)) {
      const seg = `[${show(k)}]`;
      let kv: RowValue;
      try {
        kv = key(k);
      } catch (e) {
        const n = within(e, seg, keyLabel);
        throw n instanceof NestedDecodeError ? new NestedDecodeError(n.at, `invalid map key (${n.tail})`) : n;
      }
      if (seen) {
        const id = String(kv);
        const first = seen.get(id);
        if (first !== undefined) throw new NestedDecodeError(seg, `map key is the same ${t.key} as key ${show(first)}`);
        seen.set(id, k);
      }
      const x = v[k];
      if (x === null) {
        if (required) throw new NestedDecodeError(seg, 'required map value is null');
        out.push([kv, null]);
        continue;
      }
      try {
        out.push([kv, value(x)]);
      } catch (e) {
        throw within(e, seg, valueLabel);
      }
    }
    return out;
  };
}

/** Whether a decimal appears anywhere in `t` (its JSON needs exact number parsing). */
function hasDecimal(t: ColumnConfig['type']): boolean {
  if (typeof t === 'string') return parseDecimalType(t) !== undefined;
  switch (t.type) {
    case 'struct':
      return t.fields.some((f) => hasDecimal(f.type));
    case 'list':
      return hasDecimal(t.element);
    case 'map':
      return hasDecimal(t.key) || hasDecimal(t.value);
  }
}

type Read = (parsed: Record<string, unknown>, rec: KafkaRecord) => RowValue;

const hasOwn = Object.prototype.hasOwnProperty;

/**
 * A reader of the dotted JSON path. Own properties only: a path segment a message lacks is
 * missing, even when Object.prototype has it (`constructor`, `__proto__`, `toString`); and a path
 * never descends into a number (a lossless number is an object with a `value`).
 */
function compilePath(path: string): (obj: Record<string, unknown>) => unknown {
  const parts = path.split('.');
  if (parts.length === 1) {
    const p = parts[0]!;
    return (obj) => (hasOwn.call(obj, p) ? obj[p] : undefined);
  }
  return (obj) => {
    let cur: unknown = obj;
    for (const p of parts) {
      if (cur === null || typeof cur !== 'object' || Array.isArray(cur) || cur instanceof LosslessNumber || !hasOwn.call(cur, p))
        return undefined;
      cur = (cur as Record<string, unknown>)[p];
    }
    return cur;
  };
}

/**
 * A column filled from raw bytes of the record (its key, or one header): binary and fixed[N] take
 * them as they are; string, uuid, int and long read them as UTF-8 text, converted like a JSON
 * string value. `what` names the bytes in errors ("the record key", `header "trace-id"`), `kind`
 * the source in config errors, `absent` what a record without them is told.
 */
function compileBytesSource(
  c: ColumnConfig,
  transforms: string[],
  src: { what: string; kind: string; absent: string },
  bytesOf: (rec: KafkaRecord) => Buffer | null,
  missing: (why: string) => null,
): Read {
  const col = c.name;
  const { what, kind, absent } = src;
  if (c.type === 'binary')
    return (_, rec) => {
      const b = bytesOf(rec);
      return b === null ? missing(absent) : new Uint8Array(b);
    };
  const width = typeof c.type === 'string' ? parseFixedType(c.type) : undefined; // nested types: refused by compileColumn
  if (width !== undefined) {
    return (_, rec) => {
      const b = bytesOf(rec);
      if (b === null) return missing(absent);
      if (b.length !== width)
        throw new DecodeError(`${col}: expected ${what} of exactly ${width} bytes for ${c.type}, found ${b.length} bytes`);
      return new Uint8Array(b);
    };
  }
  if (c.type !== 'string' && c.type !== 'uuid' && c.type !== 'int' && c.type !== 'long') {
    throw new DecoderConfigError(`column ${col}: ${kind} fills string, uuid, int, long, binary or fixed[N] columns, not ${c.type}`);
  }
  const convert = compileConvert(c, transforms);
  return (_, rec) => {
    const b = bytesOf(rec);
    if (b === null) return missing(absent);
    let s: string;
    try {
      s = utf8.decode(b);
    } catch {
      throw new DecodeError(`${col}: ${what} is not valid UTF-8 (${show(b.toString('base64'))} in base64)`);
    }
    return convert(s);
  };
}

function compileColumn(c: ColumnConfig, partitionBy: readonly PartitionFieldConfig[]): Read {
  const col = c.name;
  const transforms = transformsOn(c, partitionBy);
  const source = c.source ?? 'value';
  if (typeof c.type !== 'string' && source !== 'value')
    throw new DecoderConfigError(
      `column ${col}: source ${source} fills a primitive column, not ${columnTypeString(c.type)} (nested types come from the value)`,
    );
  const missing = (what: string): null => {
    if (c.required) throw new DecodeError(`${col}: ${what}`);
    return null;
  };
  switch (source) {
    case 'value': {
      const get = compilePath(c.path ?? col);
      const convert = compileConvert(c, transforms);
      return (parsed) => {
        const v = get(parsed);
        return v === null || v === undefined ? missing('required field is missing') : convert(v);
      };
    }
    case 'key':
      return compileBytesSource(
        c,
        transforms,
        { what: 'the record key', kind: 'a record key', absent: 'the record key is required but null' },
        (rec) => rec.key,
        missing,
      );
    case 'header': {
      const name = c.header;
      if (name === undefined) throw new DecoderConfigError(`column ${col}: source header needs the header's name (header: <name>)`);
      const what = `header ${JSON.stringify(name)}`;
      return compileBytesSource(
        c,
        transforms,
        { what, kind: 'a header', absent: `${what} is required but absent` },
        (rec) => headerBytes(rec, name),
        missing,
      );
    }
    case 'headers': {
      // Every header by name (a repeated name keeps its last value), as text or as bytes. A record
      // without headers has an empty map; a null header value stays null.
      const asText = c.type === 'map<string, string>';
      return (_, rec) => {
        const entries: Array<[string, string | Uint8Array | null]> = [];
        for (const [name, v] of Object.entries(rec.headers ?? {})) {
          const b = lastHeaderBytes(v);
          if (b === null) {
            entries.push([name, null]);
            continue;
          }
          if (!asText) {
            entries.push([name, new Uint8Array(b)]);
            continue;
          }
          try {
            entries.push([name, utf8.decode(b)]);
          } catch {
            throw new DecodeError(`${col}: header ${JSON.stringify(name)} is not valid UTF-8 (${show(b.toString('base64'))} in base64)`);
          }
        }
        return entries;
      };
    }
    case 'topic': {
      if (c.type !== 'string') throw new DecoderConfigError(`column ${col}: the Kafka topic fills a string column, not ${c.type}`);
      return (_, rec) => (rec.topic === undefined ? missing('the record has no topic') : rec.topic);
    }
    case 'partition':
      if (c.type === 'int') return (_, rec) => rec.partition;
      if (c.type === 'long') return (_, rec) => BigInt(rec.partition);
      throw new DecoderConfigError(`column ${col}: the Kafka partition fills an int or long column, not ${c.type}`);
    case 'offset':
      if (c.type === 'long') return (_, rec) => BigInt(rec.offset);
      throw new DecoderConfigError(`column ${col}: the Kafka offset fills a long column (offsets outgrow an int), not ${c.type}`);
    case 'timestamp': {
      // epoch millis -> micros; a long column holds the same micros a timestamp would
      const bounds = c.type === 'long' || c.type === 'timestamp' || c.type === 'timestamptz' ? timestampBounds(c, transforms) : undefined;
      if (!bounds)
        throw new DecoderConfigError(
          `column ${col}: the Kafka timestamp fills a timestamp, timestamptz or long (micros) column, not ${c.type}`,
        );
      return (_, rec) => {
        const us = BigInt(rec.timestamp) * 1000n;
        return us >= bounds.lo && us <= bounds.hi ? us : bounds.check(us, null, `the Kafka timestamp ${rec.timestamp} ms`);
      };
    }
    default:
      throw new DecoderConfigError(`column ${col}: unknown source ${String(source)}`);
  }
}

/**
 * Compiles the decoder of a table's records: one converter per column, with the value ranges the
 * writer and the table's partition transforms need. Throws DecoderConfigError for a config no
 * record could satisfy.
 */
export function compileDecoder(table: DecoderTable): Decoder {
  const partitionBy = table.partitionBy ?? [];
  const names = new Set(table.columns.map((c) => c.name));
  for (const p of partitionBy) {
    if (!names.has(p.column)) throw new DecoderConfigError(`partition field on ${p.column}: no such column`);
  }
  for (const c of table.columns) {
    // assigning row.__proto__ would set the row's prototype, not a column
    if (c.name === '__proto__') throw new DecoderConfigError('column __proto__: the name cannot be a row key');
  }
  const keys = table.columns.map((c) => c.name);
  const reads = table.columns.map((c) => compileColumn(c, partitionBy));
  const needsValue = table.columns.some((c) => (c.source ?? 'value') === 'value');
  const unsafe = table.columns.some((c) => hasDecimal(c.type)) ? MAYBE_UNSAFE_DECIMAL : MAYBE_UNSAFE_NUMBER;
  const empty: Record<string, unknown> = {};
  const n = reads.length;
  return (rec) => {
    let parsed = empty;
    if (needsValue) {
      if (rec.value === null) throw new DecodeError('value: record has a null value (tombstone)');
      let text: string;
      try {
        text = utf8.decode(rec.value);
      } catch {
        throw new DecodeError('value: not valid UTF-8 (the message must be UTF-8 JSON)');
      }
      let v: unknown;
      try {
        v = parseJsonExact(text, unsafe);
      } catch (e) {
        throw new DecodeError(`value: not valid JSON (${clip(String((e as Error).message))})`);
      }
      if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new DecodeError('value: expected a JSON object');
      parsed = v as Record<string, unknown>;
    }
    const row: Row = {};
    for (let i = 0; i < n; i++) row[keys[i]!] = reads[i]!(parsed, rec);
    return row;
  };
}

const decoders = new WeakMap<object, Decoder>();

/**
 * Decodes a Kafka record into a row of the table's columns (throws DecodeError with why not).
 * The decoder is compiled once per table config object (or column array) and reused.
 */
export function decodeRecord(table: DecoderTable | readonly ColumnConfig[], rec: KafkaRecord): Row {
  let d = decoders.get(table);
  if (d === undefined) {
    d = compileDecoder(Array.isArray(table) ? { columns: table } : (table as DecoderTable));
    decoders.set(table, d);
  }
  return d(rec);
}

const MAX_REASON = 1000;
/** Kafka timestamps are int64 millis; as micros only those within int64 fit the dead-letter table's timestamptz. */
const MAX_KAFKA_MS = LONG_MAX / 1000n;

/**
 * The dead-letter row of a record `decodeRecord` threw for. Any error thrown for one record makes
 * it a dead letter, including an unforeseen one (its reason says so): one record must never stall
 * the table. The exception is DecoderConfigError, which says no record can decode: rethrown.
 */
export function deadLetterRow(topic: string, rec: KafkaRecord, e: unknown): Row {
  if (e instanceof DecoderConfigError) throw e;
  let reason = e instanceof DecodeError ? e.message : `unexpected ${e instanceof Error ? `${e.name}: ${e.message}` : show(e)}`;
  if (reason.length > MAX_REASON) reason = `${reason.slice(0, MAX_REASON)}…`;
  let ms: bigint | null = null;
  try {
    ms = BigInt(rec.timestamp);
  } catch {
    /* not a number: no timestamp */
  }
  return {
    topic,
    partition: rec.partition,
    offset: BigInt(rec.offset),
    key: rec.key === null ? null : new Uint8Array(rec.key),
    value: rec.value === null ? null : new Uint8Array(rec.value),
    error: (reason as Es2024String).toWellFormed(),
    kafka_timestamp: ms === null || ms > MAX_KAFKA_MS || ms < -MAX_KAFKA_MS ? null : ms * 1000n,
  };
}
