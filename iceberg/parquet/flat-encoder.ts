/**
 * Parquet encoding for flat schemas (every field a primitive), straight from Arrow buffers: no
 * IPC copy, no wasm, and compression by Node's native zlib (ZSTD, gzip, brotli).
 *
 * Why hand-rolled: parquet-wasm (parquet-rs in wasm) spends ~2x pyarrow's whole write on encode
 * alone, plus an Arrow IPC copy in and out of wasm memory, and npm has no maintained native
 * Parquet writer that writes field ids. A flat column is the simple case of the format: PLAIN
 * values (Arrow's little-endian buffers are already PLAIN), definition levels that are Arrow's
 * validity bitmap bit-packed as is, and a dictionary for low-cardinality strings. Nested types
 * (repetition levels), decimals, uuid/fixed and the snappy/lz4 codecs stay with parquet-wasm
 * (`flatEncodable` decides). The files are read back by parquet-rs, pyarrow, PyIceberg, DuckDB
 * and Java iceberg-core in the tests.
 *
 * Layout, as parquet-mr and parquet-rs write it: "PAR1", row groups back to back (each column
 * chunk: an optional dictionary page, then v1 data pages), the Thrift footer, its length, "PAR1".
 * Statistics: null counts for every column, min/max for numeric columns (column order TYPE_ORDER).
 *
 * Pages are compressed off the calling thread, on libuv's thread pool (zlib's asynchronous API),
 * while the caller goes on encoding the next pages: ZSTD is about half of the encoder's CPU, and
 * this way it runs on the other core. Offsets and page headers (which carry the compressed size)
 * are laid out in `finish()`, once every page is back. `write()` waits when more than
 * `MAX_INFLIGHT_BYTES` of page bodies are queued, so a large batch never holds all of its pages
 * uncompressed at once.
 */
import { brotliCompress, constants as zc, gzip, zstdCompress } from 'node:zlib';
import type * as arrow from 'apache-arrow';
import { IcebergError } from '../errors';
import { floeVersion } from '../version';
import type { NestedField, PrimitiveType, Schema } from '../spec/types';
import { bin, bool, encodeStruct, i32, i64, list, struct, type TStruct } from './thrift';
import type { FooterFacts, ParquetCodec, ParquetWriteOptions } from './options';

/** Codecs this encoder compresses with Node's zlib; parquet.thrift CompressionCodec numbers. */
const CODEC_IDS: Partial<Record<ParquetCodec, number>> = { uncompressed: 0, gzip: 2, brotli: 4, zstd: 6 };

type Kind = 'bool' | 'i32' | 'i64' | 'f32' | 'f64' | 'bytes';

interface Leaf {
  field: NestedField;
  kind: Kind;
  /** parquet.thrift Type */
  physical: number;
  converted?: number;
  logical?: TStruct;
}

const TIME_UNIT_MICROS: TStruct = [[2, struct([])]];
const TIME_UNIT_NANOS: TStruct = [[3, struct([])]];

/** Parquet physical type, converted and logical type of a flat Iceberg primitive; undefined: not here. */
function leafOf(field: NestedField): Leaf | undefined {
  const t = field.type as PrimitiveType;
  if (typeof field.type !== 'string') return undefined;
  const ts = (utc: boolean, unit: TStruct): TStruct => [
    [
      8,
      struct([
        [1, bool(utc)],
        [2, struct(unit)],
      ]),
    ],
  ];
  switch (t) {
    case 'boolean':
      return { field, kind: 'bool', physical: 0 };
    case 'int':
      return { field, kind: 'i32', physical: 1 };
    case 'date':
      return { field, kind: 'i32', physical: 1, converted: 6, logical: [[6, struct([])]] };
    case 'long':
      return { field, kind: 'i64', physical: 2 };
    case 'time':
      return {
        field,
        kind: 'i64',
        physical: 2,
        logical: [
          [
            7,
            struct([
              [1, bool(false)],
              [2, struct(TIME_UNIT_MICROS)],
            ]),
          ],
        ],
      };
    case 'timestamp':
      return { field, kind: 'i64', physical: 2, logical: ts(false, TIME_UNIT_MICROS) };
    case 'timestamptz':
      return { field, kind: 'i64', physical: 2, converted: 10, logical: ts(true, TIME_UNIT_MICROS) };
    case 'timestamp_ns':
      return { field, kind: 'i64', physical: 2, logical: ts(false, TIME_UNIT_NANOS) };
    case 'timestamptz_ns':
      return { field, kind: 'i64', physical: 2, logical: ts(true, TIME_UNIT_NANOS) };
    case 'float':
      return { field, kind: 'f32', physical: 4 };
    case 'double':
      return { field, kind: 'f64', physical: 5 };
    case 'string':
      return { field, kind: 'bytes', physical: 6, converted: 0, logical: [[1, struct([])]] };
    case 'binary':
      return { field, kind: 'bytes', physical: 6 };
    default:
      return undefined; // uuid, fixed[n], decimal(p, s)
  }
}

/** True when this encoder writes files of `schema` with `codec` (else parquet-wasm does). */
export function flatEncodable(schema: Schema, codec: ParquetCodec = 'zstd'): boolean {
  return CODEC_IDS[codec] !== undefined && schema.fields.length > 0 && schema.fields.every((f) => leafOf(f) !== undefined);
}

