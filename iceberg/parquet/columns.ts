/**
 * JS values -> Arrow record batches for an Iceberg schema, built column by column straight into
 * typed arrays (no per-value Arrow builder objects: 1M rows must take well under a second).
 *
 * Accepted JS values per Iceberg type (null/undefined = null):
 *   boolean: boolean · int, date (days since epoch): number · float, double: number
 *   long, time (µs), timestamp/timestamptz (µs since epoch), timestamp(tz)_ns (ns): bigint,
 *     or a safe-integer number
 *   string: string · uuid: "8-4-4-4-12" string or 16 bytes · binary, fixed[L]: Uint8Array
 *   decimal(P,S): unscaled bigint, decimal string ("12.30") or number (1.5), or unscaled
 *     two's-complement big-endian bytes
 *   struct: plain object keyed by field name · list: array · map: Map, array of [key, value]
 *     pairs, or (string keys only) a plain object
 *
 * Every buffer of a flat batch built here is an ArrayBuffer of its own (never a caller's array,
 * never a slab of Buffer's pool): the encoder pool moves such batches to its thread whole
 * instead of copying them (wire.ts, toWire `owned`).
 */
import * as arrow from 'apache-arrow';
import { IcebergError } from '../errors';
import { decimalFromBytes, parseDecimalType, parseFixedType, unscaledDecimal, uuidToBytes } from '../spec/conversions';
import type { IcebergType, NestedField, PrimitiveType, Schema } from '../spec/types';
import { icebergToArrowSchema } from './schema';

export type Row = Record<string, unknown>;
/** Column name -> one value per row (a JS array or a typed array of the right kind). */
export type Columns = Record<string, ArrayLike<unknown>>;

/**
 * Marks a slot whose parent struct is null: a required child still needs *some* valid value
 * there (Arrow forbids nulls in a non-nullable field), and readers never look at it.
 */
const PARENT_NULL: unique symbol = Symbol('parent-null');
type Get = (i: number) => unknown;
const STRING_CHUNK = 65536;
/** Average UTF-16 length from which a chunk's strings are written one by one (measured). */
const STRING_PER_VALUE = 16;
/**
 * Rows per batch when a large input is built chunk by chunk (rowsToRecordBatches): 500k event
 * rows encoded 16Ki rows at a time took ~15% less CPU than as one batch (bench/parquet-write.ts).
 */
export const BUILD_CHUNK_ROWS = 16_384;

function bad(path: string, expected: string, v: unknown): IcebergError {
  const shown =
    typeof v === 'bigint'
      ? `${v}n`
      : v instanceof Uint8Array
        ? `Uint8Array(${v.length})`
        : typeof v === 'object'
          ? Object.prototype.toString.call(v)
          : JSON.stringify(v);
  return new IcebergError('DataInvalid', `column ${path}: expected ${expected}, found ${shown}`, {
    context: { column: path, expected, found: shown },
  });
}

class Validity {
  bitmap: Uint8Array;
  nullCount = 0;
  /** `rowBase`: the caller's index of slot 0 (a batch built from rows [from, to) names row from + i). */
  constructor(
    length: number,
    readonly rowBase = 0,
  ) {
    this.bitmap = new Uint8Array((length + 7) >> 3).fill(0xff);
  }
  setNull(i: number): void {
    this.bitmap[i >> 3]! &= ~(1 << (i & 7));
    this.nullCount++;
  }
}

/** Resolves null/required for slot i: returns the value, or null (already recorded), or PARENT_NULL. */
function nullCheck(v: unknown, i: number, nullable: boolean, validity: Validity, path: string): unknown {
  if (v === null || v === undefined) {
    if (!nullable) {
      const row = validity.rowBase + i;
      throw new IcebergError('DataInvalid', `column ${path}: required, found null at row ${row}`, { context: { column: path, row } });
    }
    validity.setNull(i);
    return null;
  }
  if (v === PARENT_NULL) {
    if (nullable) validity.setNull(i);
    return PARENT_NULL;
  }
  return v;
}

function toBig(v: unknown, path: string): bigint {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return BigInt(v);
  throw bad(path, 'a bigint (or safe-integer number)', v);
}

/** One primitive column to build: its input, where errors point, and its validity bitmap. */
interface PrimitiveColumn {
  arrowType: arrow.DataType;
  get: Get;
  length: number;
  nullable: boolean;
  path: string;
  validity: Validity;
}

