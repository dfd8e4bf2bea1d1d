/**
 * Partition transforms (spec: "Partition Transforms", "Appendix B: 32-bit Hash Requirements")
 * and partition records / paths.
 *
 * Source values use the in-memory forms of conversions.ts (int/date -> number, long/time/timestamps
 * -> bigint or safe number, decimal -> unscaled bigint or bytes, uuid -> string or 16 bytes,
 * binary/fixed -> Uint8Array); JS `Date` is accepted for timestamps. Results are PartitionValues
 * (types.ts): ints/dates as number, longs/timestamps as bigint, decimals as unscaled bytes,
 * uuids as 16 bytes.
 */
import { IcebergError } from '../errors';
import {
  decimalFromBytes,
  decimalToBytes,
  parseDecimalType,
  parseFixedType,
  unscaledDecimal,
  uuidFromBytes,
  uuidToBytes,
} from './conversions';
import { murmur3x86_32 } from './murmur3';
import { findField } from './schema';
import type { NestedField, PartitionRecord, PartitionSpec, PartitionValue, PrimitiveType, Schema, StructType, Transform } from './types';

export type ParsedTransform =
  | { kind: 'identity' }
  | { kind: 'void' }
  | { kind: 'year' }
  | { kind: 'month' }
  | { kind: 'day' }
  | { kind: 'hour' }
  | { kind: 'bucket'; n: number }
  | { kind: 'truncate'; width: number };

export function parseTransform(t: Transform): ParsedTransform {
  const s = t.trim().toLowerCase();
  if (s === 'identity' || s === 'void' || s === 'year' || s === 'month' || s === 'day' || s === 'hour') return { kind: s };
  const b = /^bucket\[\s*(\d+)\s*\]$/.exec(s);
  if (b && Number(b[1]) > 0) return { kind: 'bucket', n: Number(b[1]) };
  const w = /^truncate\[\s*(\d+)\s*\]$/.exec(s);
  if (w && Number(w[1]) > 0) return { kind: 'truncate', width: Number(w[1]) };
  throw IcebergError.mismatch(
    'FeatureUnsupported',
    'partition transform',
    'identity|bucket[N]|truncate[W]|year|month|day|hour|void',
    t,
    false,
  );
}

const TIMESTAMPS = new Set(['timestamp', 'timestamptz', 'timestamp_ns', 'timestamptz_ns']);

/** The spec's result type of `transform` applied to `source` (day -> date, bucket/year/month/hour -> int). */
export function transformResultType(transform: Transform, source: PrimitiveType): PrimitiveType {
  const t = parseTransform(transform);
  const bad = (): IcebergError =>
    IcebergError.mismatch('DataInvalid', `transform ${transform} source type`, 'a type the spec allows for it', source, false);
  switch (t.kind) {
    case 'identity':
    case 'void':
      return source;
    case 'bucket':
      if (source === 'boolean' || source === 'float' || source === 'double') throw bad();
      return 'int';
    case 'truncate':
      if (source === 'int' || source === 'long' || source === 'string' || source === 'binary' || parseDecimalType(source)) return source;
      throw bad();
    case 'year':
    case 'month':
      if (source === 'date' || TIMESTAMPS.has(source)) return 'int';
      throw bad();
    case 'day':
      if (source === 'date' || TIMESTAMPS.has(source)) return 'date';
      throw bad();
    case 'hour':
      if (TIMESTAMPS.has(source)) return 'int';
      throw bad();
  }
}

// ---------- value coercion ----------
const invalid = (type: string, expected: string, v: unknown): IcebergError =>
  IcebergError.mismatch(
    'DataInvalid',
    `${type} partition source value`,
    expected,
    typeof v === 'bigint' ? `${v}n` : typeof v === 'object' ? Object.prototype.toString.call(v) : JSON.stringify(v),
    false,
  );

