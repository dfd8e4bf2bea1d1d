/**
 * Avro object container files (Avro 1.11 spec, "Object Container Files") for manifests and
 * manifest lists, encoded synchronously with avsc types.
 *
 * Why not avsc's streams: they are asynchronous and would write the header from avsc's own
 * `getSchema()`; writing the container by hand keeps the header's `avro.schema` byte-exact as we
 * built it (with Iceberg's `field-id` / `element-id` attributes) and lets us read from a buffer.
 *
 * Every Avro `long` is read and written as a JS `bigint` (LONG below): snapshot ids are random
 * 63-bit values, so a `number` would silently round them.
 */
import { randomBytes } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import avro from 'avsc';
import { IcebergError } from '../errors';
import type { IcebergType, NestedField, PrimitiveType } from './types';
import { parseDecimalType, parseFixedType } from './conversions';

/** avsc long that is a bigint in JS (avsc hands us / expects 8 little-endian bytes). */
const LONG = avro.types.LongType.__with({
  fromBuffer: (buf: Buffer) => buf.readBigInt64LE(0),
  toBuffer: (n: bigint) => {
    const b = Buffer.alloc(8);
    b.writeBigInt64LE(n, 0);
    return b;
  },
  fromJSON: (v: unknown) => BigInt(v as number),
  toJSON: (n: bigint) => Number(n),
  isValid: (n: unknown) => typeof n === 'bigint' && n >= -(1n << 63n) && n < 1n << 63n,
  compare: (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0),
});

// typeHook as well as registry: `{"type": "long", "logicalType": ...}` bypasses the registry.
const typeOpts = (): Record<string, unknown> => ({
  registry: { long: LONG },
  wrapUnions: false,
  typeHook: (s: unknown) =>
    s === 'long' || (typeof s === 'object' && s !== null && (s as { type?: unknown }).type === 'long') ? LONG : undefined,
});
const typeCache = new Map<string, avro.Type>();
/** Builds (and caches: avsc compiles code per type) an avsc type with bigint longs. Logical types stay raw. */
const avroType = (schema: unknown): avro.Type => {
  const key = JSON.stringify(schema);
  let t = typeCache.get(key);
  if (!t) {
    if (typeCache.size > 256) typeCache.clear(); // many specs/schemas: bound the cache
    typeCache.set(key, (t = avro.Type.forSchema(schema as avro.Schema, typeOpts())));
  }
  return t;
};

const MAGIC = Buffer.from([0x4f, 0x62, 0x6a, 0x01]); // "Obj" 1
const HEADER = avro.Type.forSchema({
  type: 'record',
  name: 'org.apache.avro.file.Header',
  fields: [
    { name: 'magic', type: { type: 'fixed', name: 'Magic', size: 4 } },
    { name: 'meta', type: { type: 'map', values: 'bytes' } },
    { name: 'sync', type: { type: 'fixed', name: 'Sync', size: 16 } },
  ],
});
const LONG_PLAIN = avro.Type.forSchema('long');

export type AvroCodec = 'null' | 'deflate';

/**
 * Writes an object container file: `records` encoded with `schema`, `metadata` in the header.
 * `records` may be any iterable (a generator): it is consumed once, a block at a time, so a
 * caller that produces records lazily never holds more than one block of them.
 */
export function writeAvroFile(
  schema: object,
  records: Iterable<unknown>,
  metadata: Record<string, string>,
  codec: AvroCodec = 'deflate',
): Uint8Array {
  const type = avroType(schema);
  const meta: Record<string, Buffer> = {};
  for (const [k, v] of Object.entries(metadata)) meta[k] = Buffer.from(v, 'utf8');
  meta['avro.schema'] = Buffer.from(JSON.stringify(schema), 'utf8');
  meta['avro.codec'] = Buffer.from(codec, 'utf8');
  const sync = randomBytes(16);
  const parts: Buffer[] = [HEADER.toBuffer({ magic: MAGIC, meta, sync })];
  const BLOCK_RECORDS = 4096; // bounded block size keeps memory flat for big manifests
  let block: Buffer[] = [];
  let n = 0;
  const flush = (): void => {
    if (block.length === 0) return;
    const body = Buffer.concat(block);
    const data = codec === 'deflate' ? deflateRawSync(body) : body;
    parts.push(LONG_PLAIN.toBuffer(block.length), LONG_PLAIN.toBuffer(data.length), data, sync);
    block = [];
  };
  for (const r of records) {
    try {
      block.push(type.toBuffer(r));
    } catch (e) {
      throw new IcebergError('DataInvalid', `record ${n} does not match the Avro schema: ${(e as Error).message}`, { cause: e });
    }
    n++;
    if (block.length === BLOCK_RECORDS) flush();
  }
  flush();
  const out = Buffer.concat(parts);
  return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
}

