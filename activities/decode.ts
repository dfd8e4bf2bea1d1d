/**
 * Kafka message -> table row, with a reason for every rejection (the dead-letter table stores it).
 *
 * Values are parsed with lossless-json so a 64-bit id in the JSON stays exact. Row value types
 * follow iceberg/parquet's writer: long/timestamp* -> bigint (micros for timestamps), int/date -> number
 * (days for date), float/double -> number, string/uuid -> string, binary -> Uint8Array, boolean.
 */
import { isLosslessNumber, parse as parseLossless, type LosslessNumber } from 'lossless-json';
import type { ColumnConfig } from '../config/types';

export type RowValue = null | boolean | number | bigint | string | Uint8Array;
export type Row = Record<string, RowValue>;

export interface KafkaRecord {
  partition: number;
  offset: string;
  timestamp: string; // epoch millis as string (kafkajs)
  key: Buffer | null;
  value: Buffer | null;
}

export class DecodeError extends Error {}

/**
 * Native JSON.parse is exact for every integer of at most 15 digits, and its strings are flat.
 * Only a value with a run of 16+ digits (a 64-bit id, a long fraction) needs lossless-json, whose
 * strings are built piecewise: retained in bulk they cost ~10x in GC (measured: 3.8k vs 39k rec/s).
 */
const MAYBE_UNSAFE_NUMBER = /\d{16,}/;
export function parseJsonExact(text: string): unknown {
  return MAYBE_UNSAFE_NUMBER.test(text) ? parseLossless(text) : JSON.parse(text);
}

const INT_MIN = -(2 ** 31), INT_MAX = 2 ** 31 - 1;
const LONG_MIN = -(2n ** 63n), LONG_MAX = 2n ** 63n - 1n;

function getPath(obj: unknown, path: string): unknown {
  let cur: unknown = obj;
  for (const part of path.split('.')) {
    if (cur === null || typeof cur !== 'object' || Array.isArray(cur)) return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

function toBigInt(v: unknown, col: string): bigint {
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v)) throw new DecodeError(`${col}: expected an integer, found ${v}`);
    return BigInt(v);
  }
  if (isLosslessNumber(v)) {
    const s = (v as LosslessNumber).value;
    if (!/^-?\d+$/.test(s)) throw new DecodeError(`${col}: expected an integer, found ${s}`);
    return BigInt(s);
  }
  if (typeof v === 'string' && /^-?\d+$/.test(v)) return BigInt(v);
  throw new DecodeError(`${col}: expected an integer, found ${JSON.stringify(v)}`);
}

function toNumber(v: unknown, col: string): number {
  if (typeof v === 'number') return v;
  if (isLosslessNumber(v)) return Number((v as LosslessNumber).value);
  if (typeof v === 'string' && ['NaN', 'Infinity', '-Infinity'].includes(v)) return Number(v);
  throw new DecodeError(`${col}: expected a number, found ${JSON.stringify(v)}`);
}

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const ISO_TS = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:?\d{2})?$/;

/** ISO-8601 string or epoch millis -> epoch micros (bigint); keeps sub-millisecond digits. */
function toTimestampMicros(v: unknown, col: string, withZone: boolean): bigint {
  if (isLosslessNumber(v) || typeof v === 'number') return toBigInt(v, col) * 1000n;
  if (typeof v !== 'string') throw new DecodeError(`${col}: expected an ISO-8601 timestamp or epoch millis, found ${JSON.stringify(v)}`);
  const m = ISO_TS.exec(v);
  if (!m) throw new DecodeError(`${col}: expected an ISO-8601 timestamp, found ${JSON.stringify(v)}`);
  const [, date, hh, mm, ss, frac = '', zone] = m;
  if (withZone && !zone) throw new DecodeError(`${col}: timestamptz needs a zone (Z or ±hh:mm), found ${JSON.stringify(v)}`);
  const ms = Date.parse(`${date}T${hh}:${mm}:${ss}${zone && zone !== 'Z' ? zone : 'Z'}`);
  if (Number.isNaN(ms)) throw new DecodeError(`${col}: invalid timestamp ${JSON.stringify(v)}`);
  return BigInt(ms) * 1000n + BigInt((frac + '000000').slice(0, 6));
}