const toBig = (type: string, v: unknown): bigint => {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return BigInt(v);
  throw invalid(type, 'a bigint or safe integer', v);
};
const toInt = (type: string, v: unknown): number => {
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  if (typeof v === 'bigint' && v >= -(2n ** 31n) && v < 2n ** 31n) return Number(v);
  throw invalid(type, 'a 32-bit integer', v);
};
/** micros (or nanos for *_ns) since epoch */
const toTimestamp = (type: string, v: unknown): bigint => {
  if (v instanceof Date) return BigInt(v.getTime()) * (type.endsWith('_ns') ? 1_000_000n : 1000n);
  return toBig(type, v);
};
const floorDiv = (a: bigint, b: bigint): bigint => {
  const q = a / b;
  return a % b !== 0n && a < 0n !== b < 0n ? q - 1n : q;
};
const toMicros = (type: string, v: unknown): bigint => {
  const t = toTimestamp(type, v);
  return type.endsWith('_ns') ? floorDiv(t, 1000n) : t;
};
const decimalUnscaledOf = (type: string, scale: number, v: unknown): bigint => {
  if (typeof v === 'bigint') return v;
  if (v instanceof Uint8Array) return decimalFromBytes(v);
  if (typeof v === 'string' || typeof v === 'number') return unscaledDecimal(v, scale);
  throw invalid(type, 'an unscaled bigint, unscaled bytes or a decimal string', v);
};
const toBytesValue = (type: string, v: unknown): Uint8Array => {
  if (v instanceof Uint8Array) return v;
  throw invalid(type, 'a Uint8Array', v);
};
const utf8 = new TextEncoder();

/** A source value in its PartitionValue form (what identity returns). */
export function toPartitionValue(type: PrimitiveType, v: unknown): PartitionValue {
  if (v === null || v === undefined) return null;
  switch (type) {
    case 'boolean':
      if (typeof v !== 'boolean') throw invalid(type, 'a boolean', v);
      return v;
    case 'int':
    case 'date':
      return toInt(type, v);
    case 'long':
    case 'time':
      return toBig(type, v);
    case 'timestamp':
    case 'timestamptz':
    case 'timestamp_ns':
    case 'timestamptz_ns':
      return toTimestamp(type, v);
    case 'float':
    case 'double':
      if (typeof v !== 'number') throw invalid(type, 'a number', v);
      return v;
    case 'string':
      if (typeof v !== 'string') throw invalid(type, 'a string', v);
      return v;
    case 'uuid':
      if (typeof v === 'string') return uuidToBytes(v);
      if (v instanceof Uint8Array && v.length === 16) return v;
      throw invalid(type, 'a uuid string or 16 bytes', v);
    case 'binary':
      return toBytesValue(type, v);
    default: {
      const dec = parseDecimalType(type);
      if (dec) return decimalToBytes(decimalUnscaledOf(type, dec.scale, v));
      if (parseFixedType(type) !== undefined) return toBytesValue(type, v);
      throw new IcebergError('FeatureUnsupported', `partition values of type ${String(type)}`);
    }
  }
}

// ---------- bucket (Appendix B) ----------
const longBytes = (v: bigint): Uint8Array => {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigInt64(0, BigInt.asIntN(64, v), true);
  return b;
};

/** Appendix B hash of a source value (ints and dates hash as longs, so int 34 == long 34). */
export function bucketHash(type: PrimitiveType, v: unknown): number {
  switch (type) {
    case 'int':
    case 'date':
      return murmur3x86_32(longBytes(BigInt(toInt(type, v))));
    case 'long':
    case 'time':
      return murmur3x86_32(longBytes(toBig(type, v)));
    case 'timestamp':
    case 'timestamptz':
    case 'timestamp_ns':
    case 'timestamptz_ns':
      return murmur3x86_32(longBytes(toMicros(type, v))); // spec: ns timestamps hash as micros
    case 'string':
      if (typeof v !== 'string') throw invalid(type, 'a string', v);
      return murmur3x86_32(utf8.encode(v));
    case 'uuid':
      return murmur3x86_32(toPartitionValue('uuid', v) as Uint8Array);
    case 'binary':
      return murmur3x86_32(toBytesValue(type, v));
    default: {
      const dec = parseDecimalType(type);
      if (dec) return murmur3x86_32(decimalToBytes(decimalUnscaledOf(type, dec.scale, v)));
      if (parseFixedType(type) !== undefined) return murmur3x86_32(toBytesValue(type, v));
      throw IcebergError.mismatch(
        'DataInvalid',
        'bucket source type',
        'int, long, decimal, date, time, timestamp*, string, uuid, fixed or binary',
        type,
        false,
      );
    }
  }
}

