/**
 * The JSON value format: a record's value is a UTF-8 JSON object, and each `source: value` column
 * reads its dotted path in it. JSON carries its own types, so the column's configured type decides
 * each conversion: primitives through primitives.ts, a struct from a JSON object, a list from a
 * JSON array, a map from a JSON object as [key, value] pairs, every leaf through the same
 * primitive converters, errors naming the path inside the value (`items[3].qty`).
 *
 * Values are parsed with lossless-json when the text may hold a number with more than 15
 * significant digits, so a 64-bit id or a long decimal stays exact. Paths that only resolve
 * through the prototype chain are missing, never read.
 */
import { LosslessNumber, parse as parseLossless } from 'lossless-json';
import type {
  ColumnConfig,
  ColumnType,
  ListTypeConfig,
  MapTypeConfig,
  NestedTypeConfig,
  PartitionFieldConfig,
  StructTypeConfig,
} from '../../config/types';
import { parseDecimalType } from '../../iceberg';
import { DecodeError, DecoderConfigError, clip, show } from './errors';
import { compilePrimitive, type Convert } from './primitives';
import { transformsOn } from './ranges';
import type { RowValue } from './row';

// ---------- parsing ----------
/**
 * Native JSON.parse is exact for every number of at most 15 significant digits, and its strings
 * are flat. A literal with more (a 64-bit id, a long decimal, also split by a dot:
 * 1234567890.1234567) needs lossless-json, whose strings are built piecewise: retained in bulk they
 * cost ~10x in GC (measured: 3.8k vs 39k rec/s), so only such texts take it.
 */
// A digit and 15 more digits or dots (/\d[\d.]{15,}/ as a test), spelled out: V8 scans the unrolled
// form ~2x faster (0.20 against 0.36 us per 1 KiB record; 0.19 against 0.65 when the text holds
// 13-digit epoch millis), and every check runs over each record's whole text.
const DIGIT_RUN_16 = `\\d${'[\\d.]'.repeat(15)}`;
const MAYBE_UNSAFE_NUMBER = new RegExp(DIGIT_RUN_16);
/** Tables with decimals also route 3-digit exponents: 1e-400 parses to 0 natively, 1e400 to Infinity. */
export const MAYBE_UNSAFE_DECIMAL = new RegExp(`${DIGIT_RUN_16}|\\d[eE][+-]?\\d\\d\\d`);
export function parseJsonExact(text: string, unsafe: RegExp = MAYBE_UNSAFE_NUMBER): unknown {
  return unsafe.test(text) ? parseLossless(text) : JSON.parse(text);
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Whether a decimal appears anywhere in `t` (its JSON needs exact number parsing). */
function hasDecimal(t: ColumnConfig['type']): boolean {
  if (typeof t === 'string') return parseDecimalType(t) !== undefined;
  switch (t.type) {
    case 'struct':
      return t.fields.some((f) => hasDecimal(f.type));
    case 'list':
      return hasDecimal(t.element);
    case 'map':
      return hasDecimal(t.key) || hasDecimal(t.value);
  }
}

/** The parser of a record's value (a UTF-8 JSON object) for a table of `columns`, exact for their types. */
export function compileRecordValue(columns: readonly ColumnConfig[]): (value: Buffer | null) => Record<string, unknown> {
  const unsafe = columns.some((c) => hasDecimal(c.type)) ? MAYBE_UNSAFE_DECIMAL : MAYBE_UNSAFE_NUMBER;
  return (value) => {
    if (value === null) throw new DecodeError('value: record has a null value (tombstone)');
    let text: string;
    try {
      text = utf8.decode(value);
    } catch {
      throw new DecodeError('value: not valid UTF-8 (the message must be UTF-8 JSON)');
    }
    let v: unknown;
    try {
      v = parseJsonExact(text, unsafe);
    } catch (e) {
      throw new DecodeError(`value: not valid JSON (${clip(String((e as Error).message))})`);
    }
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new DecodeError('value: expected a JSON object');
    return v as Record<string, unknown>;
  };
}

const hasOwn = Object.prototype.hasOwnProperty;

/**
 * A reader of the dotted JSON path. Own properties only: a path segment a message lacks is
 * missing, even when Object.prototype has it (`constructor`, `__proto__`, `toString`); and a path
 * never descends into a number (a lossless number is an object with a `value`).
 */
export function compilePath(path: string): (obj: Record<string, unknown>) => unknown {
  const parts = path.split('.');
  if (parts.length === 1) {
    const p = parts[0]!;
    return (obj) => (hasOwn.call(obj, p) ? obj[p] : undefined);
  }
  return (obj) => {
    let cur: unknown = obj;
    for (const p of parts) {
      if (cur === null || typeof cur !== 'object' || Array.isArray(cur) || cur instanceof LosslessNumber || !hasOwn.call(cur, p))
        return undefined;
      cur = (cur as Record<string, unknown>)[p];
    }
    return cur;
  };
}

// ---------- columns ----------
/** The converter of one JSON value (never null) to the column's row value, or a DecodeError. */
export function compileJsonColumn(c: ColumnConfig, transforms: string[]): Convert {
  return typeof c.type === 'string' ? compilePrimitive(c, c.type, transforms) : compileNestedColumn(c.type, c.name);
}

/**
 * A JSON value's converter for a primitive column, as `source: value` columns use it: for decoders
 * of other framings of JSON (JSON Schema through a registry, json-schema.ts).
 */
export function compileJsonValue(c: ColumnConfig, partitionBy: readonly PartitionFieldConfig[] = []): Convert {
  return compileJsonColumn(c, transformsOn(c, partitionBy));
}

// ---------- nested types ----------
/**
 * A problem inside a nested value, located relative to the value being converted: `at` is '' or
 * segments such as `.qty`, `[3]`, `["sku-1"]`. Each enclosing struct, list and map prefixes its
 * segment on the way out, and the column turns it into `items[3].qty: <tail>` (compileNestedColumn).
 */
class NestedDecodeError extends DecodeError {
  constructor(
    readonly at: string,
    readonly tail: string,
  ) {
    super(`${at}: ${tail}`);
  }
}

const isJsonObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof LosslessNumber);

