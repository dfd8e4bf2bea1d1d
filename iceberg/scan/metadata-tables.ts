/**
 * Iceberg metadata tables as arrays of plain rows, named and shaped like Spark/PyIceberg's
 * `table.inspect.*` / `db.t.snapshots` so users recognise them: snapshots, history, files,
 * manifests, partitions. 64-bit ids stay bigint.
 */
import type { FileIO } from '../io/file-io';
import { fromBytes } from '../spec/conversions';
import { readManifest } from '../spec/manifest';
import { readManifestList } from '../spec/manifest-list';
import { ancestors, currentSchema, specById } from '../spec/metadata';
import { partitionHumanString, partitionKey, partitionType } from '../spec/partition';
import {
  type DataFile,
  type LoadedTable,
  ManifestContent,
  type PartitionRecord,
  type PrimitiveType,
  type TableMetadata,
} from '../spec/types';
import { type PlanOptions, planTasks, snapshotFor } from './plan';

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
      summary: { operation, ...summary },
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

export interface FileRow {
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
  lower_bounds: Record<number, Uint8Array> | null;
  upper_bounds: Record<number, Uint8Array> | null;
  split_offsets: number[] | null;
  sort_order_id: number | null;
  /** not in Spark's table: the data sequence number and the adding snapshot, useful for debugging */
  data_sequence_number: bigint;
  snapshot_id: bigint;
}
const obj = <V>(m: Map<number, V> | undefined): Record<number, V> | null => (m ? (Object.fromEntries(m) as Record<number, V>) : null);
export async function filesTable(t: TableMetadata | LoadedTable, io: FileIO, opts: PlanOptions = {}): Promise<FileRow[]> {
  return (await planTasks(t, io, opts)).map(({ file: f, dataSequenceNumber, snapshotId }) => ({
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
    lower_bounds: obj(f.lowerBounds),
    upper_bounds: obj(f.upperBounds),
    split_offsets: f.splitOffsets ?? null,
    sort_order_id: f.sortOrderId ?? null,
    data_sequence_number: dataSequenceNumber,
    snapshot_id: snapshotId,
  }));
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

export interface PartitionRow {
  partition: PartitionRecord;
  spec_id: number;
  record_count: number;
  file_count: number;
  total_data_file_size_in_bytes: number;
  last_updated_at: bigint | null;
  last_updated_snapshot_id: bigint | null;
}
export async function partitionsTable(t: TableMetadata | LoadedTable, io: FileIO, opts: PlanOptions = {}): Promise<PartitionRow[]> {
  const m = metadataOf(t);
  const ts = new Map(m.snapshots.map((s) => [s['snapshot-id'], s['timestamp-ms']]));
  const rows = new Map<string, PartitionRow>();
  for (const { file, snapshotId } of await planTasks(m, io, opts)) {
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
          last_updated_at: null,
          last_updated_snapshot_id: null,
        }),
      );
    }
    r.record_count += file.recordCount;
    r.file_count += 1;
    r.total_data_file_size_in_bytes += file.fileSizeInBytes;
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
