/**
 * Flat Arrow batches as they cross to an encoder thread (encoder-pool.ts): each column's buffers
 * copied to exactly its rows and transferred, instead of serializing an Arrow IPC stream
 * (tableToIPC cost ~1/3 of building the batch; a copy is a memcpy). Copies, because a batch's
 * buffers are often shared with other slices (the partitioned writer slices one batch per
 * partition), and a transfer would detach them. Bitmaps are re-based to bit 0.
 *
 * Only for flat schemas (flatEncodable): nested batches still cross as IPC, which parquet-wasm
 * reads as is.
 */
import * as arrow from 'apache-arrow';
import { IcebergError } from '../errors';

export interface WireColumn {
  length: number;
  nullCount: number;
  /** validity bits from bit 0; null when nothing is null */
  nullBitmap: Uint8Array | null;
  /** fixed width: the values; booleans: their bits from bit 0; strings/binary: the bytes */
  values: ArrayBufferView;
  /** strings/binary: offsets into `values`, from 0 */
  valueOffsets?: Int32Array;
}

export interface WireBatch {
  numRows: number;
  columns: WireColumn[];
}

/** n bits of `src` from bit `from`, as a new bitmap starting at bit 0. */
function bitsFrom(src: Uint8Array, from: number, n: number): Uint8Array {
  const out = new Uint8Array((n + 7) >> 3);
  const shift = from & 7,
    base = from >> 3;
  if (shift === 0) {
    out.set(src.subarray(base, base + out.length));
    return out;
  }
  for (let i = 0; i < out.length; i++) out[i] = ((src[base + i]! >> shift) | ((src[base + i + 1] ?? 0) << (8 - shift))) & 0xff;
  return out;
}

/**
 * The batch's columns as wire columns, and the buffers to transfer. `owned`: the caller hands the
 * batch over (encoder-pool.ts, FileEncoder.write), so a buffer that starts at its column's first
 * row and is used by nothing else moves as it is; anything else is copied.
 */
export function toWire(batch: arrow.RecordBatch, owned = false): { wire: WireBatch; transfer: ArrayBuffer[] } {
  const transfer = new Set<ArrayBuffer>();
  /** `view` itself when it may move (owned, from the start of a buffer no other column of the batch uses), else null. */
  const movable = <T extends ArrayBufferView>(view: T): T | null => {
    const buffer = view.buffer as ArrayBuffer;
    if (!owned || view.byteOffset !== 0 || transfer.has(buffer) || buffer instanceof SharedArrayBuffer) return null;
    // never a slab of Buffer's pool, which small Buffers elsewhere share (columns.ts allocates
    // none, this guards the rule): a buffer a view does not span must be larger than a slab
    if (view.byteLength !== buffer.byteLength && buffer.byteLength <= Buffer.poolSize) return null;
    transfer.add(buffer);
    return view;
  };
  const columns = batch.data.children.map((d): WireColumn => {
    const n = d.length;
    if (d.children.length > 0) throw new IcebergError('Unexpected', 'toWire: nested column (flat batches only)');
    const bitmap = d.nullCount > 0 && d.nullBitmap ? d.nullBitmap : null;
    const nullBitmap = bitmap && ((d.offset === 0 && movable(bitmap)) || bitsFrom(bitmap, d.offset, n));
    let values: ArrayBufferView, valueOffsets: Int32Array | undefined;
    if (arrow.DataType.isBool(d.type))
      values = (d.offset === 0 && movable(d.values as Uint8Array)) || bitsFrom(d.values as Uint8Array, d.offset, n);
    else if (d.valueOffsets) {
      const off = d.valueOffsets as Int32Array,
        a = off[0]!;
      if (a === 0 && off.length === n + 1 && movable(off)) {
        valueOffsets = off;
        values = movable(d.values as Uint8Array) ?? (d.values as Uint8Array).slice(0, off[n]!);
      } else {
        values = (d.values as Uint8Array).slice(a, off[n]!);
        valueOffsets = new Int32Array(n + 1);
        for (let i = 0; i <= n; i++) valueOffsets[i] = off[i]! - a;
      }
    } else values = movable(d.values as Int32Array) ?? (d.values as Int32Array).slice(0, n * d.stride);
    for (const v of [nullBitmap, values, valueOffsets]) if (v) transfer.add(v.buffer as ArrayBuffer);
    return { length: n, nullCount: nullBitmap ? d.nullCount : 0, nullBitmap, values, ...(valueOffsets ? { valueOffsets } : {}) };
  });
  return { wire: { numRows: batch.numRows, columns }, transfer: [...transfer] };
}

/** The batch again, on the thread, in `arrowSchema`'s layout. */
export function fromWire(arrowSchema: arrow.Schema, wire: WireBatch): arrow.RecordBatch {
  const children = wire.columns.map((c, k) => {
    const type = arrowSchema.fields[k]!.type as arrow.DataType;
    return arrow.makeData({
      type,
      length: c.length,
      nullCount: c.nullCount,
      nullBitmap: c.nullBitmap,
      data: c.values,
      ...(c.valueOffsets ? { valueOffsets: c.valueOffsets } : {}),
    } as never);
  });
  const data = arrow.makeData({ type: new arrow.Struct(arrowSchema.fields), length: wire.numRows, nullCount: 0, children });
  return new arrow.RecordBatch(arrowSchema, data);
}
