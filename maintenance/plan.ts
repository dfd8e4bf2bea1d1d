/**
 * Compaction planning (after Spark's SizeBasedFileRewriter / BinPackRewriteFilePlanner): per
 * partition, files outside [minFileSizeBytes, maxFileSizeBytes] are candidates; candidates are
 * bin-packed into groups of at most maxFileGroupSizeBytes; a group is rewritten when it has
 * enough files (>= minInputFiles), enough content (> one target file), too much content, or a
 * file that needs splitting. Pure functions: the activity feeds them the live files.
 */
import type { CompactOptions, FileGroup, FileStats, PartitionFilter } from './types';

export interface LiveFile {
  path: string;
  size: number;
  records: number;
  specId: number;
  /** Partition path under data/ ('' when unpartitioned). */
  partitionPath: string;
  /** [fromMs, toMs) covered by the partition's time fields; null when it has none. */
  timeRange: [number, number] | null;
}

export function fileStats(files: ReadonlyArray<{ size: number }>): FileStats {
  const bytes = files.reduce((a, f) => a + f.size, 0);
  return { files: files.length, bytes, avgFileSizeBytes: files.length ? Math.round(bytes / files.length) : 0 };
}

export function matchesFilter(f: Pick<LiveFile, 'partitionPath' | 'timeRange'>, filter: PartitionFilter | undefined): boolean {
  if (!filter) return true;
  if (filter.paths && filter.paths.length > 0 && !filter.paths.includes(f.partitionPath)) return false;
  if (f.timeRange && (filter.fromMs !== undefined || filter.toMs !== undefined)) {
    const [from, to] = f.timeRange;
    if (filter.toMs !== undefined && from >= filter.toMs) return false;
    if (filter.fromMs !== undefined && to <= filter.fromMs) return false;
  }
  return true;
}

/** First-fit decreasing: fewest bins of at most `capacity` (an item larger than it gets its own bin). */
export function binPack<T>(items: readonly T[], weight: (t: T) => number, capacity: number): T[][] {
  const sorted = [...items].sort((a, b) => weight(b) - weight(a));
  const bins: Array<{ items: T[]; load: number }> = [];
  for (const it of sorted) {
    const w = weight(it);
    const bin = bins.find((b) => b.load + w <= capacity);
    if (bin) {
      bin.items.push(it);
      bin.load += w;
    } else bins.push({ items: [it], load: w });
  }
  return bins.map((b) => b.items);
}

function shouldRewrite(files: readonly LiveFile[], o: CompactOptions): boolean {
  const bytes = files.reduce((a, f) => a + f.size, 0);
  const enoughInputFiles = files.length > 1 && files.length >= o.minInputFiles;
  const enoughContent = files.length > 1 && bytes > o.targetFileSizeBytes;
  const tooMuchContent = bytes > o.maxFileGroupSizeBytes;
  const needsSplit = files.some((f) => f.size > o.maxFileSizeBytes);
  return enoughInputFiles || enoughContent || tooMuchContent || needsSplit;
}

function validateCompactOptions(o: CompactOptions): void {
  const bad = (what: string, expected: string, found: unknown) => {
    throw new Error(`compaction option ${what}: expected ${expected}, found ${String(found)}`);
  };
  if (!(o.targetFileSizeBytes > 0)) bad('targetFileSizeBytes', '> 0', o.targetFileSizeBytes);
  if (!(o.minFileSizeBytes >= 0 && o.minFileSizeBytes < o.targetFileSizeBytes))
    bad('minFileSizeBytes', `in [0, ${o.targetFileSizeBytes})`, o.minFileSizeBytes);
  if (!(o.maxFileSizeBytes > o.targetFileSizeBytes))
    bad('maxFileSizeBytes', `> targetFileSizeBytes (${o.targetFileSizeBytes})`, o.maxFileSizeBytes);
  if (!(o.minInputFiles >= 1)) bad('minInputFiles', '>= 1', o.minInputFiles);
  if (!(o.maxConcurrentFileGroupRewrites >= 1)) bad('maxConcurrentFileGroupRewrites', '>= 1', o.maxConcurrentFileGroupRewrites);
  if (!(o.maxCommits >= 1)) bad('maxCommits', '>= 1', o.maxCommits);
  if (!(o.maxFileGroupSizeBytes > 0)) bad('maxFileGroupSizeBytes', '> 0', o.maxFileGroupSizeBytes);
}

