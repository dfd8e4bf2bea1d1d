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
 *
 * Nested types (struct, list, map) are compared structurally, by field name at every level, with
 * the same rules: a field, list element or map value retyped, required in the table but optional
 * in the config, renamed or dropped, a required struct field the config lacks or the table never
 * had. A new optional struct field is not drift: the next cycle adds it (ingest/evolve.ts). Field
 * ids are the table's own and never compared with the config, which has none. A nested path is
 * named as Iceberg names it: `items.element.qty`, `attrs.value`.
 */
import type { ColumnConfig, PartitionFieldConfig, TableConfig } from '../config/types';
import {
  currentSchema,
  defaultSpec,
  typeString,
  type IcebergType,
  type NestedField,
  type StructType,
  type TableMetadata,
} from '../iceberg';
import { FailureType, FloeFailure } from '../contract';
import { columnType } from './tables';

/** What a table must look like: a config entry, or the dead-letter table's fixed columns. */
interface TableShape {
  table: string;
  columns: ColumnConfig[];
  partitionBy: PartitionFieldConfig[];
  /** Where the expected columns come from, in messages; default "the config". */
  expectedBy?: string;
  /** The value columns come from a record schema (a schema format), not the config. */
  valueFromSchema?: boolean;
}

const norm = (t: string): string => t.replace(/\s+/g, '').toLowerCase();

/**
 * Every struct field at any depth under its dotted nested path (`customer.id`,
 * `items.element.qty`, `attrs.value.note`); top-level columns included.
 */
function nestedFieldPaths(s: StructType): Map<string, NestedField> {
  const out = new Map<string, NestedField>();
  const visit = (t: IcebergType, path: string): void => {
    if (typeof t === 'string') return;
    if (t.type === 'list') visit(t.element, `${path}.element`);
    else if (t.type === 'map') visit(t.value, `${path}.value`);
    else
      for (const f of t.fields) {
        const p = path === '' ? f.name : `${path}.${f.name}`;
        out.set(p, f);
        visit(f.type, p);
      }
  };
  visit(s, '');
  return out;
}

/** The struct field at `path` in any schema but the current one, newest first. */
export function olderField(m: TableMetadata, path: string): NestedField | undefined {
  for (const s of [...m.schemas].reverse()) {
    if (s['schema-id'] === m['current-schema-id']) continue;
    const f = nestedFieldPaths(s).get(path);
    if (f) return f;
  }
  return undefined;
}

/** The configured type of a column as an Iceberg type (ids 0: the config has none). */
const configuredType = (c: ColumnConfig): IcebergType => columnType(c, () => 0);

const REQUIRED_HINT = {
  field: 'make it required with required: true or not null',
  element: 'make the elements required with elementRequired: true or not null',
  value: 'make the values required with valueRequired: true or not null',
};

interface DriftContext {
  by: string;
  metadata: TableMetadata;
  /** The current schema's nested paths by field id (a renamed field's new name). */
  current: Map<number, string>;
  say: (msg: string) => void;
}

/**
 * The problems inside nested column `col`: the table's type `have` and the configured `want`
 * (ids 0), both of one kind (struct, list, map), walked together by field name; `path` is the
 * nested path of both.
 */
