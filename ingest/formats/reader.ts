/**
 * A table's records in a schema format (Avro, Protobuf, JSON Schema through a Schema Registry, or
 * plain Avro with the config's schema) -> rows: the config's own columns (key, headers, topic,
 * partition, offset, timestamp; ingest/decode.ts), the value's columns (its top-level fields,
 * optionally selected and renamed by the config), and with a key format the key as one column;
 * each filled by name from whatever writer schema the record names, into the table's current schema.
 *
 * `read` never blocks and never guesses: a record whose schema is not fetched yet asks the caller
 * to wait; one whose schema needs columns the table lacks asks it to evolve the table first
 * (union.ts: the schema commit lands before any row that needs it); one the table cannot take is a
 * dead letter or stops the table (`onIncompatibleSchema`); bytes that do not decode are dead
 * letters with the reason.
 */
import type { KeyFormatConfig, SchemaRegistryConfig, TableConfig, ValueFormatConfig } from '../../config';
import type { NestedField, StructType, TableMetadata } from '../../iceberg';
import { compileDecoder, type KafkaRecord } from '../decode';
import type { Derived, ValueConverter } from './convert';
import { DecodeError, SchemaMappingError } from './errors';
import { debeziumOp, debeziumRowColumns, flattenedDeletes } from './debezium';
import { columnRange } from './ranges';
import type { Row, RowValue } from './row';
import { registryClient, unframe, writerSchema, type WriterSchema } from './registry';
import { planUnion, valueStruct } from './union';

/**
 * `row`: the record's row. `deleted`: a change event (cdc) deleting a row: the row it names
 * (Debezium's `before`; null when the event has none, and the Kafka key names it).
 */
type ReadOutcome = { row: Row } | { deleted: Row | null } | { wait: Promise<unknown> } | { evolve: Derived[]; schema: string };

/** What a value is: a row, or a Debezium change event (the envelope, or its flattened form). */
type Shape = 'row' | 'envelope' | 'flattened';

/** A record schema the table cannot take, with `onIncompatibleSchema: fail`: the caller stops the table with it. */
export class SchemaIncompatibleStop extends Error {
  override name = 'SchemaIncompatibleStop';
}

type Range = (x: number | bigint, shown: string) => number | bigint;
type Compiled =
  | { kind: 'ok'; shape: Shape; value: ValueConverter; key: ValueConverter | undefined; ranges: Array<[string, Range]> }
  | { kind: 'evolve'; derived: Derived[] }
  | { kind: 'incompatible'; reason: string };

/** The value's derived columns as the config shapes them: only `fields`, under `rename`'s names. */
function shapeValue(f: ValueFormatConfig, derived: readonly Derived[]): Derived[] {
  const keep = f.fields ? new Set(f.fields) : undefined;
  return derived.filter((d) => keep === undefined || keep.has(d.name)).map((d) => ({ ...d, name: f.rename?.[d.name] ?? d.name }));
}

/** The key's one derived column: the whole key schema's type under the configured column name. */
function keyColumn(k: KeyFormatConfig, w: WriterSchema): Derived[] | SchemaMappingError {
  if (w.whole instanceof SchemaMappingError) return w.whole;
  return [{ name: k.column, type: w.whole.type, required: false, ...(w.whole.fields ? { fields: w.whole.fields } : {}) }];
}

/** A record's writer schema and payload for one side (key or value), or a promise to await first. */
type Side = { w: WriterSchema; payload: Buffer } | { wait: Promise<unknown> };

/** A record's value decoded by its writer schema. */
export interface Decoded {
  w: WriterSchema;
  doc: unknown;
}

/**
 * Where an entry's records' writer schemas come from (the registry by the framing's id, or plain
 * Avro's schema in the config) and the decoding of a value with one. Table-independent: a route
 * decodes each value once for its field, and the routed table's reader takes that decoding.
 */
export class RecordSides {
  private readonly plainValue: WriterSchema | undefined;
  private readonly plainKey: WriterSchema | undefined;

  constructor(
    private readonly t: TableConfig,
    private readonly registry?: SchemaRegistryConfig,
  ) {
    if ((t.value.registry || t.key?.registry) && registry === undefined)
      throw new Error(`table ${t.table}: format ${t.value.format} needs schemaRegistry in the config`);
    this.plainValue = t.value.registry ? undefined : writerSchema('config', 'avro', t.value.schema!);
    this.plainKey = t.key && !t.key.registry ? writerSchema('config-key', 'avro', t.key.schema!) : undefined;
  }

  value(rec: KafkaRecord): Side {
    return this.side(rec.value, this.t.value, this.plainValue, 'value');
  }

  /** The key's side; undefined for a null key (its column is null) or without a key format. */
  key(rec: KafkaRecord): Side | undefined {
    return this.t.key && rec.key !== null ? this.side(rec.key, this.t.key, this.plainKey, 'key') : undefined;
  }

