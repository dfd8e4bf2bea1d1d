/**
 * Avro records -> table rows: the Iceberg type of an Avro schema (the mapping the README lists)
 * and the converter of avsc's decoded values into the Parquet writer's row values.
 *
 * Mapping (Iceberg's own AvroSchemaUtil, less its union-as-struct): record -> struct, array ->
 * list, map -> map<string, V>, enum -> string, fixed(n) -> fixed[n], bytes -> binary, and the
 * logical types decimal(P,S) -> decimal(P, S), uuid -> uuid, date -> date, time-millis/-micros ->
 * time, timestamp-millis/-micros/-nanos -> timestamptz (an instant), local-timestamp-* ->
 * timestamp (nanos: floe's format-v2 tables hold microseconds, so a value with sub-microsecond
 * digits is a dead letter). A union of null and one type is that type, optional; any other union is refused
 * (Iceberg has no union type), naming the field.
 *
 * Decoding goes through avsc with longs as bigint (a 64-bit id never passes through a number);
 * decimals, millis and micros are converted exactly here, not by avsc's logical types.
 */
import { isUtf8 } from 'node:buffer';
import avro from 'avsc';
import { typeString, type IcebergType, type PrimitiveType } from '../../iceberg';
import { type Derived, type ValueConverter, compileTo, decimalOf, isStruct } from './convert';
import { DecodeError, SchemaMappingError, hexPrefix } from './errors';
import type { RowValue } from './row';

/**
 * Avro strings (and map keys) must be valid UTF-8, as the Avro spec says. avsc reads every one of
 * them with `Tap.readString`, which decodes with Buffer's utf8Slice: invalid bytes silently become
 * U+FFFD, text the producer never sent. avsc has no option for it and map keys bypass the string
 * type, so the one method is replaced (avsc is pinned; test/unit/formats.test.ts checks this still
 * holds): an invalid string fails the record's decode, and the record becomes a dead letter.
 */
interface AvscTap {
  buf: Buffer;
  pos: number;
  readLong(): number;
  _invalidate(): void;
}
// avsc's Tap is not in its typings.
const { Tap } = require('avsc/lib/utils') as { Tap: { prototype: { readString(this: AvscTap): string | undefined } } };
Tap.prototype.readString = function readStrictUtf8String(this: AvscTap): string | undefined {
  const len = this.readLong();
  if (len < 0) {
    this._invalidate();
    return '';
  }
  const pos = this.pos;
  this.pos += len;
  if (this.pos > this.buf.length) return undefined; // truncated: avsc reports it
  const bytes = this.buf.subarray(pos, pos + len);
  if (!isUtf8(bytes)) throw new DecodeError(`a string is not valid UTF-8 (${len} bytes: ${hexPrefix(bytes)})`);
  return bytes.toString('utf8');
};

/**
 * avsc reads a map into `{}` with `val[key] = value`, so a key "__proto__" sets the object's
 * prototype instead of adding an entry: the entry vanished from the row without a word (the
 * fuzzer found it, test/integration/fuzz-formats.test.ts). Read into an object without a
 * prototype, where every key, "__proto__" too, is an own property; the converter reads the
 * entries with Object.entries. Replaced once at load, like readString above.
 */
interface AvscMapType {
  valuesType: { _read(tap: AvscTap): unknown };
}
(avro.types.MapType.prototype as unknown as { _read(this: AvscMapType, tap: AvscTap): Record<string, unknown> })._read =
  function readMapOwnKeys(this: AvscMapType, tap: AvscTap): Record<string, unknown> {
    const values = this.valuesType;
    const val = Object.create(null) as Record<string, unknown>;
    for (let n = readBlockCount(tap); n !== 0; n = readBlockCount(tap)) {
      while (n--) {
        const key = (tap as unknown as { readString(): string }).readString();
        val[key] = values._read(tap);
      }
    }
    return val;
  };

/** An Avro array or map block's item count (a negative count is followed by the block's byte size), as avsc's readArraySize. */
function readBlockCount(tap: AvscTap): number {
  let n = tap.readLong();
  if (n < 0) {
    n = -n;
    tap.readLong(); // the block's size in bytes: not needed to read it
  }
  return n;
}

/** avsc's long as a bigint: exact over the whole 64-bit range (avsc's default is a JS number). */
const LongAsBigInt = avro.types.LongType.__with({
  fromBuffer: (buf: Buffer) => buf.readBigInt64LE(),
  toBuffer: (n: bigint) => {
    const buf = Buffer.alloc(8);
    buf.writeBigInt64LE(BigInt(n));
    return buf;
  },
  fromJSON: (n: unknown) => BigInt(n as string),
  toJSON: (n: bigint) => Number(n),
  isValid: (n: unknown) => typeof n === 'bigint',
  compare: (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0),
});