/** The Arrow Data of a built column: its buffers (`props`) plus the validity bitmap. */
function finish(c: PrimitiveColumn, props: Record<string, unknown>): arrow.Data {
  return arrow.makeData({
    type: c.arrowType,
    length: c.length,
    nullCount: c.validity.nullCount,
    nullBitmap: c.validity.nullCount > 0 ? c.validity.bitmap : null,
    ...props,
  } as never);
}

/** boolean: bit-packed values. */
function buildBoolean(c: PrimitiveColumn): arrow.Data {
  const { get, length, nullable, validity, path } = c;
  const data = new Uint8Array((length + 7) >> 3);
  for (let i = 0; i < length; i++) {
    const v = nullCheck(get(i), i, nullable, validity, path);
    if (v === null || v === PARENT_NULL) continue;
    if (typeof v !== 'boolean') throw bad(path, 'a boolean', v);
    if (v) data[i >> 3]! |= 1 << (i & 7);
  }
  return finish(c, { data });
}

/** int, date: 32-bit integer numbers. */
function buildInt32(c: PrimitiveColumn, type: 'int' | 'date'): arrow.Data {
  const { get, length, nullable, validity, path } = c;
  const data = new Int32Array(length);
  for (let i = 0; i < length; i++) {
    const v = nullCheck(get(i), i, nullable, validity, path);
    if (v === null || v === PARENT_NULL) continue;
    if (typeof v !== 'number' || (v | 0) !== v)
      throw bad(path, `a 32-bit integer number${type === 'date' ? ' (days since 1970-01-01)' : ''}`, v);
    data[i] = v;
  }
  return finish(c, { data });
}

/** long, time, timestamp(tz)(_ns): 64-bit bigints (or safe-integer numbers). */
function buildInt64(c: PrimitiveColumn): arrow.Data {
  const { get, length, nullable, validity, path } = c;
  const data = new BigInt64Array(length);
  for (let i = 0; i < length; i++) {
    const v = nullCheck(get(i), i, nullable, validity, path);
    if (v === null || v === PARENT_NULL) continue;
    if (typeof v === 'bigint') {
      if (BigInt.asIntN(64, v) !== v) throw bad(path, 'a 64-bit signed integer', v);
      data[i] = v;
    } else data[i] = toBig(v, path);
  }
  return finish(c, { data });
}

/** float, double: numbers. */
function buildFloating(c: PrimitiveColumn, type: 'float' | 'double'): arrow.Data {
  const { get, length, nullable, validity, path } = c;
  const data = type === 'float' ? new Float32Array(length) : new Float64Array(length);
  for (let i = 0; i < length; i++) {
    const v = nullCheck(get(i), i, nullable, validity, path);
    if (v === null || v === PARENT_NULL) continue;
    if (typeof v !== 'number') throw bad(path, 'a number', v);
    data[i] = v;
  }
  return finish(c, { data });
}

/** A string that has a UTF-8 form (no unpaired surrogates), else the column's error. */
function wellFormed(str: string, path: string): void {
  // An unpaired surrogate has no UTF-8 form: encoding would silently write U+FFFD instead
  // (and two halves in neighbouring values would pair up in a joined chunk, shifting offsets).
  if (!(str as string & { isWellFormed(): boolean }).isWellFormed()) throw bad(path, 'a Unicode string (no unpaired surrogates)', str);
}

/**
 * string: UTF-8 values and offsets, encoded straight into one growing buffer. Per chunk of
 * strings: long ones (>= STRING_PER_VALUE UTF-16 units on average) are written one by one;
 * short ones are joined and written in one go (a write per value costs more than the join for
 * them); offsets come from char lengths when the chunk is all ASCII.
 */