  private side(bytes: Buffer | null, f: ValueFormatConfig, plain: WriterSchema | undefined, what: 'value' | 'key'): Side {
    if (plain) {
      if (bytes === null) throw new DecodeError(`${what}: record has a null ${what}`);
      return { w: plain, payload: bytes };
    }
    let framed;
    try {
      framed = unframe(bytes, f.format);
    } catch (e) {
      throw what === 'key' && e instanceof DecodeError ? new DecodeError(e.message.replace(/^value: /, 'key: ')) : e;
    }
    const got = registryClient(this.registry!).writerOf(framed, f.format);
    if (got instanceof Promise) return { wait: got };
    if (got === 'unknown') throw new DecodeError(`${what}: schema id ${framed.id} is not in the schema registry`);
    return { w: got, payload: framed.payload };
  }

  /** The record's value decoded by its writer schema (a route's field reads it), or a promise to await first. */
  document(rec: KafkaRecord): Decoded | { wait: Promise<unknown> } {
    const v = this.value(rec);
    if ('wait' in v) return v;
    return { w: v.w, doc: decodeDoc(v.w, v.payload, 'value') };
  }
}

/** A reader of an upsert or CDC table (mode upsert, cdc). */
interface ChangeOptions {
  /** the values are change events of this format, not rows (mode cdc) */
  envelope?: 'debezium';
  /** the row key's columns: required, the table's identifier fields */
  idColumns?: readonly string[];
}

export class FormatReader {
  private readonly reserved: ReadonlySet<string>;
  private readonly meta: (rec: KafkaRecord) => Row;
  private readonly sides: RecordSides;
  /** column name -> the value's field name (rename's inverse) */
  private readonly sourceName: Map<string, string>;
  private compiled = new Map<string, Compiled>();

  constructor(
    private readonly t: TableConfig,
    private metadata: TableMetadata,
    registry?: SchemaRegistryConfig,
    private changes: ChangeOptions = {},
  ) {
    this.sides = new RecordSides(t, registry);
    this.reserved = new Set(t.columns.map((c) => c.name));
    this.meta = compileDecoder({ columns: t.columns, partitionBy: t.partitionBy.filter((p) => this.reserved.has(p.column)) });
    this.sourceName = new Map(Object.entries(t.value.rename ?? {}).map(([from, to]) => [to, from]));
  }

  /** The row key's columns became known (an upsert/CDC table's first record's key schema). */
  setIdColumns(idColumns: readonly string[]): void {
    this.changes = { ...this.changes, idColumns };
    this.compiled = new Map();
  }

  /** The table changed (evolved): recompile every writer schema against its new schema. */
  setTable(metadata: TableMetadata): void {
    this.metadata = metadata;
    this.compiled = new Map();
  }

  /** The value columns the record's value fills: the table's, less the config's own and the key's, in `fields` if set. */
  private valueTarget(): StructType {
    const reserved = new Set(this.reserved);
    if (this.t.key) reserved.add(this.t.key.column);
    const keep = this.t.value.fields ? new Set(this.t.value.fields) : undefined;
    const fields = valueStruct(this.metadata, reserved)
      .fields.map((f): NestedField => ({ ...f, name: this.sourceName.get(f.name) ?? f.name }))
      .filter((f) => keep === undefined || keep.has(f.name));
    return { type: 'struct', fields };
  }

  private compile(v: WriterSchema, k: WriterSchema | undefined): Compiled {
    const id = `${v.key}|${k?.key ?? ''}`;
    let c = this.compiled.get(id);
    if (c !== undefined) return c;
    c = this.compileUncached(v, k);
    this.compiled.set(id, c);
    return c;
  }

  private compileUncached(v: WriterSchema, k: WriterSchema | undefined): Compiled {
    if (v.derived instanceof SchemaMappingError) return { kind: 'incompatible', reason: v.derived.message };
    const keyDerived = k && this.t.key ? keyColumn(this.t.key, k) : [];
    if (keyDerived instanceof SchemaMappingError) return { kind: 'incompatible', reason: keyDerived.message };
    const which = `schema ${v.key}${k ? ` (key schema ${k.key})` : ''}`;
    const row = this.changes.envelope ? debeziumRowColumns(v.derived) : { shape: 'row' as const, fields: v.derived };
    if (row instanceof SchemaMappingError) return { kind: 'incompatible', reason: `${which}: ${row.message}` };
    const derived = [...shapeValue(this.t.value, row.fields), ...keyDerived];
    const plan = planUnion(this.metadata, derived, this.reserved, this.changes.idColumns);
    if (plan.problems.length > 0) return { kind: 'incompatible', reason: `${which}: ${plan.problems.join('; ')}` };
    if (plan.changes.length > 0) return { kind: 'evolve', derived };
    try {
      const ranges: Array<[string, Range]> = [];
      const fields = valueStruct(this.metadata, this.reserved).fields;
      for (const f of fields) {
        if (typeof f.type !== 'string' || !this.t.partitionBy.some((p) => p.column === f.name)) continue;
        const r = columnRange({ name: f.name, type: f.type, required: false }, this.t.partitionBy);
        if (r) ranges.push([f.name, r]);
      }
      const keyField = this.t.key ? fields.find((f) => f.name === this.t.key!.column) : undefined;
      const target = this.valueTarget();
      return {
        kind: 'ok',
        shape: row.shape,
        // an envelope's before and after are rows of the table (before first: Avro defines the
        // row's record type there and names it in after)
        value: v.converter(
          row.shape === 'envelope'
            ? {
                type: 'struct',
                fields: [
                  { id: 0, name: 'before', required: false, type: target },
                  { id: 0, name: 'after', required: false, type: target },
                ],
              }
            : target,
        ),
        key: k && keyField ? k.converter(keyField.type) : undefined,
        ranges,
      };
    } catch (e) {
      if (!(e instanceof SchemaMappingError)) throw e;
      return { kind: 'incompatible', reason: `${which}: ${e.message}` };
    }
  }

