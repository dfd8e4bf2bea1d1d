/**
 * The changes of an upsert or CDC table whose values are in a schema format (Avro, Protobuf or JSON
 * Schema through a Schema Registry, or plain Avro): the FormatReader reads each value into the
 * table's row (mode cdc: Debezium's envelope or its flattened form, whatever the format), and the
 * record key, read by its own schema, names the row a tombstone or a `before`-less delete removes.
 *
 * The row key's columns (`idColumns`) default, in this order, to the table's identifier fields,
 * then the fields of the key subject's latest schema, then (a new topic with no key subject yet)
 * the fields of the first record's key schema. The key is decoded with the entry's `key:` format,
 * else in the value's format when it is framed (a Debezium connector with the AvroConverter frames
 * both), else read as text or JSON (changes.ts).
 */
import type { ColumnType, KeyFormatConfig, SchemaRegistryConfig, TableConfig } from '../../config';
import { currentSchema, type NestedField, type TableMetadata } from '../../iceberg';
import type { KafkaRecord, Row } from '../decode';
import type { Derived, ValueConverter } from '../formats/convert';
import { DecodeError, DecoderConfigError, SchemaMappingError } from '../formats/errors';
import { FormatReader, RecordSides, decodeDoc } from '../formats/reader';
import { registryClient, writerSchema, type WriterSchema } from '../formats/registry';
import { compileKafkaKey, type Change } from './changes';

type Outcome = { change: Change } | { wait: Promise<unknown> } | { evolve: Derived[]; schema: string };

/** The key format of a keyed table: the entry's, else the value's when it is a registry format. */
function keyFormatOf(t: TableConfig): KeyFormatConfig | undefined {
  if (t.key) return t.key;
  if (!t.value.registry) return undefined;
  return { format: t.value.format, registry: true, onIncompatibleSchema: t.value.onIncompatibleSchema, column: 'key' };
}

/** The field names of a key schema that is a record, else undefined. */
function keyFields(w: WriterSchema | undefined): string[] | undefined {
  if (w === undefined || w.whole instanceof SchemaMappingError) return undefined;
  const t = w.whole.type;
  return typeof t !== 'string' && t.type === 'struct' ? t.fields.map((f) => f.name) : undefined;
}

/**
 * The row key's columns when the config names none: the table's identifier fields, else the key
 * schema's fields (the key subject's latest, or plain Avro's key schema). Undefined when neither
 * is known yet (the first record's key decides).
 */
export async function defaultIdColumns(
  t: TableConfig,
  metadata: TableMetadata | undefined,
  registry: SchemaRegistryConfig | undefined,
): Promise<string[] | undefined> {
  if (t.idColumns) return [...t.idColumns];
  if (metadata) {
    const schema = currentSchema(metadata);
    const ids = schema['identifier-field-ids'] ?? [];
    if (ids.length > 0) return ids.map((id) => schema.fields.find((f) => f.id === id)?.name ?? String(id));
  }
  const k = keyFormatOf(t);
  if (k === undefined) return undefined;
  const w = k.registry
    ? await registryClient(registry!).latest(k.subject ?? `${t.topic}-key`, k.format)
    : writerSchema('config-key', 'avro', k.schema!);
  return keyFields(w);
}

export class RegistryChanges {
  readonly reader: FormatReader;
  private readonly sides: RecordSides | undefined;
  private readonly keyFormat: KeyFormatConfig | undefined;
  /** per key writer schema: its documents as the id columns' row */
  private keyConverters = new Map<string, ValueConverter>();
  private fallback: ((rec: KafkaRecord) => Row) | undefined;

  constructor(
    private readonly t: TableConfig,
    private metadata: TableMetadata,
    registry: SchemaRegistryConfig | undefined,
    /** undefined: taken from the first record's key schema */
    private ids: string[] | undefined,
  ) {
    this.keyFormat = keyFormatOf(t);
    // The key format reads the row key, not a column: the reader gets the entry without it.
    this.reader = new FormatReader({ ...t, key: undefined }, metadata, registry, {
      ...(t.mode === 'cdc' ? { envelope: 'debezium' as const } : {}),
      ...(ids ? { idColumns: ids } : {}),
    });
    this.sides = this.keyFormat ? new RecordSides({ ...t, key: this.keyFormat }, registry) : undefined;
  }

  /** The row key's columns, once known. */
  get idColumns(): string[] | undefined {
    return this.ids;
  }

