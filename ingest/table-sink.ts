/**
 * One table's side of a poll: each record decoded into a row (the configured JSON columns, or a
 * schema format's reader, ingest/formats) and handed to the table's Parquet writer. A record whose
 * schema needs columns the table lacks evolves the table first (ingest/formats/union.ts: one
 * schema commit before any row that needs it), then the writer starts new files under the new
 * schema; the files written before, in the old schema, stay in the cycle's commit (readers resolve
 * columns by field id). Used by a table's own poll (poll-write.ts) and by every table of a route
 * (route-write.ts). No Temporal here.
 */
import type { TableConfig } from '../config';
import { FailureType, nonRetryable } from '../contract';
import { parseIdentifier, Transaction, type PartitionedRowWriter, type DataFile } from '../iceberg';
import { crashPoint } from '../table/crash-points';
import { decodeRecord, type KafkaRecord, type Row } from './decode';
import type { Deps } from './deps';
import type { Derived } from './formats/convert';
import { DecodeError, DecoderConfigError } from './formats/errors';
import { FormatReader, SchemaIncompatibleStop, type Decoded } from './formats/reader';
import { EvolveToSchema, SchemaIncompatibleError } from './formats/union';
import { ChangeBuffer } from './upsert/change-buffer';
import { compileChanges, type Change } from './upsert/changes';
import { keyIndexesOf } from './upsert/index-cache';
import { RegistryChanges, defaultIdColumns } from './upsert/registry-changes';
import type { DataFilePositionDelete } from '../iceberg';

/** What an upsert or CDC poll's changes came to (TableSink.close). */
export interface SinkDeletes {
  /** the old rows of changed keys, to be written as position deletes */
  deletes: DataFilePositionDelete[];
  /** keys whose last change deleted them */
  deletedKeys: number;
  /** the snapshot the key index was at when the deletes were found ('' for a table without one) */
  indexSnapshotId: string;
}

const changeReaders = new WeakMap<TableConfig, (rec: KafkaRecord) => Change>();

/** Takes a record that cannot become a row, with the reason (the caller's dead letters). */
export type DeadLetter = (rec: KafkaRecord, e: unknown) => void;

export class TableSink {
  private closed: DataFile[] = [];
  private closedRows = 0;
  private evolutions = 0;
  /** An upsert or CDC table: the poll's changes, resolved when it ends. */
  private readonly changes: ChangeBuffer | undefined;
  private readonly changeOf: ((rec: KafkaRecord) => Change) | undefined;
  /** After close, for an upsert or CDC table. */
  deletes: SinkDeletes | undefined;

  private constructor(
    private readonly deps: Deps,
    private readonly t: TableConfig,
    private writer: PartitionedRowWriter,
    /** A writer of the table whose file names end with `suffix` (each evolution starts a new one). */
    private readonly openWriter: (suffix: string) => Promise<PartitionedRowWriter>,
    private readonly reader: FormatReader | undefined,
    private readonly warn: (msg: string) => void,
    /** An upsert or CDC table in a schema format: its changes' reader. */
    private readonly registryChanges: RegistryChanges | undefined,
  ) {
    if (t.mode !== 'append') {
      this.changes = new ChangeBuffer();
      if (!registryChanges) {
        let c = changeReaders.get(t);
        if (!c) changeReaders.set(t, (c = compileChanges(t)));
        this.changeOf = c;
      }
    }
  }

  static async open(
    deps: Deps,
    t: TableConfig,
    openWriter: (suffix: string) => Promise<PartitionedRowWriter>,
    warn: (msg: string) => void,
  ): Promise<TableSink> {
    if (t.value.format === 'json') return new TableSink(deps, t, await openWriter(''), openWriter, undefined, warn, undefined);
    const { metadata } = await deps.tables.load(t.table);
    const registry = deps.cfg.schemaRegistry;
    const changes =
      t.mode === 'append' ? undefined : new RegistryChanges(t, metadata, registry, await defaultIdColumns(t, metadata, registry));
    const reader = changes?.reader ?? new FormatReader(t, metadata, registry);
    return new TableSink(deps, t, await openWriter(''), openWriter, reader, warn, changes);
  }

  /** The row key's columns of an upsert or CDC table (a schema format's: once known). */
  private get idColumns(): readonly string[] | undefined {
    return this.registryChanges ? this.registryChanges.idColumns : this.t.idColumns;
  }

