/**
 * Schema evolution from record schemas: the table's schema united by name with a record schema's
 * derived columns, as one Iceberg schema update committed before any row that needs it is written.
 *
 * Compatible (evolves the table): a new optional field, at the top or inside a struct (also a
 * struct in a list or a map value), int -> long, float -> double, decimal(P, S) -> decimal(P', S)
 * with P' > P. A record schema narrower than the table (int into a long column, a field the
 * table has but the schema dropped) needs no change. Incompatible (stops the table, or dead-letters
 * the schema's records, by `onIncompatibleSchema`): any other type change, and a field the schema
 * requires (no default) that a table with rows does not have yet, since the rows already written
 * cannot hold it. New fields get fresh ids after last-column-id, nested ones too; nothing is ever
 * renumbered, dropped or made required.
 *
 * Exactly once and race-safe as AddColumns (ingest/evolve.ts): the commit requires the schema id
 * and last column id it was planned on, a racing writer's change re-plans it, and a retry that
 * finds the table already evolved commits nothing.
 */
import {
  currentSchema,
  typeString,
  type IcebergType,
  type NestedField,
  type Schema,
  type StructType,
  type TableMetadata,
  type PendingCommit,
  type TableAction,
} from '../../iceberg';
import { takesAsIs, type Derived } from './convert';
import { newSchemaCommit } from '../schema-commit';

interface UnionPlan {
  /** The united top-level fields (the table's, then the new ones), ids assigned. */
  fields: NestedField[];
  lastColumnId: number;
  /** What changed, for logs and tests: `added value.customer.tier`, `promoted value.qty int -> long`. */
  changes: string[];
  /** Why the record schema cannot evolve the table (empty: it can). */
  problems: string[];
  /** The identifier fields' ids, when the plan sets them (an upsert/CDC table's row key). */
  identifierFieldIds?: number[];
}

const squash = (t: string) => t.replace(/\s+/g, '');

class Union {
  changes: string[] = [];
  problems: string[] = [];
  constructor(
    public lastId: number,
    /** an upsert/CDC table's identifier columns: required top-level columns */
    private readonly ids: ReadonlySet<string> = new Set(),
  ) {}

  /** `t` with fresh ids at every level (a new column). */
  fresh(t: IcebergType): IcebergType {
    if (typeof t === 'string') return t;
    switch (t.type) {
      case 'struct':
        return { type: 'struct', fields: t.fields.map((f) => ({ ...f, id: ++this.lastId, required: false, type: this.fresh(f.type) })) };
      case 'list': {
        const id = ++this.lastId;
        return { type: 'list', 'element-id': id, element: this.fresh(t.element), 'element-required': false };
      }
      case 'map': {
        const k = ++this.lastId,
          v = ++this.lastId;
        return { type: 'map', 'key-id': k, key: this.fresh(t.key), 'value-id': v, value: this.fresh(t.value), 'value-required': false };
      }
    }
  }

  struct(cur: readonly NestedField[], inc: readonly Derived[], where: string, requiredChecked: boolean): NestedField[] {
    const out = cur.map((f) => ({ ...f }));
    for (const d of inc) {
      const at = `${where}${d.name}`;
      const f = out.find((x) => x.name === d.name);
      const id = where === '' && this.ids.has(d.name);
      if (f === undefined) {
        if (requiredChecked && (d.required || id))
          this.problems.push(
            id
              ? `${at}: an identifier column (idColumns) cannot be added to a table that has rows without it`
              : `${at}: a new field the schema requires (no default) cannot be added to a table that has rows without it`,
          );
        out.push({ id: ++this.lastId, name: d.name, required: id, type: this.fresh(d.type), ...(d.doc ? { doc: d.doc } : {}) });
        this.changes.push(`added ${at}`);
        continue;
      }
      f.type = this.type(f.type, d.type, d.fields, at, requiredChecked);
    }
    return out;
  }

  type(cur: IcebergType, inc: IcebergType, incFields: Derived[] | undefined, at: string, requiredChecked: boolean): IcebergType {
    if (typeof cur === 'string' || typeof inc === 'string') {
      if (typeof cur === 'string' && typeof inc === 'string') {
        if (takesAsIs(cur, inc)) return cur;
        if (takesAsIs(inc, cur)) {
          // Iceberg promotes the column to the record's wider type
          this.changes.push(`promoted ${at} ${cur} -> ${inc}`);
          return inc;
        }
      }
      this.problems.push(`${at}: the table has ${typeString(cur)}, the record's schema ${typeString(inc)}`);
      return cur;
    }
    if (cur.type !== inc.type) {
      this.problems.push(`${at}: the table has ${typeString(cur)}, the record's schema ${typeString(inc)}`);
      return cur;
    }
    switch (cur.type) {
      case 'struct': {
        const fields = incFields ?? (inc as StructType).fields.map((f) => ({ name: f.name, type: f.type, required: false }));
        return { ...cur, fields: this.struct(cur.fields, fields, `${at}.`, requiredChecked) };
      }
      case 'list':
        return { ...cur, element: this.type(cur.element, (inc as typeof cur).element, undefined, `${at}[]`, requiredChecked) };
      case 'map': {
        const m = inc as typeof cur;
        if (typeof cur.key !== 'string' || typeof m.key !== 'string' || squash(cur.key) !== squash(m.key)) {
          this.problems.push(`${at}: the table's map is keyed by ${typeString(cur.key)}, the record's schema's by ${typeString(m.key)}`);
          return cur;
        }
        return { ...cur, value: this.type(cur.value, m.value, undefined, `${at}{}`, requiredChecked) };
      }
    }
  }
}