/**
 * File groups to rewrite, ordered by partition path; group indexes are 0..n-1 in that order, so
 * the same live files and options always give the same plan.
 */
export function planFileGroups(files: readonly LiveFile[], o: CompactOptions): { groups: FileGroup[]; partitionsScanned: number } {
  validateCompactOptions(o);
  const byPartition = new Map<string, LiveFile[]>();
  for (const f of files) {
    if (!matchesFilter(f, o.partitionFilter)) continue;
    // Files of different specs never share a group: the output carries one spec's partition.
    const key = `${f.specId}\u0000${f.partitionPath}`;
    let l = byPartition.get(key);
    if (!l) byPartition.set(key, (l = []));
    l.push(f);
  }
  const groups: FileGroup[] = [];
  for (const key of [...byPartition.keys()].sort()) {
    const candidates = byPartition
      .get(key)!
      .filter((f) => f.size < o.minFileSizeBytes || f.size > o.maxFileSizeBytes)
      .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    if (candidates.length === 0) continue;
    for (const bin of binPack(candidates, (f) => f.size, o.maxFileGroupSizeBytes)) {
      if (!shouldRewrite(bin, o)) continue;
      const first = bin[0]!;
      groups.push({
        index: groups.length,
        partitionPath: first.partitionPath,
        specId: first.specId,
        files: bin.map((f) => ({ path: f.path, size: f.size, records: f.records })),
        bytes: bin.reduce((a, f) => a + f.size, 0),
        records: bin.reduce((a, f) => a + f.records, 0),
      });
    }
  }
  return { groups, partitionsScanned: byPartition.size };
}

/** Commit batches for partial progress: at most `maxCommits` commits of roughly equal group counts. */
export function commitBatchSize(groups: number, o: Pick<CompactOptions, 'partialProgress' | 'maxCommits'>): number {
  if (!o.partialProgress) return Math.max(1, groups);
  return Math.max(1, Math.ceil(groups / o.maxCommits));
}

const DAY = 86_400_000;
const HOUR = 3_600_000;

/**
 * [fromMs, toMs) a time-transform partition value covers (spec "Partition Transforms": year,
 * month, day and hour values count from 1970-01-01 UTC); null for other transforms.
 */
export function transformTimeRange(transform: string, value: unknown): [number, number] | null {
  if (value === null || value === undefined) return null;
  const v = Number(value);
  if (!Number.isFinite(v)) return null;
  switch (transform) {
    case 'hour':
      return [v * HOUR, (v + 1) * HOUR];
    case 'day':
      return [v * DAY, (v + 1) * DAY];
    case 'month':
      return [Date.UTC(1970, v, 1), Date.UTC(1970, v + 1, 1)];
    case 'year':
      return [Date.UTC(1970 + v, 0, 1), Date.UTC(1971 + v, 0, 1)];
    default:
      return null;
  }
}

/** The window of `lookback` partitions of `transform` units ending with the one holding `atMs`. */
export function lookbackWindow(transform: string, atMs: number, lookback: number): { fromMs: number; toMs: number } | null {
  const unit = (ms: number): number | null => {
    const d = new Date(ms);
    switch (transform) {
      case 'hour':
        return Math.floor(ms / HOUR);
      case 'day':
        return Math.floor(ms / DAY);
      case 'month':
        return (d.getUTCFullYear() - 1970) * 12 + d.getUTCMonth();
      case 'year':
        return d.getUTCFullYear() - 1970;
      default:
        return null;
    }
  };
  const u = unit(atMs);
  if (u === null) return null;
  const last = transformTimeRange(transform, u)!;
  const first = transformTimeRange(transform, u - Math.max(1, lookback) + 1)!;
  return { fromMs: first[0], toMs: last[1] };
}