function buildString(c: PrimitiveColumn): arrow.Data {
  const { get, length, nullable, validity, path } = c;
  const valueOffsets = new Int32Array(length + 1);
  const strs: string[] = new Array(Math.min(length, STRING_CHUNK));
  let buf = Buffer.allocUnsafeSlow(0);
  let pos = 0;
  /** Room for `bytes` more bytes at `pos`; `rest` estimates what follows (growth headroom). */
  const reserve = (bytes: number, rest: number): void => {
    if (buf.length - pos >= bytes) return;
    // the estimate is a hint: never past 2 GiB (the batch limit), never less than needed
    const grown = Buffer.allocUnsafeSlow(Math.max(pos + bytes, Math.min(Math.max(pos + bytes + rest, 2 * buf.length), 0x7fffffff)));
    buf.copy(grown, 0, 0, pos);
    buf = grown;
  };
  for (let c0 = 0; c0 < length; c0 += STRING_CHUNK) {
    const c1 = Math.min(length, c0 + STRING_CHUNK);
    let chars = 0;
    for (let i = c0; i < c1; i++) {
      const v = nullCheck(get(i), i, nullable, validity, path);
      let str = '';
      if (v !== null && v !== PARENT_NULL) {
        if (typeof v !== 'string') throw bad(path, 'a string', v);
        str = v;
      }
      strs[i - c0] = str;
      chars += str.length;
    }
    // the coming chunks, if alike, with 1/16 to spare: the buffer is then sized once, where an
    // estimate just short would double it near the end (copying it) and then trim it (again)
    const coming = Math.ceil((chars / (c1 - c0)) * (length - c1));
    const rest = coming + (coming >> 4);
    if (chars >= STRING_PER_VALUE * (c1 - c0)) {
      // UTF-8 takes at least a byte per UTF-16 unit: this chunk needs `chars` bytes or more
      reserve(chars, rest);
      for (let i = c0; i < c1; i++) {
        const str = strs[i - c0]!;
        // 3 bytes per UTF-16 unit always suffice; only near the end is the exact length needed
        if (buf.length - pos < 3 * str.length) reserve(Buffer.byteLength(str, 'utf8'), rest);
        const n = buf.write(str, pos, 'utf8');
        if (n !== str.length) wellFormed(str, path);
        pos += n;
        if (pos > 0x7fffffff) throw bad(path, 'less than 2 GiB of string data per batch', `${pos} bytes`);
        valueOffsets[i + 1] = pos;
      }
    } else {
      const joined = c1 - c0 === strs.length ? strs.join('') : strs.slice(0, c1 - c0).join('');
      const bytes = Buffer.byteLength(joined, 'utf8');
      if (pos + bytes > 0x7fffffff) throw bad(path, 'less than 2 GiB of string data per batch', `${pos + bytes} bytes`);
      reserve(bytes, rest);
      // as many bytes as UTF-16 units: all ASCII, whose UTF-8 is its Latin-1 (a plain copy)
      const ascii = bytes === joined.length;
      buf.write(joined, pos, ascii ? 'latin1' : 'utf8');
      for (let i = c0; i < c1; i++) {
        const str = strs[i - c0]!;
        if (!ascii) wellFormed(str, path);
        pos += ascii ? str.length : Buffer.byteLength(str, 'utf8');
        valueOffsets[i + 1] = pos;
      }
    }
  }
  // an estimate far off (later chunks shorter than the first): keep only what is used
  const data = buf.length - pos > (pos >> 3) + 4096 ? new Uint8Array(buf.subarray(0, pos)) : buf;
  return finish(c, { valueOffsets, data: new Uint8Array(data.buffer, data.byteOffset, pos) });
}

/** binary: Uint8Array values and offsets. */
function buildBinary(c: PrimitiveColumn): arrow.Data {
  const { get, length, nullable, validity, path } = c;
  const valueOffsets = new Int32Array(length + 1);
  const parts: Uint8Array[] = [];
  let pos = 0;
  for (let i = 0; i < length; i++) {
    const v = nullCheck(get(i), i, nullable, validity, path);
    if (v !== null && v !== PARENT_NULL) {
      if (!(v instanceof Uint8Array)) throw bad(path, 'a Uint8Array', v);
      parts.push(v);
      pos += v.length;
    }
    valueOffsets[i + 1] = pos;
  }
  // not Buffer.concat: a small result would sit in Buffer's shared pool, and a batch built here
  // owns its buffers whole (wire.ts may move them to an encoder thread)
  const data = new Uint8Array(pos);
  let at = 0;
  for (const p of parts) {
    data.set(p, at);
    at += p.length;
  }
  return finish(c, { valueOffsets, data });
}