// ---------- calendar transforms (floor semantics for pre-1970 values, as Java and PyIceberg) ----------
const MICROS_PER_HOUR = 3_600_000_000n;
const MICROS_PER_DAY = 86_400_000_000n;
const civil = (days: number): { y: number; m: number } => {
  const d = new Date(days * 86_400_000);
  return { y: d.getUTCFullYear(), m: d.getUTCMonth() };
};
const daysOf = (type: PrimitiveType, v: unknown): number =>
  type === 'date' ? toInt(type, v) : Number(floorDiv(toMicros(type, v), MICROS_PER_DAY));

/** Applies `transform` to one source value; null stays null (void always gives null). */
export function applyTransform(transform: Transform, source: PrimitiveType, v: unknown): PartitionValue {
  transformResultType(transform, source); // validates the pairing
  return applyParsed(parseTransform(transform), source, v);
}

/** `applyTransform` of a transform already parsed and checked against its source type. */
function applyParsed(t: ParsedTransform, source: PrimitiveType, v: unknown): PartitionValue {
  if (v === null || v === undefined || t.kind === 'void') return null;
  switch (t.kind) {
    case 'identity':
      return toPartitionValue(source, v);
    case 'bucket':
      return (bucketHash(source, v) & 0x7fffffff) % t.n;
    case 'truncate': {
      const w = t.width;
      if (source === 'int') {
        const x = toInt(source, v);
        return x - (((x % w) + w) % w);
      }
      if (source === 'long') {
        const x = toBig(source, v);
        const W = BigInt(w);
        return x - (((x % W) + W) % W);
      }
      if (source === 'string') {
        if (typeof v !== 'string') throw invalid(source, 'a string', v);
        return Array.from(v).slice(0, w).join(''); // code points, not UTF-16 units
      }
      if (source === 'binary') return toBytesValue(source, v).slice(0, w);
      const dec = parseDecimalType(source)!;
      const x = decimalUnscaledOf(source, dec.scale, v);
      const W = BigInt(w);
      return decimalToBytes(x - (((x % W) + W) % W));
    }
    case 'year':
      return civil(daysOf(source, v)).y - 1970;
    case 'month': {
      const c = civil(daysOf(source, v));
      return (c.y - 1970) * 12 + c.m;
    }
    case 'day':
      return daysOf(source, v);
    case 'hour':
      return Number(floorDiv(toMicros(source, v), MICROS_PER_HOUR));
  }
}

// ---------- spec-level helpers ----------
const primitiveSource = (schema: Schema, sourceId: number): { field: NestedField; path: string[]; type: PrimitiveType } => {
  const r = findField(schema, sourceId);
  if (!r) throw IcebergError.mismatch('DataInvalid', 'partition source-id', `a field of schema ${schema['schema-id']}`, sourceId, false);
  if (typeof r.field.type !== 'string')
    throw IcebergError.mismatch('DataInvalid', `partition source "${r.path.join('.')}" type`, 'a primitive', r.field.type.type, false);
  return { ...r, type: r.field.type };
};

/** The partition struct type (data_file.partition, id 102): optional fields with partition field ids. */
export function partitionType(spec: PartitionSpec, schema: Schema): StructType {
  return {
    type: 'struct',
    fields: spec.fields.map((f) => ({
      id: f['field-id'],
      name: f.name,
      required: false,
      type: transformResultType(f.transform, primitiveSource(schema, f['source-id']).type),
    })),
  };
}

/** Computes a row's partition. `row` is keyed by column name; nested struct sources are objects. */
export function partitionRecord(spec: PartitionSpec, schema: Schema, row: Record<string, unknown>): PartitionRecord {
  return partitioner(spec, schema)(row);
}

