/**
 * Iceberg metadata tables as arrays of plain rows, named and shaped like Spark's `db.t.snapshots`
 * (Java core SnapshotsTable, HistoryTable, FilesTable, ManifestsTable, PartitionsTable) and
 * PyIceberg's `table.inspect.*`, so users recognise them: same column names and meanings, a few
 * extra columns named as such. 64-bit ids and timestamps (ms) stay bigint.
 */
import type { FileIO } from '../io/file-io';
import { fromBytes } from '../spec/conversions';
import { readManifest } from '../spec/manifest';
import { readManifestList } from '../spec/manifest-list';
import { ancestors, currentSchema, specById } from '../spec/metadata';
import { partitionHumanString, partitionKey, partitionType } from '../spec/partition';
import {
  type DataFile,
  DataFileContent,
  type LoadedTable,
  ManifestContent,
  type NestedField,
  type PartitionRecord,
  type PrimitiveType,
  type TableMetadata,
} from '../spec/types';
import { MANIFEST_READ_CONCURRENCY, mapConcurrent } from './parallel';
import { snapshotFor } from './plan';

const metadataOf = (t: TableMetadata | LoadedTable): TableMetadata => ('metadata' in t ? t.metadata : t);

export interface SnapshotRow {
  committed_at: bigint;
  snapshot_id: bigint;
  parent_id: bigint | null;
  operation: string;
  manifest_list: string;
  summary: Record<string, string>;
}
export function snapshotsTable(t: TableMetadata | LoadedTable): SnapshotRow[] {
  return metadataOf(t).snapshots.map((s) => {
    const { operation, ...summary } = s.summary;
    return {
      committed_at: s['timestamp-ms'],
      snapshot_id: s['snapshot-id'],
      parent_id: s['parent-snapshot-id'] ?? null,
      operation,
      manifest_list: s['manifest-list'],
      // as Java's Snapshot.summary() and PyIceberg: the operation is its own column, not repeated here
      summary,
    };
  });
}

export interface HistoryRow {
  made_current_at: bigint;
  snapshot_id: bigint;
  parent_id: bigint | null;
  is_current_ancestor: boolean;
}
export function historyTable(t: TableMetadata | LoadedTable): HistoryRow[] {
  const m = metadataOf(t);
  const current = new Set([...ancestors(m)].map((s) => s['snapshot-id']));
  return m['snapshot-log'].map((e) => ({
    made_current_at: e['timestamp-ms'],
    snapshot_id: e['snapshot-id'],
    parent_id: m.snapshots.find((s) => s['snapshot-id'] === e['snapshot-id'])?.['parent-snapshot-id'] ?? null,
    is_current_ancestor: current.has(e['snapshot-id']),
  }));
}

/** A manifest entry that is live in a snapshot (ADDED or EXISTING), data or delete file. */
interface LiveEntry {
  file: DataFile;
  /** the snapshot that added the file */
  snapshotId: bigint;
  dataSequenceNumber: bigint;
}

/**
 * Every live entry of every manifest of a snapshot, data and delete files alike, as Spark's
 * `files` and `partitions` see them. Unlike planTasks this never refuses equality deletes: it
 * only describes files, it does not read rows. Reads immutable files only.
 */
async function liveEntries(m: TableMetadata, io: FileIO, snapshotId?: bigint): Promise<LiveEntry[]> {
  const snap = snapshotFor(m, snapshotId);
  if (!snap) return [];
  const manifests = await readManifestList(io, snap['manifest-list']);
  const per = await mapConcurrent(manifests, MANIFEST_READ_CONCURRENCY, async (mf) =>
    (await readManifest(io, mf)).map((e): LiveEntry => ({
      file: e.dataFile,
      snapshotId: e.snapshotId ?? mf.addedSnapshotId,
      dataSequenceNumber: e.sequenceNumber ?? 0n,
    })),
  );
  return per.flat();
}

/**
 * A column bound as text (Spark's `readable_metrics`): dates, timestamps, decimals and uuids as
 * their usual strings, binary as base64. A bound that does not decode (a type changed under it)
 * is shown as hex rather than failing the whole listing.
 */
