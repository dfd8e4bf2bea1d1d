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
 */
import type { ColumnConfig, TableConfig } from '../config';
import { parseIdentifier } from '../iceberg/catalog/catalog';
import { currentSchema } from '../iceberg/spec/metadata';
import type { LoadedTable, NestedField, Schema, TableMetadata } from '../iceberg/spec/types';
import { Transaction, type PendingCommit, type TableAction } from '../iceberg/transaction';
import { columnType, type Tables } from './tables';

/** Optional config columns absent from the current schema and from every older one. */
export function columnsToAdd(columns: readonly ColumnConfig[], m: TableMetadata): ColumnConfig[] {
  const ever = new Set(m.schemas.flatMap((s) => s.fields.map((f) => f.name)));
  return columns.filter((c) => !c.required && !ever.has(c.name));
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
    this.added = add.map((c) => c.name);
    if (add.length === 0) return { updates: [], requirements: [], attemptFiles: [], referencedFiles: [] };
    const cur = currentSchema(base);
    let last = base['last-column-id'];
    const fields: NestedField[] = add.map((c) => {
      const id = ++last;
      return { id, name: c.name, required: false, type: columnType(c, () => ++last), ...(c.doc ? { doc: c.doc } : {}) };
    });
    const schema: Schema = {
      ...cur,
      'schema-id': Math.max(...base.schemas.map((s) => s['schema-id'])) + 1,
      fields: [...cur.fields, ...fields],
    };
    return {
      updates: [
        { action: 'add-schema', schema, 'last-column-id': last },
        { action: 'set-current-schema', 'schema-id': -1 },
      ],
      requirements: [
        { type: 'assert-table-uuid', uuid: base['table-uuid'] },
        { type: 'assert-current-schema-id', 'current-schema-id': base['current-schema-id'] },
        { type: 'assert-last-assigned-field-id', 'last-assigned-field-id': base['last-column-id'] },
      ],
      attemptFiles: [],
      referencedFiles: [],
    };
  }
}

/**
 * Adds the table's new optional config columns to `loaded` (the table as the caller just loaded
 * it: nothing is read again when there is nothing to add, the case of every cycle but one).
 * Returns the names added (empty: nothing to do) and the table as it now is.
 */
export async function addConfiguredColumns(
  tables: Tables,
  t: Pick<TableConfig, 'table' | 'columns'>,
  loaded: LoadedTable,
): Promise<{ added: string[]; table: LoadedTable }> {
  if (columnsToAdd(t.columns, loaded.metadata).length === 0) return { added: [], table: loaded };
  const action = new AddColumns(t.columns);
  const r = await new Transaction(parseIdentifier(t.table)).add(action).commit(tables.catalog, tables.io, { table: loaded });
  return { added: r.alreadyCommitted ? [] : action.added, table: r.table };
}