/** decimal(P,S): 128-bit little-endian unscaled values from bigint, string, number or bytes. */
function buildDecimal(c: PrimitiveColumn, dec: { precision: number; scale: number }): arrow.Data {
  const { get, length, nullable, validity, path } = c;
  const data = new Uint32Array(length * 4);
  const limit = 10n ** BigInt(dec.precision);
  for (let i = 0; i < length; i++) {
    const v = nullCheck(get(i), i, nullable, validity, path);
    if (v === null || v === PARENT_NULL) continue;
    let u: bigint;
    if (typeof v === 'bigint') u = v;
    else if (typeof v === 'string' || typeof v === 'number') u = unscaledDecimal(v, dec.scale);
    else if (v instanceof Uint8Array) u = decimalFromBytes(v);
    else throw bad(path, 'a decimal (unscaled bigint, string, number or bytes)', v);
    if ((u < 0n ? -u : u) >= limit) throw bad(path, `at most ${dec.precision} digits (unscaled)`, u);
    let w = BigInt.asUintN(128, u);
    for (let k = 0; k < 4; k++) {
      data[i * 4 + k] = Number(w & 0xffffffffn);
      w >>= 32n;
    }
  }
  return finish(c, { data });
}

/** uuid (16 bytes or a UUID string), fixed[L]: `width` bytes per value. */
function buildFixedWidth(c: PrimitiveColumn, type: PrimitiveType, width: number): arrow.Data {
  const { get, length, nullable, validity, path } = c;
  const data = new Uint8Array(length * width);
  for (let i = 0; i < length; i++) {
    const v = nullCheck(get(i), i, nullable, validity, path);
    if (v === null || v === PARENT_NULL) continue;
    const bytes = type === 'uuid' && typeof v === 'string' ? uuidToBytes(v) : v;
    if (!(bytes instanceof Uint8Array) || bytes.length !== width)
      throw bad(path, `${width} bytes${type === 'uuid' ? ' or a UUID string' : ''}`, v);
    data.set(bytes, i * width);
  }
  return finish(c, { data });
}

/** Dispatches a primitive column to the builder of its type family. */
function buildPrimitive(
  type: PrimitiveType,
  arrowType: arrow.DataType,
  get: Get,
  length: number,
  nullable: boolean,
  path: string,
  rowBase: number,
): arrow.Data {
  const c: PrimitiveColumn = { arrowType, get, length, nullable, path, validity: new Validity(length, rowBase) };
  switch (type) {
    case 'boolean':
      return buildBoolean(c);
    case 'int':
    case 'date':
      return buildInt32(c, type);
    case 'long':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
    case 'timestamp_ns':
    case 'timestamptz_ns':
      return buildInt64(c);
    case 'float':
    case 'double':
      return buildFloating(c, type);
    case 'string':
      return buildString(c);
    case 'binary':
      return buildBinary(c);
    default: {
      const dec = parseDecimalType(type);
      if (dec) return buildDecimal(c, dec);
      const width = type === 'uuid' ? 16 : parseFixedType(type);
      if (width === undefined) throw new IcebergError('FeatureUnsupported', `column ${path}: type ${String(type)}`);
      return buildFixedWidth(c, type, width);
    }
  }
}

function mapEntries(v: unknown, path: string): Array<[unknown, unknown]> {
  if (v instanceof Map) return [...v.entries()];
  if (Array.isArray(v)) return v as Array<[unknown, unknown]>;
  if (typeof v === 'object' && v !== null && !(v instanceof Uint8Array)) return Object.entries(v);
  throw bad(path, 'a Map, an array of [key, value] or an object', v);
}

/**
 * Builds one Arrow Data for `type` from `get(0..length-1)`. Errors name slot i as row
 * `rowBase + i` (list and map children: element i).
 */
