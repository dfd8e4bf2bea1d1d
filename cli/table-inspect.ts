/**
 * `floe table commits|files|partitions|manifests <table>`: Spark's metadata tables (`snapshots`
 * with history's `is_current_ancestor`, `files`, `partitions`, `manifests`; rows built by
 * iceberg/scan/metadata-tables.ts) as JSON with Spark's column names, and compact text tables.
 * JSON conventions: 64-bit ids as decimal strings (printJson), times as ISO 8601 UTC, binary
 * partition values as base64. Everything here reads immutable files and one metadata version.
 */
import {
  ancestors,
  currentSchema,
  filesTable,
  findField,
  type LoadedTable,
  manifestsTable,
  partitionHumanString,
  type PartitionRecord,
  partitionsTable,
  partitionType,
  type PrimitiveType,
  snapshotsTable,
  specById,
  type TableMetadata,
  type FileIO,
} from '../iceberg';
import type { FloeConfig } from '../config';
import { formatBytes } from './format';

const iso = (ms: bigint | null): string | null => (ms === null ? null : new Date(Number(ms)).toISOString());

/**
 * Partition values for JSON as Spark shows its `partition` struct: date-typed values (day
 * transform, identity of a date) as `2026-06-01`, timestamps as ISO 8601, decimals, uuids and
 * bytes as text (base64 for binary); ints and strings as they are, longs as decimal strings (printJson).
 */
function jsonPartition(m: TableMetadata, specId: number, p: PartitionRecord): Record<string, string | number | boolean | bigint | null> {
  let types: Map<string, PrimitiveType> | undefined;
  try {
    types = new Map(partitionType(specById(m, specId), currentSchema(m)).fields.map((f) => [f.name, f.type as PrimitiveType]));
  } catch {
    types = undefined; // a dropped source column: raw values
  }
  return Object.fromEntries(
    Object.entries(p).map(([k, v]) => {
      const t = types?.get(k);
      if (v === null) return [k, null];
      if (v instanceof Uint8Array || (t && (t === 'date' || t.startsWith('timestamp') || t === 'time')))
        return [k, t ? partitionHumanString('identity', t, v) : Buffer.from(v as Uint8Array).toString('base64')];
      return [k, v];
    }),
  );
}

/** `d_month=2020-01/id_bucket=3` as in partition paths; `(unpartitioned)` for the empty record. */
export function partitionLabel(m: TableMetadata, specId: number, p: PartitionRecord): string {
  try {
    const spec = specById(m, specId);
    if (spec.fields.length === 0) return '(unpartitioned)';
    const schema = currentSchema(m);
    return spec.fields
      .map((f) => {
        const source = findField(schema, f['source-id'])?.field.type;
        const v = p[f.name] ?? null;
        return `${f.name}=${typeof source === 'string' ? partitionHumanString(f.transform, source as PrimitiveType, v) : String(v)}`;
      })
      .join('/');
  } catch {
    // a spec whose source column was dropped: the raw values still say which partition it is
    return JSON.stringify(jsonPartition(m, specId, p), (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  }
}

const metadataOf = (t: TableMetadata | LoadedTable): TableMetadata => ('metadata' in t ? t.metadata : t);

/**
 * `table commits --json`: Spark's `snapshots` rows (every snapshot of the metadata, in commit
 * order) with `is_current_ancestor` (Spark's `history`: on main's line), then floe's columns of the
 * text output (time, rows, files, ...), kept because scripts read them.
 */
export function commitsJson(t: TableMetadata | LoadedTable): Record<string, unknown>[] {
  const m = metadataOf(t);
  const onMain = new Set([...ancestors(m)].map((s) => s['snapshot-id']));
  return snapshotsTable(m).map((s) => ({
    committed_at: iso(s.committed_at),
    snapshot_id: s.snapshot_id,
    parent_id: s.parent_id,
    operation: s.operation,
    manifest_list: s.manifest_list,
    summary: s.summary,
    is_current_ancestor: onMain.has(s.snapshot_id),
    time: iso(s.committed_at),
    rows: s.summary['added-records'] ?? '0',
    files: s.summary['added-data-files'] ?? '0',
    removed_files: s.summary['deleted-data-files'] ?? '0',
    total_rows: s.summary['total-records'] ?? '',
    total_files: s.summary['total-data-files'] ?? '',
    commit_id: s.summary['floe.commit-id'] ?? '',
  }));
}

/** `table files --json`: Spark's `files` rows of the current snapshot, data then delete files. */
export async function filesJson(t: TableMetadata | LoadedTable, io: FileIO): Promise<Record<string, unknown>[]> {
  const m = metadataOf(t);
  return (await filesTable(m, io)).map((f) => ({ ...f, partition: jsonPartition(m, f.spec_id, f.partition) }));
}

interface InspectView {
  /** Spark-named rows for --json */
  json: Record<string, unknown>[];
  /** the compact text table */
  text: Record<string, string | number>[];
}

/** `table partitions`: Spark's `partitions` rows of the current snapshot. */
export async function partitionsView(t: TableMetadata | LoadedTable, io: FileIO): Promise<InspectView> {
  const m = metadataOf(t);
  const rows = await partitionsTable(m, io);
  return {
    json: rows.map((r) => ({ ...r, partition: jsonPartition(m, r.spec_id, r.partition), last_updated_at: iso(r.last_updated_at) })),
    text: rows
      .map((r) => ({
        partition: partitionLabel(m, r.spec_id, r.partition),
        spec_id: r.spec_id,
        record_count: r.record_count,
        file_count: r.file_count,
        size: formatBytes(r.total_data_file_size_in_bytes),
        pos_deletes: r.position_delete_record_count,
        pos_delete_files: r.position_delete_file_count,
        eq_delete_files: r.equality_delete_file_count,
        last_updated_at: iso(r.last_updated_at) ?? '',
        last_updated_snapshot_id: r.last_updated_snapshot_id?.toString() ?? '',
      }))
      .sort((a, b) => (a.partition < b.partition ? -1 : a.partition > b.partition ? 1 : 0)),
  };
}

/** `table manifests`: Spark's `manifests` rows of the current snapshot's manifest list. */
export async function manifestsView(t: TableMetadata | LoadedTable, io: FileIO): Promise<InspectView> {
  const rows = await manifestsTable(t, io);
  return {
    json: rows.map((r) => ({ ...r })),
    text: rows.map((r) => {
      const data = r.content === 0;
      return {
        content: data ? 'data' : 'deletes',
        manifest: r.path.split('/').pop() ?? r.path,
        length: r.length,
        spec_id: r.partition_spec_id,
        added_snapshot_id: r.added_snapshot_id.toString(),
        added_files: data ? r.added_data_files_count : r.added_delete_files_count,
        existing_files: data ? r.existing_data_files_count : r.existing_delete_files_count,
        deleted_files: data ? r.deleted_data_files_count : r.deleted_delete_files_count,
        partitions: r.partition_summaries
          .map((s) =>
            s.lower_bound === s.upper_bound ? (s.lower_bound ?? 'null') : `${s.lower_bound ?? 'null'}..${s.upper_bound ?? 'null'}`,
          )
          .join(', '),
      };
    }),
  };
}

/** Opens the configured catalog, loads `table` and hands it to `f`; closes the catalog either way. */
export async function withTable<T>(cfg: FloeConfig, table: string, f: (t: LoadedTable, io: FileIO) => Promise<T> | T): Promise<T> {
  const { openTables } = await import('../table/tables');
  const tables = await openTables(cfg);
  try {
    return await f(await tables.load(table), tables.io);
  } finally {
    await tables.close();
  }
}
