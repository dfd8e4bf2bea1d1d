/**
 * Arrow data from elsewhere (a Parquet file written by pyarrow, DuckDB or an older floe, read back
 * for compaction) -> exactly the Arrow layout `icebergToArrowSchema` gives, so that the Parquet
 * we write carries our field ids and types and metrics can rely on one layout.
 *
 * Columns are matched by `PARQUET:field_id` when the source has ids (Iceberg resolves by id, and
 * names may have been renamed), otherwise by name. Only lossless widenings are applied (those the
 * spec allows as type promotions plus string/binary offset width and timestamp unit changes that
 * do not lose precision); anything else fails with expected vs found.
 */
import * as arrow from 'apache-arrow';
import { IcebergError } from '../errors';
import type { IcebergType, NestedField, Schema } from '../spec/types';
import { buildData } from './columns';
import { fieldIdOf, icebergToArrowSchema } from './schema';

function mismatch(path: string, expected: arrow.DataType, found: arrow.DataType): IcebergError {
  return IcebergError.mismatch('DataInvalid', `column ${path} Arrow type`, String(expected), String(found));
}

const TIME_UNIT_PER_SECOND = [1n, 1000n, 1_000_000n, 1_000_000_000n]; // arrow TimeUnit SECOND..NANOSECOND

function convertInt64(src: arrow.Data, target: arrow.DataType, f: (v: bigint) => bigint): arrow.Data {
  const out = new BigInt64Array(src.length);
  const vals = src.values as BigInt64Array | Int32Array;
  for (let i = 0; i < src.length; i++) out[i] = f(BigInt(vals[i]!));
  return src.clone(target as never, src.offset, src.length, src.nullCount, [undefined, out, src.nullBitmap, undefined] as never);
}

