/**
 * Scan planning (spec "Scan Planning"): pick the snapshot, prune manifests with the manifest
 * list's partition summaries, prune entries with their partition values, return live data files
 * with the position delete files that apply to each.
 * Partition predicates are on partition field names and transformed values (e.g. `ts_day >= 19800`).
 */
import { IcebergError } from '../errors';
import type { FileIO } from '../io/file-io';
import { type PrimitiveValue, compareValues, fromBytes } from '../spec/conversions';
import { readManifest } from '../spec/manifest';
import { readManifestList } from '../spec/manifest-list';
import { currentSchema, currentSnapshot, snapshotById, specById } from '../spec/metadata';
import { partitionKey, partitionType } from '../spec/partition';
import { isDeletionVector, mayReferenceDataFile, referencedDataFile } from '../spec/position-delete';
import { MANIFEST_READ_CONCURRENCY, mapConcurrent } from './parallel';
import {
  type DataFile,
  DataFileContent,
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
  /**
   * Position delete files that apply to `file` (spec "Scan Planning"): same spec and partition
   * (or an unpartitioned delete spec), data sequence number >= the file's, and file_path bounds
   * that admit the file. Readers must skip the positions they list; empty for most tasks.
   */
  deletes: DataFile[];
}

/** The `deletes` of every task of a table without delete files (shared: nothing to allocate per task). */
const NO_DELETES: DataFile[] = Object.freeze([]) as unknown as DataFile[];

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

/**
 * The live data files of a snapshot (see planTasks). Callers read rows from them without deletes,
 * so a snapshot where position deletes apply to any of them is refused (FeatureUnsupported): use
 * planTasks and readTaskBatches, which apply them. Concurrency: reads immutable files only.
 */
export async function planFiles(table: TableMetadata | LoadedTable, io: FileIO, opts: PlanOptions = {}): Promise<DataFile[]> {
  const tasks = await planTasks(table, io, opts);
  const withDeletes = tasks.filter((t) => t.deletes.length > 0).length;
  if (withDeletes > 0) {
    throw IcebergError.mismatch('FeatureUnsupported', 'planFiles: data files with position deletes (use planTasks)', 0, withDeletes, false);
  }
  return tasks.map((t) => t.file);
}

/** A delete file with its data sequence number, as the index keeps it. */
interface IndexedDelete {
  file: DataFile;
  seq: bigint;
}

/**
 * Position delete files of a snapshot by what they can apply to (after Java's DeleteFileIndex):
 * by the one data file their file_path bounds name, else by spec and partition, and those of an
 * unpartitioned spec for every data file (a position delete only ever matches its own paths, so
 * applying it more widely is safe).
 */
class PositionDeleteIndex {
  private readonly byPath = new Map<string, IndexedDelete[]>();
  private readonly byPartition = new Map<string, IndexedDelete[]>();
  private readonly global: IndexedDelete[] = [];

  constructor(
    deletes: IndexedDelete[],
    private readonly unpartitioned: (specId: number) => boolean,
  ) {
    for (const d of deletes) {
      const path = referencedDataFile(d.file);
      const list =
        path !== undefined
          ? getOrAdd(this.byPath, path)
          : unpartitioned(d.file.specId)
            ? this.global
            : getOrAdd(this.byPartition, `${d.file.specId}:${partitionKey(d.file.partition)}`);
      list.push(d);
    }
  }

