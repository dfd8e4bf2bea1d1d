/**
 * The fuzzer's model of a table and its records, independent of any value format: a schema of
 * Iceberg types (every primitive, nested struct/list/map, optional and required), the intended
 * value of each field, and the canonical form both sides of the comparison reduce a value to
 * (this file for the model, fuzz_read.py for what PyIceberg reads back), so "lands equal" is one
 * JSON comparison.
 */

export type Prim =
  | 'boolean'
  | 'int'
  | 'long'
  | 'float'
  | 'double'
  | 'string'
  | 'binary'
  | 'date'
  | 'time'
  | 'timestamp'
  | 'timestamptz'
  | 'uuid'
  | `decimal(${number}, ${number})`
  | `fixed[${number}]`;

export interface FField {
  name: string;
  type: FType;
  required: boolean;
}
export type FType =
  | Prim
  | { type: 'struct'; fields: FField[] }
  | { type: 'list'; element: FType; elementRequired: boolean }
  | { type: 'map'; value: FType; valueRequired: boolean };

/** A map's entries in the order the producer wrote them (map keys are strings here). */
export class MapValue {
  constructor(readonly entries: Array<[string, MV]>) {}
}
/**
 * A field's intended value: int/date as number (days), long/time/timestamp* as bigint (micros),
 * float/double as number, decimal as its unscaled bigint, binary/fixed as bytes, uuid as
 * lowercase text, struct as an object, list as an array, map as MapValue.
 */
export type MV = null | boolean | number | bigint | string | Uint8Array | MapValue | MV[] | { [k: string]: MV };

export const decimalOf = (t: string): { precision: number; scale: number } | undefined => {
  const m = /^decimal\((\d+), (\d+)\)$/.exec(t);
  return m ? { precision: Number(m[1]), scale: Number(m[2]) } : undefined;
};
export const fixedOf = (t: string): number | undefined => {
  const m = /^fixed\[(\d+)\]$/.exec(t);
  return m ? Number(m[1]) : undefined;
};

/** The type in floe's column type grammar (config/column-type.ts). */
export function typeText(t: FType): string {
  if (typeof t === 'string') return t;
  switch (t.type) {
    case 'struct':
      return `struct<${t.fields.map((f) => `${f.name}: ${typeText(f.type)}${f.required ? ' not null' : ''}`).join(', ')}>`;
    case 'list':
      return `list<${typeText(t.element)}${t.elementRequired ? ' not null' : ''}>`;
    case 'map':
      return `map<string, ${typeText(t.value)}${t.valueRequired ? ' not null' : ''}>`;
  }
}

/** The canonical form (shared with fuzz_read.py): exact, JSON-comparable. */
export type Canon = null | boolean | string | Canon[] | { [k: string]: Canon };

function floatBits(x: number): string {
  if (Number.isNaN(x)) return 'NaN';
  const b = Buffer.alloc(8);
  b.writeDoubleBE(x);
  return b.toString('hex');
}
const hex = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');

/** Map entries sort by key, in code point order (UTF-8 byte order), as fuzz_read.py sorts them: no format promises an order. */
const byKey = (a: Canon, b: Canon): number =>
  Buffer.compare(Buffer.from((a as Canon[])[0] as string), Buffer.from((b as Canon[])[0] as string));

export function canon(t: FType, v: MV): Canon {
  if (v === null || v === undefined) return null;
  if (typeof t !== 'string') {
    switch (t.type) {
      case 'struct': {
        const o = v as Record<string, MV>;
        const out: Record<string, Canon> = {};
        for (const f of t.fields) out[f.name] = canon(f.type, Object.hasOwn(o, f.name) ? o[f.name]! : null);
        return out;
      }
      case 'list':
        return (v as MV[]).map((e) => canon(t.element, e));
      case 'map':
        return { $map: (v as MapValue).entries.map(([k, e]): Canon => [k, canon(t.value, e)]).sort(byKey) };
    }
  }
  switch (t) {
    case 'boolean':
    case 'string':
      return v as boolean | string;
    case 'float':
      return floatBits(Math.fround(v as number));
    case 'double':
      return floatBits(v as number);
    case 'binary':
      return hex(v as Uint8Array);
    case 'uuid':
      return (v as string).replace(/-/g, '').toLowerCase();
    case 'int':
    case 'long':
    case 'date':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
      return String(v);
    default: {
      const d = decimalOf(t);
      if (d) return `${String(v)}e${-d.scale}`;
      return hex(v as Uint8Array); // fixed
    }
  }
}
