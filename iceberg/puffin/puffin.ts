/**
 * Puffin files (format/puffin-spec.md): `Magic Blob₁ … Blobₙ Footer`, the footer being
 * `Magic FooterPayload FooterPayloadSize Flags Magic` with Magic = "PFA1", the payload a UTF-8
 * JSON FileMetadata (`blobs`, `properties`), its size a 4-byte little-endian int, and Flags 4
 * bytes whose bit 0 of byte 0 means "footer payload compressed" (LZ4).
 *
 * Only uncompressed blobs and footers are written and read: floe writes deletion-vector-v1
 * blobs, which the spec forbids compressing. A compressed footer or blob is refused by name.
 */
import { IcebergError } from '../errors';
import type { FileIO } from '../io/file-io';
import { parseIcebergJson } from '../spec/metadata';
import { floeVersion } from '../version';

const PUFFIN_MAGIC: Uint8Array = Uint8Array.of(0x50, 0x46, 0x41, 0x31); // "PFA1"
/** Magic + payload size + flags + magic after the footer payload. */
const FOOTER_TAIL = 12;

/** One blob's metadata as the footer JSON holds it (spec "BlobMetadata"); 64-bit values are bigint. */
export interface PuffinBlobMetadata {
  type: string;
  fields: number[];
  'snapshot-id': bigint;
  'sequence-number': bigint;
  offset: bigint;
  length: bigint;
  'compression-codec'?: string;
  properties?: Record<string, string>;
}

export interface PuffinFooter {
  blobs: PuffinBlobMetadata[];
  properties?: Record<string, string>;
}

/** A blob to write: its bytes (uncompressed) and metadata without the offset and length the writer assigns. */
export interface PuffinBlobInput {
  type: string;
  fields: number[];
  snapshotId?: bigint;
  sequenceNumber?: bigint;
  data: Uint8Array;
  properties?: Record<string, string>;
}

export interface WrittenPuffin {
  bytes: Uint8Array;
  /** the footer as written; each blob's offset/length locates it in `bytes` */
  footer: PuffinFooter;
}

/** The footer JSON: keys in the spec's order, longs as plain JSON numbers. */
function footerJson(f: PuffinFooter): string {
  const blob = (b: PuffinBlobMetadata): string => {
    const parts = [
      `"type":${JSON.stringify(b.type)}`,
      `"fields":${JSON.stringify(b.fields)}`,
      `"snapshot-id":${b['snapshot-id']}`,
      `"sequence-number":${b['sequence-number']}`,
      `"offset":${b.offset}`,
      `"length":${b.length}`,
    ];
    if (b['compression-codec'] !== undefined) parts.push(`"compression-codec":${JSON.stringify(b['compression-codec'])}`);
    if (b.properties !== undefined) parts.push(`"properties":${JSON.stringify(b.properties)}`);
    return `{${parts.join(',')}}`;
  };
  const props = f.properties === undefined ? '' : `,"properties":${JSON.stringify(f.properties)}`;
  return `{"blobs":[${f.blobs.map(blob).join(',')}]${props}}`;
}

/** Encodes a Puffin file holding `blobs` in order, uncompressed; `properties` default to `created-by: floe <version>`. */
export function encodePuffin(blobs: readonly PuffinBlobInput[], properties?: Record<string, string>): WrittenPuffin {
  const metas: PuffinBlobMetadata[] = [];
  let offset = PUFFIN_MAGIC.length;
  for (const b of blobs) {
    metas.push({
      type: b.type,
      fields: b.fields,
      'snapshot-id': b.snapshotId ?? -1n,
      'sequence-number': b.sequenceNumber ?? -1n,
      offset: BigInt(offset),
      length: BigInt(b.data.length),
      ...(b.properties ? { properties: b.properties } : {}),
    });
    offset += b.data.length;
  }
  const footer: PuffinFooter = { blobs: metas, properties: properties ?? { 'created-by': `floe version ${floeVersion()}` } };
  const payload = Buffer.from(footerJson(footer), 'utf8');
  const out = Buffer.alloc(offset + PUFFIN_MAGIC.length + payload.length + FOOTER_TAIL);
  out.set(PUFFIN_MAGIC, 0);
  let at = PUFFIN_MAGIC.length;
  for (const b of blobs) {
    out.set(b.data, at);
    at += b.data.length;
  }
  out.set(PUFFIN_MAGIC, at);
  at += PUFFIN_MAGIC.length;
  out.set(payload, at);
  at += payload.length;
  out.writeInt32LE(payload.length, at);
  out.writeInt32LE(0, at + 4); // flags: footer not compressed
  out.set(PUFFIN_MAGIC, at + 8);
  return { bytes: out, footer };
}

