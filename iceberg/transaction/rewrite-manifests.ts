/**
 * Rewrites the current snapshot's data manifests clustered by partition, in a `replace` snapshot
 * that changes no rows and no data files (Spark's `rewrite_manifests` procedure; Java core
 * BaseRewriteManifests for the commit). Streaming appends leave one small manifest per commit,
 * each touching a few partitions; a scan then opens every manifest to plan one partition. After
 * the rewrite the entries of a partition sit together in as few manifests as the target size
 * (`commit.manifest.target-size-bytes`) allows, so partition summaries in the manifest list prune.
 *
 * Every live entry keeps its data file, snapshot id, data and file sequence numbers (written
 * explicitly: the new manifests get this snapshot's sequence number, which must not become the
 * entries' and make position deletes stop applying); its status becomes EXISTING. DELETED entries
 * are dropped, as in any new snapshot. Delete manifests are kept as they are.
 *
 * Planning reads the manifests once without column metrics; writing decodes with metrics only
 * the sources of one output manifest at a time and holds at most that manifest's entries.
 *
 * Concurrency: an optimistic CAS on main. The rewritten manifests are written once, on the
 * first attempt, and reused; a retry on a newer head keeps every manifest the plan did not read
 * (a concurrent append's) and requires every planned manifest to still be there: if one is gone
 * (a compaction rewrote it, another rewrite replaced it) the commit fails with
 * IcebergError('CommitFailed', not retryable), since committing would resurrect or duplicate
 * data files. Java's BaseRewriteManifests fails the same way ("Manifest is missing").
 */
import { randomUUID } from 'node:crypto';
import { IcebergError } from '../errors';
import type { FileIO } from '../io/file-io';
import { MANIFEST_READ_CONCURRENCY, mapConcurrent } from '../scan/parallel';
import { firstRowIdInheritance, inheritFromManifest, openManifest, writeManifest } from '../spec/manifest';
import { readManifestList } from '../spec/manifest-list';
import { currentSchema, currentSnapshot, specById } from '../spec/metadata';
import { partitionKey } from '../spec/partition';
import { manifestTargetSizeBytes, metadataDirectory } from '../spec/table-properties';
import {
  ManifestContent,
  type ManifestEntry,
  ManifestEntryStatus,
  type ManifestFile,
  type PartitionRecord,
  type PartitionValue,
  type SnapshotOperation,
  type TableMetadata,
} from '../spec/types';
import { commitSnapshot, newSnapshotId, type PendingCommit, type TableAction } from './snapshot-producer';
import { buildSummary } from './summary';

/** Summary keys Java's SnapshotSummary defines for RewriteManifests. */
export const MANIFESTS_CREATED = 'manifests-created';
export const MANIFESTS_KEPT = 'manifests-kept';
export const MANIFESTS_REPLACED = 'manifests-replaced';
export const ENTRIES_PROCESSED = 'entries-processed';

export interface RewriteManifestsOptions {
  /** size at which output manifests are split; default table `commit.manifest.target-size-bytes` (8 MB) */
  targetSizeBytes?: number;
  /** extra snapshot summary properties */
  summaryProps?: Record<string, string>;
}

/** Why a rewrite commits nothing. */
export type RewriteManifestsNoop = 'empty' | 'clustered';

/** What the rewrite found in the snapshot it planned against, and what it will write. */
export interface RewriteManifestsPlan {
  /** the snapshot planned against (null: the table has none) */
  baseSnapshotId: bigint | null;
  /** data manifests in that snapshot (with or without live entries) */
  dataManifests: number;
  /** delete manifests in that snapshot (kept as they are) */
  deleteManifests: number;
  /** live data file entries (what the rewrite processes) */
  entries: number;
  /** distinct (spec, partition) tuples among them */
  partitions: number;
  /** the most data manifests one partition's entries are spread over */
  maxManifestsPerPartition: number;
  /** manifests the rewrite will write (0 for a no-op) */
  plannedManifests: number;
  /** set when nothing is committed: no live data files, or one manifest per partition already */
  noop?: RewriteManifestsNoop;
}