/** The avsc type decoding a schema's records (longs as bigint, logical types left to us). */
export function avroType(schema: unknown, refs: readonly unknown[] = []): avro.Type {
  // Referenced schemas (registry schema references) define their named types in the same registry first.
  const registry: Record<string, avro.Type> = { long: LongAsBigInt as unknown as avro.Type };
  for (const r of refs) avro.Type.forSchema(primitivesByName(r) as avro.Schema, { registry, wrapUnions: 'auto' });
  return avro.Type.forSchema(primitivesByName(schema) as avro.Schema, { registry, wrapUnions: 'auto' });
}

/** Names with the named types of `refs` (referenced schemas) defined. */
function namesWith(refs: readonly unknown[]): Names {
  const names = new Names();
  for (const r of refs) toIceberg(r as AvroNode, 'reference', names, undefined);
  return names;
}

const PRIMITIVE_NAMES = new Set(['null', 'boolean', 'int', 'long', 'float', 'double', 'bytes', 'string']);

/**
 * The schema with every `{"type": "long", ...}` (a logical type's carrier) written as plain
 * `"long"`: avsc applies a registry's override only to a type named by string, and floe reads
 * logical types itself (from the schema's JSON).
 */
function primitivesByName(n: unknown): unknown {
  if (Array.isArray(n)) return n.map(primitivesByName);
  if (typeof n !== 'object' || n === null) return n;
  const o = n as Record<string, unknown>;
  if (typeof o.type === 'string' && PRIMITIVE_NAMES.has(o.type)) return o.type;
  const out: Record<string, unknown> = { ...o };
  if (typeof o.type === 'object') out.type = primitivesByName(o.type);
  if (Array.isArray(o.fields)) out.fields = o.fields.map((f: Record<string, unknown>) => ({ ...f, type: primitivesByName(f.type) }));
  if (o.items !== undefined) out.items = primitivesByName(o.items);
  if (o.values !== undefined) out.values = primitivesByName(o.values);
  return out;
}

type AvroNode = string | AvroNode[] | { [k: string]: unknown };

/** Named types (records, enums, fixed) by full name, as a schema defines them before use. */
class Names {
  readonly byName = new Map<string, AvroNode>();
  resolve(n: string, ns: string | undefined): AvroNode | undefined {
    return this.byName.get(n.includes('.') || !ns ? n : `${ns}.${n}`) ?? this.byName.get(n);
  }
  define(node: Record<string, unknown>, ns: string | undefined): string | undefined {
    const name = node.name as string | undefined;
    if (name === undefined) return ns;
    const space = name.includes('.') ? name.slice(0, name.lastIndexOf('.')) : ((node.namespace as string | undefined) ?? ns);
    this.byName.set(name.includes('.') || !space ? name : `${space}.${name}`, node);
    return space;
  }
}

const PRIMITIVE: Record<string, PrimitiveType> = {
  boolean: 'boolean',
  int: 'int',
  long: 'long',
  float: 'float',
  double: 'double',
  bytes: 'binary',
  string: 'string',
};

/** The non-null branch of a union of null and one type, with whether null was a branch. */
function unwrapUnion(node: AvroNode[], where: string): { node: AvroNode; optional: boolean } {
  const rest = node.filter((b) => b !== 'null');
  if (rest.length !== 1)
    throw new SchemaMappingError(`${where}: an Avro union of ${rest.length} non-null types has no Iceberg type (only a union with null)`);
  return { node: rest[0]!, optional: rest.length < node.length };
}

/**
 * An Avro schema (its JSON) as Iceberg: the record's fields as derived columns. Every derived
 * column and nested field is optional in the table; `required` records what the schema says
 * (a field with no default that null cannot fill), which evolution checks.
 */
export function deriveAvroType(schema: unknown, refs: readonly unknown[] = []): { type: IcebergType; fields?: Derived[] } {
  const m = toIceberg(schema as AvroNode, 'key', namesWith(refs), undefined);
  return { type: m.type, ...(m.fields ? { fields: m.fields } : {}) };
}

export function deriveAvro(schema: unknown, refs: readonly unknown[] = []): Derived[] {
  const names = namesWith(refs);
  const top = schema as AvroNode;
  const t = toIceberg(top, 'value', names, undefined);
  if (!isStruct(t.type))
    throw new SchemaMappingError(`value: an Avro ${describe(top)} is not a record; floe maps a record's fields to columns`);
  return t.fields!;
}

function describe(n: AvroNode): string {
  return typeof n === 'string' ? n : Array.isArray(n) ? 'union' : String(n.type);
}

interface Mapped {
  type: IcebergType;
  fields?: Derived[];
  optional: boolean;
}

