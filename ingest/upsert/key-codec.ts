/**
 * Row keys of an upsert table: the values of its identifier columns, encoded to one exact,
 * compact string per row. The bytes are the values in a fixed binary form (ints and dates as
 * 4-byte, longs and timestamps as 8-byte two's complement, decimals as their 16-byte unscaled
 * value, uuids as 16 bytes, strings as their UTF-8 bytes, booleans as one byte), held as a
 * Latin-1 string: V8 stores it as a one-byte string (16-byte header + 1 byte per byte) and a Map
 * hashes and compares it by value. A long key is 8 bytes, never a decimal rendering.
 *
 * Keys are decoded from Arrow data conformed to the table's types (conformBatch, by field id),
 * never from JS values of whatever type a reader produced: an int column promoted to long, a
 * long read as a number or as a bigint, all give the same key. A writer's rows go through the
 * same Arrow builder as the rows it writes (rowsToRecordBatch), so its keys are those a later
 * scan of its files finds.
 */
import type * as arrow from 'apache-arrow';
import {
  IcebergError,
  conformBatch,
  decimalFromBytes,
  formatDecimal,
  icebergToArrowSchema,
  parseDecimalType,
  rowsToRecordBatch,
  uuidFromBytes,
  type NestedField,
  type PrimitiveType,
  type Row,
  type Schema,
} from '../../iceberg';

type KeyColumnKind = 'boolean' | 'int' | 'long' | 'string' | 'uuid' | 'decimal';

interface KeyColumn {
  field: NestedField;
  kind: KeyColumnKind;
  /** the table's type, for describing a key */
  type: PrimitiveType;
}

const KIND_OF: Partial<Record<string, KeyColumnKind>> = {
  boolean: 'boolean',
  int: 'int',
  date: 'int',
  long: 'long',
  timestamp: 'long',
  timestamptz: 'long',
  string: 'string',
  uuid: 'uuid',
};
const WIDTH: Record<Exclude<KeyColumnKind, 'string'>, number> = { boolean: 1, int: 4, long: 8, uuid: 16, decimal: 16 };
const SUPPORTED = 'int, long, string, date, timestamp, timestamptz, decimal(P,S), uuid, boolean';

/** Encodes and describes the keys of one table schema's identifier columns (in the order given). */
export class KeyCodec {
  readonly columns: readonly KeyColumn[];
  /** the id columns alone, optional so that a null reaches our check (which names the file) */
  private readonly projection: Schema;
  private readonly arrowProjection: arrow.Schema;
  private scratch = Buffer.alloc(256);

  constructor(schema: Schema, idColumns: readonly string[]) {
    if (idColumns.length === 0) throw new IcebergError('DataInvalid', 'key index: no identifier columns given', { retryable: false });
    if (new Set(idColumns).size !== idColumns.length)
      throw IcebergError.mismatch('DataInvalid', 'key index identifier columns', 'distinct names', idColumns.join(', '), false);
    this.columns = idColumns.map((name) => {
      const field = schema.fields.find((f) => f.name === name);
      if (!field) {
        throw IcebergError.mismatch(
          'DataInvalid',
          `key index identifier column ${name}`,
          'a top-level column',
          `none of ${schema.fields.map((f) => f.name).join(', ')}`,
          false,
        );
      }
      const type = field.type;
      const kind = typeof type === 'string' ? (KIND_OF[type] ?? (parseDecimalType(type) ? 'decimal' : undefined)) : undefined;
      if (kind === undefined) {
        throw IcebergError.mismatch(
          'FeatureUnsupported',
          `key index identifier column ${name} type`,
          `one of ${SUPPORTED}`,
          typeof type === 'string' ? type : type.type,
          false,
        );
      }
      return { field, kind, type: type as PrimitiveType };
    });
    this.projection = {
      type: 'struct',
      'schema-id': schema['schema-id'],
      fields: this.columns.map((c) => ({ ...c.field, required: false })),
    };
    this.arrowProjection = icebergToArrowSchema(this.projection);
  }

  /** The top-level column names to read from a data file. */
  get names(): string[] {
    return this.columns.map((c) => c.field.name);
  }

  /** Same columns, same types: keys of one codec are keys of the other. */
  sameAs(other: KeyCodec): boolean {
    return (
      other.columns.length === this.columns.length &&
      other.columns.every((c, i) => c.field.id === this.columns[i]!.field.id && c.type === this.columns[i]!.type)
    );
  }