function nestedDrift(col: string, path: string, have: IcebergType, want: IcebergType, cx: DriftContext): void {
  const { by, say } = cx;
  const at = (p: string) => `column "${col}" field "${p}"`;
  const compare = (p: string, h: IcebergType, w: IcebergType, required: { table: boolean; config: boolean; hint: string }) => {
    if (typeof h !== 'string' && typeof w !== 'string' && h.type === w.type) nestedDrift(col, p, h, w, cx);
    else if (norm(typeString(h)) !== norm(typeString(w))) {
      say(`${at(p)} is ${typeString(h)} in the table but ${typeString(w)} in ${by}`);
      return;
    }
    if (required.table && !required.config)
      say(
        `${at(p)} is required ${typeString(h)} in the table but optional ${typeString(w)} in ${by}: a null would fail the write (${required.hint}; nulls then go to the dead-letter table)`,
      );
  };
  if (typeof have === 'string' || typeof want === 'string') return;
  if (have.type === 'list' && want.type === 'list') {
    compare(`${path}.element`, have.element, want.element, {
      table: have['element-required'],
      config: want['element-required'],
      hint: REQUIRED_HINT.element,
    });
  } else if (have.type === 'map' && want.type === 'map') {
    compare(`${path}.key`, have.key, want.key, { table: false, config: false, hint: '' });
    compare(`${path}.value`, have.value, want.value, {
      table: have['value-required'],
      config: want['value-required'],
      hint: REQUIRED_HINT.value,
    });
  } else if (have.type === 'struct' && want.type === 'struct') {
    const byName = new Map(have.fields.map((f) => [f.name, f]));
    const renamedTo = new Set<string>();
    for (const w of want.fields) {
      const p = `${path}.${w.name}`;
      const h = byName.get(w.name);
      if (h) {
        compare(p, h.type, w.type, { table: h.required, config: w.required, hint: REQUIRED_HINT.field });
        continue;
      }
      // Gone from the current struct: an older schema tells renamed (same field id) from dropped.
      const older = olderField(cx.metadata, p);
      const now = older ? cx.current.get(older.id) : undefined;
      if (now !== undefined) {
        renamedTo.add(now);
        say(`${at(p)} (${typeString(w.type)} in ${by}) was renamed to "${now}" in the table`);
      } else if (older) say(`${at(p)} (${typeString(w.type)} in ${by}) was dropped from the table (it was ${typeString(older.type)})`);
      else if (w.required)
        say(
          `${at(p)} (required ${typeString(w.type)} in ${by}) is not in the table (${typeString(have)}); floe adds optional fields to a struct, not required ones (rows already written have no value): make it optional`,
        );
      // else: a brand-new optional field, added by the next cycle (ingest/evolve.ts)
    }
    const configured = new Set(want.fields.map((f) => f.name));
    for (const h of have.fields) {
      const p = `${path}.${h.name}`;
      if (configured.has(h.name) || renamedTo.has(p) || !h.required) continue;
      say(`${at(p)} is required ${typeString(h.type)} in the table but not in ${by}: every write would leave it null`);
    }
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

  const current = new Map([...nestedFieldPaths(schema)].map(([p, f]) => [f.id, p]));
  for (const c of t.columns) {
    const f = byName.get(c.name);
    const wantType = configuredType(c);
    const want = typeof c.type === 'string' ? norm(c.type) : typeString(wantType);
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
    const nested = c.source !== 'headers' && typeof f.type !== 'string' && typeof wantType !== 'string' && f.type.type === wantType.type;
    if (nested) nestedDrift(c.name, c.name, f.type, wantType, { by, metadata, current, say });
    if (!nested && norm(have) !== norm(want)) say(`column "${c.name}" is ${have} in the table but ${want} in ${by}`);
    else if (f.required && !c.required) {
      say(
        `column "${c.name}" is required ${have} in the table but optional ${want} in ${by}: a null would fail the write (make it required: nulls then go to the dead-letter table)`,
      );
    }
  }

  const configured = new Set(t.columns.map((c) => c.name));
  // A schema format's upsert/CDC table fills its row key (required identifier fields) from the
  // record's schema, and refuses a record without it (ingest/upsert/registry-changes.ts).
  const keyFromSchema = new Set(t.valueFromSchema ? (schema['identifier-field-ids'] ?? []) : []);
  for (const f of schema.fields) {
    // A renamed configured column was reported above under its old name.
    if (configured.has(f.name) || renamedTo.has(f.name) || !f.required || keyFromSchema.has(f.id)) continue;
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
    ...(table ? checkTableDrift({ ...t, valueFromSchema: t.value.format !== 'json' }, table) : []),
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

/**
 * Thrown by `ingest start` when a table drifted; `problems` as checkTableDrift reports them. A
 * FloeFailure of type TableDrift, so wherever it is thrown it reaches Temporal through
 * activities/failures.ts `toFailure` like every other domain failure, not by its class name.
 */
export class TableDriftError extends FloeFailure {
  constructor(readonly problems: string[]) {
    super(FailureType.TableDrift, tableDriftMessage(problems));
    this.name = 'TableDrift';
  }
}
