/**
 * deletion-vector-v1 blobs (puffin-spec.md "deletion-vector-v1 blob type", spec "Deletion
 * Vectors"): the deleted positions of ONE data file as a 64-bit Roaring bitmap in the "portable"
 * serialization (uint64 LE count of 32-bit buckets, then per bucket, keys ascending, a uint32 LE
 * key = the high 32 bits and a 32-bit portable Roaring bitmap of the low 32 bits), framed as
 *
 *   uint32 BE length(magic + vector) | magic D1 D3 39 64 | vector | uint32 BE CRC-32(magic + vector)
 *
 * The 32-bit Roaring bitmaps are CRoaring's own (roaring-wasm: CRoaring compiled to WebAssembly,
 * no native build), which reads every container kind (array, bitmap, run) and writes run
 * containers when they are smaller (runOptimize, as Java's BitmapPositionDeleteIndex does).
 * Positions are bigint end to end: a position never passes through a JS number whole.
 */
import { crc32 } from 'node:zlib';
import { RoaringBitmap32, roaringLibraryInitialize } from 'roaring-wasm';
import { IcebergError } from '../errors';
import type { FileIO } from '../io/file-io';
import type { DataFile } from '../spec/types';

/** The blob type, and the field the vector is about (the reserved `_pos` metadata column). */
export const DELETION_VECTOR_BLOB_TYPE = 'deletion-vector-v1';
export const ROW_POSITION_FIELD_ID = 2147483645;
const DV_MAGIC = Uint8Array.of(0xd1, 0xd3, 0x39, 0x64);
/** Positions are positive 63-bit: the high 32 bits (the key) are at most 2^31 - 1. */
const MAX_KEY = 0x7fffffffn;

let ready: Promise<void> | undefined;
/** roaring-wasm instantiates its WebAssembly module once per process. */
const roaring = (): Promise<void> => (ready ??= roaringLibraryInitialize());

/** Distinct positions ascending (a copy; the input may be any order, with duplicates). */
export function normalizePositions(positions: Iterable<bigint>): BigInt64Array {
  const a = BigInt64Array.from(positions);
  for (const p of a) {
    if (typeof p !== 'bigint' || p < 0n)
      throw IcebergError.mismatch('DataInvalid', 'deletion vector position', 'a bigint >= 0', String(p), false);
  }
  a.sort();
  let n = 0;
  for (let i = 0; i < a.length; i++) if (i === 0 || a[i] !== a[n - 1]) a[n++] = a[i]!;
  return a.subarray(0, n);
}

/**
 * The byte length of the 32-bit portable Roaring bitmap starting at `at` (RoaringFormatSpec:
 * cookie, optional run-flag bitset, descriptive header, optional offset header, containers), so
 * that the buckets of a 64-bit vector can be cut apart without trusting a decoder's read length.
 */
export function portableRoaringSize(b: Uint8Array, at: number): number {
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const need = (end: number): void => {
    if (end > b.length) throw IcebergError.mismatch('DataInvalid', 'roaring bitmap', `${end} bytes`, `${b.length}`, false);
  };
  need(at + 4);
  const cookie = v.getUint32(at, true);
  let p = at + 4;
  let n: number;
  let runs: Uint8Array | undefined;
  if ((cookie & 0xffff) === 12347) {
    n = (cookie >>> 16) + 1;
    need(p + Math.ceil(n / 8));
    runs = b.subarray(p, p + Math.ceil(n / 8));
    p += Math.ceil(n / 8);
  } else if (cookie === 12346) {
    need(p + 4);
    n = v.getUint32(p, true);
    p += 4;
  } else {
    throw IcebergError.mismatch('DataInvalid', 'roaring bitmap cookie', '12346 or 12347 (portable)', cookie, false);
  }
  if (n > 65536) throw IcebergError.mismatch('DataInvalid', 'roaring bitmap containers', '<= 65536', n, false);
  need(p + 4 * n);
  const cards: number[] = [];
  for (let i = 0; i < n; i++) cards.push(v.getUint16(p + 4 * i + 2, true) + 1);
  p += 4 * n;
  if (!runs || n >= 4) p += 4 * n; // offset header: always without run containers, else from 4 containers on
  for (let i = 0; i < n; i++) {
    if (runs && (runs[i >> 3]! & (1 << (i & 7))) !== 0) {
      need(p + 2);
      p += 2 + 4 * v.getUint16(p, true);
    } else p += cards[i]! <= 4096 ? 2 * cards[i]! : 8192;
    need(p);
  }
  return p - at;
}

/** The 64-bit portable serialization of sorted distinct positions. */
export async function serializePositions(sorted: BigInt64Array): Promise<Uint8Array> {
  await roaring();
  const parts: Uint8Array[] = [];
  let buckets = 0;
  for (let i = 0; i < sorted.length;) {
    const key = sorted[i]! >> 32n;
    if (key > MAX_KEY) throw IcebergError.mismatch('DataInvalid', 'deletion vector position', '< 2^63', sorted[i]!, false);
    let j = i;
    while (j < sorted.length && sorted[j]! >> 32n === key) j++;
    const low = new Uint32Array(j - i);
    for (let k = i; k < j; k++) low[k - i] = Number(sorted[k]! & 0xffffffffn);
    const bm = new RoaringBitmap32(low);
    try {
      bm.runOptimize();
      const head = Buffer.alloc(4);
      head.writeUInt32LE(Number(key));
      parts.push(head, bm.serialize('portable'));
    } finally {
      bm.dispose();
    }
    buckets++;
    i = j;
  }
  const count = Buffer.alloc(8);
  count.writeBigUInt64LE(BigInt(buckets));
  return Buffer.concat([count, ...parts]);
}

