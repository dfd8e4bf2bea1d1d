/**
 * A table's records in a schema format (Avro, Protobuf, JSON Schema through a Schema Registry, or
 * plain Avro with the config's schema) -> rows: the config's own columns (key, headers, topic,
 * partition, offset, timestamp; ingest/decode.ts) plus the value's columns, filled by name from
 * whatever writer schema each record names, into the table's current schema.
 *
 * `read` never blocks and never guesses: a record whose schema is not fetched yet asks the caller
 * to wait; one whose schema needs columns the table lacks asks it to evolve the table first
 * (union.ts: the schema commit lands before any row that needs it); one the table cannot take is a
 * dead letter or stops the table (`onIncompatibleSchema`); bytes that do not decode are dead
 * letters with the reason.
 */
import type { SchemaRegistryConfig, TableConfig } from '../../config';
import type { TableMetadata } from '../../iceberg/spec/types';
import { DecodeError, columnRange, compileDecoder, type KafkaRecord, type Row, type RowValue } from '../decode';
import { SchemaMappingError, type Derived, type ValueConverter } from './convert';
import { registryClient, unframe, writerSchema, type WriterSchema } from './registry';
import { planUnion, valueStruct } from './union';

export type ReadOutcome = { row: Row } | { wait: Promise<unknown> } | { evolve: Derived[]; schema: string };

/** A record schema the table cannot take, with `onIncompatibleSchema: fail`: the caller stops the table with it. */
export class SchemaIncompatibleStop extends Error {
  override name = 'SchemaIncompatibleStop';
}

type Compiled =
  | { kind: 'ok'; convert: ValueConverter; ranges: Array<[string, (x: number | bigint, shown: string) => number | bigint]> }
  | { kind: 'evolve'; derived: Derived[] }
  | { kind: 'incompatible'; reason: string };

export class FormatReader {
  private readonly reserved: ReadonlySet<string>;
  private readonly meta: (rec: KafkaRecord) => Row;
  private readonly plain: WriterSchema | undefined;
  private compiled = new Map<string, Compiled>();

  constructor(
    private readonly t: TableConfig,
    private metadata: TableMetadata,
    private readonly registry?: SchemaRegistryConfig,
  ) {
    if (t.value.registry && registry === undefined)
      throw new Error(`table ${t.table}: format ${t.value.format} needs schemaRegistry in the config`);
    this.reserved = new Set(t.columns.map((c) => c.name));
    this.meta = compileDecoder({ columns: t.columns, partitionBy: t.partitionBy.filter((p) => this.reserved.has(p.column)) });
    this.plain = t.value.registry ? undefined : writerSchema('config', 'avro', t.value.schema!);
  }

  /** The table changed (evolved): recompile every writer schema against its new schema. */
  setTable(metadata: TableMetadata): void {
    this.metadata = metadata;
    this.compiled = new Map();
  }

  private compile(w: WriterSchema): Compiled {
    let c = this.compiled.get(w.key);
    if (c !== undefined) return c;
    if (w.derived instanceof SchemaMappingError) c = { kind: 'incompatible', reason: w.derived.message };
    else {
      const plan = planUnion(this.metadata, w.derived, this.reserved);
      if (plan.problems.length > 0) c = { kind: 'incompatible', reason: `schema ${w.key}: ${plan.problems.join('; ')}` };
      else if (plan.changes.length > 0) c = { kind: 'evolve', derived: w.derived };
      else {
        const target = valueStruct(this.metadata, this.reserved);
        try {
          const ranges: Array<[string, (x: number | bigint, shown: string) => number | bigint]> = [];
          for (const f of target.fields) {
            if (typeof f.type !== 'string') continue;
            const r = columnRange({ name: f.name, type: f.type, required: false }, this.t.partitionBy);
            if (r && this.t.partitionBy.some((p) => p.column === f.name)) ranges.push([f.name, r]);
          }
          c = { kind: 'ok', convert: w.converter(target), ranges };
        } catch (e) {
          if (!(e instanceof SchemaMappingError)) throw e;
          c = { kind: 'incompatible', reason: `schema ${w.key}: ${e.message}` };
        }
      }
    }
    this.compiled.set(w.key, c);
    return c;
  }

  read(rec: KafkaRecord): ReadOutcome {
    const format = this.t.value.format;
    let w: WriterSchema, payload: Buffer;
    if (this.plain) {
      if (rec.value === null) throw new DecodeError('value: record has a null value (tombstone)');
      w = this.plain;
      payload = rec.value;
    } else {
      const f = unframe(rec.value, format);
      const got = registryClient(this.registry!).writerOf(f, format);
      if (got instanceof Promise) return { wait: got };
      if (got === 'unknown') throw new DecodeError(`value: schema id ${f.id} is not in the schema registry`);
      w = got;
      payload = f.payload;
    }
    const c = this.compile(w);
    if (c.kind === 'evolve') return { evolve: c.derived, schema: w.key };
    if (c.kind === 'incompatible') {
      if (this.t.value.onIncompatibleSchema === 'fail') throw new SchemaIncompatibleStop(`table ${this.t.table}: ${c.reason}`);
      throw new DecodeError(`value: ${c.reason}`);
    }
    let doc: unknown;
    try {
      doc = w.decode(payload);
    } catch (e) {
      throw new DecodeError(`value: not valid ${format} for schema ${w.key} (${(e as Error).message})`);
    }
    if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new DecodeError(`value: schema ${w.key} decoded to no record`);
    const values = c.convert(doc, 'value') as Record<string, RowValue>;
    for (const [name, check] of c.ranges) {
      const v = values[name];
      if (typeof v === 'number' || typeof v === 'bigint') values[name] = check(v, String(v));
    }
    return { row: { ...this.meta(rec), ...values } };
  }
}

/** The columns a new table takes from its schema: the subject's latest version, or the plain Avro schema. */
export async function initialDerived(
  t: TableConfig,
  registry: SchemaRegistryConfig | undefined,
): Promise<{ derived: Derived[]; schema: string } | undefined> {
  let w: WriterSchema | undefined;
  if (!t.value.registry) w = writerSchema('config', 'avro', t.value.schema!);
  else w = await registryClient(registry!).latest(t.value.subject ?? `${t.topic}-value`, t.value.format);
  if (w === undefined) return undefined;
  if (w.derived instanceof SchemaMappingError) throw w.derived;
  return { derived: w.derived, schema: w.key };
}
