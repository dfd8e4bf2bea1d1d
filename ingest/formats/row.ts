/**
 * A table row as every value format produces it and iceberg/parquet's writer takes it. A primitive
 * is typed as primitives.ts describes (long/time/timestamp* as bigint micros, int/date as number,
 * decimal as the unscaled bigint, binary/fixed as Uint8Array, ...); a struct is an object keyed by
 * field name, a list an array, a map (and the headers map) an array of [key, value] pairs.
 */
export type RowValue = null | boolean | number | bigint | string | Uint8Array | RowValue[] | { [field: string]: RowValue };
export type Row = Record<string, RowValue>;