/** One live entry as planned: where it is (source manifest, ordinal there) and where it goes. */
interface PlannedEntry {
  src: number;
  ord: number;
  specId: number;
  partition: PartitionRecord;
  key: string;
  /** estimated bytes in a manifest: its source manifest's length over its entry count */
  size: number;
}

/** The planned manifests' contents: per output, the (source, ordinal) pairs in write order. */
interface OutputGroup {
  specId: number;
  entries: PlannedEntry[];
}

/**
 * Orders partition values so a manifest's partitions are contiguous ranges (tight lower/upper
 * bounds in the manifest list): nulls first, numbers and bigints numerically, strings by code
 * unit, bytes lexicographically (decimals are two's-complement bytes: negative ones sort after
 * positive ones, which only loosens bounds, never clustering).
 */
function compareValue(a: PartitionValue, b: PartitionValue): number {
  if (a === b) return 0;
  if (a === null) return -1;
  if (b === null) return 1;
  if ((typeof a === 'number' || typeof a === 'bigint') && (typeof b === 'number' || typeof b === 'bigint'))
    return a < b ? -1 : a > b ? 1 : 0;
  if (a instanceof Uint8Array && b instanceof Uint8Array) return Buffer.compare(a, b);
  const sa = String(a),
    sb = String(b);
  return sa < sb ? -1 : sa > sb ? 1 : 0;
}

function comparePartitions(a: PartitionRecord, b: PartitionRecord): number {
  const keys = Object.keys(a);
  for (const k of keys) {
    const c = compareValue(a[k] ?? null, b[k] ?? null);
    if (c !== 0) return c;
  }
  return keys.length - Object.keys(b).length;
}

const liveCount = (m: ManifestFile): number => m.addedFilesCount + m.existingFilesCount;
/** A data manifest with no live entry, only deleted ones: new snapshots drop it (as SnapshotProducer and Java do). */
const isDead = (m: ManifestFile): boolean => m.content === ManifestContent.Data && liveCount(m) === 0 && m.deletedFilesCount > 0;

/**
 * Packs entries sorted by (spec, partition) into output manifests of at most `target` estimated
 * bytes. A partition that fits in a fresh manifest but not in the current one starts a fresh
 * one, so partitions are split only when a single partition exceeds the target.
 */
export function packByPartition<E extends { specId: number; key: string; size: number }>(sorted: E[], target: number): E[][] {
  const out: E[][] = [];
  let cur: E[] = [];
  let curSize = 0;
  const close = (): void => {
    if (cur.length) out.push(cur);
    cur = [];
    curSize = 0;
  };
  for (let i = 0; i < sorted.length;) {
    const first = sorted[i]!;
    let j = i;
    let runSize = 0;
    while (j < sorted.length && sorted[j]!.specId === first.specId && sorted[j]!.key === first.key) runSize += sorted[j++]!.size;
    // one spec per manifest
    if (cur.length && (cur[0]!.specId !== first.specId || (curSize + runSize > target && runSize <= target))) close();
    for (let k = i; k < j; k++) {
      const e = sorted[k]!;
      if (cur.length && curSize + e.size > target) close();
      cur.push(e);
      curSize += e.size;
    }
    i = j;
  }
  close();
  return out;
}

/**
 * The `replace` snapshot that rewrites data manifests clustered by partition. Add it to a
 * Transaction (`tx.add(action)`); `plan` is set after the first attempt's `prepare`.
 */
export class RewriteManifests implements TableAction {
  readonly snapshotId: bigint = newSnapshotId();
  readonly commitUuid: string = randomUUID();
  /** set by the first `prepare`: what was found and planned */
  plan?: RewriteManifestsPlan;
  private manifestCounter = 0;
  private readonly written: string[] = [];
  /** the planned (replaced) manifests' paths: each must still be in the head a retry lands on */
  private replaced?: Set<string>;
  /** the rewritten manifests, written on the first attempt and reused */
  private created?: ManifestFile[];

