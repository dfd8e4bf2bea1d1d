/**
 * Protobuf messages -> table rows: the Iceberg type of a message (the mapping the README lists)
 * and the converter of protobufjs' decoded messages into the Parquet writer's row values.
 *
 * Mapping: message -> struct, repeated -> list, map<K, V> -> map<K', V'>, int32/sint32/sfixed32
 * -> int, int64/sint64/sfixed64/uint32/fixed32/uint64/fixed64 -> long (a uint64 above 2^63 - 1 is
 * a dead letter), float, double, bool -> boolean, string, bytes -> binary, enum -> string (its
 * name), google.protobuf.Timestamp -> timestamptz, the wrapper types (google.protobuf.Int64Value,
 * StringValue, ...) -> their primitive. Proto3 has no required fields: every column is optional,
 * and an unset scalar reads as its default, as proto3 defines. A message type that contains
 * itself is refused (Iceberg has no recursive types).
 */
import { isUtf8 } from 'node:buffer';
import protobuf from 'protobufjs';
import descriptor from 'protobufjs/ext/descriptor';
import { typeString, type IcebergType } from '../../iceberg';
import { type Derived, type ValueConverter, compileTo, isStruct } from './convert';
import { DecodeError, SchemaMappingError, hexPrefix } from './errors';

/** The message types of a .proto text by Confluent message index ([0] is the first top-level message). */
export class ProtoFile {
  private readonly top: protobuf.Type[];

  /**
   * `text`: the schema as a registry returns it, .proto text, or (as Confluent's serializers
   * register it and Apicurio keeps it) a base64 FileDescriptorProto.
   */
  constructor(text: string, refs: readonly string[] = []) {
    let root: protobuf.Root, pkg: string | undefined, imports: string[];
    /** The top-level messages this file declares, in order (message indexes count only them, not its imports'). */
    let own: string[];
    const isDescriptor = (t: string) => /^[A-Za-z0-9+/=\s]+$/.test(t) && !/\b(syntax|message)\b/.test(t);
    if (isDescriptor(text)) {
      type File = { package?: string; dependency?: string[]; messageType?: Array<{ name?: string }> };
      const decode = (t: string) => descriptor.FileDescriptorProto.decode(Buffer.from(t, 'base64')) as unknown as File;
      const file = decode(text);
      // Imported files (registry schema references) join the same descriptor set.
      const imported = refs.filter(isDescriptor).map(decode);
      imports = [...(file.dependency ?? []), ...imported.flatMap((f) => f.dependency ?? [])];
      // The well-known types it imports go into the same descriptor set, so everything resolves.
      const common = new protobuf.Root();
      addCommon(common, imports);
      const set = (common as unknown as { toDescriptor(s: string): { file: unknown[] } }).toDescriptor('proto3');
      const fromDescriptor = (protobuf.Root as unknown as { fromDescriptor(d: unknown): protobuf.Root }).fromDescriptor;
      root = fromDescriptor(descriptor.FileDescriptorSet.create({ file: [...set.file, ...imported, file] }));
      pkg = file.package || undefined;
      own = (file.messageType ?? []).map((m) => m.name ?? '');
    } else {
      // Imported files (registry schema references) are parsed into the same root first.
      root = new protobuf.Root();
      imports = [];
      for (const r of refs) imports.push(...(protobuf.parse(r, root, { keepCase: true }).imports ?? []));
      const alone = protobuf.parse(text, { keepCase: true });
      const aloneNs = alone.package ? (alone.root.lookup(alone.package) as protobuf.Namespace | null) : alone.root;
      own = aloneNs ? messagesOf(aloneNs).map((m) => m.name) : [];
      const parsed = protobuf.parse(text, root, { keepCase: true });
      imports.push(...(parsed.imports ?? []));
      addCommon(root, imports);
      pkg = parsed.package;
    }
    root.resolveAll();
    const ns = pkg ? (root.lookup(pkg) as protobuf.Namespace) : root;
    const byName = new Map(messagesOf(ns).map((m) => [m.name, m]));
    this.top = own.map((n) => byName.get(n)).filter((m): m is protobuf.Type => m !== undefined);
    if (this.top.length === 0) throw new SchemaMappingError('value: the Protobuf schema defines no message');
  }

  /** The message at a Confluent message-index path; undefined when the schema has none there. */
  message(indexes: readonly number[]): protobuf.Type | undefined {
    let list = this.top;
    let t: protobuf.Type | undefined;
    for (const i of indexes.length === 0 ? [0] : indexes) {
      t = list[i];
      if (t === undefined) return undefined;
      list = messagesOf(t);
    }
    return t;
  }
}

/** Well-known imports (google/protobuf/timestamp.proto, wrappers.proto) come with protobufjs. */
function addCommon(root: protobuf.Root, imports: readonly string[]): void {
  for (const imp of imports) {
    const common = protobuf.common.get(imp);
    if (common) root.addJSON(common.nested as Record<string, protobuf.AnyNestedObject>);
  }
}

