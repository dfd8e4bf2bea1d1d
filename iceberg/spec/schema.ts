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

export const isPrimitive = (t: IcebergType): t is Extract<IcebergType, string> => typeof t === 'string';
