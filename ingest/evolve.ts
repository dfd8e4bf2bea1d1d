/**
 * Schema evolution from the config: an optional column added to a table's config is added to the
 * Iceberg table before the next cycle writes (planCycle), as its own commit: a new schema with the
 * column at the end under a fresh field id (a headers map's key and value too), made current.
 * Rows written before it read as null in that column (readers resolve columns by field id).
 *
 * Exactly once and race-safe: the commit requires the current schema id and the last assigned
 * field id it was planned against; a racing writer's schema change fails the requirement, the
 * Transaction reloads and re-plans, and a column already there is not added again. A retried
 * activity finds nothing to add and commits nothing. Columns that are not brand new (renamed or
 * dropped by another engine) and required columns are never added: they stay table drift
 * (ingest/drift.ts), because a required column cannot be filled in rows already written.
 *
 * The same holds inside nested columns: an optional field the config adds to a struct the table
 * already has (a struct column, or one inside a list's elements or a map's values) joins that
 * struct at its end under a fresh id (its own nested ids after it), in the same one commit; rows
 * written before read it as null. A required new field, or one at a path an older schema had,
 * stays drift.
 */
import type { ColumnConfig, ColumnType, TableConfig } from '../config';
import {
  parseIdentifier,
  currentSchema,
  Transaction,
  type IcebergType,
  type LoadedTable,
  type NestedField,
  type TableMetadata,
  type PendingCommit,
  type TableAction,
} from '../iceberg';
import { olderField } from './drift';
import { newSchemaCommit } from './schema-commit';
import { type Tables } from '../table/tables';
import { columnType, icebergType } from '../ingest/tables';

/** Optional config columns absent from the current schema and from every older one. */
export function columnsToAdd(columns: readonly ColumnConfig[], m: TableMetadata): ColumnConfig[] {
  const ever = new Set(m.schemas.flatMap((s) => s.fields.map((f) => f.name)));
  return columns.filter((c) => !c.required && !ever.has(c.name));
}

/**
 * `have` (a type of the table at nested path `path`) with the new optional struct fields of
 * `want` (its configured type) added at every depth, ids from `newId`; `added` collects their
 * paths. Walks structs by field name, list elements and map values, only where both sides are of
 * one kind (anything else is drift, not evolution). Returns `have` itself when nothing is added.
 */
function withNewFields(
  have: IcebergType,
  want: ColumnType,
  path: string,
  m: TableMetadata,
  newId: () => number,
  added: string[],
): IcebergType {
  if (typeof have === 'string' || typeof want === 'string') return have;
  if (have.type === 'list' && want.type === 'list') {
    const element = withNewFields(have.element, want.element, `${path}.element`, m, newId, added);
    return element === have.element ? have : { ...have, element };
  }
  if (have.type === 'map' && want.type === 'map') {
    const value = withNewFields(have.value, want.value, `${path}.value`, m, newId, added);
    return value === have.value ? have : { ...have, value };
  }
  if (have.type !== 'struct' || want.type !== 'struct') return have;
  let changed = false;
  const fields = have.fields.map((f) => {
    const w = want.fields.find((x) => x.name === f.name);
    const type = w ? withNewFields(f.type, w.type, `${path}.${f.name}`, m, newId, added) : f.type;
    if (type === f.type) return f;
    changed = true;
    return { ...f, type };
  });
  const names = new Set(have.fields.map((f) => f.name));
  for (const w of want.fields) {
    const p = `${path}.${w.name}`;
    // required, or renamed / dropped by another engine: drift (ingest/drift.ts), never added
    if (names.has(w.name) || w.required || olderField(m, p)) continue;
    const id = newId();
    fields.push({ id, name: w.name, required: false, type: icebergType(w.type, newId), ...(w.doc ? { doc: w.doc } : {}) });
    added.push(p);
    changed = true;
  }
  return changed ? { ...have, fields } : have;
}

/**
 * The current schema's columns with the config's new optional nested fields added (ids from
 * `newId`), and the nested paths added (`customer.email`, `items.element.note`).
 */
function withNestedFields(
  columns: readonly ColumnConfig[],
  m: TableMetadata,
  newId: () => number,
): { fields: NestedField[]; added: string[] } {
  const configured = new Map(columns.filter((c) => c.source !== 'headers').map((c) => [c.name, c]));
  const added: string[] = [];
  const fields = currentSchema(m).fields.map((f) => {
    const c = configured.get(f.name);
    const type = c ? withNewFields(f.type, c.type as ColumnType, f.name, m, newId, added) : f.type;
    return type === f.type ? f : { ...f, type };
  });
  return { fields, added };
}

/** The nested paths of optional fields the config adds to structs the table already has. */
export function nestedFieldsToAdd(columns: readonly ColumnConfig[], m: TableMetadata): string[] {
  return withNestedFields(columns, m, () => 0).added;
}

/** The table action: one new current schema holding the columns to add, or no update at all. */
export class AddColumns implements TableAction {
  added: string[] = [];

  constructor(private readonly columns: readonly ColumnConfig[]) {}

  writtenFiles(): string[] {
    return [];
  }

  async prepare(base: TableMetadata): Promise<PendingCommit> {
    const add = columnsToAdd(this.columns, base);
    let last = base['last-column-id'];
    // new fields of existing struct columns first, then new columns, all after the last id
    const nested = withNestedFields(this.columns, base, () => ++last);
    this.added = [...nested.added, ...add.map((c) => c.name)];
    if (this.added.length === 0) return { updates: [], requirements: [], attemptFiles: [], referencedFiles: [] };
    const fields: NestedField[] = add.map((c) => {
      const id = ++last;
      return { id, name: c.name, required: false, type: columnType(c, () => ++last), ...(c.doc ? { doc: c.doc } : {}) };
    });
    return newSchemaCommit(base, [...nested.fields, ...fields], last);
  }
}

/**
 * Adds the table's new optional config columns (and new optional fields of its struct columns) to
 * `loaded` (the table as the caller just loaded it: nothing is read again when there is nothing
 * to add, the case of every cycle but one). Returns the names added (nested fields by path; empty:
 * nothing to do) and the table as it now is.
 */
export async function addConfiguredColumns(
  tables: Tables,
  t: Pick<TableConfig, 'table' | 'columns'>,
  loaded: LoadedTable,
): Promise<{ added: string[]; table: LoadedTable }> {
  if (columnsToAdd(t.columns, loaded.metadata).length === 0 && nestedFieldsToAdd(t.columns, loaded.metadata).length === 0)
    return { added: [], table: loaded };
  const action = new AddColumns(t.columns);
  const r = await new Transaction(parseIdentifier(t.table)).add(action).commit(tables.catalog, tables.io, { table: loaded });
  return { added: r.alreadyCommitted ? [] : action.added, table: r.table };
}