function toIceberg(node: AvroNode, where: string, names: Names, ns: string | undefined): Mapped {
  if (Array.isArray(node)) {
    const u = unwrapUnion(node, where);
    return { ...toIceberg(u.node, where, names, ns), optional: u.optional };
  }
  if (typeof node === 'string') {
    const p = PRIMITIVE[node];
    if (p !== undefined) return { type: p, optional: false };
    if (node === 'null') throw new SchemaMappingError(`${where}: a field of type null has no Iceberg type`);
    const named = names.resolve(node, ns);
    if (named === undefined) throw new SchemaMappingError(`${where}: unknown Avro type ${node}`);
    // A recursive record would be an infinite struct: a named type used inside itself is refused.
    if (typeof named === 'object' && !Array.isArray(named) && (named as { __visiting?: boolean }).__visiting)
      throw new SchemaMappingError(`${where}: the recursive Avro type ${node} has no Iceberg type`);
    return toIceberg(named, where, names, ns);
  }
  const logical = node.logicalType as string | undefined;
  const type = node.type as AvroNode;
  if (logical !== undefined) {
    const base = typeof type === 'string' ? type : undefined;
    switch (logical) {
      case 'decimal': {
        const p = Number(node.precision),
          s = Number(node.scale ?? 0);
        if (!(base === 'bytes' || base === 'fixed') || !Number.isInteger(p) || p < 1)
          throw new SchemaMappingError(`${where}: decimal needs bytes or fixed and a precision`);
        if (p > 38) throw new SchemaMappingError(`${where}: decimal(${p}, ${s}) is wider than Iceberg's 38 digits`);
        if (base === 'fixed') names.define(node, ns);
        return { type: `decimal(${p}, ${s})`, optional: false };
      }
      case 'uuid':
        if (base === 'string') return { type: 'uuid', optional: false };
        break;
      case 'date':
        if (base === 'int') return { type: 'date', optional: false };
        break;
      case 'time-millis':
        if (base === 'int') return { type: 'time', optional: false };
        break;
      case 'time-micros':
        if (base === 'long') return { type: 'time', optional: false };
        break;
      case 'timestamp-millis':
      case 'timestamp-micros':
      case 'timestamp-nanos':
        if (base === 'long') return { type: 'timestamptz', optional: false };
        break;
      case 'local-timestamp-millis':
      case 'local-timestamp-micros':
      case 'local-timestamp-nanos':
        if (base === 'long') return { type: 'timestamp', optional: false };
        break;
    }
    // an unknown or misplaced logical type reads as its underlying type, as the Avro spec says
  }
  switch (type) {
    case 'record': {
      const space = names.define(node, ns);
      (node as { __visiting?: boolean }).__visiting = true;
      try {
        const fields = ((node.fields as Array<Record<string, unknown>>) ?? []).map((f): Derived => {
          const name = String(f.name);
          const m = toIceberg(f.type as AvroNode, `${where}.${name}`, names, space);
          return {
            name,
            type: m.type,
            required: !m.optional && !('default' in f),
            ...(m.fields ? { fields: m.fields } : {}),
            ...(typeof f.doc === 'string' ? { doc: f.doc } : {}),
          };
        });
        return { type: { type: 'struct', fields: fields.map(toNested) }, fields, optional: false };
      } finally {
        delete (node as { __visiting?: boolean }).__visiting;
      }
    }
    case 'enum':
      names.define(node, ns);
      return { type: 'string', optional: false };
    case 'fixed':
      names.define(node, ns);
      return { type: `fixed[${Number(node.size)}]`, optional: false };
    case 'array': {
      const m = toIceberg(node.items as AvroNode, `${where}[]`, names, ns);
      return { type: { type: 'list', 'element-id': 0, element: m.type, 'element-required': false }, optional: false };
    }
    case 'map': {
      const m = toIceberg(node.values as AvroNode, `${where}{}`, names, ns);
      return {
        type: { type: 'map', 'key-id': 0, key: 'string', 'value-id': 0, value: m.type, 'value-required': false },
        optional: false,
      };
    }
    default:
      if (typeof type === 'string' && PRIMITIVE[type] !== undefined) return { type: PRIMITIVE[type], optional: false };
      return toIceberg(type, where, names, ns);
  }
}

const toNested = (d: Derived) => ({ id: 0, name: d.name, required: false, type: d.type, ...(d.doc ? { doc: d.doc } : {}) });

// ---------- values ----------

/**
 * The converter of avsc-decoded values of `node` into `target` (the table's type, which may be
 * wider: int -> long, float -> double, a decimal of more precision, a struct with more fields).
 */
export function avroConverter(schema: unknown, target: IcebergType, refs: readonly unknown[] = []): ValueConverter {
  const names = namesWith(refs);
  return compileAvro(schema as AvroNode, target, 'value', names, undefined);
}