/**
 * `partitionRecord` compiled for one spec and schema: each source field found and each transform
 * parsed and checked against its source type once, not for every row (writers call it per row).
 */
export function partitioner(spec: PartitionSpec, schema: Schema): (row: Record<string, unknown>) => PartitionRecord {
  const fields = spec.fields.map((f) => {
    const src = primitiveSource(schema, f['source-id']);
    transformResultType(f.transform, src.type); // validates the pairing
    return { name: f.name, path: src.path, type: src.type, t: parseTransform(f.transform) };
  });
  return (row) => {
    const out: PartitionRecord = {};
    for (const f of fields) {
      let v: unknown = row;
      for (const p of f.path) v = v === null || v === undefined ? undefined : (v as Record<string, unknown>)[p];
      out[f.name] = applyParsed(f.t, f.type, v);
    }
    return out;
  };
}

/**
 * Whether two partitions of one spec are the same, by value, without building their keys:
 * true only when every field's values are identical primitives (a byte-array value, NaN: false,
 * and the caller falls back to `partitionKey`).
 */
export function samePartition(a: PartitionRecord, b: PartitionRecord): boolean {
  for (const k in a) if (a[k] !== b[k] || a[k] instanceof Uint8Array) return false;
  return true;
}

/** Stable key for grouping rows/files by partition (not a path; exact for every value type). */
export function partitionKey(p: PartitionRecord): string {
  return JSON.stringify(
    Object.entries(p).map(([k, v]) => [
      k,
      v === null ? null : typeof v === 'bigint' ? `${v}n` : v instanceof Uint8Array ? `b:${Buffer.from(v).toString('hex')}` : v,
    ]),
  );
}

// ---------- human strings and paths (Java Transform.toHumanString) ----------
const pad = (n: number, w = 2): string => String(Math.abs(n)).padStart(w, '0');
const dateString = (days: number): string => new Date(days * 86_400_000).toISOString().slice(0, 10);

/** The human string Java puts in partition paths, e.g. day -> "2024-05-01", hour -> "2024-05-01-13". */
export function partitionHumanString(transform: Transform, source: PrimitiveType, v: PartitionValue): string {
  if (v === null) return 'null';
  const t = parseTransform(transform);
  switch (t.kind) {
    case 'year':
      return String(1970 + (v as number));
    case 'month': {
      const m = v as number;
      const y = 1970 + Math.floor(m / 12);
      return `${y}-${pad((((m % 12) + 12) % 12) + 1)}`;
    }
    case 'day':
      return dateString(v as number);
    case 'hour': {
      const h = v as number;
      const d = Math.floor(h / 24);
      return `${dateString(d)}-${pad(((h % 24) + 24) % 24)}`;
    }
    case 'bucket':
      return String(v);
    default:
      break;
  }
  const type = transformResultType(transform, source);
  switch (type) {
    case 'date':
      return dateString(v as number);
    case 'time': {
      const us = BigInt(v as bigint);
      const s = Number(us / 1_000_000n);
      const frac = us % 1_000_000n;
      return `${pad(Math.floor(s / 3600))}:${pad(Math.floor(s / 60) % 60)}:${pad(s % 60)}${frac ? '.' + String(frac).padStart(6, '0') : ''}`;
    }
    case 'timestamp':
    case 'timestamptz':
    case 'timestamp_ns':
    case 'timestamptz_ns': {
      const ns = type.endsWith('_ns');
      const x = BigInt(v as bigint);
      const perMs = ns ? 1_000_000n : 1000n;
      const ms = floorDiv(x, perMs);
      const sub = x - ms * perMs;
      const iso = new Date(Number(ms)).toISOString(); // YYYY-MM-DDTHH:mm:ss.sssZ
      const frac = `${iso.slice(20, 23)}${String(sub).padStart(ns ? 6 : 3, '0')}`.replace(/0+$/, '');
      return `${iso.slice(0, 19)}${frac ? '.' + frac : ''}${type.startsWith('timestamptz') ? '+00:00' : ''}`;
    }
    case 'uuid':
      return uuidFromBytes(v as Uint8Array);
    case 'binary':
      return Buffer.from(v as Uint8Array).toString('base64');
    default: {
      const dec = parseDecimalType(type);
      if (dec) {
        const u = decimalFromBytes(v as Uint8Array);
        const neg = u < 0n;
        const digits = (neg ? -u : u).toString().padStart(dec.scale + 1, '0');
        const body = dec.scale === 0 ? digits : `${digits.slice(0, -dec.scale)}.${digits.slice(-dec.scale)}`;
        return neg ? `-${body}` : body;
      }
      if (parseFixedType(type) !== undefined) return Buffer.from(v as Uint8Array).toString('base64');
      return String(v);
    }
  }
}