function toDays(v: unknown, col: string): number {
  const m = typeof v === 'string' ? ISO_DATE.exec(v) : null;
  if (!m) throw new DecodeError(`${col}: expected a date YYYY-MM-DD, found ${JSON.stringify(v)}`);
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  return Math.floor(ms / 86_400_000);
}

/** Converts one JSON value to the column's in-memory type or throws DecodeError with the reason. */
export function convertValue(c: ColumnConfig, v: unknown): RowValue {
  if (v === null || v === undefined) {
    if (c.required) throw new DecodeError(`${c.name}: required field is missing`);
    return null;
  }
  const t = c.type;
  switch (t) {
    case 'boolean':
      if (typeof v !== 'boolean') throw new DecodeError(`${c.name}: expected a boolean, found ${JSON.stringify(v)}`);
      return v;
    case 'int': {
      const n = toBigInt(v, c.name);
      if (n < INT_MIN || n > INT_MAX) throw new DecodeError(`${c.name}: ${n} does not fit a 32-bit int`);
      return Number(n);
    }
    case 'long': {
      const n = toBigInt(v, c.name);
      if (n < LONG_MIN || n > LONG_MAX) throw new DecodeError(`${c.name}: ${n} does not fit a 64-bit long`);
      return n;
    }
    case 'float':
    case 'double':
      return toNumber(v, c.name);
    case 'string':
      if (typeof v !== 'string') throw new DecodeError(`${c.name}: expected a string, found ${JSON.stringify(v)}`);
      return v;
    case 'uuid':
      if (typeof v !== 'string' || !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v)) {
        throw new DecodeError(`${c.name}: expected a UUID string, found ${JSON.stringify(v)}`);
      }
      return v.toLowerCase();
    case 'binary':
      if (typeof v !== 'string') throw new DecodeError(`${c.name}: expected base64 binary, found ${JSON.stringify(v)}`);
      return new Uint8Array(Buffer.from(v, 'base64'));
    case 'date':
      return toDays(v, c.name);
    case 'timestamp':
    case 'timestamptz':
      return toTimestampMicros(v, c.name, t === 'timestamptz');
    default:
      throw new DecodeError(`${c.name}: column type ${t} is not supported for JSON ingest`);
  }
}

/** Decodes a Kafka record into a row of the configured columns; throws DecodeError with why not. */
export function decodeRecord(columns: ColumnConfig[], rec: KafkaRecord): Row {
  let parsed: unknown;
  const needsValue = columns.some((c) => (c.source ?? 'value') === 'value');
  if (needsValue) {
    if (rec.value === null) throw new DecodeError('value: record has a null value (tombstone)');
    try {
      parsed = parseJsonExact(rec.value.toString('utf8'));
    } catch (e) {
      throw new DecodeError(`value: not valid JSON (${(e as Error).message})`);
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw new DecodeError('value: expected a JSON object');
    }
  }
  const row: Row = {};
  for (const c of columns) {
    switch (c.source ?? 'value') {
      case 'value':
        row[c.name] = convertValue(c, getPath(parsed, c.path ?? c.name));
        break;
      case 'key':
        if (rec.key === null && c.required) throw new DecodeError(`${c.name}: record key is required but null`);
        row[c.name] = rec.key === null ? null : c.type === 'binary' ? new Uint8Array(rec.key) : rec.key.toString('utf8');
        break;
      case 'partition':
        row[c.name] = c.type === 'long' ? BigInt(rec.partition) : rec.partition;
        break;
      case 'offset':
        row[c.name] = BigInt(rec.offset);
        break;
      case 'timestamp':
        row[c.name] = BigInt(rec.timestamp) * 1000n;
        break;
    }
  }
  return row;
}