export function buildData(
  type: IcebergType,
  arrowType: arrow.DataType,
  get: Get,
  length: number,
  nullable: boolean,
  path: string,
  rowBase = 0,
): arrow.Data {
  if (typeof type === 'string') return buildPrimitive(type, arrowType, get, length, nullable, path, rowBase);
  const validity = new Validity(length, rowBase);
  switch (type.type) {
    case 'struct': {
      const vals: unknown[] = new Array(length);
      for (let i = 0; i < length; i++) {
        const v = nullCheck(get(i), i, nullable, validity, path);
        if (v !== null && v !== PARENT_NULL && (typeof v !== 'object' || v instanceof Uint8Array || Array.isArray(v)))
          throw bad(path, 'an object', v);
        vals[i] = v;
      }
      const children = type.fields.map((f, k) => {
        const childType = (arrowType as arrow.Struct).children[k]!.type;
        const childGet: Get = (i) => {
          const p = vals[i];
          return p === null || p === PARENT_NULL ? PARENT_NULL : (p as Record<string, unknown>)[f.name];
        };
        return buildData(f.type, childType, childGet, length, !f.required, `${path}.${f.name}`, rowBase);
      });
      return arrow.makeData({
        type: arrowType as arrow.Struct,
        length,
        nullCount: validity.nullCount,
        nullBitmap: validity.nullCount > 0 ? validity.bitmap : null,
        children,
      });
    }
    case 'list': {
      const valueOffsets = new Int32Array(length + 1);
      const flat: unknown[] = [];
      for (let i = 0; i < length; i++) {
        const v = nullCheck(get(i), i, nullable, validity, path);
        if (v !== null && v !== PARENT_NULL) {
          if (!Array.isArray(v)) throw bad(path, 'an array', v);
          for (const x of v) flat.push(x);
        }
        valueOffsets[i + 1] = flat.length;
      }
      const childField = (arrowType as arrow.List).children[0]!;
      const child = buildData(type.element, childField.type, (i) => flat[i], flat.length, !type['element-required'], `${path}.element`);
      return arrow.makeData({
        type: arrowType as arrow.List,
        length,
        nullCount: validity.nullCount,
        nullBitmap: validity.nullCount > 0 ? validity.bitmap : null,
        valueOffsets,
        child,
      });
    }
    case 'map': {
      const valueOffsets = new Int32Array(length + 1);
      const keys: unknown[] = [];
      const values: unknown[] = [];
      for (let i = 0; i < length; i++) {
        const v = nullCheck(get(i), i, nullable, validity, path);
        if (v !== null && v !== PARENT_NULL) {
          for (const [k, x] of mapEntries(v, path)) {
            keys.push(k);
            values.push(x);
          }
        }
        valueOffsets[i + 1] = keys.length;
      }
      const entriesType = (arrowType as arrow.Map_).children[0]!.type as arrow.Struct;
      const n = keys.length;
      const keyData = buildData(type.key, entriesType.children[0]!.type, (i) => keys[i], n, false, `${path}.key`);
      const valueData = buildData(type.value, entriesType.children[1]!.type, (i) => values[i], n, !type['value-required'], `${path}.value`);
      const entries = arrow.makeData({ type: entriesType, length: n, nullCount: 0, children: [keyData, valueData] });
      return arrow.makeData({
        type: arrowType as arrow.Map_,
        length,
        nullCount: validity.nullCount,
        nullBitmap: validity.nullCount > 0 ? validity.bitmap : null,
        valueOffsets,
        child: entries,
      });
    }
  }
}

function batchFrom(
  schema: Schema,
  arrowSchema: arrow.Schema,
  numRows: number,
  rowBase: number,
  getterFor: (f: NestedField) => Get,
  direct?: (f: NestedField, arrowType: arrow.DataType) => arrow.Data | undefined,
): arrow.RecordBatch {
  const children = schema.fields.map((f, k) => {
    const arrowType = arrowSchema.fields[k]!.type;
    return direct?.(f, arrowType) ?? buildData(f.type, arrowType, getterFor(f), numRows, !f.required, f.name, rowBase);
  });
  const struct = arrow.makeData({ type: new arrow.Struct(arrowSchema.fields), length: numRows, nullCount: 0, children });
  return new arrow.RecordBatch(arrowSchema, struct);
}

/**
 * Row objects keyed by field name -> one Arrow record batch (fields carry Iceberg ids): rows
 * [from, to) of `rows`, all by default; errors name rows by their index in `rows`.
 */
export function rowsToRecordBatch(
  schema: Schema,
  rows: readonly Row[],
  arrowSchema = icebergToArrowSchema(schema),
  from = 0,
  to = rows.length,
): arrow.RecordBatch {
  checkRange(from, to, rows.length);
  return batchFrom(schema, arrowSchema, to - from, from, (f) => {
    const name = f.name;
    return (i) => rows[from + i]![name];
  });
}

