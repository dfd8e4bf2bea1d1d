/**
 * Manifest lists (spec: "Manifest Lists"): one Avro manifest_file record per manifest, v2 schema
 * with field ids 500-519, header `snapshot-id`, `parent-snapshot-id`, `sequence-number`,
 * `format-version`. Reading resolves by field id and accepts v1 lists (no sequence numbers:
 * they read as 0, the spec's v1 default).
 */
import { IcebergError } from '../errors';
import type { FileIO } from '../io/file-io';
import { type AvroCodec, type AvroSchemaObject, fieldNamesById, fieldSchemaById, readAvroFile, writeAvroFile } from './avro';
import { UNASSIGNED_SEQ } from './manifest';
import { type FieldSummary, ManifestContent, type ManifestFile } from './types';

const opt = (name: string, type: unknown, id: number): object => ({ name, type: ['null', type], default: null, 'field-id': id });
const req = (name: string, type: unknown, id: number, doc?: string): object => ({ name, type, ...(doc ? { doc } : {}), 'field-id': id });

export const MANIFEST_LIST_SCHEMA: AvroSchemaObject = {
  type: 'record',
  name: 'manifest_file',
  fields: [
    req('manifest_path', 'string', 500, 'Location URI with FS scheme'),
    req('manifest_length', 'long', 501, 'Total file size in bytes'),
    req('partition_spec_id', 'int', 502, 'Spec ID used to write'),
    req('content', 'int', 517, 'Contents of the manifest: 0=data, 1=deletes'),
    req('sequence_number', 'long', 515, 'Sequence number when the manifest was added'),
    req('min_sequence_number', 'long', 516, 'Lowest sequence number in the manifest'),
    req('added_snapshot_id', 'long', 503, 'Snapshot ID that added the manifest'),
    req('added_files_count', 'int', 504, 'Added entry count'),
    req('existing_files_count', 'int', 505, 'Existing entry count'),
    req('deleted_files_count', 'int', 506, 'Deleted entry count'),
    req('added_rows_count', 'long', 512, 'Added rows count'),
    req('existing_rows_count', 'long', 513, 'Existing rows count'),
    req('deleted_rows_count', 'long', 514, 'Deleted rows count'),
    opt(
      'partitions',
      {
        type: 'array',
        'element-id': 508,
        items: {
          type: 'record',
          name: 'r508',
          fields: [
            req('contains_null', 'boolean', 509, 'True if any file has a null partition value'),
            opt('contains_nan', 'boolean', 518),
            opt('lower_bound', 'bytes', 510),
            opt('upper_bound', 'bytes', 511),
          ],
        },
      },
      507,
    ),
    opt('key_metadata', 'bytes', 519),
  ],
};

/** The v3 manifest list schema: v2's plus first_row_id (520), as Java's V3Metadata.MANIFEST_LIST_SCHEMA. */
const MANIFEST_LIST_SCHEMA_V3: AvroSchemaObject = {
  ...MANIFEST_LIST_SCHEMA,
  fields: [...(MANIFEST_LIST_SCHEMA['fields'] as object[]), opt('first_row_id', 'long', 520)],
};

const buf = (u: Uint8Array | undefined): Buffer | null => (u === undefined ? null : Buffer.from(u.buffer, u.byteOffset, u.byteLength));

export interface ManifestListWriteArgs {
  location: string;
  snapshotId: bigint;
  parentSnapshotId: bigint | null;
  sequenceNumber: bigint;
  manifests: ManifestFile[];
  codec?: AvroCodec;
  /**
   * v3 tables: the snapshot's first-row-id (the table's next-row-id). Data manifests without a
   * first_row_id are assigned one from it (spec "First Row ID Assignment"); the list is written
   * with the v3 schema and `format-version: 3`. Absent: a v2 list.
   */
  firstRowId?: bigint;
}

/**
 * Spec "First Row ID Assignment" (Java's ManifestListWriter.V3Writer.prepare): data manifests
 * without a first_row_id get the next one, which then grows by their added and existing rows
 * (room for existing files without a first_row_id, as after an upgrade); others keep theirs
 * (delete manifests have none). Returns the manifests and the row ids assigned in all
 * (the snapshot's `added-rows`).
 */
export function assignFirstRowIds(manifests: ManifestFile[], firstRowId: bigint): { manifests: ManifestFile[]; addedRows: bigint } {
  let next = firstRowId;
  const out = manifests.map((m) => {
    if (m.content !== ManifestContent.Data) {
      if (m.firstRowId === undefined) return m;
      const { firstRowId: _drop, ...rest } = m;
      void _drop;
      return rest;
    }
    if (m.firstRowId !== undefined) return m;
    const assigned = { ...m, firstRowId: next };
    next += BigInt(m.addedRowsCount) + BigInt(m.existingRowsCount);
    return assigned;
  });
  return { manifests: out, addedRows: next - firstRowId };
}

/**
 * Assigns this commit's sequence number to manifests written by it (UNASSIGNED_SEQ), as
 * PyIceberg's ManifestListWriterV2.prepare_manifest; a foreign manifest without one is a bug.
 */
export function assignSequenceNumbers(m: ManifestFile, snapshotId: bigint, seq: bigint): ManifestFile {
  if (m.sequenceNumber !== UNASSIGNED_SEQ && m.minSequenceNumber !== UNASSIGNED_SEQ) return m;
  if (m.addedSnapshotId !== snapshotId) {
    throw IcebergError.mismatch(
      'Unexpected',
      `manifest ${m.manifestPath} has no sequence number; added_snapshot_id`,
      snapshotId,
      m.addedSnapshotId,
      false,
    );
  }
  return {
    ...m,
    sequenceNumber: m.sequenceNumber === UNASSIGNED_SEQ ? seq : m.sequenceNumber,
    minSequenceNumber: m.minSequenceNumber === UNASSIGNED_SEQ ? seq : m.minSequenceNumber,
  };
}