const WIDTH: Record<Kind, number> = { bool: 0.125, i32: 4, i64: 8, f32: 4, f64: 8, bytes: 0 };

/** 32-bit words over a fixed-width values buffer (a copy only when it is not 4-byte aligned). */
function words(v: ArrayBufferView, from: number, to: number, width: number): Int32Array {
  const start = v.byteOffset + from * width,
    len = ((to - from) * width) >> 2;
  if (start % 4 === 0) return new Int32Array(v.buffer, start, len);
  return new Int32Array(new Uint8Array(v.buffer, start, len * 4).slice().buffer);
}

/** A growing byte buffer. */
class Bytes {
  buf: Uint8Array;
  pos = 0;
  constructor(size = 1024) {
    this.buf = new Uint8Array(size);
  }
  room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const grown = new Uint8Array(Math.max(this.buf.length * 2, this.pos + n));
    grown.set(this.buf.subarray(0, this.pos));
    this.buf = grown;
  }
  uvarint(v: number): void {
    this.room(5);
    while (v >= 0x80) {
      this.buf[this.pos++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    this.buf[this.pos++] = v;
  }
  u32(v: number): void {
    this.room(4);
    const b = this.buf;
    b[this.pos] = v & 0xff;
    b[this.pos + 1] = (v >>> 8) & 0xff;
    b[this.pos + 2] = (v >>> 16) & 0xff;
    b[this.pos + 3] = (v >>> 24) & 0xff;
    this.pos += 4;
  }
  set(src: Uint8Array): void {
    this.room(src.length);
    this.buf.set(src, this.pos);
    this.pos += src.length;
  }
  /** Bytes [a, e) of `src`, copied without a view of them (a subarray per value is garbage). */
  setRange(src: Uint8Array, a: number, e: number): void {
    this.room(e - a);
    this.pos += copyRange(src, this.buf, this.pos, a, e);
  }
  view(): Uint8Array {
    return this.buf.subarray(0, this.pos);
  }
}

/**
 * Copies bytes [a, e) of `src` to `dst` at `at` natively (Buffer's copy takes any Uint8Array),
 * without creating a view: a `subarray` per value made ~50 MB of garbage per 500k 100-byte
 * strings. Returns the bytes copied.
 */
function copyRange(src: Uint8Array, dst: Uint8Array, at: number, a: number, e: number): number {
  const n = (Buffer.prototype.copy as (this: Uint8Array, t: Uint8Array, ts: number, ss: number, se: number) => number).call(
    src,
    dst,
    at,
    a,
    e,
  );
  // Buffer's copy stops at the end of `dst` where a typed-array set would throw: never silently short
  if (n !== e - a) throw new IcebergError('Unexpected', `Parquet encoder: copied ${n} of ${e - a} bytes`);
  return n;
}

/** Bit-packs `n` values of `bitWidth` bits (LSB first) as one RLE/bit-packed hybrid run. */
function bitPackRun(out: Bytes, values: Uint32Array, n: number, bitWidth: number): void {
  const groups = (n + 7) >> 3;
  out.uvarint((groups << 1) | 1);
  out.room(groups * bitWidth);
  const b = out.buf;
  let pos = out.pos,
    acc = 0,
    bits = 0;
  const total = groups * 8;
  for (let i = 0; i < total; i++) {
    const v = i < n ? values[i]! : 0;
    acc |= v << bits;
    bits += bitWidth;
    while (bits >= 8) {
      b[pos++] = acc & 0xff;
      acc >>>= 8;
      bits -= 8;
    }
  }
  out.pos = pos;
}

/**
 * A dictionary of byte strings: open addressing over FNV-1a hashes of the bytes, entries kept
 * as the dictionary page's PLAIN bytes (u32 length, then the bytes). No JS string per value.
 */
class ByteDictionary {
  readonly bytes = new Bytes(4096);
  size = 0;
  private starts: Int32Array = new Int32Array(256);
  private lens: Int32Array = new Int32Array(256);
  private hashes: Int32Array = new Int32Array(256);
  private slots = new Int32Array(512); // entry + 1; 0 = empty

  /** The entry of bytes [a, e) of `src`, added if new. */
  add(src: Uint8Array, a: number, e: number): number {
    let h = 0x811c9dc5 | 0;
    for (let k = a; k < e; k++) h = Math.imul(h ^ src[k]!, 0x01000193);
    const len = e - a,
      mask = this.slots.length - 1;
    let s = h & mask;
    for (let v = this.slots[s]!; v !== 0; v = this.slots[s]!) {
      const id = v - 1;
      if (this.hashes[id] === h && this.lens[id] === len && this.equal(id, src, a, e)) return id;
      s = (s + 1) & mask;
    }
    const id = this.size++;
    if (id === this.starts.length) {
      const grow = (x: Int32Array): Int32Array => {
        const y = new Int32Array(x.length * 2);
        y.set(x);
        return y;
      };
      this.starts = grow(this.starts);
      this.lens = grow(this.lens);
      this.hashes = grow(this.hashes);
    }
    this.bytes.u32(len);
    this.starts[id] = this.bytes.pos;
    this.bytes.setRange(src, a, e);
    this.lens[id] = len;
    this.hashes[id] = h;
    this.slots[s] = id + 1;
    if (this.size * 2 > this.slots.length) this.rehash(this.slots.length * 2);
    return id;
  }

  // Buffer views for native comparison of long values, remade when their memory changes
  private srcView: Buffer | undefined;
  private dictView: Buffer | undefined;

  /** Whether entry `id` holds bytes [a, e) of `src` (lengths already equal). */
  private equal(id: number, src: Uint8Array, a: number, e: number): boolean {
    const b = this.bytes.buf,
      p = this.starts[id]!;
    if (e - a < 64) {
      for (let k = a, q = p; k < e; k++, q++) if (b[q] !== src[k]) return false;
      return true;
    }
    // long values: memcmp through Buffer.compare (a JS loop costs ~1 ns per byte)
    let v = this.srcView,
      d = this.dictView;
    if (v?.buffer !== src.buffer || v.byteOffset !== src.byteOffset || v.byteLength !== src.byteLength) {
      v = this.srcView = Buffer.from(src.buffer, src.byteOffset, src.byteLength);
    }
    if (d?.buffer !== b.buffer) d = this.dictView = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
    return v.compare(d, p, p + (e - a), a, e) === 0;
  }

  /** Drops the entries from `size` on (a page that did not fit). */
  truncate(size: number): void {
    if (size >= this.size) return;
    this.bytes.pos = this.starts[size]! - 4;
    this.size = size;
    this.rehash(this.slots.length);
  }

  private rehash(slots: number): void {
    this.slots = new Int32Array(slots);
    const mask = slots - 1;
    for (let id = 0; id < this.size; id++) {
      let s = this.hashes[id]! & mask;
      while (this.slots[s] !== 0) s = (s + 1) & mask;
      this.slots[s] = id + 1;
    }
  }
}

interface Segment {
  data: arrow.Data;
  from: number;
  to: number;
}

/**
 * A page whose body is being compressed. Its header (which carries the compressed size) is made
 * when the pages are laid out.
 */
interface Page {
  /** The page header for a compressed body of `compressed` bytes. */
  header: (compressed: number) => Uint8Array;
  /** Uncompressed body bytes. */
  raw: number;
  /** The compressed body, once compression finished. */
  body?: Uint8Array;
}

/** A finished column chunk whose pages may still be compressing. */
interface PendingChunk {
  leaf: Leaf;
  encodings: number[];
  numValues: number;
  nullCount: number;
  dictionary?: Page;
  pages: Page[];
  min?: Uint8Array;
  max?: Uint8Array;
}

/** A column chunk laid out in the file. */
interface ChunkMeta extends Omit<PendingChunk, 'dictionary' | 'pages'> {
  uncompressed: number;
  compressed: number;
  dictionaryOffset?: number;
  dataOffset: number;
  start: number;
}

const ENC_PLAIN = 0,
  ENC_RLE = 3,
  ENC_RLE_DICTIONARY = 8;

/** One column's pages for the row group being written. */
class ColumnWriter {
  private segs: Segment[] = [];
  private segRows = 0;
  private segBytes = 0;
  private pages: Page[] = [];
  private dict: ByteDictionary | undefined;
  private dictFull = false;
  private usedDict = false;
  private usedPlain = false;
  private numValues = 0;
  private nullCount = 0;
  private lo: number | bigint | undefined;
  private hi: number | bigint | undefined;
  private readonly optional: boolean;

  constructor(
    readonly leaf: Leaf,
    private readonly enc: FlatParquetEncoder,
    private readonly dictionary: boolean,
  ) {
    this.optional = !leaf.field.required;
    this.reset();
  }

  private reset(): void {
    this.segs = [];
    this.segRows = this.segBytes = 0;
    this.pages = [];
    this.dict = this.dictionary ? new ByteDictionary() : undefined;
    this.dictFull = !this.dictionary;
    this.usedDict = this.usedPlain = false;
    this.numValues = this.nullCount = 0;
    this.lo = this.hi = undefined;
  }

  /** Plain bytes of rows [from, to) of `data` (page sizing). */
  private rowBytes(data: arrow.Data, from: number, to: number): number {
    if (this.leaf.kind !== 'bytes') return (to - from) * WIDTH[this.leaf.kind];
    const off = data.valueOffsets as Int32Array;
    return off[to]! - off[from]! + 4 * (to - from);
  }

  add(data: arrow.Data, from: number, to: number): void {
    const page = this.enc.pageSizeBytes;
    while (from < to) {
      let end = to;
      const bytes = this.rowBytes(data, from, to);
      if (this.segBytes + bytes > page) {
        // rows that fill this page: fixed width by arithmetic, strings by their offsets
        const room = page - this.segBytes;
        if (this.leaf.kind !== 'bytes') end = Math.min(to, from + Math.max(1, Math.ceil(room / WIDTH[this.leaf.kind])));
        else {
          const off = data.valueOffsets as Int32Array;
          const base = off[from]! - 4 * from;
          // the first row at which the page is full: offsets only grow, so a binary search
          let lo = from + 1,
            hi = to;
          while (lo < hi) {
            const mid = (lo + hi) >>> 1;
            if (off[mid]! + 4 * mid - base < room) lo = mid + 1;
            else hi = mid;
          }
          end = lo;
        }
      }
      this.segs.push({ data, from, to: end });
      this.segRows += end - from;
      this.segBytes += this.rowBytes(data, from, end);
      from = end;
      if (this.segBytes >= page) this.flushPage();
    }
  }

  /** Definition levels of the buffered rows: Arrow validity bits, bit-packed (bit width 1). */
  private defLevels(out: Bytes): number {
    const n = this.segRows;
    const bits = new Uint8Array((n + 7) >> 3);
    let at = 0,
      nulls = 0;
    for (const { data, from, to } of this.segs) {
      const k = to - from;
      if (data.nullCount === 0 || !data.nullBitmap) {
        setBits(bits, at, k);
      } else {
        copyBits(bits, at, data.nullBitmap, data.offset + from, k);
        nulls += k - popcount(bits, at, k);
      }
      at += k;
    }
    const start = out.pos;
    out.u32(0); // length, patched below
    if (nulls === 0) {
      out.uvarint(n << 1); // one RLE run of level 1
      out.room(1);
      out.buf[out.pos++] = 1;
    } else {
      out.uvarint((bits.length << 1) | 1);
      out.set(bits);
    }
    const len = out.pos - start - 4;
    out.buf[start] = len & 0xff;
    out.buf[start + 1] = (len >>> 8) & 0xff;
    out.buf[start + 2] = (len >>> 16) & 0xff;
    out.buf[start + 3] = (len >>> 24) & 0xff;
    return nulls;
  }

  flushPage(): void {
    const n = this.segRows;
    if (n === 0) return;
    // a fresh buffer per page: it is compressed while the next pages are built
    const body = new Bytes(Math.ceil(this.segBytes) + 64 + (n >> 3));
    const nulls = this.optional ? this.defLevels(body) : 0;
    let encoding = ENC_PLAIN;
    if (this.leaf.kind === 'bytes') encoding = this.bytesValues(body);
    else if (this.leaf.kind === 'bool') this.boolValues(body);
    else this.fixedValues(body);
    if (encoding === ENC_RLE_DICTIONARY) this.usedDict = true;
    else this.usedPlain = true;
    const raw = body.pos;
    this.pages.push(
      this.enc.compress(body.view(), (compressed) =>
        encodeStruct([
          [1, i32(0)], // DATA_PAGE
          [2, i32(raw)],
          [3, i32(compressed)],
          [
            5,
            struct([
              [1, i32(n)],
              [2, i32(encoding)],
              [3, i32(ENC_RLE)],
              [4, i32(ENC_RLE)],
            ]),
          ],
        ]),
      ),
    );
    this.numValues += n;
    this.nullCount += nulls;
    this.segs = [];
    this.segRows = this.segBytes = 0;
  }

  /** PLAIN little-endian values of the non-null rows, and their min/max. */
  private fixedValues(out: Bytes): void {
    const kind = this.leaf.kind;
    const width = WIDTH[kind];
    const wpv = width >> 2; // 32-bit words per value
    for (const { data, from, to } of this.segs) {
      const values = data.values as ArrayBufferView;
      const src = words(values, from, to, width);
      let dst: Int32Array;
      if (data.nullCount === 0 || !data.nullBitmap) {
        out.set(new Uint8Array(src.buffer, src.byteOffset, src.byteLength));
        dst = src;
      } else {
        const bitmap = data.nullBitmap,
          base = data.offset + from;
        out.room(src.byteLength);
        const tmp = new Int32Array(src.length);
        let j = 0;
        for (let i = 0, k = to - from; i < k; i++) {
          const bit = base + i;
          if ((bitmap[bit >> 3]! >> (bit & 7)) & 1) {
            for (let w = 0; w < wpv; w++) tmp[j++] = src[i * wpv + w]!;
          }
        }
        dst = tmp.subarray(0, j);
        out.buf.set(new Uint8Array(dst.buffer, 0, j * 4), out.pos);
        out.pos += j * 4;
      }
      this.stats(dst);
    }
  }

  private stats(w: Int32Array): void {
    const kind = this.leaf.kind;
    if (w.length === 0) return;
    if (kind === 'i32') {
      let lo = w[0]!,
        hi = w[0]!;
      for (let i = 1; i < w.length; i++) {
        const v = w[i]!;
        if (v < lo) lo = v;
        else if (v > hi) hi = v;
      }
      if (this.lo === undefined || lo < (this.lo as number)) this.lo = lo;
      if (this.hi === undefined || hi > (this.hi as number)) this.hi = hi;
    } else if (kind === 'i64') {
      // compare as (signed high word, unsigned low word) without making bigints per value
      let loI = 0,
        hiI = 0;
      for (let i = 2; i < w.length; i += 2) {
        const h = w[i + 1]!,
          l = w[i]! >>> 0;
        const lh = w[loI + 1]!;
        if (h < lh || (h === lh && l < w[loI]! >>> 0)) loI = i;
        const hh = w[hiI + 1]!;
        if (h > hh || (h === hh && l > w[hiI]! >>> 0)) hiI = i;
      }
      const big = (k: number) => (BigInt(w[k + 1]!) << 32n) | BigInt(w[k]! >>> 0);
      const lo = big(loI),
        hi = big(hiI);
      if (this.lo === undefined || lo < (this.lo as bigint)) this.lo = lo;
      if (this.hi === undefined || hi > (this.hi as bigint)) this.hi = hi;
    } else {
      const f =
        kind === 'f32'
          ? new Float32Array(w.buffer, w.byteOffset, w.length)
          : w.byteOffset % 8 === 0
            ? new Float64Array(w.buffer, w.byteOffset, w.length >> 1)
            : new Float64Array(w.slice().buffer);
      let lo = Infinity,
        hi = -Infinity,
        any = false;
      for (let i = 0; i < f.length; i++) {
        const v = f[i]!;
        if (v !== v) continue; // NaN never bounds (parquet.thrift ColumnOrder)
        any = true;
        if (v < lo) lo = v;
        if (v > hi) hi = v;
      }
      if (!any) return;
      if (this.lo === undefined || lo < (this.lo as number)) this.lo = lo;
      if (this.hi === undefined || hi > (this.hi as number)) this.hi = hi;
    }
  }

  /** PLAIN bit-packed booleans of the non-null rows. */
  private boolValues(out: Bytes): void {
    let count = 0;
    for (const s of this.segs) count += s.to - s.from;
    out.room((count + 7) >> 3);
    const b = out.buf,
      start = out.pos;
    b.fill(0, start, start + ((count + 7) >> 3));
    let j = 0;
    for (const { data, from, to } of this.segs) {
      const vals = data.values as Uint8Array,
        bitmap = data.nullCount > 0 ? data.nullBitmap : undefined,
        base = data.offset + from;
      for (let i = 0, k = to - from; i < k; i++) {
        const bit = base + i;
        if (bitmap && !((bitmap[bit >> 3]! >> (bit & 7)) & 1)) continue;
        if ((vals[bit >> 3]! >> (bit & 7)) & 1) b[start + (j >> 3)]! |= 1 << (j & 7);
        j++;
      }
    }
    out.pos = start + ((j + 7) >> 3);
  }

  /** Strings/binary: dictionary indices while the dictionary fits, else PLAIN (length + bytes). */
  private bytesValues(out: Bytes): number {
    if (!this.dictFull && this.dict) {
      const idx = this.dictionaryIndices();
      if (idx && idx.length > 0) {
        // (a page of nulls only is PLAIN: no dictionary page may be needed for it)
        const bitWidth = Math.max(1, 32 - Math.clz32(this.dict.size - 1));
        out.room(1);
        out.buf[out.pos++] = bitWidth;
        bitPackRun(out, idx, idx.length, bitWidth);
        return ENC_RLE_DICTIONARY;
      }
    }
    for (const { data, from, to } of this.segs) {
      const off = data.valueOffsets as Int32Array,
        vals = data.values as Uint8Array,
        bitmap = data.nullCount > 0 ? data.nullBitmap : undefined,
        base = data.offset + from;
      out.room(off[to]! - off[from]! + 4 * (to - from));
      const b = out.buf;
      let pos = out.pos;
      for (let i = from; i < to; i++) {
        const bit = base + i - from;
        if (bitmap && !((bitmap[bit >> 3]! >> (bit & 7)) & 1)) continue;
        const a = off[i]!,
          e = off[i + 1]!,
          len = e - a;
        b[pos] = len & 0xff;
        b[pos + 1] = (len >>> 8) & 0xff;
        b[pos + 2] = (len >>> 16) & 0xff;
        b[pos + 3] = (len >>> 24) & 0xff;
        pos += 4;
        if (len < 32) for (let k = a; k < e; k++) b[pos++] = vals[k]!;
        else {
          pos += copyRange(vals, b, pos, a, e);
        }
      }
      out.pos = pos;
    }
    return ENC_PLAIN;
  }

  /**
   * Dictionary indices of the buffered non-null values, adding new values to the dictionary;
   * undefined once the dictionary outgrows `dictSizeBytes` (this page and the chunk's later ones
   * fall back to PLAIN, as parquet-mr and parquet-rs do).
   */
  private dictionaryIndices(): Uint32Array | undefined {
    const dict = this.dict!;
    const idx = new Uint32Array(this.segRows);
    const sizeBefore = dict.size;
    let j = 0;
    for (const { data, from, to } of this.segs) {
      const off = data.valueOffsets as Int32Array,
        vals = data.values as Uint8Array,
        bitmap = data.nullCount > 0 ? data.nullBitmap : undefined,
        base = data.offset + from;
      for (let i = from; i < to; i++) {
        const bit = base + i - from;
        if (bitmap && !((bitmap[bit >> 3]! >> (bit & 7)) & 1)) continue;
        idx[j++] = dict.add(vals, off[i]!, off[i + 1]!);
      }
      // (and at most 2^24 entries: indices are bit-packed through 32-bit integers)
      if (dict.bytes.pos > this.enc.dictSizeBytes || dict.size > 1 << 24) {
        // too many distinct values: drop this page's additions and write it PLAIN
        dict.truncate(sizeBefore);
        this.dictFull = true;
        return undefined;
      }
    }
    return idx.subarray(0, j);
  }

  /** Finishes the chunk: its pages (some may still be compressing) and statistics. */
  finishChunk(): PendingChunk {
    this.flushPage();
    let dictionary: Page | undefined;
    const encodings = new Set<number>([ENC_RLE]);
    if (this.usedDict && this.dict && this.dict.size > 0) {
      // (the dictionary's buffer is this chunk's own: reset() makes a new one)
      const body = this.dict.bytes.view(),
        entries = this.dict.size;
      dictionary = this.enc.compress(body, (compressed) =>
        encodeStruct([
          [1, i32(2)], // DICTIONARY_PAGE
          [2, i32(body.length)],
          [3, i32(compressed)],
          [
            7,
            struct([
              [1, i32(entries)],
              [2, i32(ENC_PLAIN)],
            ]),
          ],
        ]),
      );
      encodings.add(ENC_PLAIN).add(ENC_RLE_DICTIONARY);
    }
    if (this.usedPlain) encodings.add(ENC_PLAIN);
    const chunk: PendingChunk = {
      leaf: this.leaf,
      encodings: [...encodings].sort((a, b) => a - b),
      numValues: this.numValues,
      nullCount: this.nullCount,
      pages: this.pages,
      ...(dictionary ? { dictionary } : {}),
      ...this.bounds(),
    };
    this.reset();
    return chunk;
  }

  /** min/max as PLAIN bytes (parquet.thrift Statistics.min_value/max_value). */
  private bounds(): { min?: Uint8Array; max?: Uint8Array } {
    if (this.lo === undefined || this.hi === undefined) return {};
    const enc = (v: number | bigint, isMin: boolean): Uint8Array => {
      const dv = new DataView(new ArrayBuffer(WIDTH[this.leaf.kind]));
      switch (this.leaf.kind) {
        case 'i32':
          dv.setInt32(0, v as number, true);
          break;
        case 'i64':
          dv.setBigInt64(0, v as bigint, true);
          break;
        case 'f32':
          // zero bounds are written -0.0 (min) and +0.0 (max), as parquet.thrift asks
          dv.setFloat32(0, v === 0 ? (isMin ? -0 : 0) : (v as number), true);
          break;
        case 'f64':
          dv.setFloat64(0, v === 0 ? (isMin ? -0 : 0) : (v as number), true);
          break;
        default:
          break;
      }
      return new Uint8Array(dv.buffer);
    };
    return { min: enc(this.lo, true), max: enc(this.hi, false) };
  }
}

function setBits(bits: Uint8Array, at: number, n: number): void {
  for (let i = at, end = at + n; i < end;) {
    if ((i & 7) === 0 && end - i >= 8) {
      bits[i >> 3] = 0xff;
      i += 8;
    } else {
      bits[i >> 3]! |= 1 << (i & 7);
      i++;
    }
  }
}

function copyBits(dst: Uint8Array, at: number, src: Uint8Array, from: number, n: number): void {
  if ((at & 7) === 0 && (from & 7) === 0) {
    const bytes = n >> 3;
    dst.set(src.subarray(from >> 3, (from >> 3) + bytes), at >> 3);
    for (let i = bytes * 8; i < n; i++) if ((src[(from + i) >> 3]! >> ((from + i) & 7)) & 1) dst[(at + i) >> 3]! |= 1 << ((at + i) & 7);
    return;
  }
  for (let i = 0; i < n; i++) if ((src[(from + i) >> 3]! >> ((from + i) & 7)) & 1) dst[(at + i) >> 3]! |= 1 << ((at + i) & 7);
}

const POP = new Uint8Array(256).map((_, i) => {
  let c = 0;
  for (let x = i; x; x >>= 1) c += x & 1;
  return c;
});

/** Set bits in [at, at + n) of `bits`. */
function popcount(bits: Uint8Array, at: number, n: number): number {
  let c = 0,
    i = at;
  const end = at + n;
  while (i < end && i & 7) c += (bits[i >> 3]! >> (i++ & 7)) & 1;
  while (end - i >= 8) {
    c += POP[bits[i >> 3]!]!;
    i += 8;
  }
  while (i < end) c += (bits[i >> 3]! >> (i++ & 7)) & 1;
  return c;
}

interface FlatEncoderOptions extends ParquetWriteOptions {
  /** Top-level string/binary columns never dictionary-encoded (mostly distinct values). */
  plainColumns?: readonly string[];
}

/**
 * A Parquet file of a flat schema, built from Arrow batches conformed to the schema's Arrow
 * layout (icebergToArrowSchema). Synchronous; one instance per file.
 */
export class FlatParquetEncoder {
  readonly pageSizeBytes: number;
  readonly dictSizeBytes: number;
  private readonly rowGroupRows: number;
  private readonly rowGroupBytes: number;
  private readonly codecId: number;
  private readonly codec: ParquetCodec;
  private readonly leaves: Leaf[];
  private columns: ColumnWriter[] | undefined;
  private groupRows = 0;
  private groupBytes = 0;
  private numRows = 0;
  private readonly rowGroups: Array<{ chunks: PendingChunk[]; rows: number }> = [];
  private done = false;
  /** Compression jobs not yet waited for, oldest first, and the uncompressed bytes still compressing. */
  private readonly inflight: Promise<void>[] = [];
  private inflightBytes = 0;
  /** Uncompressed bytes of the page bodies being compressed now. */
  get compressingBytes(): number {
    return this.inflightBytes;
  }
  /** The first compression failure (surfaced by write() and finish()). */
  private failure: Error | undefined;

  constructor(
    private readonly schema: Schema,
    private readonly options: FlatEncoderOptions = {},
  ) {
    this.codec = options.codec ?? 'zstd';
    const id = CODEC_IDS[this.codec];
    if (id === undefined || !flatEncodable(schema, this.codec)) {
      throw new IcebergError('Unexpected', `FlatParquetEncoder: schema or codec ${this.codec} is not flat-encodable`);
    }
    this.codecId = id;
    this.leaves = schema.fields.map((f) => leafOf(f)!);
    this.pageSizeBytes = options.pageSizeBytes ?? 1 << 20;
    this.dictSizeBytes = options.dictSizeBytes ?? 2 << 20;
    this.rowGroupRows = options.rowGroupRows ?? 1 << 20;
    this.rowGroupBytes = options.rowGroupBytes ?? 128 << 20;
    for (const [key, v] of [
      ['rowGroupRows', this.rowGroupRows],
      ['rowGroupBytes', this.rowGroupBytes],
      ['pageSizeBytes', this.pageSizeBytes],
      ['dictSizeBytes', this.dictSizeBytes],
    ] as const) {
      if (!(Number.isSafeInteger(v) && v >= 1)) throw IcebergError.mismatch('DataInvalid', `Parquet writer ${key}`, 'an integer >= 1', v);
    }
  }

  get rows(): number {
    return this.numRows;
  }

  /**
   * Starts compressing a page body on libuv's thread pool; `body` must not change afterwards. The
   * page's `body` is set when done (uncompressed pages are ready at once).
   */
  compress(body: Uint8Array, header: (compressed: number) => Uint8Array): Page {
    const page: Page = { header, raw: body.length };
    if (this.codec === 'uncompressed') {
      page.body = body;
      return page;
    }
    const done = new Promise<void>((resolve) => {
      const settle = (e: Error | null, out: Buffer): void => {
        this.inflightBytes -= body.length;
        if (e) this.failure ??= e;
        // one output chunk is sized for the whole page: keep only the compressed bytes
        else page.body = out.byteLength * 2 < out.buffer.byteLength ? new Uint8Array(out) : out;
        resolve();
      };
      switch (this.codec) {
        case 'zstd':
          // one output chunk for the whole page (the default 16 KiB chunks cost ~7% in copies)
          zstdCompress(
            body,
            { chunkSize: Math.max(1 << 16, body.length + (body.length >> 7) + 512), params: { [zc.ZSTD_c_compressionLevel]: 1 } },
            settle,
          );
          break;
        case 'gzip':
          gzip(body, settle);
          break;
        default:
          brotliCompress(body, { params: { [zc.BROTLI_PARAM_QUALITY]: 1, [zc.BROTLI_PARAM_SIZE_HINT]: body.length } }, settle);
      }
    });
    this.inflightBytes += body.length;
    this.inflight.push(done);
    return page;
  }

  /** Waits until at most `bytes` of page bodies are being compressed. */
  private async settle(bytes: number): Promise<void> {
    while (this.inflightBytes > bytes && this.inflight.length > 0) await this.inflight.shift();
    this.check();
  }

  private check(): void {
    if (this.failure) {
      throw new IcebergError('Unexpected', `Parquet page compression (${this.codec}) failed: ${this.failure.message}`, {
        cause: this.failure,
      });
    }
  }

  /**
   * Adds a batch (its columns in schema order, Arrow layout of icebergToArrowSchema). Await each
   * write before the next: it returns once the pages it queued fit `MAX_INFLIGHT_BYTES`.
   */
  async write(batch: arrow.RecordBatch): Promise<void> {
    if (this.done) throw new IcebergError('Unexpected', 'FlatParquetEncoder used after finish()');
    const cols = batch.data.children;
    if (cols.length !== this.leaves.length) {
      throw IcebergError.mismatch('Unexpected', 'columns in batch for the flat Parquet encoder', this.leaves.length, cols.length);
    }
    this.columns ??= this.leaves.map(
      (l) => new ColumnWriter(l, this, l.kind === 'bytes' && !(this.options.plainColumns ?? []).includes(l.field.name)),
    );
    const n = batch.numRows;
    // steps of rows: the queue of pages being compressed is checked between steps
    const STEP = 8192;
    for (let from = 0; from < n;) {
      const to = Math.min(n, from + STEP, from + (this.rowGroupRows - this.groupRows));
      for (let k = 0; k < cols.length; k++) {
        const c = cols[k]!;
        if (!c.valueOffsets && this.leaves[k]!.kind === 'bytes') {
          throw new IcebergError('Unexpected', `flat Parquet encoder: column ${this.leaves[k]!.field.name} has no value offsets`);
        }
        this.columns[k]!.add(c, from, to);
        this.groupBytes += approxBytes(c, from, to, this.leaves[k]!.kind);
      }
      this.groupRows += to - from;
      this.numRows += to - from;
      from = to;
      if (this.groupRows >= this.rowGroupRows || this.groupBytes >= this.rowGroupBytes) this.flushRowGroup();
      if (this.inflightBytes > MAX_INFLIGHT_BYTES) await this.settle(MAX_INFLIGHT_BYTES / 2);
    }
    this.check();
  }

  private flushRowGroup(): void {
    if (this.groupRows === 0 || !this.columns) return;
    this.rowGroups.push({ chunks: this.columns.map((c) => c.finishChunk()), rows: this.groupRows });
    this.groupRows = this.groupBytes = 0;
  }

  /** The pages laid out: "PAR1", then each row group's chunks, each chunk's dictionary page first. */
  private layout(): {
    out: Uint8Array[];
    offset: number;
    groups: Array<{ chunks: ChunkMeta[]; rows: number; start: number; bytes: number; compressed: number }>;
  } {
    const out: Uint8Array[] = [MAGIC];
    let offset = MAGIC.length;
    const emit = (p: Page): number => {
      const header = p.header(p.body!.length);
      out.push(header, p.body!);
      offset += header.length + p.body!.length;
      return header.length;
    };
    const groups = this.rowGroups.map((g) => {
      const start = offset;
      const chunks = g.chunks.map(({ dictionary, pages, ...facts }): ChunkMeta => {
        const chunkStart = offset;
        let uncompressed = 0;
        let dictionaryOffset: number | undefined;
        if (dictionary) {
          dictionaryOffset = offset;
          uncompressed += emit(dictionary) + dictionary.raw;
        }
        const dataOffset = offset;
        for (const p of pages) uncompressed += emit(p) + p.raw;
        return {
          ...facts,
          uncompressed,
          compressed: offset - chunkStart,
          start: chunkStart,
          dataOffset,
          ...(dictionaryOffset !== undefined ? { dictionaryOffset } : {}),
        };
      });
      return {
        chunks,
        rows: g.rows,
        start,
        bytes: chunks.reduce((a, c) => a + c.uncompressed, 0),
        compressed: chunks.reduce((a, c) => a + c.compressed, 0),
      };
    });
    this.rowGroups.length = 0;
    return { out, offset, groups };
  }

  /** Closes the file: its bytes and the facts readFooterFacts would read back. */
  async finish(): Promise<{ bytes: Uint8Array; footer: FooterFacts }> {
    if (this.done) throw new IcebergError('Unexpected', 'FlatParquetEncoder finished twice');
    this.flushRowGroup();
    this.done = true;
    await this.settle(0);
    const { out, offset, groups } = this.layout();
    const footer = encodeStruct([
      [1, i32(1)],
      [
        2,
        list('struct', [
          [
            [4, bin('table')],
            [5, i32(this.leaves.length)],
          ],
          ...this.leaves.map((l): TStruct => [
            [1, i32(l.physical)],
            [3, i32(l.field.required ? 0 : 1)],
            [4, bin(l.field.name)],
            [6, l.converted === undefined ? undefined : i32(l.converted)],
            [9, i32(l.field.id)],
            [10, l.logical ? struct(l.logical) : undefined],
          ]),
        ]),
      ],
      [3, i64(this.numRows)],
      [
        4,
        list(
          'struct',
          groups.map((g, ordinal): TStruct => [
            [1, list('struct', g.chunks.map(chunkStruct(this.codecId)))],
            [2, i64(g.bytes)],
            [3, i64(g.rows)],
            [5, i64(g.start)],
            [6, i64(g.compressed)],
            [7, i32(ordinal)],
          ]),
        ),
      ],
      // parseable as parquet-mr's VersionParser expects (`<app> version <semver> (build <b>)`)
      [6, bin(`floe version ${floeVersion()} (build flat-encoder)`)],
      [
        7,
        list(
          'struct',
          this.leaves.map((): TStruct => [[1, struct([])]]),
        ),
      ], // TYPE_ORDER each
    ]);
    const tail = new Uint8Array(8);
    new DataView(tail.buffer).setUint32(0, footer.length, true);
    tail.set(MAGIC, 4);
    out.push(footer, tail);
    const bytes = new Uint8Array(offset + footer.length + tail.length);
    let at = 0;
    for (const b of out) {
      bytes.set(b, at);
      at += b.length;
    }
    const columnSizes = new Map<number, number>();
    for (const g of groups)
      for (const c of g.chunks) columnSizes.set(c.leaf.field.id, (columnSizes.get(c.leaf.field.id) ?? 0) + c.compressed);
    return { bytes, footer: { numRows: this.numRows, columnSizes, splitOffsets: groups.map((g) => g.start) } };
  }
}

const MAGIC = new Uint8Array([0x50, 0x41, 0x52, 0x31]); // PAR1

/**
 * Page bodies being compressed at once, at most (uncompressed bytes): enough to keep libuv's
 * thread pool busy with 1 MiB pages while bounding what a large batch holds uncompressed.
 */
export const MAX_INFLIGHT_BYTES = 8 << 20;

function approxBytes(data: arrow.Data, from: number, to: number, kind: Kind): number {
  if (kind !== 'bytes') return (to - from) * WIDTH[kind];
  const off = data.valueOffsets as Int32Array;
  return off[to]! - off[from]! + 4 * (to - from);
}

const chunkStruct =
  (codec: number) =>
  (c: ChunkMeta): TStruct => [
    [2, i64(c.start)],
    [
      3,
      struct([
        [1, i32(c.leaf.physical)],
        [2, list('i32', c.encodings)],
        [3, list('binary', [c.leaf.field.name])],
        [4, i32(codec)],
        [5, i64(c.numValues)],
        [6, i64(c.uncompressed)],
        [7, i64(c.compressed)],
        [9, i64(c.dataOffset)],
        [11, c.dictionaryOffset === undefined ? undefined : i64(c.dictionaryOffset)],
        [
          12,
          struct([
            [3, i64(c.nullCount)],
            [5, c.max ? bin(c.max) : undefined],
            [6, c.min ? bin(c.min) : undefined],
          ]),
        ],
      ]),
    ],
  ];
