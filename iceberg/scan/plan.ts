/**
 * Scan planning (spec "Scan Planning"): pick the snapshot, prune manifests with the manifest
 * list's partition summaries, prune entries with their partition values, return live data files.
 * Partition predicates are on partition field names and transformed values (e.g. `ts_day >= 19800`).
 */
import { IcebergError } from '../errors';
import type { FileIO } from '../io/file-io';
import { type PrimitiveValue, compareValues, fromBytes } from '../spec/conversions';
import { readManifest } from '../spec/manifest';
import { readManifestList } from '../spec/manifest-list';
import { currentSchema, currentSnapshot, snapshotById, specById } from '../spec/metadata';
import { partitionType } from '../spec/partition';
import { MANIFEST_READ_CONCURRENCY, mapConcurrent } from './parallel';
import {
  type DataFile,
  type FieldSummary,
  ManifestContent,
  type ManifestFile,
  type LoadedTable,
  type PartitionRecord,
  type PartitionValue,
  type PrimitiveType,
  type Snapshot,
  type TableMetadata,
} from '../spec/types';

export type PartitionPredicate =
  | { field: string; op: '=' | '!=' | '<' | '<=' | '>' | '>='; value: PartitionValue }
  | { field: string; op: 'in'; values: PartitionValue[] }
  | { field: string; op: 'is-null' | 'not-null' };

export interface PlanOptions {
  /** default: the current snapshot of main */
  snapshotId?: bigint;
  /** a conjunction of predicates, or an arbitrary function of a file's partition */
  partitionFilter?: PartitionPredicate[] | ((partition: PartitionRecord, specId: number) => boolean);
}

export interface FileScanTask {
  file: DataFile;
  dataSequenceNumber: bigint;
  /** the snapshot that added the file */
  snapshotId: bigint;
}

const metadataOf = (t: TableMetadata | LoadedTable): TableMetadata => ('metadata' in t ? t.metadata : t);

export function snapshotFor(m: TableMetadata, snapshotId?: bigint): Snapshot | undefined {
  if (snapshotId === undefined) return currentSnapshot(m);
  const s = snapshotById(m, snapshotId);
  if (!s) throw IcebergError.mismatch('NotFound', 'snapshot id', snapshotId, `none of ${m.snapshots.length} snapshots`, false);
  return s;
}

const cmp = (t: PrimitiveType, a: PartitionValue, b: PartitionValue): number => compareValues(t, a as PrimitiveValue, b as PrimitiveValue);

/** Exact evaluation on a file's partition (null compares false, as SQL). */
function matchValue(p: PartitionPredicate, t: PrimitiveType, v: PartitionValue): boolean {
  switch (p.op) {
    case 'is-null':
      return v === null;
    case 'not-null':
      return v !== null;
    case 'in':
      return v !== null && p.values.some((x) => x !== null && cmp(t, v, x) === 0);
    default: {
      if (v === null || p.value === null) return false;
      const c = cmp(t, v, p.value);
      return p.op === '='
        ? c === 0
        : p.op === '!='
          ? c !== 0
          : p.op === '<'
            ? c < 0
            : p.op === '<='
              ? c <= 0
              : p.op === '>'
                ? c > 0
                : c >= 0;
    }
  }
}

/** Conservative evaluation on a manifest's summary: false only when no file can match. */
function mightMatch(p: PartitionPredicate, t: PrimitiveType, s: FieldSummary): boolean {
  if (p.op === 'is-null') return s.containsNull;
  if (p.op === 'not-null' || p.op === '!=') return true;
  if (s.lowerBound === undefined || s.upperBound === undefined) {
    // spec: bounds are null when every value is null or NaN; without nulls/NaNs they are just unknown
    return !(s.containsNull || s.containsNan === true);
  }
  const lo = fromBytes(t, s.lowerBound) as PartitionValue,
    hi = fromBytes(t, s.upperBound) as PartitionValue;
  const inRange = (v: PartitionValue): boolean => v !== null && cmp(t, lo, v) <= 0 && cmp(t, v, hi) <= 0;
  switch (p.op) {
    case 'in':
      return p.values.some(inRange);
    case '=':
      return inRange(p.value);
    case '<':
      return p.value !== null && cmp(t, lo, p.value) < 0;
    case '<=':
      return p.value !== null && cmp(t, lo, p.value) <= 0;
    case '>':
      return p.value !== null && cmp(t, hi, p.value) > 0;
    case '>=':
      return p.value !== null && cmp(t, hi, p.value) >= 0;
  }
}

/** The live data files of a snapshot (see planTasks). Concurrency: reads immutable files only. */
export async function planFiles(table: TableMetadata | LoadedTable, io: FileIO, opts: PlanOptions = {}): Promise<DataFile[]> {
  return (await planTasks(table, io, opts)).map((t) => t.file);
}

/** Live data files with their data sequence numbers and adding snapshots. Reads immutable files only. */
export async function planTasks(table: TableMetadata | LoadedTable, io: FileIO, opts: PlanOptions = {}): Promise<FileScanTask[]> {
  const m = metadataOf(table);
  const snap = snapshotFor(m, opts.snapshotId);
  if (!snap) return [];
  const all = await readManifestList(io, snap['manifest-list']);
  // Returning data files without applying row-level deletes would silently resurrect deleted rows.
  const deletes = all.filter((x) => x.content === ManifestContent.Deletes && x.addedFilesCount + x.existingFilesCount > 0);
  if (deletes.length > 0) {
    throw IcebergError.mismatch(
      'FeatureUnsupported',
      `scan of snapshot ${snap['snapshot-id']}: live delete manifests`,
      0,
      deletes.length,
      false,
    );
  }
  const manifests = all.filter((x) => x.content === ManifestContent.Data);
  const filter = opts.partitionFilter;
  const schema = currentSchema(m);
  const typesBySpec = new Map<number, Map<string, { index: number; type: PrimitiveType }> | undefined>();
  const typesOf = (specId: number) => {
    if (!typesBySpec.has(specId)) {
      try {
        const st = partitionType(specById(m, specId), schema);
        typesBySpec.set(specId, new Map(st.fields.map((f, index) => [f.name, { index, type: f.type as PrimitiveType }])));
      } catch {
        typesBySpec.set(specId, undefined); // e.g. a source column was dropped: no pruning for that spec
      }
    }
    return typesBySpec.get(specId);
  };
  const keepManifest = (mf: ManifestFile): boolean => {
    if (!Array.isArray(filter) || !mf.partitions) return true;
    const types = typesOf(mf.partitionSpecId);
    if (!types) return true;
    return filter.every((p) => {
      const f = types.get(p.field);
      const s = f && mf.partitions![f.index];
      return !f || !s || mightMatch(p, f.type, s);
    });
  };
  const keepFile = (df: DataFile): boolean => {
    if (filter === undefined) return true;
    if (typeof filter === 'function') return filter(df.partition, df.specId);
    const types = typesOf(df.specId);
    return filter.every((p) => {
      const f = types?.get(p.field);
      // a spec without the field (partition evolution) cannot be pruned by it
      return !f || matchValue(p, f.type, df.partition[p.field] ?? null);
    });
  };
  const perManifest = await mapConcurrent(manifests.filter(keepManifest), MANIFEST_READ_CONCURRENCY, async (mf) =>
    (await readManifest(io, mf))
      .filter((e) => keepFile(e.dataFile))
      .map((e): FileScanTask => ({
        file: e.dataFile,
        dataSequenceNumber: e.sequenceNumber ?? 0n,
        snapshotId: e.snapshotId ?? mf.addedSnapshotId,
      })),
  );
  return perManifest.flat();
}
