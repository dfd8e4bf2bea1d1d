/** Schema lookups by field id (spec: "Schemas and Data Types"). */
import { IcebergError } from '../errors';
import type { IcebergType, NestedField, Schema } from './types';

/** The field with `id` and its path of names from the root (nested structs only). */
export function findField(schema: Schema, id: number): { field: NestedField; path: string[] } | undefined {
  const walk = (fields: NestedField[], prefix: string[]): { field: NestedField; path: string[] } | undefined => {
    for (const f of fields) {
      if (f.id === id) return { field: f, path: [...prefix, f.name] };
      if (typeof f.type === 'object' && f.type.type === 'struct') {
        const r = walk(f.type.fields, [...prefix, f.name]);
        if (r) return r;
      }
    }
    return undefined;
  };
  return walk(schema.fields, []);
}

export function fieldById(schema: Schema, id: number): NestedField {
  const r = findField(schema, id);
  if (!r) throw IcebergError.mismatch('DataInvalid', 'field id in schema', id, `none (schema ${schema['schema-id']})`, false);
  return r.field;
}

/**
 * An Iceberg type as one readable string in the config's grammar (`long`, `decimal(9,2)`,
 * `list<string>`, `struct<a: int not null>`): a required struct field, list element or map value
 * is marked `not null`.
 */
export function typeString(t: IcebergType): string {
  if (typeof t === 'string') return t.replace(/\s+/g, '').toLowerCase();
  const notNull = (required: boolean) => (required ? ' not null' : '');
  switch (t.type) {
    case 'struct':
      return `struct<${t.fields.map((f) => `${f.name}: ${typeString(f.type)}${notNull(f.required)}`).join(', ')}>`;
    case 'list':
      return `list<${typeString(t.element)}${notNull(t['element-required'])}>`;
    case 'map':
      return `map<${typeString(t.key)}, ${typeString(t.value)}${notNull(t['value-required'])}>`;
  }
}