  /**
   * Decodes and writes `rec`; a record that cannot be a row goes to `deadLetter` with its reason.
   * A promise when the record had to wait first (its schema fetched, the table evolved).
   * `decoded`: a schema format's value already decoded (by a route), not decoded again.
   */
  add(rec: KafkaRecord, deadLetter: DeadLetter, decoded?: Decoded): void | Promise<void> {
    let row: Row;
    try {
      if (this.changeOf) {
        this.changes!.add(this.changeOf(rec));
        return;
      }
      if (this.reader) {
        const out = this.registryChanges ? this.registryChanges.read(rec) : this.reader.read(rec, decoded);
        if ('wait' in out) return out.wait.then(() => this.add(rec, deadLetter, decoded));
        if ('evolve' in out)
          return this.evolve(out.evolve).then((refused) =>
            refused === undefined ? this.add(rec, deadLetter, decoded) : deadLetter(rec, new DecodeError(`value: ${refused}`)),
          );
        if ('change' in out) {
          this.changes!.add(out.change);
          return;
        }
        // an append table's reader reads rows only (no envelope)
        if (!('row' in out)) throw new Error(`table ${this.t.table}: a change event in an append table`);
        row = out.row;
      } else {
        // compiled once per table config: every row it returns is writable under t's partition spec
        row = decodeRecord(this.t, rec);
      }
    } catch (e) {
      // A config no record can decode is not this record's fault: fail the cycle, visibly.
      if (e instanceof DecoderConfigError) throw nonRetryable(FailureType.ConfigError, `table ${this.t.table}: ${e.message}`);
      // A record schema the table cannot take, with onIncompatibleSchema: fail: stop the table.
      if (e instanceof SchemaIncompatibleStop) throw nonRetryable(FailureType.SchemaIncompatible, e.message);
      // Anything else thrown for this one record, even unforeseen, dead-letters it with its reason.
      deadLetter(rec, e);
      return;
    }
    this.writer.add(row); // a failure here is the batch's (encoding, storage), not the record's
  }

  /**
   * Evolves the table to take `derived`; undefined when it did. The table may have changed since
   * the reader last saw it (another topic of the entry, another engine) into a schema the record's
   * cannot join: with `onIncompatibleSchema: dead-letter` that record is refused (the reason is
   * returned, the caller dead-letters it) and the reader and writer move to the table as it is now,
   * exactly as when the reader finds a record incompatible itself; with `fail` the table stops.
   */
  private async evolve(derived: Derived[]): Promise<string | undefined> {
    const table = this.t.table;
    const action = new EvolveToSchema(derived, new Set(this.t.columns.map((c) => c.name)), this.idColumns);
    let metadata;
    let refused: string | undefined;
    try {
      metadata = (await new Transaction(parseIdentifier(table)).add(action).commit(this.deps.tables.catalog, this.deps.tables.io, {})).table
        .metadata;
    } catch (e) {
      if (!(e instanceof SchemaIncompatibleError)) throw e;
      if (this.t.value.onIncompatibleSchema === 'fail') throw nonRetryable(FailureType.SchemaIncompatible, `table ${table}: ${e.message}`);
      refused = `the table's schema changed meanwhile and cannot take this record's: ${e.message}`;
      metadata = (await this.deps.tables.load(table)).metadata;
    }
    if (action.changes.length > 0 && !refused)
      this.warn(`table ${table}: schema evolved from the record schema: ${action.changes.join(', ')}`);
    if (!refused) crashPoint('after-evolve');
    // Rows written so far are in the old schema's files; new rows go to files of the table's current one.
    this.closedRows += this.writer.rows;
    this.closed.push(...(await this.writer.close()));
    this.writer = await this.openWriter(`-e${++this.evolutions}`);
    if (this.registryChanges) this.registryChanges.setTable(metadata);
    else this.reader!.setTable(metadata);
    return refused;
  }

  /** Rows written so far, across evolutions. */
  get rows(): number {
    return this.closedRows + this.writer.rows;
  }

  /**
   * Finishes the last writer: every file of this poll. An upsert or CDC table's changes are
   * resolved first, against the key index at the table's current snapshot (`deletes`).
   */
  async close(): Promise<DataFile[]> {
    const idColumns = this.idColumns;
    // (a schema format's table learns its row key from its first record: none read, nothing to resolve)
    if (this.changes && idColumns) {
      const { metadata } = await this.deps.tables.load(this.t.table);
      const r = await keyIndexesOf(this.deps.tables.io).use(this.t.table, metadata, idColumns, this.t.keyIndex!, (index) => ({
        ...this.changes!.resolve(index),
        indexSnapshotId: index.snapshotId?.toString() ?? '',
      }));
      for (const row of r.rows) this.writer.add(row);
      this.deletes = { deletes: r.deletes, deletedKeys: r.deletedKeys, indexSnapshotId: r.indexSnapshotId };
    }
    return [...this.closed, ...(await this.writer.close())];
  }

  abort(): void {
    this.writer.abort();
  }
}