function readableBound(type: PrimitiveType, bytes: Uint8Array): string {
  try {
    const v = fromBytes(type, bytes);
    // partitionHumanString takes uuids and decimals as their bytes (the partition representation)
    return partitionHumanString('identity', type, (type === 'uuid' || type.startsWith('decimal') ? bytes : v) as never);
  } catch {
    return `0x${Buffer.from(bytes).toString('hex')}`;
  }
}

/** Primitive columns of a schema by field id with their dotted names (structs walked; lists and maps have no bounds of their own). */
function primitiveColumns(fields: NestedField[], prefix = '', out = new Map<number, { name: string; type: PrimitiveType }>()) {
  for (const f of fields) {
    if (typeof f.type === 'string') out.set(f.id, { name: prefix + f.name, type: f.type });
    else if (f.type.type === 'struct') primitiveColumns(f.type.fields, `${prefix}${f.name}.`, out);
  }
  return out;
}

export interface ReadableMetrics {
  column_size: number | null;
  value_count: number | null;
  null_value_count: number | null;
  nan_value_count: number | null;
  lower_bound: string | null;
  upper_bound: string | null;
}

/**
 * A row of Spark's `files` metadata table (Java FilesTable, PyIceberg `inspect.files()`): every
 * live data and delete file of a snapshot. Bounds are readable text by field id (Spark shows
 * their binary encoding, which JSON cannot carry); `readable_metrics` keys them by column name.
 */
export interface FileRow {
  /** 0 data, 1 position deletes, 2 equality deletes */
  content: number;
  file_path: string;
  file_format: string;
  spec_id: number;
  partition: PartitionRecord;
  record_count: number;
  file_size_in_bytes: number;
  column_sizes: Record<number, number> | null;
  value_counts: Record<number, number> | null;
  null_value_counts: Record<number, number> | null;
  nan_value_counts: Record<number, number> | null;
  lower_bounds: Record<number, string> | null;
  upper_bounds: Record<number, string> | null;
  split_offsets: number[] | null;
  equality_ids: number[] | null;
  sort_order_id: number | null;
  readable_metrics: Record<string, ReadableMetrics>;
  /** not in Spark's table (it is in `entries`): the data sequence number and the adding snapshot */
  data_sequence_number: bigint;
  snapshot_id: bigint;
  /** v3 (present only when the manifest entry has them): row lineage and deletion vector fields */
  first_row_id?: bigint;
  referenced_data_file?: string;
  content_offset?: number;
  content_size_in_bytes?: number;
}
const obj = <V>(m: Map<number, V> | undefined): Record<number, V> | null => (m ? (Object.fromEntries(m) as Record<number, V>) : null);

