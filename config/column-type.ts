/**
 * A column's type as configured: an Iceberg primitive, or a struct, list or map of them at any
 * depth, written as a string (`list<string>`, `struct<id: long not null, tags: list<string>>`) or
 * as a mapping (`{type: struct, fields: [...]}`), the two mixed at will. No field ids: the table
 * assigns them (ingest/tables.ts columnType), so the same config describes a new table and an
 * existing one.
 *
 * The string form, a small recursive-descent parser:
 *
 *   type   := primitive | struct<field, …> | list<type [not null]> | map<key, type [not null]>
 *   field  := name: type [not null]
 *   key    := string | int | long | uuid | date | time | timestamp | timestamptz | decimal(P, S)
 *
 * Iceberg's and Spark's spelling (`struct<name: string, qty: int not null>`; `not null` in any
 * case). Whatever is not marked `not null` is optional, as a column's `required` defaults to
 * false: a struct field, a list's elements, a map's values (a map's keys are always required).
 * Whitespace between tokens is free; decimal and fixed come out canonical (`decimal(10, 2)`).
 * Errors say what was expected at which character.
 */
import type { PrimitiveType } from '../iceberg';
import { ConfigError } from './problems';

/*
 * Written by hand, not inferred: the type is recursive, and zod infers a recursive schema's output
 * only through an annotation. config/table-entry.ts declares `columnType` as `z.ZodType<ColumnType>`
 * and asserts, at the type level, that the union it wraps produces exactly these.
 */
export type ColumnType = PrimitiveType | NestedTypeConfig;
export type NestedTypeConfig = StructTypeConfig | ListTypeConfig | MapTypeConfig;

export interface StructFieldConfig {
  name: string;
  type: ColumnType;
  required: boolean;
  /** Dotted path inside the struct's JSON object; defaults to the field name. */
  path?: string;
  doc?: string;
}
export interface StructTypeConfig {
  type: 'struct';
  fields: StructFieldConfig[];
}
export interface ListTypeConfig {
  type: 'list';
  element: ColumnType;
  elementRequired: boolean;
}
/** A map from a JSON object: its keys (text) are converted to `key`, which is always required. */
export interface MapTypeConfig {
  type: 'map';
  key: PrimitiveType;
  value: ColumnType;
  valueRequired: boolean;
}

/** The type of a `source: headers` column: every header, by name, as text or as bytes. */
export type HeadersMapType = 'map<string, string>' | 'map<string, binary>';

/**
 * The primitive types a map key can have: those whose JSON form is a string, so an object's keys
 * convert exactly (`"42"` to a long, `"2024-05-01"` to a date).
 */
const MAP_KEY_TYPES = ['string', 'int', 'long', 'uuid', 'date', 'time', 'timestamp', 'timestamptz', 'decimal(P, S)'] as const;

/** Whether `t` is one of MAP_KEY_TYPES. */
export function isMapKeyType(t: PrimitiveType): boolean {
  return /^(string|int|long|uuid|date|time|timestamp|timestamptz|decimal\(\d+,\s*\d+\))$/.test(t);
}

/** A type as text in the string grammar: `struct<id: long not null, tags: list<string>>`; a field's path and doc are not shown. */
export function columnTypeString(t: ColumnType | HeadersMapType): string {
  if (typeof t === 'string') return t;
  switch (t.type) {
    case 'struct':
      return `struct<${t.fields.map((f) => `${f.name}: ${columnTypeString(f.type)}${f.required ? ' not null' : ''}`).join(', ')}>`;
    case 'list':
      return `list<${columnTypeString(t.element)}${t.elementRequired ? ' not null' : ''}>`;
    case 'map':
      return `map<${t.key}, ${columnTypeString(t.value)}${t.valueRequired ? ' not null' : ''}>`;
  }
}

export const PRIMITIVE =
  /^(boolean|int|long|float|double|date|time|timestamp|timestamptz|string|uuid|binary|decimal\(\d+,\s*\d+\)|fixed\[\d+\])$/;
/** A string in the nested grammar (else a primitive or a mistake). */
export const NESTED_TYPE_TEXT = /^\s*(struct|list|map)\s*</;
export const PRIMITIVE_EXPECTED = 'an Iceberg primitive type (long, string, timestamptz, decimal(9, 2), …)';
export const TYPE_EXPECTED = `${PRIMITIVE_EXPECTED} or a nested type (list<string>, map<string, long>, struct<id: long not null, …>, or a mapping {type: struct|list|map, …})`;
export const MAP_KEY_EXPECTED = `a map key type (${MAP_KEY_TYPES.join(', ')})`;

