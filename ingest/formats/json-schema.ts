/**
 * JSON Schema records -> table rows: the Iceberg type of a JSON Schema (the mapping the README
 * lists) and the converter of a record's JSON into the Parquet writer's row values.
 *
 * Mapping: object with properties -> struct, object with only additionalProperties -> map<string,
 * V>, array -> list(items), integer -> long, number -> double, boolean, string -> string, or by
 * `format`: date-time -> timestamptz, date -> date, time -> time, uuid -> uuid; a string with
 * contentEncoding base64 -> binary. `type: [T, "null"]` and `oneOf`/`anyOf` of null and one
 * schema are T, optional. Local `$ref`s (#/definitions/..., #/$defs/...) resolve. A property in
 * `required` is required by the schema (checked when it first appears in a later version).
 *
 * Values are read exactly as floe's JSON columns are (json.ts): a 64-bit integer or a
 * long decimal never passes through a double, timestamps are checked, and so on.
 */
import type { IcebergType, PrimitiveType } from '../../iceberg';
import { type Derived, type ValueConverter, isStruct } from './convert';
import { DecodeError, SchemaMappingError } from './errors';
import { compileJsonValue } from './json';
import type { RowValue } from './row';

type Node = Record<string, unknown>;

/** Resolves local `$ref`s against the schema's root. */
function deref(n: Node, root: Node, where: string): Node {
  let cur = n;
  for (let hops = 0; typeof cur.$ref === 'string'; hops++) {
    const ref = cur.$ref;
    if (!ref.startsWith('#/') || hops > 32) throw new SchemaMappingError(`${where}: only local $refs (#/...) are resolved, not ${ref}`);
    let t: unknown = root;
    for (const part of ref.slice(2).split('/')) t = (t as Node | undefined)?.[part.replace(/~1/g, '/').replace(/~0/g, '~')];
    if (typeof t !== 'object' || t === null) throw new SchemaMappingError(`${where}: $ref ${ref} resolves to nothing`);
    cur = t as Node;
  }
  return cur;
}

/** The schema of `n` without null, and whether null was allowed. */
function nonNull(n: Node, root: Node, where: string): { node: Node; optional: boolean } {
  n = deref(n, root, where);
  const alts = (n.oneOf ?? n.anyOf) as Node[] | undefined;
  if (Array.isArray(alts)) {
    const rest = alts.filter((a) => deref(a, root, where).type !== 'null');
    if (rest.length !== 1) throw new SchemaMappingError(`${where}: a oneOf/anyOf of ${rest.length} non-null schemas has no Iceberg type`);
    return { node: deref(rest[0]!, root, where), optional: rest.length < alts.length };
  }
  if (Array.isArray(n.type)) {
    const types = (n.type as string[]).filter((t) => t !== 'null');
    if (types.length !== 1) throw new SchemaMappingError(`${where}: a value of types ${types.join(', ')} has no Iceberg type`);
    return { node: { ...n, type: types[0] }, optional: types.length < n.type.length };
  }
  return { node: n, optional: false };
}

/** The Iceberg type of a whole JSON Schema (a key: an object, or a primitive). */
export function deriveJsonSchemaType(schema: unknown): { type: IcebergType; fields?: Derived[] } {
  return toIceberg(schema as Node, schema as Node, 'key');
}

/** The record schema's properties as derived columns. */
export function deriveJsonSchema(schema: unknown): Derived[] {
  const root = schema as Node;
  const t = toIceberg(root, root, 'value');
  if (!isStruct(t.type)) throw new SchemaMappingError('value: the JSON Schema is not an object with properties');
  return t.fields!;
}