/** Spark's `files` table of a snapshot (default: current), data files first in manifest order. Reads immutable files only. */
export async function filesTable(t: TableMetadata | LoadedTable, io: FileIO, opts: { snapshotId?: bigint } = {}): Promise<FileRow[]> {
  const m = metadataOf(t);
  const columns = primitiveColumns(currentSchema(m).fields);
  const bounds = (b: Map<number, Uint8Array> | undefined): Record<number, string> | null => {
    if (!b) return null;
    const out: Record<number, string> = {};
    for (const [id, bytes] of b) {
      const c = columns.get(id);
      out[id] = c ? readableBound(c.type, bytes) : `0x${Buffer.from(bytes).toString('hex')}`;
    }
    return out;
  };
  const entries = await liveEntries(m, io, opts.snapshotId);
  entries.sort((a, b) => a.file.content - b.file.content); // stable: manifest order within each content
  return entries.map(({ file: f, dataSequenceNumber, snapshotId }) => {
    const readable: Record<string, ReadableMetrics> = {};
    for (const [id, c] of columns) {
      const lo = f.lowerBounds?.get(id);
      const hi = f.upperBounds?.get(id);
      readable[c.name] = {
        column_size: f.columnSizes?.get(id) ?? null,
        value_count: f.valueCounts?.get(id) ?? null,
        null_value_count: f.nullValueCounts?.get(id) ?? null,
        nan_value_count: f.nanValueCounts?.get(id) ?? null,
        lower_bound: lo ? readableBound(c.type, lo) : null,
        upper_bound: hi ? readableBound(c.type, hi) : null,
      };
    }
    return {
      content: f.content,
      file_path: f.filePath,
      file_format: f.fileFormat,
      spec_id: f.specId,
      partition: f.partition,
      record_count: f.recordCount,
      file_size_in_bytes: f.fileSizeInBytes,
      column_sizes: obj(f.columnSizes),
      value_counts: obj(f.valueCounts),
      null_value_counts: obj(f.nullValueCounts),
      nan_value_counts: obj(f.nanValueCounts),
      lower_bounds: bounds(f.lowerBounds),
      upper_bounds: bounds(f.upperBounds),
      split_offsets: f.splitOffsets ?? null,
      equality_ids: f.equalityIds ?? null,
      sort_order_id: f.sortOrderId ?? null,
      readable_metrics: readable,
      data_sequence_number: dataSequenceNumber,
      snapshot_id: snapshotId,
      ...(f.firstRowId !== undefined ? { first_row_id: f.firstRowId } : {}),
      ...(f.referencedDataFile !== undefined ? { referenced_data_file: f.referencedDataFile } : {}),
      ...(f.contentOffset !== undefined ? { content_offset: f.contentOffset } : {}),
      ...(f.contentSizeInBytes !== undefined ? { content_size_in_bytes: f.contentSizeInBytes } : {}),
    };
  });
}

export interface ManifestRow {
  content: number;
  path: string;
  length: number;
  partition_spec_id: number;
  added_snapshot_id: bigint;
  sequence_number: bigint;
  min_sequence_number: bigint;
  added_data_files_count: number;
  existing_data_files_count: number;
  deleted_data_files_count: number;
  added_delete_files_count: number;
  existing_delete_files_count: number;
  deleted_delete_files_count: number;
  partition_summaries: Array<{
    contains_null: boolean;
    contains_nan: boolean | null;
    lower_bound: string | null;
    upper_bound: string | null;
  }>;
}
export async function manifestsTable(
  t: TableMetadata | LoadedTable,
  io: FileIO,
  opts: { snapshotId?: bigint } = {},
): Promise<ManifestRow[]> {
  const m = metadataOf(t);
  const snap = snapshotFor(m, opts.snapshotId);
  if (!snap) return [];
  const schema = currentSchema(m);
  return (await readManifestList(io, snap['manifest-list'])).map((mf) => {
    const data = mf.content === ManifestContent.Data;
    let fields: Array<{ transform: string; source: PrimitiveType; type: PrimitiveType }> = [];
    try {
      const spec = specById(m, mf.partitionSpecId);
      const st = partitionType(spec, schema);
      fields = spec.fields.map((f, i) => ({
        transform: f.transform,
        type: st.fields[i]!.type as PrimitiveType,
        source: schema.fields.find((x) => x.id === f['source-id'])?.type as PrimitiveType,
      }));
    } catch {
      /* dropped source column: summaries shown without bounds */
    }
    const human = (i: number, b: Uint8Array | undefined): string | null => {
      const f = fields[i];
      if (!b || !f) return null;
      const v = fromBytes(f.type, b);
      return partitionHumanString(
        f.transform,
        f.source ?? f.type,
        (f.type === 'uuid' || (typeof v === 'bigint' && f.type.startsWith('decimal')) ? b : v) as never,
      );
    };
    return {
      content: mf.content,
      path: mf.manifestPath,
      length: mf.manifestLength,
      partition_spec_id: mf.partitionSpecId,
      added_snapshot_id: mf.addedSnapshotId,
      sequence_number: mf.sequenceNumber,
      min_sequence_number: mf.minSequenceNumber,
      added_data_files_count: data ? mf.addedFilesCount : 0,
      existing_data_files_count: data ? mf.existingFilesCount : 0,
      deleted_data_files_count: data ? mf.deletedFilesCount : 0,
      added_delete_files_count: data ? 0 : mf.addedFilesCount,
      existing_delete_files_count: data ? 0 : mf.existingFilesCount,
      deleted_delete_files_count: data ? 0 : mf.deletedFilesCount,
      partition_summaries: (mf.partitions ?? []).map((p, i) => ({
        contains_null: p.containsNull,
        contains_nan: p.containsNan ?? null,
        lower_bound: human(i, p.lowerBound),
        upper_bound: human(i, p.upperBound),
      })),
    };
  });
}