  /**
   * The key of every row of `batch` (a batch read from a data file, any Arrow layout conformBatch
   * accepts), in row order. `where` names the rows' source in the error a null id raises.
   */
  keysOfBatch(batch: arrow.RecordBatch, where: string, firstRow = 0): string[] {
    const conformed = conformBatch(this.projection, batch, this.arrowProjection);
    const cols = conformed.data.children;
    for (let c = 0; c < cols.length; c++) {
      const d = cols[c]!;
      if (d.nullCount > 0) {
        let i = 0;
        while (d.getValid(i)) i++;
        throw new IcebergError(
          'DataInvalid',
          `${where}: identifier column ${this.columns[c]!.field.name} is null at row ${firstRow + i}: expected a value, found null (identifier columns must not be null)`,
          { retryable: false, context: { where, column: this.columns[c]!.field.name, row: firstRow + i } },
        );
      }
    }
    const n = conformed.numRows;
    const keys = new Array<string>(n);
    for (let i = 0; i < n; i++) {
      let at = 0;
      for (let c = 0; c < cols.length; c++) at = this.write(this.columns[c]!.kind, cols[c]!, i, at, c === cols.length - 1);
      keys[i] = this.scratch.toString('latin1', 0, at);
    }
    return keys;
  }

  /**
   * Keys of a writer's rows (objects keyed by column name, values as the Parquet writer accepts
   * them: see iceberg/parquet/columns.ts), in row order.
   */
  keysOfRows(rows: readonly Row[], where = 'rows'): string[] {
    return this.keysOfBatch(rowsToRecordBatch(this.projection, rows, this.arrowProjection), where);
  }

  /** A readable form of a key for reports: `id=42, region="eu"`. */
  describe(key: string): string {
    const b = Buffer.from(key, 'latin1');
    let at = 0;
    const parts: string[] = [];
    this.columns.forEach((c, k) => {
      let v: string;
      switch (c.kind) {
        case 'boolean':
          v = String(b[at] === 1);
          at += 1;
          break;
        case 'int': {
          const x = b.readInt32BE(at);
          v = c.type === 'date' ? new Date(x * 86_400_000).toISOString().slice(0, 10) : String(x);
          at += 4;
          break;
        }
        case 'long':
          v = String(b.readBigInt64BE(at));
          at += 8;
          break;
        case 'uuid':
          v = uuidFromBytes(b.subarray(at, at + 16));
          at += 16;
          break;
        case 'decimal':
          v = formatDecimal(decimalFromBytes(Uint8Array.from(b.subarray(at, at + 16)).reverse()), parseDecimalType(c.type)!.scale);
          at += 16;
          break;
        case 'string': {
          let len = b.length - at;
          if (k < this.columns.length - 1) {
            len = b.readUInt32BE(at);
            at += 4;
          }
          v = JSON.stringify(b.toString('utf8', at, at + len));
          at += len;
          break;
        }
      }
      parts.push(`${c.field.name}=${v}`);
    });
    return parts.join(', ');
  }

  private ensure(n: number): void {
    if (n <= this.scratch.length) return;
    const next = Buffer.alloc(Math.max(n, this.scratch.length * 2));
    this.scratch.copy(next);
    this.scratch = next;
  }

  /** Writes row `i` of column `d` at byte `at` of the scratch buffer; returns the end. */
  private write(kind: KeyColumnKind, d: arrow.Data, i: number, at: number, last: boolean): number {
    const j = d.offset + i;
    if (kind === 'string') {
      const offsets = d.valueOffsets as Int32Array;
      const from = offsets[j]!,
        to = offsets[j + 1]!;
      const len = to - from;
      // a string followed by other columns carries its length, so ("ab","c") and ("a","bc") differ
      this.ensure(at + len + 4);
      if (!last) at = this.scratch.writeUInt32BE(len, at);
      this.scratch.set((d.values as Uint8Array).subarray(from, to), at);
      return at + len;
    }
    this.ensure(at + WIDTH[kind]);
    const s = this.scratch;
    switch (kind) {
      case 'boolean':
        return s.writeUInt8(((d.values as Uint8Array)[j >> 3]! >> (j & 7)) & 1, at);
      case 'int':
        return s.writeInt32BE((d.values as Int32Array)[j]!, at);
      case 'long': {
        const v = d.values as BigInt64Array | Int32Array;
        // Arrow keeps 64-bit values as BigInt64Array, or as (lo, hi) Int32 pairs in older layouts
        if (v instanceof BigInt64Array) return s.writeBigInt64BE(v[j]!, at);
        s.writeInt32BE(v[2 * j + 1]!, at);
        return s.writeUInt32BE(v[2 * j]! >>> 0, at + 4);
      }
      case 'uuid':
        s.set((d.values as Uint8Array).subarray(16 * j, 16 * j + 16), at);
        return at + 16;
      case 'decimal': {
        // the unscaled 128-bit value as Arrow holds it (little-endian words): exact, fixed width
        const w = d.values as Uint32Array;
        for (let k = 0; k < 4; k++) s.writeUInt32LE(w[4 * j + k]!, at + 4 * k);
        return at + 16;
      }
    }
  }
}
