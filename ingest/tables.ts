/**
 * An ingest's tables: the config's columns as an Iceberg schema (ids assigned as Java does), the
 * dead-letter table's columns, and creating both when missing. Opening, writing and appending are
 * table/tables.ts, shared with maintenance.
 */
import type { ColumnConfig, ColumnType, FloeConfig, TableConfig } from '../config';
import type { IcebergType, NestedField, Schema } from '../iceberg';
import type { Tables } from '../table/tables';
import { initialDerived } from './formats/reader';
import { withDerived } from './formats/union';
import { defaultIdColumns } from './upsert/registry-changes';

/**
 * Creates the namespace, the table and its dead-letter table when missing. Safe to race. A schema
 * format's new table takes its value columns from the schema (the subject's latest version, or
 * plain Avro's) after the config's own; without one yet, the first record's schema evolves it. The
 * registry is asked only when the table is missing.
 */
export async function ensureIngestTables(tables: Tables, t: TableConfig, registry: FloeConfig['schemaRegistry']): Promise<void> {
  await tables.ensureTable(
    t.table,
    async () => {
      if (t.value.format === 'json') return schemaOf(t.columns, t.idColumns);
      const derived = (await initialDerived(t, registry))?.derived;
      // an upsert/CDC table's row key: configured, else the key schema's fields (registry-changes.ts)
      const ids = t.mode === 'append' ? undefined : await defaultIdColumns(t, undefined, registry);
      const own = schemaOf(t.columns, ids);
      return derived ? withDerived(own, derived, ids) : own;
    },
    t.partitionBy,
    t.properties,
    t.formatVersion,
  );
  // an existing table is upgraded when the entry asks for a later version (v3: deletion vectors)
  if (t.formatVersion > 2) await tables.upgradeFormatVersion(t.table, t.formatVersion);
  await tables.ensureTable(t.deadLetterTable, async () => schemaOf(deadLetterColumns), [], {});
}

export const deadLetterColumns: ColumnConfig[] = [
  { name: 'topic', type: 'string', required: true },
  { name: 'partition', type: 'int', required: true },
  { name: 'offset', type: 'long', required: true },
  { name: 'key', type: 'binary', required: false },
  { name: 'value', type: 'binary', required: false },
  { name: 'error', type: 'string', required: true },
  { name: 'kafka_timestamp', type: 'timestamptz', required: false },
];

export function schemaOf(columns: readonly ColumnConfig[], idColumns?: readonly string[]): Schema {
  // Top-level columns take ids 1..n in config order; nested ids (struct fields, list elements, map
  // keys and values, a headers map's too) follow them column by column, so adding a column at the
  // end never renumbers another.
  let nextId = columns.length;
  // An upsert table's row key: its identifier fields (other engines' upserts key on them too).
  const ids = (idColumns ?? []).map((n) => columns.findIndex((c) => c.name === n) + 1).filter((id) => id > 0);
  return {
    ...(ids.length > 0 ? { 'identifier-field-ids': ids } : {}),
    type: 'struct',
    'schema-id': 0,
    fields: columns.map((c, i): NestedField => ({
      id: i + 1,
      name: c.name,
      required: c.required,
      type: columnType(c, () => ++nextId),
      ...(c.doc ? { doc: c.doc } : {}),
    })),
  };
}

/**
 * A column's Iceberg type, with fresh field ids from `newId` at every nested level: a struct's
 * fields, a list's element, a map's key and value (a headers map's too).
 */
export function columnType(c: ColumnConfig, newId: () => number): IcebergType {
  if (c.source !== 'headers') return icebergType(c.type as ColumnType, newId);
  return {
    type: 'map',
    'key-id': newId(),
    key: 'string',
    'value-id': newId(),
    value: c.type === 'map<string, string>' ? 'string' : 'binary',
    'value-required': false,
  };
}

/**
 * A configured type as an Iceberg type, ids from `newId` level by level as Iceberg Java's
 * assignFreshIds does: a struct's fields take consecutive ids, then each field's nested ids in
 * order; a list's element id, then the element's; a map's key and value ids, then the value's.
 */
export function icebergType(t: ColumnType, newId: () => number): IcebergType {
  if (typeof t === 'string') return t;
  switch (t.type) {
    case 'struct': {
      const ids = t.fields.map(() => newId());
      return {
        type: 'struct',
        fields: t.fields.map((f, i): NestedField => ({
          id: ids[i]!,
          name: f.name,
          required: f.required,
          type: icebergType(f.type, newId),
          ...(f.doc ? { doc: f.doc } : {}),
        })),
      };
    }
    case 'list': {
      const elementId = newId();
      return { type: 'list', 'element-id': elementId, element: icebergType(t.element, newId), 'element-required': t.elementRequired };
    }
    case 'map': {
      const keyId = newId(),
        valueId = newId();
      return {
        type: 'map',
        'key-id': keyId,
        key: t.key,
        'value-id': valueId,
        value: icebergType(t.value, newId),
        'value-required': t.valueRequired,
      };
    }
  }
}
