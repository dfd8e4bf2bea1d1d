/**
 * What the registry formats (Avro, Protobuf, JSON Schema) share: a derived column, the converter
 * shape, and the primitive conversions with the promotions Iceberg allows (int -> long,
 * float -> double, decimal(P, S) -> decimal(P', S) with P' >= P). Values arrive canonical from
 * each format's reader: int/date as number, long/time/timestamps as bigint micros, decimal as
 * the unscaled bigint, bytes as Uint8Array.
 */
import { parseDecimalType, parseFixedType, typeString, type IcebergType, type PrimitiveType, type StructType } from '../../iceberg';
import { DecodeError, SchemaMappingError } from './errors';

/**
 * A column (or nested field) derived from a record schema. Every derived column is optional in the
 * table; `required` is what the schema says, checked when a new field arrives in a later version.
 */
export interface Derived {
  name: string;
  type: IcebergType;
  required: boolean;
  doc?: string;
  /** The nested fields of a struct (same shape), for the required check at every level. */
  fields?: Derived[];
}

/** A decoded value (canonical for its format) -> the Parquet writer's row value; `path` names it in errors. */
export type ValueConverter = (v: unknown, path: string) => unknown;

export const isStruct = (t: IcebergType): t is StructType => typeof t !== 'string' && t.type === 'struct';

const LONG_MIN = -(2n ** 63n),
  LONG_MAX = 2n ** 63n - 1n;
const MICROS_PER_DAY = 86_400_000_000n;

/** Two's-complement big-endian bytes (Avro's decimal) as a bigint. */
export function decimalOf(b: Uint8Array): bigint {
  if (b.length === 0) return 0n;
  let u = 0n;
  for (const x of b) u = (u << 8n) | BigInt(x);
  return b[0]! & 0x80 ? u - (1n << BigInt(b.length * 8)) : u;
}

/** Whether a column of type `table` takes a record type `record`'s values as they are (the same type, or narrower). */
export function takesAsIs(table: string, record: string): boolean {
  const c = table.replace(/\s+/g, ''),
    i = record.replace(/\s+/g, '');
  if (c === i) return true;
  if ((c === 'long' && i === 'int') || (c === 'double' && i === 'float')) return true;
  const cd = parseDecimalType(table),
    id = parseDecimalType(record);
  return !!cd && !!id && cd.scale === id.scale && cd.precision >= id.precision;
}

/**
 * The conversion of a `source`-typed canonical value into a `target` column: the same type, or a
 * promotion. Anything else is a SchemaMappingError (the record's schema does not fit the table).
 */
export function compileTo(source: PrimitiveType, target: IcebergType, where: string): ValueConverter {
  if (typeof target !== 'string')
    throw new SchemaMappingError(`${where}: the table has ${typeString(target)}, the record's schema ${source}`);
  const s = source.replace(/\s+/g, ''),
    t = target.replace(/\s+/g, '');
  if (!takesAsIs(target, source)) throw new SchemaMappingError(`${where}: the table has ${target}, the record's schema ${source}`);
  const td = parseDecimalType(target);
  if (td) {
    const max = 10n ** BigInt(td.precision);
    return (v, path) => {
      const u = v as bigint;
      if (u <= -max || u >= max) throw new DecodeError(`${path}: ${u} (unscaled) has more than ${td.precision} digits for ${target}`);
      return u;
    };
  }
  const width = parseFixedType(target);
  if (width !== undefined) {
    return (v, path) => {
      const b = v as Uint8Array;
      if (b.length !== width) throw new DecodeError(`${path}: ${b.length} bytes for ${target}`);
      return b;
    };
  }
  if (s === t) {
    if (t === 'uuid')
      return (v, path) => {
        const u = v as string;
        if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(u))
          throw new DecodeError(`${path}: ${JSON.stringify(u)} is not a UUID`);
        return u.toLowerCase();
      };
    if (t === 'string')
      return (v, path) => {
        const u = v as string;
        if (!(u as string & { isWellFormed(): boolean }).isWellFormed())
          throw new DecodeError(`${path}: a string with an unpaired surrogate`);
        return u;
      };
    if (t === 'timestamp' || t === 'timestamptz')
      return (v, path) => {
        const us = v as bigint;
        if (us < LONG_MIN || us > LONG_MAX)
          throw new DecodeError(`${path}: ${us} µs is out of range for a timestamp (64-bit microseconds)`);
        return us;
      };
    if (t === 'time')
      return (v, path) => {
        const us = v as bigint;
        if (us < 0n || us >= MICROS_PER_DAY) throw new DecodeError(`${path}: ${us} µs is not a time of day`);
        return us;
      };
    return (v) => v;
  }
  if (s === 'int' && t === 'long') return (v) => BigInt(v as number);
  return (v) => v; // float -> double, the one promotion left
}