const messagesOf = (ns: protobuf.Namespace): protobuf.Type[] =>
  ns.nestedArray.filter((x): x is protobuf.Type => x instanceof protobuf.Type);

const SCALAR: Record<string, IcebergType> = {
  double: 'double',
  float: 'float',
  int32: 'int',
  sint32: 'int',
  sfixed32: 'int',
  uint32: 'long',
  fixed32: 'long',
  int64: 'long',
  sint64: 'long',
  sfixed64: 'long',
  uint64: 'long',
  fixed64: 'long',
  bool: 'boolean',
  string: 'string',
  bytes: 'binary',
};
const LONGS = new Set(['int64', 'sint64', 'sfixed64', 'uint64', 'fixed64']);
const WRAPPERS: Record<string, string> = {
  '.google.protobuf.DoubleValue': 'double',
  '.google.protobuf.FloatValue': 'float',
  '.google.protobuf.Int64Value': 'int64',
  '.google.protobuf.UInt64Value': 'uint64',
  '.google.protobuf.Int32Value': 'int32',
  '.google.protobuf.UInt32Value': 'uint32',
  '.google.protobuf.BoolValue': 'bool',
  '.google.protobuf.StringValue': 'string',
  '.google.protobuf.BytesValue': 'bytes',
};
const TIMESTAMP = '.google.protobuf.Timestamp';

/** A message's fields as derived columns (all optional: proto3 has no required). */
export function deriveProtobuf(message: protobuf.Type): Derived[] {
  return messageFields(message, 'value', new Set());
}

function messageFields(m: protobuf.Type, where: string, visiting: Set<string>): Derived[] {
  if (visiting.has(m.fullName)) throw new SchemaMappingError(`${where}: the recursive message ${m.fullName} has no Iceberg type`);
  visiting.add(m.fullName);
  try {
    return m.fieldsArray.map((f): Derived => {
      const w = `${where}.${f.name}`;
      const mapped = fieldType(f, w, visiting);
      return { name: f.name, type: mapped.type, required: false, ...(mapped.fields ? { fields: mapped.fields } : {}) };
    });
  } finally {
    visiting.delete(m.fullName);
  }
}

function fieldType(f: protobuf.Field, where: string, visiting: Set<string>): { type: IcebergType; fields?: Derived[] } {
  const one = singleType(f.type, f.resolvedType, where, visiting);
  if (f instanceof protobuf.MapField) {
    const key = SCALAR[f.keyType];
    if (key === undefined || key === 'double' || key === 'float' || key === 'binary')
      throw new SchemaMappingError(`${where}: a map keyed by ${f.keyType} has no Iceberg map key type`);
    return { type: { type: 'map', 'key-id': 0, key, 'value-id': 0, value: one.type, 'value-required': false } };
  }
  if (f.repeated) return { type: { type: 'list', 'element-id': 0, element: one.type, 'element-required': false } };
  return one;
}

function singleType(
  name: string,
  resolved: protobuf.Type | protobuf.Enum | null,
  where: string,
  visiting: Set<string>,
): { type: IcebergType; fields?: Derived[] } {
  const scalar = SCALAR[name];
  if (scalar !== undefined) return { type: scalar };
  if (resolved instanceof protobuf.Enum) return { type: 'string' };
  if (resolved instanceof protobuf.Type) {
    if (resolved.fullName === TIMESTAMP) return { type: 'timestamptz' };
    const w = WRAPPERS[resolved.fullName];
    if (w !== undefined) return { type: SCALAR[w]! };
    const fields = messageFields(resolved, where, visiting);
    return { type: { type: 'struct', fields: fields.map((d) => ({ id: 0, name: d.name, required: false, type: d.type })) }, fields };
  }
  throw new SchemaMappingError(`${where}: unknown Protobuf type ${name}`);
}

// ---------- values ----------

/**
 * A reader whose strings must be valid UTF-8, as the protobuf spec requires of `string` fields
 * (map keys too: generated decoders read them with the same `string()`). protobufjs' own reader
 * replaces invalid bytes with U+FFFD: the row would hold text the producer never sent. Here such a
 * record fails to decode, so it becomes a dead letter with the reason.
 */
class Utf8Reader extends protobuf.BufferReader {
  override string(): string {
    const bytes = this.bytes() as Buffer;
    if (!isUtf8(bytes)) throw new DecodeError(`a string field is not valid UTF-8 (${bytes.length} bytes: ${hexPrefix(bytes)})`);
    return bytes.toString('utf8');
  }
}

/** Decodes one message of `message`'s type from `payload`; strings strictly UTF-8 (Utf8Reader). */
export const decodeProtobuf = (message: protobuf.Type, payload: Buffer): protobuf.Message => message.decode(new Utf8Reader(payload));

/** toObject options: longs as decimal strings (exact), enums by name, proto3 defaults for unset scalars. */
export const TO_OBJECT: protobuf.IConversionOptions = { longs: String, enums: String, defaults: true, arrays: true, objects: true };

const U64_MAX_SIGNED = 2n ** 63n - 1n;