/**
 * The table's current schema united with `derived` (a record schema's columns). `reserved` are the
 * config's own columns (key, headers, metadata): a schema field of that name is a problem.
 */
export function planUnion(
  m: TableMetadata,
  derived: readonly Derived[],
  reserved: ReadonlySet<string>,
  idColumns: readonly string[] = [],
): UnionPlan {
  const schema = currentSchema(m);
  const u = new Union(m['last-column-id'], new Set(idColumns));
  for (const d of derived)
    if (reserved.has(d.name))
      u.problems.push(`${d.name}: the record's schema has a field of the name the config gives a column from Kafka`);
  // A table without any value column yet takes the first schema whole, required fields included.
  const hasValueColumns = schema.fields.some((f) => !reserved.has(f.name));
  const fields = u.struct(
    schema.fields,
    derived.filter((d) => !reserved.has(d.name)),
    '',
    hasValueColumns,
  );
  const identifierFieldIds = identifierIds(schema, fields, idColumns, u);
  return {
    fields,
    lastColumnId: u.lastId,
    changes: u.changes,
    problems: u.problems,
    ...(identifierFieldIds ? { identifierFieldIds } : {}),
  };
}

/**
 * The identifier field ids an upsert/CDC table's schema should get: undefined when it has them
 * already, or when an identifier column is missing (the key index names it when used). An
 * optional identifier column is a problem: Iceberg identifier fields are required, and a row key
 * cannot be null.
 */
function identifierIds(schema: Schema, fields: readonly NestedField[], idColumns: readonly string[], u: Union): number[] | undefined {
  if (idColumns.length === 0) return undefined;
  const found = idColumns.map((n) => fields.find((f) => f.name === n));
  if (found.some((f) => f === undefined)) return undefined;
  for (const f of found)
    if (!f!.required) u.problems.push(`${f!.name}: an identifier column (idColumns) is optional in the table; a row key is never null`);
  const ids = found.map((f) => f!.id);
  const now = schema['identifier-field-ids'] ?? [];
  if (now.length === ids.length && now.every((x, i) => x === ids[i])) return undefined;
  u.changes.push(`identifier fields ${idColumns.join(', ')}`);
  return ids;
}

/** The table's value columns (every field but the config's own columns) as one struct. */
export function valueStruct(m: TableMetadata, reserved: ReadonlySet<string>): StructType {
  return { type: 'struct', fields: currentSchema(m).fields.filter((f) => !reserved.has(f.name)) };
}

/** The table action: one new current schema, the union; nothing when the table already takes the schema. */
export class EvolveToSchema implements TableAction {
  changes: string[] = [];

  constructor(
    private readonly derived: readonly Derived[],
    private readonly reserved: ReadonlySet<string>,
    private readonly idColumns: readonly string[] = [],
  ) {}

  writtenFiles(): string[] {
    return [];
  }

  async prepare(base: TableMetadata): Promise<PendingCommit> {
    const plan = planUnion(base, this.derived, this.reserved, this.idColumns);
    this.changes = plan.changes;
    if (plan.problems.length > 0) throw new SchemaIncompatibleError(plan.problems);
    if (plan.changes.length === 0) return { updates: [], requirements: [], attemptFiles: [], referencedFiles: [] };
    return newSchemaCommit(base, plan.fields, plan.lastColumnId, plan.identifierFieldIds);
  }
}

export class SchemaIncompatibleError extends Error {
  override name = 'SchemaIncompatibleError';
  constructor(readonly problems: string[]) {
    super(problems.join('; '));
  }
}

/**
 * A new table's schema: the config's columns, then `derived` after them (fresh ids, all optional
 * but an upsert/CDC table's identifier columns, which are required and its identifier fields).
 */
export function withDerived(schema: Schema, derived: readonly Derived[], idColumns: readonly string[] = []): Schema {
  const last = schema.fields.reduce((m, f) => Math.max(m, maxId(f)), 0);
  const reserved = new Set(schema.fields.map((f) => f.name));
  const u = new Union(last, new Set(idColumns));
  const fields = u.struct(
    schema.fields,
    derived.filter((d) => !reserved.has(d.name)),
    '',
    false,
  );
  const ids = identifierIds(schema, fields, idColumns, u);
  return { ...schema, ...(ids ? { 'identifier-field-ids': ids } : {}), fields };
}

function maxId(f: NestedField): number {
  const inner = (t: IcebergType): number =>
    typeof t === 'string'
      ? 0
      : t.type === 'struct'
        ? Math.max(0, ...t.fields.map(maxId))
        : t.type === 'list'
          ? Math.max(t['element-id'], inner(t.element))
          : Math.max(t['key-id'], t['value-id'], inner(t.key), inner(t.value));
  return Math.max(f.id, inner(f.type));
}
