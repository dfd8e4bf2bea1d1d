/**
 * Table drift: the configured columns no longer match the Iceberg table, because another engine
 * (Spark, PyIceberg, Trino) renamed, dropped or retyped a column, made one required, or evolved
 * the partition spec. An ingest that went on would write files the table cannot take (or take
 * wrongly), so `ingest start` refuses and a running ingest fails at its next cycle, naming the
 * table, the column and both types. Pure functions over TableMetadata.
 *
 * What is drift (every write would fail or be wrong):
 * - a configured column the table no longer has: renamed (found by its field id in an older
 *   schema) or dropped;
 * - a configured column whose type differs (int -> long is a legal Iceberg promotion for readers,
 *   but the decoder and writer would still produce ints for a long column);
 * - a column required in the table but optional in the config (a null would fail the write);
 * - a required table column the config does not fill;
 * - a different partition spec (source column and transform, in order).
 * What is not: an optional column another engine added (floe leaves it null), or a column
 * required in the config but optional in the table (floe never writes a null into it).
 */
import type { ColumnConfig, PartitionFieldConfig, TableConfig } from '../config/types';
import { currentSchema, defaultSpec } from '../iceberg/spec/metadata';
import type { IcebergType, TableMetadata } from '../iceberg/spec/types';

/** What a table must look like: a config entry, or the dead-letter table's fixed columns. */
export interface TableShape {
  table: string;
  columns: ColumnConfig[];
  partitionBy: PartitionFieldConfig[];
  /** Where the expected columns come from, in messages; default "the config". */
  expectedBy?: string;
}

const norm = (t: string): string => t.replace(/\s+/g, '').toLowerCase();

/** An Iceberg type as one readable string (`long`, `decimal(9,2)`, `list<string>`, `struct<a: int>`). */
export function typeString(t: IcebergType): string {
  if (typeof t === 'string') return norm(t);
  switch (t.type) {
    case 'struct':
      return `struct<${t.fields.map((f) => `${f.name}: ${typeString(f.type)}`).join(', ')}>`;
    case 'list':
      return `list<${typeString(t.element)}>`;
    case 'map':
      return `map<${typeString(t.key)}, ${typeString(t.value)}>`;
  }
}

const describePartition = (fields: Array<{ column: string; transform: string }>): string =>
  `[${fields.map((f) => `${norm(f.transform)}(${f.column})`).join(', ')}]`;

/**
 * The problems that make `t`'s columns and partition spec unfit for the table's current schema and
 * default spec; empty when an ingest can write. Each names the table, the column and both types.
 */
export function checkTableDrift(t: TableShape, metadata: TableMetadata): string[] {
  const by = t.expectedBy ?? 'the config';
  const schema = currentSchema(metadata);
  const byName = new Map(schema.fields.map((f) => [f.name, f]));
  const byId = new Map(schema.fields.map((f) => [f.id, f]));
  const problems: string[] = [];
  const renamedTo = new Set<string>();
  const say = (msg: string) => problems.push(`table ${t.table}: ${msg}`);

  for (const c of t.columns) {
    const f = byName.get(c.name);
    const want = norm(c.type);
    if (!f) {
      // Gone from the current schema: an older schema tells renamed (same field id, new name) from dropped.
      const older = [...metadata.schemas]
        .reverse()
        .flatMap((s) => s.fields)
        .find((x) => x.name === c.name);
      const now = older ? byId.get(older.id) : undefined;
      if (now) {
        renamedTo.add(now.name);
        say(`column "${c.name}" (${want} in ${by}) was renamed to "${now.name}" (${typeString(now.type)} in the table)`);
      } else if (older) say(`column "${c.name}" (${want} in ${by}) was dropped from the table (it was ${typeString(older.type)})`);
      else if (c.required)
        say(
          `column "${c.name}" (required ${want} in ${by}) is not in the table (table columns: ${schema.fields.map((x) => `${x.name} ${typeString(x.type)}`).join(', ')}); floe adds optional columns to a table, not required ones (rows already written have no value): make it optional`,
        );
      // else: a brand-new optional column, added to the table's schema by the next cycle (ingest/evolve.ts)
      continue;
    }
    const have = typeString(f.type);
    if (norm(have) !== want) say(`column "${c.name}" is ${have} in the table but ${want} in ${by}`);
    else if (f.required && !c.required) {
      say(
        `column "${c.name}" is required ${have} in the table but optional ${want} in ${by}: a null would fail the write (make it required: nulls then go to the dead-letter table)`,
      );
    }
  }

  const configured = new Set(t.columns.map((c) => c.name));
  for (const f of schema.fields) {
    // A renamed configured column was reported above under its old name.
    if (configured.has(f.name) || renamedTo.has(f.name) || !f.required) continue;
    say(`column "${f.name}" is required ${typeString(f.type)} in the table but not in ${by}: every write would leave it null`);
  }

  const spec = defaultSpec(metadata);
  const tableSpec = spec.fields.map((p) => ({
    column: byId.get(p['source-id'])?.name ?? `<field ${p['source-id']}>`,
    transform: p.transform,
  }));
  const wantSpec = describePartition(t.partitionBy);
  const haveSpec = describePartition(tableSpec);
  if (wantSpec !== haveSpec) say(`partition spec is ${haveSpec} in the table but ${wantSpec} in ${by}`);
  return problems;
}

/**
 * Drift of both tables an ingest writes: the table against its config entry, the dead-letter
 * table against floe's fixed dead-letter columns (activities/tables.ts `deadLetterColumns`).
 */
export function checkIngestTablesDrift(
  t: TableConfig,
  table: TableMetadata | null,
  deadLetterTable: TableMetadata | null,
  deadLetterColumns: ColumnConfig[],
): string[] {
  return [
    ...(table ? checkTableDrift(t, table) : []),
    ...(deadLetterTable
      ? checkTableDrift(
          { table: t.deadLetterTable, columns: deadLetterColumns, partitionBy: [], expectedBy: "floe's dead-letter schema" },
          deadLetterTable,
        )
      : []),
  ];
}

/** One message for all problems, with what to do. */
export function tableDriftMessage(problems: string[]): string {
  return (
    `the configured columns no longer match the table (changed by another engine?): ${problems.join('; ')}. ` +
    'Change the config to match the table (or the table back), then start the ingest again.'
  );
}

/** Thrown by `ingest start` when a table drifted; `problems` as checkTableDrift reports them. */
export class TableDriftError extends Error {
  constructor(readonly problems: string[]) {
    super(tableDriftMessage(problems));
    this.name = 'TableDrift';
  }
}