  constructor(private readonly opts: RewriteManifestsOptions = {}) {
    if (opts.targetSizeBytes !== undefined && !(Number.isSafeInteger(opts.targetSizeBytes) && opts.targetSizeBytes > 0)) {
      throw IcebergError.mismatch('DataInvalid', 'rewriteManifests targetSizeBytes', 'a positive integer', opts.targetSizeBytes, false);
    }
  }

  operation(): SnapshotOperation {
    return 'replace';
  }

  writtenFiles(): string[] {
    return [...this.written];
  }

  private newLocation(base: TableMetadata, name: string): string {
    const loc = `${metadataDirectory(base)}/${name}`;
    this.written.push(loc);
    return loc;
  }

  /** Plans against `base`'s current snapshot and writes the clustered manifests (first attempt only). */
  private async planAndWrite(base: TableMetadata, io: FileIO): Promise<void> {
    const parent = currentSnapshot(base);
    const manifests = parent ? await readManifestList(io, parent['manifest-list']) : [];
    const data = manifests.filter((m) => m.content === ManifestContent.Data);
    const sources = data.filter((m) => liveCount(m) > 0);
    const plan: RewriteManifestsPlan = {
      baseSnapshotId: parent?.['snapshot-id'] ?? null,
      dataManifests: data.length,
      deleteManifests: manifests.length - data.length,
      entries: 0,
      partitions: 0,
      maxManifestsPerPartition: 0,
      plannedManifests: 0,
    };
    this.plan = plan;
    this.replaced = new Set();
    this.created = [];

    // Pass 1, without column metrics: where each live entry is and which partition it is in.
    const bytes = await mapConcurrent(sources, MANIFEST_READ_CONCURRENCY, (m) => io.read(m.manifestPath));
    const planned: PlannedEntry[] = [];
    const spread = new Map<string, Set<number>>();
    sources.forEach((m, src) => {
      const found: PlannedEntry[] = [];
      let ord = 0;
      for (const raw of openManifest(bytes[src]!, m.manifestPath, m.partitionSpecId, { metrics: false }).entries()) {
        const o = ord++;
        if (raw.status === ManifestEntryStatus.Deleted) continue;
        const key = `${m.partitionSpecId}:${partitionKey(raw.dataFile.partition)}`;
        found.push({ src, ord: o, specId: m.partitionSpecId, partition: raw.dataFile.partition, key, size: 0 });
        let s = spread.get(key);
        if (!s) spread.set(key, (s = new Set()));
        s.add(src);
      }
      const size = m.manifestLength / Math.max(1, ord);
      for (const e of found) e.size = size;
      planned.push(...found);
    });
    plan.entries = planned.length;
    plan.partitions = spread.size;
    for (const s of spread.values()) plan.maxManifestsPerPartition = Math.max(plan.maxManifestsPerPartition, s.size);
    if (planned.length === 0) {
      plan.noop = 'empty';
      return;
    }
    if (plan.maxManifestsPerPartition <= 1) {
      plan.noop = 'clustered';
      return;
    }

    planned.sort((a, b) => a.specId - b.specId || comparePartitions(a.partition, b.partition) || a.src - b.src || a.ord - b.ord);
    const groups: OutputGroup[] = packByPartition(planned, this.opts.targetSizeBytes ?? manifestTargetSizeBytes(base.properties)).map(
      (entries) => ({ specId: entries[0]!.specId, entries }),
    );
    plan.plannedManifests = groups.length;

    // Pass 2: one output manifest at a time, decoding (with metrics) only the sources it draws from.
    const schema = currentSchema(base);
    for (const g of groups) {
      const wanted = new Map<number, Map<number, number>>(); // src -> ord -> position in the output
      g.entries.forEach((e, pos) => {
        let w = wanted.get(e.src);
        if (!w) wanted.set(e.src, (w = new Map()));
        w.set(e.ord, pos);
      });
      const out: ManifestEntry[] = new Array<ManifestEntry>(g.entries.length);
      for (const [src, ords] of wanted) {
        const m = sources[src]!;
        let ord = 0;
        // v3: every entry goes through first row id inheritance, in file order (the counter needs them all)
        const rowIds = firstRowIdInheritance(m);
        for (const raw of openManifest(bytes[src]!, m.manifestPath, m.partitionSpecId).entries()) {
          const withRowId = rowIds(raw);
          const pos = ords.get(ord++);
          if (pos === undefined) continue;
          // Inheritance first: the new manifest has another sequence number, snapshot id and first row id.
          const e = inheritFromManifest(withRowId, m);
          out[pos] = { ...e, status: ManifestEntryStatus.Existing };
        }
      }
      this.created.push(
        await writeManifest(io, {
          location: this.newLocation(base, `${this.commitUuid}-m${this.manifestCounter++}.avro`),
          spec: specById(base, g.specId),
          schema,
          snapshotId: this.snapshotId,
          entries: out,
          ...(base['format-version'] >= 3 ? { formatVersion: 3 as const } : {}),
        }),
      );
    }
    for (const m of sources) this.replaced.add(m.manifestPath);

    // Java's validateFilesCounts: the rewrite neither loses nor duplicates a file.
    const before = sources.reduce((a, m) => a + liveCount(m), 0);
    const after = this.created.reduce((a, m) => a + liveCount(m), 0);
    if (before !== after || after !== planned.length) {
      throw IcebergError.mismatch('Unexpected', 'rewriteManifests live files (replaced manifests vs created)', before, after, false);
    }
  }