  /** The table evolved: recompile against its new schema. */
  setTable(metadata: TableMetadata): void {
    this.metadata = metadata;
    this.reader.setTable(metadata);
    this.keyConverters = new Map();
    this.fallback = undefined;
  }

  read(rec: KafkaRecord): Outcome {
    if (this.ids === undefined) {
      const w = this.resolveIds(rec);
      if (w) return w;
    }
    if (rec.value === null) return this.deleteByKey(rec);
    const out = this.reader.read(rec);
    if ('wait' in out || 'evolve' in out) return out;
    if ('row' in out) return { change: { kind: 'upsert', row: this.checked(out.row, 'value') } };
    return out.deleted === null ? this.deleteByKey(rec) : { change: { kind: 'delete', key: this.keyOf(out.deleted, 'value') } };
  }

  /** A new topic's first record: its key schema's fields are the row key (or a wait for the schema). */
  private resolveIds(rec: KafkaRecord): { wait: Promise<unknown> } | undefined {
    const side = this.keyFormat && rec.key !== null && this.framedOrPlain(rec.key) ? this.sides!.key(rec) : undefined;
    if (side && 'wait' in side) return side;
    const fields = keyFields(side?.w);
    if (!fields)
      throw new DecoderConfigError(
        'idColumns is not set, and no key schema that is a record names the row key (the table has no identifier fields, the key subject no schema): set idColumns',
      );
    this.ids = fields;
    this.reader.setIdColumns(fields);
    return undefined;
  }

  /** Whether the key is read by the key format: plain Avro always, a registry format when framed. */
  private framedOrPlain(key: Buffer): boolean {
    return !this.keyFormat!.registry || (key.length >= 5 && key[0] === 0);
  }

  private deleteByKey(rec: KafkaRecord): Outcome {
    if (rec.key === null) throw new DecodeError('key: a tombstone (null value) needs the record key to name the row it deletes');
    if (this.keyFormat && this.framedOrPlain(rec.key)) {
      const side = this.sides!.key(rec)!;
      if ('wait' in side) return side;
      let conv = this.keyConverters.get(side.w.key);
      if (!conv) this.keyConverters.set(side.w.key, (conv = this.keyConverter(side.w)));
      return { change: { kind: 'delete', key: this.checked(conv(decodeDoc(side.w, side.payload, 'key'), 'key') as Row, 'key') } };
    }
    // a key as text or JSON, as a JSON table's (a string key beside Avro values)
    if (!this.fallback) {
      const columns = this.idFields().map((f) => ({ name: f.name, type: f.type as ColumnType, required: true }));
      this.fallback = compileKafkaKey(columns, this.ids!);
    }
    return { change: { kind: 'delete', key: this.fallback(rec) } };
  }

  private idFields(): NestedField[] {
    const fields = currentSchema(this.metadata).fields;
    return this.ids!.map((n) => {
      const f = fields.find((x) => x.name === n);
      if (!f) throw new DecoderConfigError(`idColumns: ${n} is not a column of the table (${fields.map((x) => x.name).join(', ')})`);
      return f;
    });
  }

  /** A key schema's documents as the id columns: a record's fields by name, a primitive as the one id column. */
  private keyConverter(w: WriterSchema): ValueConverter {
    const fields = this.idFields();
    const struct = keyFields(w) !== undefined;
    if (!struct && fields.length !== 1)
      throw new DecodeError(`key: schema ${w.key} is not a record, and the row key has ${fields.length} columns`);
    try {
      if (struct) return w.converter({ type: 'struct', fields });
      const one = w.converter(fields[0]!.type);
      return (v, path) => ({ [fields[0]!.name]: one(v, path) });
    } catch (e) {
      if (e instanceof SchemaMappingError) throw new DecodeError(`key: schema ${w.key}: ${e.message}`);
      throw e;
    }
  }

  /** The id columns of a row (a deleted row's key). */
  private keyOf(row: Row, what: string): Row {
    const key: Row = {};
    for (const n of this.ids!) key[n] = row[n]!;
    return this.checked(key, what);
  }

  /** A row or key whose id columns are all set (a row key is never null). */
  private checked(row: Row, what: string): Row {
    for (const n of this.ids!)
      if (row[n] === null || row[n] === undefined) throw new DecodeError(`${what}: the row key's column ${n} is missing or null`);
    return row;
  }
}