/**
 * A child's error located one segment further out. A primitive converter's DecodeError reads
 * `<label>: <tail>` (compiled under the child's static label, which config errors name).
 */
function within(e: unknown, seg: string, label: string): unknown {
  if (e instanceof NestedDecodeError) return new NestedDecodeError(seg + e.at, e.tail);
  if (e instanceof DecodeError)
    return new NestedDecodeError(seg, e.message.startsWith(`${label}: `) ? e.message.slice(label.length + 2) : e.message);
  return e;
}

/**
 * The converter of a configured type at a static `label` (`items.element.price`): primitives
 * through compilePrimitive (exact, range-checked; no partition transform applies inside a nested
 * type), nested types through compileNested.
 */
function compileType(t: ColumnType, label: string): Convert {
  return typeof t === 'string' ? compilePrimitive({ name: label, type: t, required: true }, t, []) : compileNested(t, label);
}

/** A nested column's converter: its errors name the path inside the value (`items[3].qty: …`). */
function compileNestedColumn(t: NestedTypeConfig, col: string): Convert {
  const convert = compileNested(t, col);
  return (v) => {
    try {
      return convert(v);
    } catch (e) {
      throw e instanceof NestedDecodeError ? new DecodeError(`${col}${e.at}: ${e.tail}`) : e;
    }
  };
}

/**
 * A struct from a JSON object, a list from a JSON array, a map from a JSON object; every leaf
 * through compilePrimitive. Errors are NestedDecodeErrors located inside `t`.
 */
function compileNested(t: NestedTypeConfig, label: string): Convert {
  switch (t.type) {
    case 'struct':
      return compileStruct(t, label);
    case 'list':
      return compileList(t, label);
    case 'map':
      return compileMap(t, label);
  }
}