export interface AvroFile {
  /** the writer schema, as JSON (with Iceberg's field-id attributes) */
  schema: AvroSchemaJson;
  metadata: Record<string, string>;
  records: unknown[];
}

/** Reads an object container file (null or deflate codec) with its own writer schema. */
export function readAvroFile(bytes: Uint8Array, location = '<buffer>'): AvroFile {
  const f = openAvroFile(bytes, location);
  return { schema: f.schema, metadata: f.metadata, records: [...f.records()] };
}

/** An object container file opened for reading: its header now, its records one at a time. */
interface AvroRecordSource {
  schema: AvroSchemaJson;
  metadata: Record<string, string>;
  /**
   * The records, decoded lazily a block at a time (each call starts over). With `readerSchema`
   * (a projection of the writer schema: same names, fields left out) only its fields are
   * materialized; the rest are skipped undecoded (Avro schema resolution).
   */
  records(readerSchema?: AvroSchemaJson): Generator<unknown>;
}

/** Opens an object container file (null or deflate codec): reads the header, not the records. */
export function openAvroFile(bytes: Uint8Array, location = '<buffer>'): AvroRecordSource {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length < 4 || !buf.subarray(0, 4).equals(MAGIC)) {
    throw new IcebergError(
      'DataInvalid',
      `${location}: not an Avro container file: expected magic "Obj\\x01", found ${JSON.stringify(buf.subarray(0, 4).toString('latin1'))}`,
    );
  }
  const head = HEADER.decode(buf, 0);
  if (head.offset < 0) throw new IcebergError('DataInvalid', `${location}: truncated Avro header`);
  const header = head.value as { meta: Record<string, Buffer>; sync: Buffer };
  const metadata: Record<string, string> = {};
  for (const [k, v] of Object.entries(header.meta)) metadata[k] = v.toString('utf8');
  const codec = metadata['avro.codec'] ?? 'null';
  if (codec !== 'null' && codec !== 'deflate') {
    throw IcebergError.mismatch('FeatureUnsupported', `${location}: Avro codec`, 'null or deflate', codec, false);
  }
  const schema = JSON.parse(metadata['avro.schema'] ?? 'null') as AvroSchemaJson;
  const type = avroType(schema);
  function* records(readerSchema?: AvroSchemaJson): Generator<unknown> {
    const reader = readerSchema === undefined ? undefined : avroType(readerSchema);
    const resolver = reader === undefined ? undefined : resolverFor(reader, type);
    let pos = head.offset;
    while (pos < buf.length) {
      const count = LONG_PLAIN.decode(buf, pos);
      const size = LONG_PLAIN.decode(buf, count.offset);
      if (count.offset < 0 || size.offset < 0) throw new IcebergError('DataInvalid', `${location}: truncated Avro block header at ${pos}`);
      const start = size.offset;
      const end = start + (size.value as number);
      if (end + 16 > buf.length) throw new IcebergError('DataInvalid', `${location}: truncated Avro block at ${pos}`);
      if (!buf.subarray(end, end + 16).equals(header.sync))
        throw new IcebergError('DataInvalid', `${location}: Avro sync marker mismatch at ${end}`);
      const raw = buf.subarray(start, end);
      const data = codec === 'deflate' ? inflateRawSync(raw) : raw;
      let off = 0;
      for (let i = 0; i < (count.value as number); i++) {
        const r = reader ? reader.decode(data, off, resolver) : type.decode(data, off);
        if (r.offset < 0) throw new IcebergError('DataInvalid', `${location}: truncated Avro record in block at ${pos}`);
        off = r.offset;
        yield r.value;
      }
      pos = end + 16;
    }
  }
  return { schema, metadata, records };
}

type AvroResolver = ReturnType<avro.Type['createResolver']>;
const resolvers = new WeakMap<avro.Type, WeakMap<avro.Type, AvroResolver>>();
/** avsc's resolver from `writer` to `reader` (cached per pair of cached types: avsc compiles each). */
function resolverFor(reader: avro.Type, writer: avro.Type): AvroResolver {
  let perWriter = resolvers.get(writer);
  if (!perWriter) resolvers.set(writer, (perWriter = new WeakMap()));
  let r = perWriter.get(reader);
  if (!r) perWriter.set(reader, (r = reader.createResolver(writer)));
  return r;
}

export type AvroSchemaJson = string | AvroSchemaObject | AvroSchemaJson[];
export interface AvroSchemaObject {
  type: string;
  [k: string]: unknown;
}
export interface AvroFieldJson {
  name: string;
  type: AvroSchemaJson;
  'field-id'?: number;
  default?: unknown;
  doc?: string;
}

/** `["null", T]` -> T; anything else unchanged. */
export const unwrapOptional = (s: AvroSchemaJson): AvroSchemaJson => (Array.isArray(s) ? (s.find((x) => x !== 'null') ?? 'null') : s);