  async prepare(base: TableMetadata, io: FileIO, attempt: number): Promise<PendingCommit> {
    if (base['format-version'] !== 2 && base['format-version'] !== 3) {
      throw IcebergError.mismatch(
        'FeatureUnsupported',
        'rewriteManifests on table format-version',
        '2 or 3',
        base['format-version'],
        false,
      );
    }
    if (!this.plan) await this.planAndWrite(base, io);
    const plan = this.plan!;
    if (plan.noop) return { updates: [], requirements: [], attemptFiles: [], referencedFiles: [] };

    const parent = currentSnapshot(base);
    const current = parent ? await readManifestList(io, parent['manifest-list']) : [];
    const present = new Set(current.map((m) => m.manifestPath));
    const missing = [...this.replaced!].filter((p) => !present.has(p));
    if (missing.length > 0) {
      throw new IcebergError(
        'CommitFailed',
        `rewriteManifests: ${missing.length} of ${this.replaced!.size} planned manifests are no longer in snapshot ${parent?.['snapshot-id'] ?? 'none'} (rewritten or removed concurrently): expected present, found missing: ${missing.slice(0, 5).join(', ')}${missing.length > 5 ? ', …' : ''}`,
        { retryable: false, context: { missing, expected: 'present', found: 'missing' } },
      );
    }
    const kept = current.filter((m) => !this.replaced!.has(m.manifestPath) && !isDead(m));
    const dropped = current.filter((m) => !this.replaced!.has(m.manifestPath) && isDead(m)).length;
    const manifests = [...this.created!, ...kept];

    const writtenBefore = this.written.length;
    const manifestList = this.newLocation(base, `snap-${this.snapshotId}-${attempt}-${this.commitUuid}.avro`);
    const commit = await commitSnapshot(io, base, {
      snapshotId: this.snapshotId,
      manifestList,
      manifests,
      summary: buildSummary(this.operation(), { added: [], deleted: [] }, parent, {
        ...this.opts.summaryProps,
        [MANIFESTS_CREATED]: String(this.created!.length),
        [MANIFESTS_KEPT]: String(kept.length),
        [MANIFESTS_REPLACED]: String(this.replaced!.size + dropped),
        [ENTRIES_PROCESSED]: String(plan.entries),
      }),
    });
    // only the manifest list is per attempt; the rewritten manifests serve every retry
    return { ...commit, attemptFiles: this.written.slice(writtenBefore) };
  }
}