function toIceberg(n0: Node, root: Node, where: string): { type: IcebergType; fields?: Derived[] } {
  const { node: n } = nonNull(n0, root, where);
  switch (n.type) {
    case 'object': {
      const props = n.properties as Record<string, Node> | undefined;
      if (props === undefined || Object.keys(props).length === 0) {
        if (typeof n.additionalProperties === 'object' && n.additionalProperties !== null) {
          const v = toIceberg(n.additionalProperties as Node, root, `${where}{}`);
          return { type: { type: 'map', 'key-id': 0, key: 'string', 'value-id': 0, value: v.type, 'value-required': false } };
        }
        throw new SchemaMappingError(`${where}: an object without properties (or a schema for additionalProperties) has no Iceberg type`);
      }
      const required = new Set((n.required as string[] | undefined) ?? []);
      const fields = Object.entries(props).map(([name, p]): Derived => {
        const m = toIceberg(p, root, `${where}.${name}`);
        const nn = nonNull(p, root, `${where}.${name}`);
        return {
          name,
          type: m.type,
          required: required.has(name) && !nn.optional,
          ...(m.fields ? { fields: m.fields } : {}),
          ...(typeof nn.node.description === 'string' ? { doc: nn.node.description } : {}),
        };
      });
      return { type: { type: 'struct', fields: fields.map((d) => ({ id: 0, name: d.name, required: false, type: d.type })) }, fields };
    }
    case 'array': {
      if (typeof n.items !== 'object' || n.items === null || Array.isArray(n.items))
        throw new SchemaMappingError(`${where}: an array needs one schema for its items`);
      const el = toIceberg(n.items as Node, root, `${where}[]`);
      return { type: { type: 'list', 'element-id': 0, element: el.type, 'element-required': false } };
    }
    case 'integer':
      return { type: 'long' };
    case 'number':
      return { type: 'double' };
    case 'boolean':
      return { type: 'boolean' };
    case 'string': {
      if (n.contentEncoding === 'base64') return { type: 'binary' };
      const byFormat: Record<string, PrimitiveType> = { 'date-time': 'timestamptz', date: 'date', time: 'time', uuid: 'uuid' };
      return { type: byFormat[n.format as string] ?? 'string' };
    }
    default:
      throw new SchemaMappingError(`${where}: a JSON Schema of type ${JSON.stringify(n.type ?? null)} has no Iceberg type`);
  }
}

// ---------- values ----------

/**
 * The converter of a record's parsed JSON into the table's struct `target`. JSON carries its own
 * types, so the table's type decides each conversion (floe's JSON column rules).
 */
export function jsonConverter(target: IcebergType, where = 'value'): ValueConverter {
  if (typeof target === 'string') {
    const leaf = compileJsonValue({ name: where, type: target as PrimitiveType, required: false });
    return (v, path) => {
      try {
        return leaf(v);
      } catch (e) {
        if (e instanceof DecodeError) throw new DecodeError(e.message.replace(where, path));
        throw e;
      }
    };
  }
  switch (target.type) {
    case 'struct': {
      const reads = target.fields.map((f) => ({ name: f.name, read: jsonConverter(f.type, `${where}.${f.name}`) }));
      return (v, path) => {
        if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new DecodeError(`${path}: expected a JSON object`);
        const o = v as Record<string, unknown>;
        const out: Record<string, unknown> = {};
        for (const r of reads) {
          const x = Object.prototype.hasOwnProperty.call(o, r.name) ? o[r.name] : undefined;
          out[r.name] = x === undefined || x === null ? null : r.read(x, `${path}.${r.name}`);
        }
        return out;
      };
    }
    case 'list': {
      const el = jsonConverter(target.element, `${where}[]`);
      return (v, path) => {
        if (!Array.isArray(v)) throw new DecodeError(`${path}: expected a JSON array`);
        return v.map((x, i) => (x === null ? null : el(x, `${path}[${i}]`)));
      };
    }
    case 'map': {
      const val = jsonConverter(target.value, `${where}{}`);
      return (v, path) => {
        if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new DecodeError(`${path}: expected a JSON object`);
        return Object.entries(v as Record<string, unknown>).map(([k, x]): [string, RowValue | unknown] => [
          k,
          x === null ? null : val(x, `${path}.${k}`),
        ]);
      };
    }
  }
}