/** Field-id -> Avro field name for one record schema (writers disagree on names, never on ids). */
export function fieldNamesById(record: AvroSchemaJson): Map<number, string> {
  const r = unwrapOptional(record);
  const out = new Map<number, string>();
  if (typeof r === 'object' && !Array.isArray(r) && r.type === 'record') {
    for (const f of r['fields'] as AvroFieldJson[]) {
      const id = f['field-id'];
      if (id !== undefined) out.set(Number(id), f.name);
    }
  }
  return out;
}
/** The (unwrapped) schema of the field with `id` in a record schema. */
export function fieldSchemaById(record: AvroSchemaJson, id: number): AvroSchemaJson | undefined {
  const r = unwrapOptional(record);
  if (typeof r === 'object' && !Array.isArray(r) && r.type === 'record') {
    const f = (r['fields'] as AvroFieldJson[]).find((x) => Number(x['field-id']) === id);
    return f ? unwrapOptional(f.type) : undefined;
  }
  return undefined;
}

/**
 * Java's AvroSchemaUtil.makeCompatibleName: characters Avro names cannot hold become `_xHH`,
 * a leading digit becomes `_D`. Readers map back through field ids, so this is write-only.
 */
export function avroSafeName(name: string): string {
  let out = '';
  for (let i = 0; i < name.length; i++) {
    const c = name[i]!;
    const ok = i === 0 ? /[A-Za-z_]/.test(c) : /[A-Za-z0-9_]/.test(c);
    if (ok) out += c;
    else if (/[0-9]/.test(c)) out += `_${c}`;
    else out += `_x${c.charCodeAt(0).toString(16).toUpperCase()}`;
  }
  return out;
}

/** Avro schema for an Iceberg primitive, with the logical types Java writes. */
export function primitiveToAvro(t: PrimitiveType): AvroSchemaJson {
  switch (t) {
    case 'boolean':
      return 'boolean';
    case 'int':
      return 'int';
    case 'long':
      return 'long';
    case 'float':
      return 'float';
    case 'double':
      return 'double';
    case 'date':
      return { type: 'int', logicalType: 'date' };
    case 'time':
      return { type: 'long', logicalType: 'time-micros' };
    case 'timestamp':
      return { type: 'long', logicalType: 'timestamp-micros', 'adjust-to-utc': false };
    case 'timestamptz':
      return { type: 'long', logicalType: 'timestamp-micros', 'adjust-to-utc': true };
    case 'timestamp_ns':
      return { type: 'long', logicalType: 'timestamp-nanos', 'adjust-to-utc': false };
    case 'timestamptz_ns':
      return { type: 'long', logicalType: 'timestamp-nanos', 'adjust-to-utc': true };
    case 'string':
      return 'string';
    case 'uuid':
      return { type: 'fixed', name: 'uuid_fixed', size: 16, logicalType: 'uuid' };
    case 'binary':
      return 'bytes';
    default: {
      const dec = parseDecimalType(t);
      if (dec) {
        // Java: fixed of the minimum size holding the precision, named decimal_P_S
        const size = decimalRequiredBytes(dec.precision);
        return {
          type: 'fixed',
          name: `decimal_${dec.precision}_${dec.scale}`,
          size,
          logicalType: 'decimal',
          precision: dec.precision,
          scale: dec.scale,
        };
      }
      const len = parseFixedType(t);
      if (len !== undefined) return { type: 'fixed', name: `fixed_${len}`, size: len };
      throw new IcebergError('FeatureUnsupported', `no Avro mapping for Iceberg type ${String(t)}`);
    }
  }
}

/** Smallest byte count whose two's complement holds `precision` decimal digits (Java TypeUtil). */
function decimalRequiredBytes(precision: number): number {
  let bytes = 1;
  while (2 ** (8 * bytes - 1) < 10 ** precision) bytes++;
  return bytes;
}

/** An Iceberg struct field list as an Avro record (optional fields are ["null", T] unions). */
function structToAvro(name: string, fields: NestedField[]): AvroSchemaObject {
  return {
    type: 'record',
    name,
    fields: fields.map((f) => {
      const t = typeToAvro(f.type, `r${f.id}`);
      return f.required
        ? { name: avroSafeName(f.name), type: t, 'field-id': f.id }
        : { name: avroSafeName(f.name), type: ['null', t], default: null, 'field-id': f.id };
    }),
  };
}

function typeToAvro(t: IcebergType, recordName: string): AvroSchemaJson {
  if (typeof t === 'string') return primitiveToAvro(t);
  if (t.type === 'struct') return structToAvro(recordName, t.fields);
  if (t.type === 'list') {
    const e = typeToAvro(t.element, `r${t['element-id']}`);
    return { type: 'array', items: t['element-required'] ? e : ['null', e], 'element-id': t['element-id'] };
  }
  throw new IcebergError('FeatureUnsupported', 'map types inside manifests are written by the manifest module only');
}