function conformData(type: IcebergType, target: arrow.DataType, src: arrow.Data, nullable: boolean, path: string): arrow.Data {
  if (!nullable && src.nullCount > 0) {
    throw IcebergError.mismatch('DataInvalid', `column ${path} (required) null count`, 0, src.nullCount);
  }
  const s = src.type;
  if (typeof type !== 'string') {
    if (type.type === 'struct' && arrow.DataType.isStruct(s)) {
      const srcFields = s.children;
      const children = type.fields.map((f, k) => {
        const j = findField(srcFields, f);
        const t = (target as arrow.Struct).children[k]!.type;
        if (j < 0) return missing(f, t, src.length, `${path}.${f.name}`);
        return conformData(f.type, t, src.children[j]!, !f.required, `${path}.${f.name}`);
      });
      return src.clone(target as never, src.offset, src.length, src.nullCount, src.buffers as never, children);
    }
    if (type.type === 'list' && arrow.DataType.isList(s)) {
      const child = conformData(
        type.element,
        (target as arrow.List).children[0]!.type,
        src.children[0]!,
        !type['element-required'],
        `${path}.element`,
      );
      return src.clone(target as never, src.offset, src.length, src.nullCount, src.buffers as never, [child]);
    }
    if (type.type === 'map' && arrow.DataType.isMap(s)) {
      const entries = src.children[0]!;
      const et = (target as arrow.Map_).children[0]!.type as arrow.Struct;
      const key = conformData(type.key, et.children[0]!.type, entries.children[0]!, false, `${path}.key`);
      const value = conformData(type.value, et.children[1]!.type, entries.children[1]!, !type['value-required'], `${path}.value`);
      const e = entries.clone(et as never, entries.offset, entries.length, entries.nullCount, entries.buffers as never, [key, value]);
      return src.clone(target as never, src.offset, src.length, src.nullCount, src.buffers as never, [e]);
    }
    throw mismatch(path, target, s);
  }
  // timestamps first: 'UTC' and '+00:00' are the same zone to Iceberg (any zone means timestamptz)
  if (arrow.DataType.isTimestamp(target) && arrow.DataType.isTimestamp(s)) {
    const t = target as arrow.Timestamp,
      from = s as arrow.Timestamp;
    // a finer source unit would need rounding: not a lossless conversion
    if (!t.timezone !== !from.timezone || from.unit > t.unit) throw mismatch(path, target, s);
    if (from.unit === t.unit) return src.clone(target as never);
    const mul = TIME_UNIT_PER_SECOND[t.unit]! / TIME_UNIT_PER_SECOND[from.unit]!;
    return convertInt64(src, target, (v) => v * mul);
  }
  if (arrow.util.compareTypes(s, target)) return src.clone(target as never);
  // lossless conversions
  if (type === 'long' && arrow.DataType.isInt(s) && s.bitWidth <= 32) return convertInt64(src, target, (v) => v);
  if (type === 'int' && arrow.DataType.isInt(s) && s.bitWidth < 32) {
    const out = Int32Array.from(src.values as ArrayLike<number>);
    return src.clone(target as never, src.offset, src.length, src.nullCount, [undefined, out, src.nullBitmap, undefined] as never);
  }
  if (type === 'double' && arrow.DataType.isFloat(s) && s.precision === arrow.Precision.SINGLE) {
    const out = Float64Array.from(src.values as Float32Array);
    return src.clone(target as never, src.offset, src.length, src.nullCount, [undefined, out, src.nullBitmap, undefined] as never);
  }
  if ((type === 'string' && arrow.DataType.isLargeUtf8(s)) || (type === 'binary' && arrow.DataType.isLargeBinary(s))) {
    const o = src.valueOffsets as unknown as BigInt64Array;
    const base = o[0]!;
    const end = o[src.length]!;
    if (end - base > 0x7fffffffn) throw mismatch(path, target, s);
    const offsets = new Int32Array(src.length + 1);
    for (let i = 0; i <= src.length; i++) offsets[i] = Number(o[i]! - base);
    const data = (src.values as Uint8Array).subarray(Number(base), Number(end));
    return src.clone(target as never, src.offset, src.length, src.nullCount, [offsets, data, src.nullBitmap, undefined] as never);
  }
  if (
    (type === 'string' || type === 'binary') &&
    (arrow.DataType.isDictionary(s) || arrow.DataType.isUtf8View?.(s) || arrow.DataType.isBinaryView?.(s))
  ) {
    // decoded through Arrow's own accessors (string -> string, binary -> Uint8Array)
    const vec = arrow.makeVector(src);
    return buildData(type, target, (i) => vec.get(i), src.length, nullable, path);
  }
  throw mismatch(path, target, s);
}

function findField(fields: arrow.Field[], f: NestedField): number {
  const byId = fields.findIndex((x) => fieldIdOf(x) === f.id);
  if (byId >= 0) return byId;
  // a source that carries ids but not this one does not have this column (it may be a renamed-away name)
  if (fields.some((x) => fieldIdOf(x) !== undefined)) return -1;
  return fields.findIndex((x) => x.name === f.name);
}

function missing(f: NestedField, target: arrow.DataType, length: number, path: string): arrow.Data {
  if (f.required) throw new IcebergError('DataInvalid', `column ${path}: required, but the source has no such column`);
  return buildData(f.type, target, () => null, length, true, path);
}

/** Re-shapes `batch` to the Arrow layout of `schema` (see the header). Cheap when already conformant. */
export function conformBatch(schema: Schema, batch: arrow.RecordBatch, arrowSchema = icebergToArrowSchema(schema)): arrow.RecordBatch {
  const srcFields = batch.schema.fields;
  const children = schema.fields.map((f, k) => {
    const target = arrowSchema.fields[k]!.type;
    const j = findField(srcFields, f);
    if (j < 0) return missing(f, target, batch.numRows, f.name);
    return conformData(f.type, target, batch.data.children[j]!, !f.required, f.name);
  });
  const struct = arrow.makeData({ type: new arrow.Struct(arrowSchema.fields), length: batch.numRows, nullCount: 0, children });
  return new arrow.RecordBatch(arrowSchema, struct);
}