/** `text` parsed, or the problem: `expected … at character N of "…", found …`. */
export function readColumnType(text: string): { type: ColumnType } | { problem: string } {
  try {
    return { type: parse(text) };
  } catch (e) {
    if (e instanceof TypeTextError) return { problem: e.message };
    throw e;
  }
}

/** `text` parsed; a ConfigError naming `key` otherwise. */
export function parseColumnType(text: string, key: string): ColumnType {
  const r = readColumnType(text);
  if ('problem' in r) throw ConfigError.problem(key, r.problem);
  return r.type;
}

class TypeTextError extends Error {}

function parse(text: string): ColumnType {
  let pos = 0;
  const ws = () => {
    while (pos < text.length && /\s/.test(text[pos]!)) pos++;
  };
  const fail = (expected: string): never => {
    const rest = text.slice(pos);
    const found = rest === '' ? 'the end' : JSON.stringify(rest.length > 24 ? `${rest.slice(0, 24)}…` : rest);
    throw new TypeTextError(`expected ${expected} at character ${pos + 1} of ${JSON.stringify(text)}, found ${found}`);
  };
  const eat = (token: string): boolean => {
    ws();
    if (!text.startsWith(token, pos)) return false;
    pos += token.length;
    return true;
  };
  const expect = (token: string, what = JSON.stringify(token)) => {
    if (!eat(token)) fail(what);
  };
  const notNull = (): boolean => {
    ws();
    const m = /^not\s+null\b/i.exec(text.slice(pos));
    if (!m) return false;
    pos += m[0].length;
    return true;
  };
  const word = (): string | undefined => {
    ws();
    const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(pos));
    if (!m) return undefined;
    pos += m[0].length;
    return m[0];
  };
  const struct = (): ColumnType => {
    const fields: Array<{ name: string; type: ColumnType; required: boolean }> = [];
    do {
      const name = word();
      if (name === undefined)
        return fail(`a field name ([A-Za-z_][A-Za-z0-9_]*)${fields.length ? '' : ' (a struct has at least one field)'}`);
      if (fields.some((f) => f.name === name)) {
        pos -= name.length;
        return fail(`a field name not used before in the struct`);
      }
      expect(':', `":" after the field name ${name}`);
      const t = type(`the type of field ${name}`);
      fields.push({ name, type: t, required: notNull() });
    } while (eat(','));
    expect('>', '"," or ">" after a struct field');
    return { type: 'struct', fields };
  };
  const map = (): ColumnType => {
    ws();
    const at = pos;
    const k = type('the key type of the map');
    if (typeof k !== 'string' || !isMapKeyType(k)) {
      pos = at;
      return fail(MAP_KEY_EXPECTED);
    }
    expect(',', '"," after the map key type');
    const value = type('the value type of the map');
    const valueRequired = notNull();
    expect('>', '">" or "not null" after the map value type');
    return { type: 'map', key: k, value, valueRequired };
  };
  const type = (what: string): ColumnType => {
    ws();
    const start = pos;
    const w = word();
    if (w === undefined) return fail(what);
    if (w === 'decimal' || w === 'fixed') {
      const m = (w === 'decimal' ? /^\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)/ : /^\s*\[\s*(\d+)\s*\]/).exec(text.slice(pos));
      if (!m) return fail(w === 'decimal' ? '(precision, scale) after decimal' : '[length] after fixed');
      pos += m[0].length;
      return (w === 'decimal' ? `decimal(${Number(m[1])}, ${Number(m[2])})` : `fixed[${Number(m[1])}]`) as PrimitiveType;
    }
    if (w === 'struct' || w === 'list' || w === 'map') {
      expect('<', `"<" after ${w}`);
      if (w === 'struct') return struct();
      if (w === 'map') return map();
      const element = type('the element type of the list');
      const elementRequired = notNull();
      expect('>', '">" or "not null" after the element type');
      return { type: 'list', element, elementRequired };
    }
    if (!PRIMITIVE.test(w)) {
      pos = start;
      return fail(what);
    }
    return w as PrimitiveType;
  };
  const t = type(TYPE_EXPECTED);
  ws();
  const end = pos;
  const trailingNotNull = notNull();
  pos = end;
  if (pos < text.length)
    fail(trailingNotNull ? 'the end of the type (required: true makes a column or field required)' : 'the end of the type');
  return t;
}