/** Positions (ascending) of a 64-bit portable serialization. */
export async function deserializePositions(vector: Uint8Array, what = 'deletion vector'): Promise<BigInt64Array> {
  await roaring();
  const v = Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
  if (v.length < 8) throw IcebergError.mismatch('DataInvalid', `${what}: bitmap`, '>= 8 bytes', v.length, false);
  const buckets = v.readBigUInt64LE(0);
  if (buckets > BigInt(v.length)) throw IcebergError.mismatch('DataInvalid', `${what}: bucket count`, `<= ${v.length}`, buckets, false);
  let at = 8;
  const parts: BigInt64Array[] = [];
  let lastKey = -1;
  for (let i = 0n; i < buckets; i++) {
    if (at + 4 > v.length) throw new IcebergError('DataInvalid', `${what}: truncated bitmap`);
    const key = v.readUInt32LE(at);
    if (key <= lastKey || BigInt(key) > MAX_KEY)
      throw IcebergError.mismatch('DataInvalid', `${what}: bucket key`, `ascending, <= ${MAX_KEY}`, key, false);
    lastKey = key;
    at += 4;
    const size = portableRoaringSize(v, at);
    const bm = RoaringBitmap32.deserialize(v.subarray(at, at + size), 'portable');
    try {
      const low = bm.toUint32Array();
      const hi = BigInt(key) << 32n;
      const out = new BigInt64Array(low.length);
      for (let k = 0; k < low.length; k++) out[k] = hi | BigInt(low[k]!);
      parts.push(out);
    } finally {
      bm.dispose();
    }
    at += size;
  }
  if (at !== v.length) throw IcebergError.mismatch('DataInvalid', `${what}: bitmap length`, at, v.length, false);
  if (parts.length === 1) return parts[0]!;
  const all = new BigInt64Array(parts.reduce((a, p) => a + p.length, 0));
  let o = 0;
  for (const p of parts) {
    all.set(p, o);
    o += p.length;
  }
  return all;
}

/** A deletion-vector-v1 blob of positions (any order, duplicates allowed). */
export async function encodeDeletionVector(positions: Iterable<bigint>): Promise<{ blob: Uint8Array; cardinality: number }> {
  const sorted = normalizePositions(positions);
  const vector = await serializePositions(sorted);
  const blob = Buffer.alloc(4 + 4 + vector.length + 4);
  blob.writeUInt32BE(4 + vector.length, 0);
  blob.set(DV_MAGIC, 4);
  blob.set(vector, 8);
  blob.writeUInt32BE(crc32(blob.subarray(4, 8 + vector.length)), 8 + vector.length);
  return { blob, cardinality: sorted.length };
}

/** The positions of a deletion-vector-v1 blob (ascending); its length, magic and CRC-32 are checked. */
export async function decodeDeletionVector(blob: Uint8Array, what = 'deletion vector'): Promise<BigInt64Array> {
  const b = Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength);
  if (b.length < 12) throw IcebergError.mismatch('DataInvalid', `${what}: blob length`, '>= 12', b.length, false);
  const len = b.readUInt32BE(0);
  if (len !== b.length - 8) throw IcebergError.mismatch('DataInvalid', `${what}: length field`, b.length - 8, len, false);
  if (!DV_MAGIC.every((x, i) => b[4 + i] === x))
    throw IcebergError.mismatch('DataInvalid', `${what}: magic`, 'd1d33964', b.subarray(4, 8).toString('hex'), false);
  const crc = b.readUInt32BE(4 + len);
  const actual = crc32(b.subarray(4, 4 + len));
  if (crc !== actual) throw IcebergError.mismatch('DataInvalid', `${what}: CRC-32`, crc, actual, false);
  return deserializePositions(b.subarray(8, 4 + len), what);
}

/**
 * The positions of a deletion vector as its manifest entry names it: only the blob's bytes are
 * read (content_offset, content_size_in_bytes), checked, and their count must equal the entry's
 * record_count (the DV's cardinality).
 */
export async function readDeletionVector(io: FileIO, dv: DataFile): Promise<BigInt64Array> {
  if (dv.contentOffset === undefined || dv.contentSizeInBytes === undefined)
    throw new IcebergError('DataInvalid', `deletion vector in ${dv.filePath}: no content_offset / content_size_in_bytes`);
  const what = `deletion vector of ${dv.referencedDataFile ?? '?'} in ${dv.filePath}@${dv.contentOffset}`;
  const positions = await decodeDeletionVector(await io.readRange(dv.filePath, dv.contentOffset, dv.contentSizeInBytes), what);
  if (positions.length !== dv.recordCount)
    throw IcebergError.mismatch('DataInvalid', `${what}: cardinality`, dv.recordCount, positions.length, false);
  return positions;
}