  /** `rec` as a row; `decoded`: its value already decoded (a route's), not decoded again. */
  read(rec: KafkaRecord, decoded?: Decoded): ReadOutcome {
    const v = decoded ?? this.sides.value(rec);
    if ('wait' in v) return v;
    // A null key fills the key column with null; a key in the format decodes like a value.
    const k = this.sides.key(rec);
    if (k && 'wait' in k) return k;
    const c = this.compile(v.w, k?.w);
    if (c.kind === 'evolve') return { evolve: c.derived, schema: v.w.key };
    if (c.kind === 'incompatible') {
      if (this.t.value.onIncompatibleSchema === 'fail') throw new SchemaIncompatibleStop(`table ${this.t.table}: ${c.reason}`);
      throw new DecodeError(`value: ${c.reason}`);
    }
    const doc = ('doc' in v ? v.doc : decodeDoc(v.w, v.payload, 'value')) as Record<string, unknown>;
    const converted = c.value(doc, 'value') as Record<string, RowValue | null>;
    let values = converted as Record<string, RowValue>;
    if (c.shape === 'envelope') {
      const { before, after } = converted as unknown as Record<'before' | 'after', Record<string, RowValue> | null>;
      if (debeziumOp(doc.op) === 'delete') return { deleted: before ? this.rowOf(rec, before, c, k) : null };
      if (!after) throw new DecodeError(`value: a Debezium event with op ${String(doc.op)} has no after`);
      values = after;
    } else if (c.shape === 'flattened' && flattenedDeletes(doc)) return { deleted: this.rowOf(rec, values, c, k) };
    return { row: this.rowOf(rec, values, c, k) };
  }

  /** The row of the record's value columns `values`: with the config's own columns, ranges checked, the key's column. */
  private rowOf(rec: KafkaRecord, values: Record<string, RowValue>, c: Compiled & { kind: 'ok' }, k: Side | undefined): Row {
    const row: Row = { ...this.meta(rec) };
    for (const [name, x] of Object.entries(values)) row[this.t.value.rename?.[name] ?? name] = x;
    for (const [name, check] of c.ranges) {
      const x = row[name];
      if (typeof x === 'number' || typeof x === 'bigint') row[name] = check(x, String(x));
    }
    if (this.t.key) row[this.t.key.column] = k && 'w' in k && c.key ? (c.key(decodeDoc(k.w, k.payload, 'key'), 'key') as RowValue) : null;
    return row;
  }
}

export function decodeDoc(w: WriterSchema, payload: Buffer, what: 'value' | 'key'): unknown {
  let doc: unknown;
  try {
    doc = w.decode(payload);
  } catch (e) {
    throw new DecodeError(`${what}: not valid ${w.format} for schema ${w.key} (${(e as Error).message})`);
  }
  if (what === 'value' && (doc === null || typeof doc !== 'object' || Array.isArray(doc)))
    throw new DecodeError(`value: schema ${w.key} decoded to no record`);
  return doc;
}

/**
 * The columns a new table takes from its schemas: the value subject's latest version (or plain
 * Avro's schema), shaped by the config, and the key's column from the key subject's latest.
 * A CDC table's are the row's columns of the change event's schema.
 */
export async function initialDerived(
  t: TableConfig,
  registry: SchemaRegistryConfig | undefined,
): Promise<{ derived: Derived[] } | undefined> {
  const latest = async (f: ValueFormatConfig, subject: string, name: string) =>
    f.registry ? registryClient(registry!).latest(f.subject ?? subject, f.format) : writerSchema(name, 'avro', f.schema!);
  const v = await latest(t.value, `${t.topic}-value`, 'config');
  if (v === undefined) return undefined;
  if (v.derived instanceof SchemaMappingError) throw v.derived;
  // a change stream's row is the envelope's after
  const row = t.mode === 'cdc' ? debeziumRowColumns(v.derived) : { fields: v.derived };
  if (row instanceof SchemaMappingError) throw new SchemaMappingError(`schema ${v.key}: ${row.message}`);
  const derived = shapeValue(t.value, row.fields);
  // an upsert/CDC table's key format reads the row key, not a column
  if (t.key && t.mode === 'append') {
    const k = await latest(t.key, `${t.topic}-key`, 'config-key');
    const col = k ? keyColumn(t.key, k) : [];
    if (col instanceof SchemaMappingError) throw col;
    derived.push(...col);
  }
  return { derived };
}