  /**
   * The deletes that apply to data file `f` of data sequence number `seq` (spec: delete seq >=
   * data seq). A deletion vector that applies replaces every position delete file (spec "Scan
   * Planning": it holds their positions), so it comes alone.
   */
  forDataFile(f: DataFile, seq: bigint): DataFile[] {
    const out: DataFile[] = [];
    const byPath = this.byPath.get(f.filePath);
    if (byPath) {
      for (const d of byPath) if (isDeletionVector(d.file) && d.seq >= seq && this.samePartition(d.file, f)) return [d.file];
      for (const d of byPath) if (d.seq >= seq && this.sameOrGlobal(d.file, f)) out.push(d.file);
    }
    const part = this.byPartition.size > 0 ? this.byPartition.get(`${f.specId}:${partitionKey(f.partition)}`) : undefined;
    const candidates = part ? (this.global.length ? [...part, ...this.global] : part) : this.global;
    if (candidates.length > 0) {
      const path = Buffer.from(f.filePath, 'utf8');
      for (const d of candidates) if (d.seq >= seq && mayReferenceDataFile(d.file, path)) out.push(d.file);
    }
    return out.length ? out : NO_DELETES;
  }

  private samePartition(d: DataFile, f: DataFile): boolean {
    return d.specId === f.specId && partitionKey(d.partition) === partitionKey(f.partition);
  }

  private sameOrGlobal(d: DataFile, f: DataFile): boolean {
    return this.unpartitioned(d.specId) || (d.specId === f.specId && partitionKey(d.partition) === partitionKey(f.partition));
  }
}

function getOrAdd<K, V>(m: Map<K, V[]>, k: K): V[] {
  let l = m.get(k);
  if (!l) m.set(k, (l = []));
  return l;
}

/**
 * Live data files with their data sequence numbers, adding snapshots and the position deletes
 * that apply to each. A snapshot with equality deletes is refused (FeatureUnsupported): floe
 * cannot apply them, and dropping them would resurrect rows. Reads immutable files only.
 */
export async function planTasks(table: TableMetadata | LoadedTable, io: FileIO, opts: PlanOptions = {}): Promise<FileScanTask[]> {
  const m = metadataOf(table);
  const snap = snapshotFor(m, opts.snapshotId);
  if (!snap) return [];
  const all = await readManifestList(io, snap['manifest-list']);
  const deleteManifests = all.filter((x) => x.content === ManifestContent.Deletes && x.addedFilesCount + x.existingFilesCount > 0);
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
  // Position deletes are pruned by the same partition predicates: one applies only to data files
  // of its own partition, which the predicates keep or drop alike. A function filter is not
  // applied to them (it may say nothing about an unpartitioned delete spec).
  const keepDelete = (df: DataFile): boolean => typeof filter === 'function' || keepFile(df);
  const deleteEntries = await mapConcurrent(deleteManifests.filter(keepManifest), MANIFEST_READ_CONCURRENCY, async (mf) =>
    (await readManifest(io, mf)).filter((e) => keepDelete(e.dataFile)),
  );
  let index: PositionDeleteIndex | undefined;
  const indexed: IndexedDelete[] = [];
  for (const e of deleteEntries.flat()) {
    // Returning data files without applying equality deletes would silently resurrect deleted rows.
    if (e.dataFile.content !== DataFileContent.PositionDeletes) {
      throw IcebergError.mismatch(
        'FeatureUnsupported',
        `scan of snapshot ${snap['snapshot-id']}: delete file ${e.dataFile.filePath} content`,
        'position deletes (1)',
        e.dataFile.content,
        false,
      );
    }
    indexed.push({ file: e.dataFile, seq: e.sequenceNumber ?? 0n });
  }
  if (indexed.length > 0) index = new PositionDeleteIndex(indexed, (specId) => specById(m, specId).fields.length === 0);

  const perManifest = await mapConcurrent(manifests.filter(keepManifest), MANIFEST_READ_CONCURRENCY, async (mf) =>
    (await readManifest(io, mf))
      .filter((e) => keepFile(e.dataFile))
      .map((e): FileScanTask => {
        const dataSequenceNumber = e.sequenceNumber ?? 0n;
        return {
          file: e.dataFile,
          dataSequenceNumber,
          snapshotId: e.snapshotId ?? mf.addedSnapshotId,
          deletes: index ? index.forDataFile(e.dataFile, dataSequenceNumber) : NO_DELETES,
        };
      }),
  );
  return perManifest.flat();
}