/**
 * A row of Spark's `partitions` metadata table: per spec and partition, the live data files'
 * records, count and bytes, the live delete files' records and count by kind, and the latest
 * snapshot that added any of them. An unpartitioned table has one row with partition `{}`
 * (Spark leaves out the partition and spec_id columns there).
 */
export interface PartitionRow {
  partition: PartitionRecord;
  spec_id: number;
  record_count: number;
  file_count: number;
  total_data_file_size_in_bytes: number;
  position_delete_record_count: number;
  position_delete_file_count: number;
  equality_delete_record_count: number;
  equality_delete_file_count: number;
  last_updated_at: bigint | null;
  last_updated_snapshot_id: bigint | null;
}
/** Spark's `partitions` table of a snapshot (default: current), in first-seen order. Reads immutable files only. */
export async function partitionsTable(
  t: TableMetadata | LoadedTable,
  io: FileIO,
  opts: { snapshotId?: bigint } = {},
): Promise<PartitionRow[]> {
  const m = metadataOf(t);
  const ts = new Map(m.snapshots.map((s) => [s['snapshot-id'], s['timestamp-ms']]));
  const rows = new Map<string, PartitionRow>();
  for (const { file, snapshotId } of await liveEntries(m, io, opts.snapshotId)) {
    const key = `${file.specId}/${partitionKey(file.partition)}`;
    let r = rows.get(key);
    if (!r) {
      rows.set(
        key,
        (r = {
          partition: file.partition,
          spec_id: file.specId,
          record_count: 0,
          file_count: 0,
          total_data_file_size_in_bytes: 0,
          position_delete_record_count: 0,
          position_delete_file_count: 0,
          equality_delete_record_count: 0,
          equality_delete_file_count: 0,
          last_updated_at: null,
          last_updated_snapshot_id: null,
        }),
      );
    }
    if (file.content === DataFileContent.Data) {
      r.record_count += file.recordCount;
      r.file_count += 1;
      r.total_data_file_size_in_bytes += file.fileSizeInBytes;
    } else if (file.content === DataFileContent.PositionDeletes) {
      r.position_delete_record_count += file.recordCount;
      // spec "Partition Statistics": position delete files, deletion vectors not counted
      if (file.fileFormat !== 'PUFFIN') r.position_delete_file_count += 1;
    } else {
      r.equality_delete_record_count += file.recordCount;
      r.equality_delete_file_count += 1;
    }
    // Java and PyIceberg: the latest commit that added any live file of the partition, deletes included
    const at = ts.get(snapshotId) ?? null;
    if (at !== null && (r.last_updated_at === null || at > r.last_updated_at)) {
      r.last_updated_at = at;
      r.last_updated_snapshot_id = snapshotId;
    }
  }
  return [...rows.values()];
}

/** All data files reachable from any snapshot (orphan detection, expiry audits), deduplicated by path. */
export async function allDataFiles(t: TableMetadata | LoadedTable, io: FileIO): Promise<DataFile[]> {
  const m = metadataOf(t);
  const seen = new Map<string, DataFile>();
  const manifests = new Set<string>();
  for (const s of m.snapshots) {
    for (const mf of await readManifestList(io, s['manifest-list'])) {
      if (manifests.has(mf.manifestPath)) continue;
      manifests.add(mf.manifestPath);
      for (const e of await readManifest(io, mf, { includeDeleted: true })) seen.set(e.dataFile.filePath, e.dataFile);
    }
  }
  return [...seen.values()];
}