export function encodeManifestList(a: ManifestListWriteArgs): Uint8Array {
  const v3 = a.firstRowId !== undefined;
  const manifests = v3 ? assignFirstRowIds(a.manifests, a.firstRowId!).manifests : a.manifests;
  const records = manifests.map((m0) => {
    const m = assignSequenceNumbers(m0, a.snapshotId, a.sequenceNumber);
    const r: Record<string, unknown> = {
      manifest_path: m.manifestPath,
      manifest_length: BigInt(m.manifestLength),
      partition_spec_id: m.partitionSpecId,
      content: m.content,
      sequence_number: m.sequenceNumber,
      min_sequence_number: m.minSequenceNumber,
      added_snapshot_id: m.addedSnapshotId,
      added_files_count: m.addedFilesCount,
      existing_files_count: m.existingFilesCount,
      deleted_files_count: m.deletedFilesCount,
      added_rows_count: BigInt(m.addedRowsCount),
      existing_rows_count: BigInt(m.existingRowsCount),
      deleted_rows_count: BigInt(m.deletedRowsCount),
      partitions:
        m.partitions === undefined
          ? null
          : m.partitions.map((p) => ({
              contains_null: p.containsNull,
              contains_nan: p.containsNan ?? null,
              lower_bound: buf(p.lowerBound),
              upper_bound: buf(p.upperBound),
            })),
      key_metadata: buf(m.keyMetadata),
    };
    if (v3) r['first_row_id'] = m.firstRowId ?? null;
    return r;
  });
  const header: Record<string, string> = {
    'snapshot-id': a.snapshotId.toString(),
    // PyIceberg and Java both write the string "null" for a root snapshot
    'parent-snapshot-id': a.parentSnapshotId === null ? 'null' : a.parentSnapshotId.toString(),
    'sequence-number': a.sequenceNumber.toString(),
  };
  if (v3) header['first-row-id'] = a.firstRowId!.toString();
  header['format-version'] = v3 ? '3' : '2';
  return writeAvroFile(v3 ? MANIFEST_LIST_SCHEMA_V3 : MANIFEST_LIST_SCHEMA, records, header, a.codec ?? 'deflate');
}

/** Writes a manifest list; concurrency: none (the name carries snapshot id, attempt and a uuid). */
export async function writeManifestList(io: FileIO, a: ManifestListWriteArgs): Promise<void> {
  await io.write(a.location, encodeManifestList(a));
}

type Rec = Record<string, unknown>;
const num = (v: unknown, def = 0): number => (v === null || v === undefined ? def : Number(v));
const big = (v: unknown, def = 0n): bigint => (v === null || v === undefined ? def : BigInt(v as bigint));
const u8 = (v: unknown): Uint8Array | undefined => (v === null || v === undefined ? undefined : new Uint8Array(v as Buffer));

export function decodeManifestList(
  bytes: Uint8Array,
  location = '<manifest list>',
): { manifests: ManifestFile[]; metadata: Record<string, string> } {
  const f = readAvroFile(bytes, location);
  const n = fieldNamesById(f.schema);
  const ps = fieldSchemaById(f.schema, 507);
  const pn =
    ps && typeof ps === 'object' && !Array.isArray(ps)
      ? fieldNamesById((ps as unknown as { items: AvroSchemaObject }).items)
      : new Map<number, string>();
  const g = (r: Rec, id: number, names = n): unknown => {
    const k = names.get(id);
    return k === undefined ? undefined : r[k];
  };
  const manifests = f.records.map((raw): ManifestFile => {
    const r = raw as Rec;
    const parts = g(r, 507) as Rec[] | null | undefined;
    const m: ManifestFile = {
      manifestPath: g(r, 500) as string,
      manifestLength: num(g(r, 501)),
      partitionSpecId: num(g(r, 502)),
      content: num(g(r, 517), ManifestContent.Data) as ManifestContent,
      sequenceNumber: big(g(r, 515)),
      minSequenceNumber: big(g(r, 516)),
      addedSnapshotId: big(g(r, 503)),
      addedFilesCount: num(g(r, 504)),
      existingFilesCount: num(g(r, 505)),
      deletedFilesCount: num(g(r, 506)),
      addedRowsCount: num(g(r, 512)),
      existingRowsCount: num(g(r, 513)),
      deletedRowsCount: num(g(r, 514)),
    };
    if (parts) {
      m.partitions = parts.map((p): FieldSummary => {
        const s: FieldSummary = { containsNull: Boolean(g(p, 509, pn)) };
        const nan = g(p, 518, pn);
        if (nan !== null && nan !== undefined) s.containsNan = Boolean(nan);
        const lo = u8(g(p, 510, pn));
        if (lo) s.lowerBound = lo;
        const hi = u8(g(p, 511, pn));
        if (hi) s.upperBound = hi;
        return s;
      });
    }
    const km = u8(g(r, 519));
    if (km) m.keyMetadata = km;
    const fri = g(r, 520);
    if (fri !== null && fri !== undefined) m.firstRowId = BigInt(fri as bigint);
    return m;
  });
  return { manifests, metadata: f.metadata };
}

export async function readManifestList(io: FileIO, location: string): Promise<ManifestFile[]> {
  return decodeManifestList(await io.read(location), location).manifests;
}