/** Java's URLEncoder.encode(s, UTF-8): unreserved `a-zA-Z0-9.-*_` kept, space -> '+'. */
const javaUrlEncode = (s: string): string =>
  Array.from(utf8.encode(s))
    .map((b) => {
      const c = String.fromCharCode(b);
      if (/[A-Za-z0-9.\-*_]/.test(c)) return c;
      if (c === ' ') return '+';
      return `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
    })
    .join('');

/**
 * The longest partition path segment (`name=value`, URL-encoded) written as is. A file system takes
 * at most 255 bytes per path segment (NAME_MAX: ENAMETOOLONG past it) and S3 at most 1,024 bytes per
 * key, so a long partition value (300 "é" is 1,800 characters encoded, a binary identity value any
 * length) made every write of its partition fail, retry after retry. Iceberg never reads the path
 * (partition values live in the manifests), so a longer segment is shortened instead.
 */
export const MAX_PARTITION_SEGMENT_BYTES = 128;
/** Past this many bytes for the whole partition path (S3's 1,024-byte keys), each value is its hash alone. */
const MAX_PARTITION_PATH_BYTES = 512;

/**
 * `name=value` as Java writes it, or, past MAX_PARTITION_SEGMENT_BYTES, `name=<prefix>-<hash>`: the
 * first bytes of the encoded value (cut at a whole escape) and the murmur3 hash of the whole human
 * string in hex, so distinct long values keep distinct directories and the directory still hints at
 * its value. `hashOnly`: `name=-<hash>` (a wide spec of long values).
 */
function pathSegment(name: string, human: string, hashOnly = false): string {
  const key = javaUrlEncode(name);
  const value = javaUrlEncode(human);
  if (!hashOnly && key.length + 1 + value.length <= MAX_PARTITION_SEGMENT_BYTES) return `${key}=${value}`;
  const hash = (murmur3x86_32(utf8.encode(human)) >>> 0).toString(16).padStart(8, '0');
  const room = hashOnly ? 0 : Math.max(0, MAX_PARTITION_SEGMENT_BYTES - key.length - 2 - hash.length);
  // Whole characters only: never a cut inside an escape or a character's UTF-8 bytes.
  let prefix = '';
  for (const ch of human) {
    const enc = javaUrlEncode(ch);
    if (prefix.length + enc.length > room) break;
    prefix += enc;
  }
  return `${key.slice(0, MAX_PARTITION_SEGMENT_BYTES - hash.length - 2)}=${prefix}-${hash}`;
}

/**
 * The partition path Java writes under data/: `a=1/b=x` with names and values URL-encoded; a
 * segment too long for a file system or object store is shortened (pathSegment).
 */
export function partitionPath(spec: PartitionSpec, schema: Schema, p: PartitionRecord): string {
  const human = spec.fields.map((f) => partitionHumanString(f.transform, primitiveSource(schema, f['source-id']).type, p[f.name] ?? null));
  const path = spec.fields.map((f, i) => pathSegment(f.name, human[i]!)).join('/');
  if (path.length <= MAX_PARTITION_PATH_BYTES) return path;
  return spec.fields.map((f, i) => pathSegment(f.name, human[i]!, true)).join('/');
}