/** Each field by its name or its `path` inside the object; missing or null is null, or an error for a required field. */
function compileStruct(t: StructTypeConfig, label: string): Convert {
  const fields = t.fields.map((f) => {
    const fieldLabel = `${label}.${f.name}`;
    // assigning out.__proto__ would set the struct's prototype, not a field
    if (f.name === '__proto__') throw new DecoderConfigError(`field ${fieldLabel}: the name cannot be a row key`);
    return {
      name: f.name,
      seg: `.${f.name}`,
      label: fieldLabel,
      get: compilePath(f.path ?? f.name),
      convert: compileType(f.type, fieldLabel),
      required: f.required,
      missing: f.path === undefined ? 'required field is missing' : `required field is missing (path ${f.path})`,
    };
  });
  return (v) => {
    if (!isJsonObject(v)) throw new NestedDecodeError('', `expected a JSON object, found ${show(v)}`);
    const out: { [field: string]: RowValue } = {};
    for (const f of fields) {
      const x = f.get(v);
      if (x === null || x === undefined) {
        if (f.required) throw new NestedDecodeError(f.seg, f.missing);
        out[f.name] = null;
        continue;
      }
      try {
        out[f.name] = f.convert(x);
      } catch (e) {
        throw within(e, f.seg, f.label);
      }
    }
    return out;
  };
}

/** A JSON array; a null element only when elements are optional. */
function compileList(t: ListTypeConfig, label: string): Convert {
  const elementLabel = `${label}.element`;
  const element = compileType(t.element, elementLabel);
  const required = t.elementRequired;
  return (v) => {
    if (!Array.isArray(v)) throw new NestedDecodeError('', `expected a JSON array, found ${show(v)}`);
    const out: RowValue[] = new Array<RowValue>(v.length);
    for (let i = 0; i < v.length; i++) {
      const x: unknown = v[i];
      if (x === null) {
        if (required) throw new NestedDecodeError(`[${i}]`, 'required element is null');
        out[i] = null;
        continue;
      }
      try {
        out[i] = element(x);
      } catch (e) {
        throw within(e, `[${i}]`, elementLabel);
      }
    }
    return out;
  };
}

/**
 * A JSON object: each key converted from its text to the key type as a JSON string of that type
 * would be (`"42"` to a long), each value by the value type; [key, value] pairs for the writer.
 */
function compileMap(t: MapTypeConfig, label: string): Convert {
  const keyLabel = `${label}.key`,
    valueLabel = `${label}.value`;
  const key = compileType(t.key, keyLabel);
  const value = compileType(t.value, valueLabel);
  const required = t.valueRequired;
  // An object's keys are distinct strings; converted, "7" and "07" (or two spellings of one UUID
  // or instant) would be one key twice, which a map cannot hold.
  const canCollide = t.key !== 'string';
  return (v) => {
    if (!isJsonObject(v)) throw new NestedDecodeError('', `expected a JSON object, found ${show(v)}`);
    const out: RowValue[] = [];
    const seen = canCollide ? new Map<string, string>() : undefined;
    for (const k of Object.keys(v)) {
      const seg = `[${show(k)}]`;
      let kv: RowValue;
      try {
        kv = key(k);
      } catch (e) {
        const n = within(e, seg, keyLabel);
        throw n instanceof NestedDecodeError ? new NestedDecodeError(n.at, `invalid map key (${n.tail})`) : n;
      }
      if (seen) {
        const id = String(kv);
        const first = seen.get(id);
        if (first !== undefined) throw new NestedDecodeError(seg, `map key is the same ${t.key} as key ${show(first)}`);
        seen.set(id, k);
      }
      const x = v[k];
      if (x === null) {
        if (required) throw new NestedDecodeError(seg, 'required map value is null');
        out.push([kv, null]);
        continue;
      }
      try {
        out.push([kv, value(x)]);
      } catch (e) {
        throw within(e, seg, valueLabel);
      }
    }
    return out;
  };
}
