/**
 * The Schema Registry side of a table's values: the Confluent wire format (magic byte 0, a 4-byte
 * big-endian schema id, for Protobuf the message indexes, then the payload) and the writer schemas
 * behind its ids, fetched once per id and kept (a registered id never changes its schema).
 *
 * The HTTP client is @kafkajs/confluent-schema-registry's API client (basic auth, retries on
 * 5xx); schemas are parsed with avsc and protobufjs, JSON with floe's exact JSON reader. The
 * framing is read here: the library's own decode strips every leading zero byte and then decodes
 * the first Protobuf message type, whatever the message indexes say.
 */
import createApiClient from '@kafkajs/confluent-schema-registry/dist/api';
import type { SchemaRegistryConfig, ValueFormat } from '../../config/types';
import { readSecret } from '../../config/secrets';
import type { IcebergType } from '../../iceberg';
import { avroConverter, avroType, deriveAvro, deriveAvroType } from './avro';
import { type Derived, type ValueConverter } from './convert';
import { DecodeError, SchemaMappingError } from './errors';
import { MAYBE_UNSAFE_DECIMAL, parseJsonExact } from './json';
import { deriveJsonSchema, deriveJsonSchemaType, jsonConverter } from './json-schema';
import { ProtoFile, TO_OBJECT, decodeProtobuf, deriveProtobuf, protobufConverter } from './protobuf';

/** One writer schema: how its payloads decode and what columns it derives. */
export interface WriterSchema {
  /** `12` or, for a Protobuf message other than the first, `12:1.0`. */
  key: string;
  format: ValueFormat;
  /** Its columns, or why it maps to none. */
  derived: Derived[] | SchemaMappingError;
  /** The Iceberg type of the whole schema (a key's column), or why it has none. */
  whole: { type: IcebergType; fields?: Derived[] } | SchemaMappingError;
  /** The payload (framing removed) as the converter's document; throws on bytes that do not decode. */
  decode(payload: Buffer): unknown;
  /** The converter of its documents into the table's value struct (throws SchemaMappingError). */
  converter(target: IcebergType): ValueConverter;
}

/** A record value's framing. */
interface Framed {
  id: number;
  /** Protobuf message indexes ([] for the first message). */
  indexes: number[];
  payload: Buffer;
}