/** The converter of a message (as `TO_OBJECT` gives it) into the table's struct `target`. */
export function protobufConverter(message: protobuf.Type, target: IcebergType): ValueConverter {
  return compileMessage(message, target, 'value');
}

function compileMessage(m: protobuf.Type, target: IcebergType, where: string): ValueConverter {
  if (!isStruct(target)) throw new SchemaMappingError(`${where}: the table has ${typeString(target)}, the record's schema a message`);
  const byName = new Map(m.fieldsArray.map((f) => [f.name, f]));
  const reads = target.fields.map((tf) => {
    const f = byName.get(tf.name);
    return { name: tf.name, read: f === undefined ? undefined : compileField(f, tf.type, `${where}.${tf.name}`) };
  });
  return (v, path) => {
    const o = v as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const r of reads) {
      const x = r.read === undefined ? undefined : o[r.name];
      out[r.name] = x === undefined || x === null ? null : r.read!(x, `${path}.${r.name}`);
    }
    return out;
  };
}

function compileField(f: protobuf.Field, target: IcebergType, where: string): ValueConverter {
  if (f instanceof protobuf.MapField) {
    if (typeof target === 'string' || target.type !== 'map')
      throw new SchemaMappingError(`${where}: the table has ${typeString(target)}, the record's schema a map`);
    // toObject gives every map key as a string
    const keyType = SCALAR[f.keyType] as Exclude<IcebergType, object>;
    const keyLeaf = compileTo(keyType, target.key, `${where}{key}`);
    const parseKey =
      keyType === 'int' ? Number : keyType === 'long' ? BigInt : keyType === 'boolean' ? (k: string) => k === 'true' : (k: string) => k;
    const key = (k: string, path: string) => keyLeaf(parseKey(k), path);
    const val = compileSingle(f.type, f.resolvedType, target.value, `${where}{}`);
    return (v, path) =>
      Object.entries(v as Record<string, unknown>).map(([k, x]) => [key(k, path), x === null ? null : val(x, `${path}.${k}`)]);
  }
  if (f.repeated) {
    if (typeof target === 'string' || target.type !== 'list')
      throw new SchemaMappingError(`${where}: the table has ${typeString(target)}, the record's schema a repeated field`);
    const el = compileSingle(f.type, f.resolvedType, target.element, `${where}[]`);
    return (v, path) => (v as unknown[]).map((x, i) => el(x, `${path}[${i}]`));
  }
  return compileSingle(f.type, f.resolvedType, target, where);
}

function compileSingle(name: string, resolved: protobuf.Type | protobuf.Enum | null, target: IcebergType, where: string): ValueConverter {
  if (resolved instanceof protobuf.Type) {
    if (resolved.fullName === TIMESTAMP) {
      const leaf = compileTo('timestamptz', target, where);
      return (v, path) => {
        const t = v as { seconds?: string | number; nanos?: number };
        const nanos = t.nanos ?? 0;
        // timestamp.proto: nanos "must be from 0 to 999,999,999 inclusive"; 1e9 was silently carried into the seconds
        if (!(nanos >= 0 && nanos <= 999_999_999))
          throw new DecodeError(`${path}: ${t.seconds}s + ${nanos}ns: a Timestamp's nanos must be from 0 to 999,999,999`);
        if (nanos % 1000 !== 0)
          throw new DecodeError(`${path}: ${t.seconds}s + ${nanos}ns has nanoseconds; timestamptz holds microseconds`);
        return leaf(BigInt(t.seconds ?? 0) * 1_000_000n + BigInt(nanos / 1000), path);
      };
    }
    const w = WRAPPERS[resolved.fullName];
    if (w !== undefined) {
      const inner = compileSingle(w, null, target, where);
      return (v, path) => inner((v as { value?: unknown }).value ?? defaultOf(w), path);
    }
    return compileMessage(resolved, target, where);
  }
  if (resolved instanceof protobuf.Enum) return compileTo('string', target, where);
  const scalar = SCALAR[name];
  if (scalar === undefined) throw new SchemaMappingError(`${where}: unknown Protobuf type ${name}`);
  const leaf = compileTo(scalar as Exclude<IcebergType, object>, target, where);
  if (LONGS.has(name) || name === 'uint32' || name === 'fixed32') {
    const unsigned = name === 'uint64' || name === 'fixed64';
    return (v, path) => {
      const n = BigInt(v as string | number);
      if (unsigned && n > U64_MAX_SIGNED) throw new DecodeError(`${path}: ${n} (${name}) does not fit a 64-bit long`);
      return leaf(n, path);
    };
  }
  if (name === 'float' || name === 'double') return leaf;
  if (name === 'bytes') return (v, path) => leaf(v instanceof Uint8Array ? v : Buffer.from(v as string, 'base64'), path);
  return leaf;
}

const defaultOf = (scalar: string): unknown =>
  scalar === 'string' ? '' : scalar === 'bool' ? false : scalar === 'bytes' ? new Uint8Array(0) : LONGS.has(scalar) ? '0' : 0;
