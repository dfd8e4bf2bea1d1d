/**
 * Kafka message -> table row, with a reason for every rejection (the dead-letter table stores it).
 *
 * Two promises, both per column and compiled once per table (`compileDecoder`):
 * - Every row returned is writable. Anything the Parquet writer or the table's partition
 *   transforms would refuse is refused here as a DecodeError naming the column and the value
 *   (formats/ranges.ts), so one bad value becomes a dead letter instead of failing every retry of
 *   the batch (a stalled table).
 * - Input is never silently changed: invalid UTF-8, unpaired surrogates, malformed base64,
 *   impossible dates and times, digits a decimal or timestamp cannot hold, numbers that overflow,
 *   and paths that only resolve through the prototype chain are rejected, never rounded or rolled.
 *
 * This is the record layer: which part of the record fills each column (`source`: the value, the
 * key, a header, the headers, the topic, partition, offset or timestamp). The value is read as the
 * JSON value format (formats/json.ts); each JSON value becomes a column value by the primitive
 * converters (formats/primitives.ts), which also read the text of keys and headers.
 */
import { columnTypeString, type ColumnConfig, type PartitionFieldConfig } from '../config/types';
import { parseFixedType } from '../iceberg';
import { DecodeError, DecoderConfigError, show } from './formats/errors';
import { compileJsonColumn, compilePath, compileRecordValue } from './formats/json';
import { compilePrimitive, type Es2024String } from './formats/primitives';
import { LONG_MAX, timestampBounds, transformsOn } from './formats/ranges';
import type { Row, RowValue } from './formats/row';

/** The row a record becomes (formats/row.ts), as importers of the decoder know it. */
export type { Row };

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
function headerBytes(rec: KafkaRecord, name: string): Buffer | null {
  return lastHeaderBytes(rec.headers?.[name]);
}

/** What a decoder needs of a table's config. */
export interface DecoderTable {
  columns: readonly ColumnConfig[];
  partitionBy?: readonly PartitionFieldConfig[];
}
type Decoder = (rec: KafkaRecord) => Row;

const utf8 = new TextDecoder('utf-8', { fatal: true });

type Read = (parsed: Record<string, unknown>, rec: KafkaRecord) => RowValue;

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
  const convert = compilePrimitive(c, c.type, transforms);
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

/**
 * Every header by name (a repeated name keeps its last value), as text or as bytes. A record
 * without headers has an empty map; a null header value stays null.
 */
function compileHeaders(c: ColumnConfig): Read {
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
        throw new DecodeError(`${c.name}: header ${JSON.stringify(name)} is not valid UTF-8 (${show(b.toString('base64'))} in base64)`);
      }
    }
    return entries;
  };
}

/** The Kafka timestamp: epoch millis -> micros; a long column holds the same micros a timestamp would. */
function compileKafkaTimestamp(c: ColumnConfig, transforms: string[]): Read {
  const bounds = c.type === 'long' || c.type === 'timestamp' || c.type === 'timestamptz' ? timestampBounds(c, transforms) : undefined;
  if (!bounds)
    throw new DecoderConfigError(
      `column ${c.name}: the Kafka timestamp fills a timestamp, timestamptz or long (micros) column, not ${c.type}`,
    );
  return (_, rec) => {
    const us = BigInt(rec.timestamp) * 1000n;
    return us >= bounds.lo && us <= bounds.hi ? us : bounds.check(us, null, `the Kafka timestamp ${rec.timestamp} ms`);
  };
}

/** The reader of one column from the part of the record its `source` names. */
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
      const convert = compileJsonColumn(c, transforms);
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
    case 'headers':
      return compileHeaders(c);
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
    case 'timestamp':
      return compileKafkaTimestamp(c, transforms);
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
  const { parse, row } = compileRowReader(table);
  return (rec) => row(parse(rec.value), rec);
}

/**
 * A decoder in its two halves: `parse` (the value's JSON; an empty object when no column reads the
 * value) and `row` (the columns from a parsed object). A change stream's envelope (ingest/upsert)
 * parses once and reads its row from the part of the value that holds it.
 */
export function compileRowReader(table: DecoderTable): {
  parse: (value: Buffer | null) => Record<string, unknown>;
  row: (parsed: Record<string, unknown>, rec: KafkaRecord) => Row;
} {
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
  const parseValue = compileRecordValue(table.columns);
  const empty: Record<string, unknown> = {};
  const n = reads.length;
  return {
    parse: needsValue ? parseValue : () => empty,
    row: (parsed, rec) => {
      const row: Row = {};
      for (let i = 0; i < n; i++) row[keys[i]!] = reads[i]!(parsed, rec);
      return row;
    },
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