/** Reads a zigzag varint (Confluent's message indexes) at `pos`; undefined past the end. */
function zigzagVarint(b: Buffer, pos: number): { value: number; next: number } | undefined {
  let result = 0,
    shift = 0;
  for (let i = pos; i < b.length && shift < 35; i++, shift += 7) {
    const byte = b[i]!;
    result |= (byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return { value: (result >>> 1) ^ -(result & 1), next: i + 1 };
  }
  return undefined;
}

/** The framing of `value` (DecodeError when it is not the Confluent wire format). */
export function unframe(value: Buffer | null, format: ValueFormat): Framed {
  if (value === null) throw new DecodeError('value: record has a null value (tombstone)');
  if (value.length < 5 || value[0] !== 0)
    throw new DecodeError(
      `value: not in the Confluent wire format (${value.length < 5 ? `${value.length} bytes` : `magic byte 0x${value[0]!.toString(16).padStart(2, '0')}, expected 0x00`})`,
    );
  const id = value.readInt32BE(1);
  if (format !== 'protobuf') return { id, indexes: [], payload: value.subarray(5) };
  const count = zigzagVarint(value, 5);
  if (count === undefined || count.value < 0 || count.value > 64)
    throw new DecodeError(`value: schema id ${id}: unreadable Protobuf message indexes`);
  const indexes: number[] = [];
  let pos = count.next;
  for (let i = 0; i < count.value; i++) {
    const ix = zigzagVarint(value, pos);
    if (ix === undefined || ix.value < 0) throw new DecodeError(`value: schema id ${id}: unreadable Protobuf message indexes`);
    indexes.push(ix.value);
    pos = ix.next;
  }
  return { id, indexes, payload: value.subarray(pos) };
}

interface Reference {
  name: string;
  subject: string;
  version: number;
}

interface RegisteredSchema {
  schema: string;
  schemaType?: string;
  references?: Reference[];
  /** The referenced schemas' texts, every level, dependencies first (resolved by the client). */
  resolved?: string[];
  /** A reference the registry does not have (the schema maps to nothing: its records are refused). */
  missing?: string;
}

/** A writer schema that maps to nothing: every use says why. */
function broken(key: string, format: ValueFormat, why: string): WriterSchema {
  const e = new SchemaMappingError(why);
  return {
    key,
    format,
    derived: e,
    whole: e,
    decode: () => undefined,
    converter: () => {
      throw e;
    },
  };
}

const TYPE_OF: Record<ValueFormat, string> = { json: 'JSON', 'json-schema': 'JSON', avro: 'AVRO', protobuf: 'PROTOBUF' };

/** The writer schema of a schema text in `format` (Protobuf: the message at `indexes`). */
export function writerSchema(
  key: string,
  format: ValueFormat,
  text: string,
  indexes: readonly number[] = [],
  refs: readonly string[] = [],
): WriterSchema {
  const ctx = `schema ${key}`;
  const safe = <T>(f: () => T): T | SchemaMappingError => {
    try {
      return f();
    } catch (e) {
      return new SchemaMappingError(`${ctx}: ${(e as Error).message}`);
    }
  };
  switch (format) {
    case 'avro': {
      const raw = JSON.parse(text) as unknown;
      const rawRefs = refs.map((r) => JSON.parse(r) as unknown);
      const type = avroType(raw, rawRefs);
      return {
        key,
        format,
        derived: safe(() => deriveAvro(raw, rawRefs)),
        whole: safe(() => deriveAvroType(raw, rawRefs)),
        decode: (payload) => type.fromBuffer(payload),
        converter: (target) => avroConverter(raw, target, rawRefs),
      };
    }
    case 'protobuf': {
      const file = new ProtoFile(text, refs);
      const message = file.message(indexes);
      if (message === undefined) return broken(key, format, `${ctx}: no message at index ${indexes.join('.')}`);
      const derived = safe(() => deriveProtobuf(message));
      return {
        key,
        format,
        derived,
        whole:
          derived instanceof SchemaMappingError
            ? derived
            : {
                type: { type: 'struct', fields: derived.map((d) => ({ id: 0, name: d.name, required: false, type: d.type })) },
                fields: derived,
              },
        decode: (payload) => message.toObject(decodeProtobuf(message, payload), TO_OBJECT),
        converter: (target) => protobufConverter(message, target),
      };
    }
    case 'json-schema':
    case 'json': {
      if (refs.length > 0)
        return broken(key, format, `schema ${key}: JSON Schema references to other subjects are not resolved; use local $refs`);
      const raw = JSON.parse(text) as unknown;
      const utf8 = new TextDecoder('utf-8', { fatal: true });
      return {
        key,
        format,
        derived: safe(() => deriveJsonSchema(raw)),
        whole: safe(() => deriveJsonSchemaType(raw)),
        decode: (payload) => parseJsonExact(utf8.decode(payload), MAYBE_UNSAFE_DECIMAL),
        converter: (target) => jsonConverter(target),
      };
    }
  }
}

/** A Schema Registry's schemas by id (each fetched once), and subjects' latest versions. */
export class SchemaRegistryClient {
  private readonly api: ReturnType<typeof createApiClient>;
  private readonly texts = new Map<number, Promise<RegisteredSchema | 'unknown'>>();
  private readonly known = new Map<number, RegisteredSchema | 'unknown'>();
  private readonly writers = new Map<string, WriterSchema>();

  constructor(cfg: SchemaRegistryConfig) {
    const basic = cfg.basic
      ? {
          username: 'value' in cfg.basic.username ? cfg.basic.username.value : readSecret(cfg.basic.username, 'schemaRegistry.username'),
          password: readSecret(cfg.basic.password, 'schemaRegistry.password'),
        }
      : undefined;
    const token = cfg.token ? readSecret(cfg.token, 'schemaRegistry.token') : undefined;
    this.api = createApiClient({
      host: cfg.url,
      clientId: 'floe',
      ...(basic ? { auth: basic } : {}),
      retry: { retries: 3 },
      ...(token
        ? {
            middlewares: [
              () => ({
                prepareRequest: (next: () => Promise<{ enhance(o: { headers: Record<string, string> }): unknown }>) =>
                  next().then((req) => req.enhance({ headers: { authorization: `Bearer ${token}` } })),
              }),
            ] as never,
          }
        : {}),
    });
  }

  /** The schema registered under `id`, or 'unknown' (404); other failures throw (the registry is down: retry, never dead-letter). */
  private fetch(id: number): Promise<RegisteredSchema | 'unknown'> {
    let p = this.texts.get(id);
    if (p === undefined) {
      p = (this.api.Schema.find({ id }) as Promise<{ data(): RegisteredSchema }>).then(
        async (r) => this.withReferences(r.data()),
        (e: { status?: number; message?: string }) => {
          this.texts.delete(id);
          if (e.status === 404) return 'unknown' as const;
          throw new Error(`schema registry: fetching schema id ${id} failed: ${e.message ?? String(e)}`);
        },
      );
      this.texts.set(id, p);
      void p.then((s) => this.known.set(id, s)).catch(() => undefined);
    }
    return p;
  }

  /** `s` with its referenced schemas' texts (every level, dependencies first, each once). */
  private async withReferences(s: RegisteredSchema, seen = new Set<string>()): Promise<RegisteredSchema> {
    const resolved: string[] = [];
    for (const ref of s.references ?? []) {
      const key = `${ref.subject}/${ref.version}`;
      if (seen.has(key)) continue;
      seen.add(key);
      let got: RegisteredSchema;
      try {
        got = ((await this.api.Subject.version({ subject: ref.subject, version: ref.version })) as { data(): RegisteredSchema }).data();
      } catch (e) {
        if ((e as { status?: number }).status === 404) return { ...s, missing: `${ref.name} (${ref.subject} version ${ref.version})` };
        throw new Error(
          `schema registry: reading reference ${ref.name} (${ref.subject} version ${ref.version}) failed: ${(e as Error).message}`,
        );
      }
      const inner = await this.withReferences(got, seen);
      if (inner.missing) return { ...s, missing: inner.missing };
      resolved.push(...(inner.resolved ?? []), got.schema);
    }
    return { ...s, resolved };
  }

  /**
   * The writer schema of a framed value when its schema is already known; a promise to await
   * first when not (then ask again). 'unknown' when the registry has no such id.
   */
  writerOf(f: Framed, format: ValueFormat): WriterSchema | 'unknown' | Promise<unknown> {
    const key = f.indexes.length === 0 || (f.indexes.length === 1 && f.indexes[0] === 0) ? `${f.id}` : `${f.id}:${f.indexes.join('.')}`;
    const w = this.writers.get(key);
    if (w !== undefined) return w;
    const s = this.known.get(f.id);
    if (s === undefined) return this.fetch(f.id).then(() => undefined);
    if (s === 'unknown') return 'unknown';
    const type = s.schemaType ?? 'AVRO';
    if (type !== TYPE_OF[format]) {
      const mismatch = broken(key, format, `schema ${key} is ${type}, the table's format is ${format}`);
      this.writers.set(key, mismatch);
      return mismatch;
    }
    const ws = s.missing
      ? broken(key, format, `schema ${key} references ${s.missing}, which the registry does not have`)
      : writerSchema(key, format, s.schema, f.indexes, s.resolved ?? []);
    this.writers.set(key, ws);
    return ws;
  }

  /** The latest version of `subject`, or undefined when the subject does not exist yet. */
  async latest(subject: string, format: ValueFormat): Promise<WriterSchema | undefined> {
    let r: { id: number } & RegisteredSchema;
    try {
      r = ((await this.api.Subject.latestVersion({ subject })) as { data(): { id: number } & RegisteredSchema }).data();
    } catch (e) {
      if ((e as { status?: number }).status === 404) return undefined;
      throw new Error(`schema registry: reading subject ${subject} failed: ${(e as Error).message}`);
    }
    this.known.set(r.id, await this.withReferences(r));
    const w = this.writerOf({ id: r.id, indexes: [], payload: Buffer.alloc(0) }, format);
    return typeof w === 'object' && !(w instanceof Promise) ? w : undefined;
  }
}

const clients = new WeakMap<SchemaRegistryConfig, SchemaRegistryClient>();

/** The worker's client of the config's registry (one per config object: its schema cache is shared by every poll). */
export function registryClient(cfg: SchemaRegistryConfig): SchemaRegistryClient {
  let c = clients.get(cfg);
  if (c === undefined) {
    c = new SchemaRegistryClient(cfg);
    clients.set(cfg, c);
  }
  return c;
}