const TYPED_COLUMNS: Partial<Record<PrimitiveType, new (n: number) => ArrayLike<unknown>>> = {
  int: Int32Array,
  date: Int32Array,
  float: Float32Array,
  double: Float64Array,
  long: BigInt64Array,
  time: BigInt64Array,
  timestamp: BigInt64Array,
  timestamptz: BigInt64Array,
  timestamp_ns: BigInt64Array,
  timestamptz_ns: BigInt64Array,
};

/**
 * A typed-array column of exactly the Arrow value type holds no nulls and no out-of-range
 * values, so it becomes the Arrow values buffer by one copy instead of a checked loop per value
 * (a copy: the caller may reuse its array).
 */
function typedColumnData(
  type: IcebergType,
  arrowType: arrow.DataType,
  col: ArrayLike<unknown> | undefined,
  from: number,
  to: number,
): arrow.Data | undefined {
  if (typeof type !== 'string' || col === undefined) return undefined;
  const ctor = TYPED_COLUMNS[type];
  if (ctor === undefined || !(col instanceof ctor)) return undefined;
  const data = (col as unknown as Int32Array).slice(from, to);
  return arrow.makeData({ type: arrowType, length: to - from, nullCount: 0, nullBitmap: null, data } as never);
}

function checkRange(from: number, to: number, numRows: number): void {
  if (!(Number.isSafeInteger(from) && Number.isSafeInteger(to) && from >= 0 && from <= to && to <= numRows)) {
    throw new IcebergError('Unexpected', `rows [${from}, ${to}) of ${numRows}: not a range of them`);
  }
}

/**
 * Columnar input (the fast path): one array per top-level field, all of length `numRows`.
 * A missing column is all-null (and fails if the field is required). Rows [from, to), all by
 * default; errors name rows by their index in the columns.
 */
export function columnsToRecordBatch(
  schema: Schema,
  columns: Columns,
  numRows: number,
  arrowSchema = icebergToArrowSchema(schema),
  from = 0,
  to = numRows,
): arrow.RecordBatch {
  checkLengths(columns, numRows);
  checkRange(from, to, numRows);
  return columnsRange(schema, columns, arrowSchema, from, to);
}

function checkLengths(columns: Columns, numRows: number): void {
  for (const [name, col] of Object.entries(columns)) {
    if (col.length !== numRows) throw IcebergError.mismatch('DataInvalid', `column ${name} length`, numRows, col.length);
  }
}

/** Rows [from, to) of columns already checked. */
function columnsRange(schema: Schema, columns: Columns, arrowSchema: arrow.Schema, from: number, to: number): arrow.RecordBatch {
  return batchFrom(
    schema,
    arrowSchema,
    to - from,
    from,
    (f) => {
      const col = columns[f.name];
      return col === undefined ? () => null : (i) => col[from + i];
    },
    (f, arrowType) => typedColumnData(f.type, arrowType, columns[f.name], from, to),
  );
}

/** Batches of rows [a, b), `chunkRows` at a time, each built when the consumer asks for it. */
function* inChunks(numRows: number, chunkRows: number, build: (a: number, b: number) => arrow.RecordBatch): Generator<arrow.RecordBatch> {
  for (let a = 0; a < numRows; a += chunkRows) yield build(a, Math.min(numRows, a + chunkRows));
}

/**
 * Rows in batches of `chunkRows`, each built when the consumer asks for it: a large input is
 * never all Arrow at once, and each chunk's buffers are small enough for the allocator to reuse
 * freed ones (fresh memory costs a page fault per 4 KiB on first touch).
 */
export function rowsToRecordBatches(
  schema: Schema,
  rows: readonly Row[],
  arrowSchema = icebergToArrowSchema(schema),
  chunkRows = BUILD_CHUNK_ROWS,
): Generator<arrow.RecordBatch> {
  return inChunks(rows.length, chunkRows, (a, b) => rowsToRecordBatch(schema, rows, arrowSchema, a, b));
}

/** Columns in batches of `chunkRows`, as rowsToRecordBatches (their lengths checked once, at the first). */
export function* columnsToRecordBatches(
  schema: Schema,
  columns: Columns,
  numRows: number,
  arrowSchema = icebergToArrowSchema(schema),
  chunkRows = BUILD_CHUNK_ROWS,
): Generator<arrow.RecordBatch> {
  checkLengths(columns, numRows);
  yield* inChunks(numRows, chunkRows, (a, b) => columnsRange(schema, columns, arrowSchema, a, b));
}