const sameMagic = (b: Uint8Array, at: number): boolean => PUFFIN_MAGIC.every((x, i) => b[at + i] === x);

/** Parses the footer of a whole Puffin file (its blobs are located by their offsets and lengths). */
export function decodePuffinFooter(bytes: Uint8Array, location = '<puffin>'): PuffinFooter {
  const n = bytes.length;
  if (n < 2 * PUFFIN_MAGIC.length + FOOTER_TAIL || !sameMagic(bytes, 0) || !sameMagic(bytes, n - 4)) {
    throw new IcebergError('DataInvalid', `${location}: not a Puffin file (magic PFA1 at its start and end)`);
  }
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const size = view.readInt32LE(n - FOOTER_TAIL);
  const flags = view.readUInt32LE(n - 8);
  const start = n - FOOTER_TAIL - size;
  if (size < 0 || start - PUFFIN_MAGIC.length < PUFFIN_MAGIC.length || !sameMagic(bytes, start - PUFFIN_MAGIC.length)) {
    throw IcebergError.mismatch('DataInvalid', `${location}: Puffin footer payload size`, `<= ${n - 2 * 4 - FOOTER_TAIL}`, size, false);
  }
  if ((flags & 1) !== 0) {
    throw IcebergError.mismatch('FeatureUnsupported', `${location}: Puffin footer`, 'uncompressed', 'LZ4-compressed', false);
  }
  // snapshot-id / sequence-number parse as bigint (a statistics blob's snapshot id may exceed 2^53)
  const o = parseIcebergJson(view.toString('utf8', start, n - FOOTER_TAIL)) as Record<string, unknown>;
  const blobs = ((o['blobs'] as Array<Record<string, unknown>> | undefined) ?? []).map((b): PuffinBlobMetadata => ({
    ...(b as object),
    type: String(b['type']),
    fields: (b['fields'] as number[] | undefined) ?? [],
    'snapshot-id': BigInt(b['snapshot-id'] as bigint),
    'sequence-number': BigInt(b['sequence-number'] as bigint),
    offset: BigInt(b['offset'] as number),
    length: BigInt(b['length'] as number),
  }));
  for (const b of blobs) {
    if (b.offset < 4n || b.offset + b.length > BigInt(start - PUFFIN_MAGIC.length)) {
      throw IcebergError.mismatch(
        'DataInvalid',
        `${location}: Puffin blob ${b.type} range`,
        'inside the file',
        `${b.offset}+${b.length}`,
        false,
      );
    }
  }
  return { blobs, ...(o['properties'] ? { properties: o['properties'] as Record<string, string> } : {}) };
}

/** A blob's bytes from a whole Puffin file (uncompressed blobs only). */
export function puffinBlob(bytes: Uint8Array, blob: PuffinBlobMetadata, location = '<puffin>'): Uint8Array {
  if (blob['compression-codec'] !== undefined && blob['compression-codec'] !== null) {
    throw IcebergError.mismatch(
      'FeatureUnsupported',
      `${location}: Puffin blob ${blob.type} compression`,
      'none',
      blob['compression-codec'],
      false,
    );
  }
  return bytes.subarray(Number(blob.offset), Number(blob.offset + blob.length));
}

/** Writes a Puffin file; concurrency: none (a fresh, uniquely named file). */
export async function writePuffin(io: FileIO, location: string, blobs: readonly PuffinBlobInput[]): Promise<WrittenPuffin> {
  const w = encodePuffin(blobs);
  await io.write(location, w.bytes);
  return w;
}