function compileAvro(node: AvroNode, target: IcebergType, where: string, names: Names, ns: string | undefined): ValueConverter {
  if (Array.isArray(node)) {
    const u = unwrapUnion(node, where);
    const inner = compileAvro(u.node, target, where, names, ns);
    return (v, path) => (v === null || v === undefined ? null : inner(v, path));
  }
  if (typeof node === 'string') {
    if (PRIMITIVE[node] !== undefined) return compileTo(PRIMITIVE[node], target, where);
    const named = names.resolve(node, ns);
    if (named === undefined) throw new SchemaMappingError(`${where}: unknown Avro type ${node}`);
    return compileAvro(named, target, where, names, ns);
  }
  const logical = node.logicalType as string | undefined;
  const type = node.type as AvroNode;
  const base = typeof type === 'string' ? type : undefined;
  switch (logical) {
    case 'decimal': {
      if (base === 'fixed') names.define(node, ns);
      const scale = Number(node.scale ?? 0);
      const leaf = compileTo(`decimal(${Number(node.precision)}, ${scale})`, target, where);
      return (v, path) => leaf(decimalOf(v as Uint8Array), path);
    }
    case 'time-millis':
      if (base === 'int') {
        const leaf = compileTo('time', target, where);
        return (v, path) => leaf(BigInt(v as number) * 1000n, path);
      }
      break;
    case 'timestamp-millis':
    case 'local-timestamp-millis':
      if (base === 'long') {
        const leaf = compileTo(logical === 'timestamp-millis' ? 'timestamptz' : 'timestamp', target, where);
        return (v, path) => leaf((v as bigint) * 1000n, path);
      }
      break;
    case 'timestamp-nanos':
    case 'local-timestamp-nanos':
      if (base === 'long') {
        // floe's tables are format v2 (microseconds): a value with sub-microsecond digits is a dead letter, never rounded
        const leaf = compileTo(logical === 'timestamp-nanos' ? 'timestamptz' : 'timestamp', target, where);
        return (v, path) => {
          const ns = v as bigint;
          if (ns % 1000n !== 0n) throw new DecodeError(`${path}: ${ns} ns has sub-microsecond digits; the column holds microseconds`);
          return leaf(ns / 1000n, path);
        };
      }
      break;
    case 'uuid':
    case 'date':
    case 'time-micros':
    case 'timestamp-micros':
    case 'local-timestamp-micros': {
      const m = toIceberg(node, where, names, ns);
      if (m.type !== PRIMITIVE[base ?? '']) return compileTo(m.type as PrimitiveType, target, where);
      break;
    }
  }
  switch (type) {
    case 'record': {
      const space = names.define(node, ns);
      if (!isStruct(target)) throw new SchemaMappingError(`${where}: an Avro record cannot fill ${typeString(target)}`);
      const fields = (node.fields as Array<Record<string, unknown>>) ?? [];
      const byName = new Map(fields.map((f) => [String(f.name), f]));
      const reads = target.fields.map((tf) => {
        const f = byName.get(tf.name);
        if (f === undefined) return { name: tf.name, read: undefined };
        return { name: tf.name, read: compileAvro(f.type as AvroNode, tf.type, `${where}.${tf.name}`, names, space) };
      });
      return (v, path) => {
        const rec = v as Record<string, unknown>;
        const out: Record<string, RowValue | object> = {};
        for (const r of reads) out[r.name] = r.read === undefined ? null : (r.read(rec[r.name], `${path}.${r.name}`) as RowValue);
        return out;
      };
    }
    case 'enum': {
      names.define(node, ns);
      return compileTo('string', target, where);
    }
    case 'fixed':
      names.define(node, ns);
      return compileTo(`fixed[${Number(node.size)}]`, target, where);
    case 'array': {
      if (typeof target === 'string' || target.type !== 'list')
        throw new SchemaMappingError(`${where}: an Avro array cannot fill ${typeString(target)}`);
      const el = compileAvro(node.items as AvroNode, target.element, `${where}[]`, names, ns);
      return (v, path) => (v as unknown[]).map((x, i) => (x === null ? null : el(x, `${path}[${i}]`)));
    }
    case 'map': {
      if (typeof target === 'string' || target.type !== 'map')
        throw new SchemaMappingError(`${where}: an Avro map cannot fill ${typeString(target)}`);
      const val = compileAvro(node.values as AvroNode, target.value, `${where}{}`, names, ns);
      return (v, path) => Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, x === null ? null : val(x, `${path}.${k}`)]);
    }
    default:
      if (typeof type === 'string' && PRIMITIVE[type] !== undefined) return compileTo(PRIMITIVE[type], target, where);
      if (type !== undefined) return compileAvro(type, target, where, names, ns);
      throw new DecodeError(`${where}: unreadable Avro schema node`);
  }
}
