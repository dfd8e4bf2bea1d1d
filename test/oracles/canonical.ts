/**
 * Canonical value form shared with iceberg_oracle.py, so rows written by floe, read by PyIceberg,
 * DuckDB or floe's own Parquet reader compare as plain JSON. Lossless for every primitive type:
 * 64-bit and temporal values as decimal strings (µs / days), floats as their float64 bit pattern
 * (a float32 is widened exactly), decimals as unscaled integers, bytes as hex.
 */
import type * as arrow from 'apache-arrow';
import {
  parseDecimalType,
  parseFixedType,
  unscaledDecimal,
  uuidFromBytes,
  uuidToBytes,
  type PrimitiveType,
  type Schema,
} from '../../iceberg';

export type Canon = string | boolean | null;
export type CanonRow = Canon[];

const hex = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');

function floatBits(x: number): string {
  if (Number.isNaN(x)) return 'NaN';
  const b = Buffer.alloc(8);
  b.writeDoubleBE(x);
  return b.toString('hex');
}

/** A JS input value (the forms iceberg/parquet/columns.ts accepts) in canonical form. */
export function canonValue(type: PrimitiveType, v: unknown): Canon {
  if (v === null || v === undefined) return null;
  switch (type) {
    case 'boolean':
      return v as boolean;
    case 'int':
    case 'long':
    case 'date':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
    case 'timestamp_ns':
    case 'timestamptz_ns':
      return BigInt(v as number | bigint).toString();
    case 'float':
      return floatBits(Math.fround(v as number));
    case 'double':
      return floatBits(v as number);
    case 'string':
      return v as string;
    case 'uuid':
      return typeof v === 'string' ? uuidFromBytes(uuidToBytes(v)) : uuidFromBytes(v as Uint8Array);
    case 'binary':
      return hex(v as Uint8Array);
    default: {
      const dec = parseDecimalType(type);
      if (dec) return (typeof v === 'bigint' ? v : unscaledDecimal(v as string | number, dec.scale)).toString();
      if (parseFixedType(type) !== undefined) return hex(v as Uint8Array);
      throw new Error(`canonValue: no canonical form for ${String(type)}`);
    }
  }
}

export const columnsOf = (schema: Schema): Array<[string, PrimitiveType]> =>
  schema.fields.map((f) => {
    if (typeof f.type !== 'string') throw new Error(`oracle: column ${f.name} is nested; only primitive columns are compared`);
    return [f.name, f.type];
  });

/** Sorts like iceberg_oracle.py's sort_rows (by the JSON text of each row). */
export const sortRows = (rows: CanonRow[]): CanonRow[] =>
  rows
    .map((r) => [JSON.stringify(r), r] as const)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([, r]) => r);

export function canonRows(schema: Schema, rows: ReadonlyArray<Record<string, unknown>>): CanonRow[] {
  const cols = columnsOf(schema);
  return sortRows(rows.map((r) => cols.map(([name, t]) => canonValue(t, r[name]))));
}

/**
 * One Arrow value (as floe's Parquet reader returns it) in canonical form. Reads the raw buffers
 * for 64-bit, temporal and decimal columns: Arrow JS's `get` turns timestamps into ms numbers.
 */
export function canonArrow(type: PrimitiveType, vec: arrow.Vector, i: number): Canon {
  if (!vec.isValid(i)) return null;
  let chunk = 0,
    at = i;
  while (at >= vec.data[chunk]!.length) at -= vec.data[chunk++]!.length;
  const d = vec.data[chunk]!;
  // Arrow JS re-bases a sliced Data's value buffers (values.subarray from its offset) and keeps
  // `offset` for the validity bitmap only: the value of row `at` is values[at], sliced or not (a
  // scan with position deletes returns slices around the deleted rows).
  const idx = at;
  switch (type) {
    case 'int':
    case 'date':
    case 'long':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
    case 'timestamp_ns':
    case 'timestamptz_ns': {
      const values = d.values as Int32Array | BigInt64Array;
      return BigInt(values[idx]!).toString();
    }
    case 'float':
    case 'double':
      return floatBits((d.values as Float32Array | Float64Array)[idx]!);
    default:
      break;
  }
  const dec = parseDecimalType(type);
  if (dec) {
    const w = d.values as Uint32Array;
    let u = 0n;
    for (let k = 3; k >= 0; k--) u = (u << 32n) | BigInt(w[idx * 4 + k]!);
    return BigInt.asIntN(128, u).toString();
  }
  return canonValue(type, vec.get(i));
}

export function canonBatch(schema: Schema, batch: arrow.RecordBatch): CanonRow[] {
  const cols = columnsOf(schema).map(([name, t]) => {
    const v = batch.getChild(name);
    if (!v) throw new Error(`oracle: batch has no column ${name}; found ${batch.schema.fields.map((f) => f.name).join(', ')}`);
    return [t, v] as const;
  });
  const out: CanonRow[] = [];
  for (let i = 0; i < batch.numRows; i++) out.push(cols.map(([t, v]) => canonArrow(t, v, i)));
  return out;
}
