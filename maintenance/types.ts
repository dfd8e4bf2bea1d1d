/**
 * Inputs and results of the maintenance activities and workflows (compaction, snapshot expiry,
 * orphan removal). Everything here crosses Temporal history as JSON: snapshot ids are decimal
 * strings, data files are in their wire form, file lists are kept short (relative paths, caps).
 */
import type { WireDataFile } from '../table/wire';

/** Spark rewrite_data_files options, in floe's camelCase. */
export interface CompactOptions {
  /** Output files roll at this size (Iceberg `write.target-file-size-bytes`). */
  targetFileSizeBytes: number;
  /** A group is rewritten only with at least this many files (Spark default 5)... */
  minInputFiles: number;
  /** Files smaller than this are candidates (Spark default 75% of target). */
  minFileSizeBytes: number;
  /** Files larger than this are candidates to split (Spark default 180% of target). */
  maxFileSizeBytes: number;
  /** Upper bound of input bytes of one group (Spark default 100 GiB). */
  maxFileGroupSizeBytes: number;
  /** Group rewrites running at once (Spark default 5). */
  maxConcurrentFileGroupRewrites: number;
  /** Commit finished groups in up to `maxCommits` commits instead of one at the end. */
  partialProgress: boolean;
  maxCommits: number;
  /** Only partitions matching this filter. */
  partitionFilter?: PartitionFilter;
}

export interface PartitionFilter {
  /** Exact partition paths as written under data/ (`event_time_day=2024-06-01/event_type=paid`). */
  paths?: string[];
  /**
   * Time window: keep partitions whose time-transform value (year/month/day/hour of a
   * date/timestamp column) overlaps [fromMs, toMs). Partitions without a time field always match.
   */
  fromMs?: number;
  toMs?: number;
}

export const compactDefaults = (targetFileSizeBytes: number): CompactOptions => ({
  targetFileSizeBytes,
  minInputFiles: 5,
  minFileSizeBytes: Math.floor(targetFileSizeBytes * 0.75),
  maxFileSizeBytes: Math.floor(targetFileSizeBytes * 1.8),
  maxFileGroupSizeBytes: 100 * 1024 * 1024 * 1024,
  maxConcurrentFileGroupRewrites: 2,
  partialProgress: false,
  maxCommits: 10,
});

/** One input file of a group; `path` is relative to the table location when it lies under it. */
export interface GroupFile {
  path: string;
  size: number;
  records: number;
}

export interface FileGroup {
  index: number;
  /** Partition path under data/ ('' for unpartitioned tables). */
  partitionPath: string;
  specId: number;
  /** The input files; empty in a staged plan's group summary (they are in the stage, see CompactionPlan.staged). */
  files: GroupFile[];
  bytes: number;
  records: number;
  /** Number of input files (set by planners that stage; older plans: files.length). */
  fileCount?: number;
}

export interface FileStats {
  files: number;
  bytes: number;
  avgFileSizeBytes: number;
}

export interface CompactionPlan {
  table: string;
  location: string;
  /** The snapshot the plan was made from (null: empty table). */
  snapshotId: string | null;
  groups: FileGroup[];
  /** Live data files of the table (all partitions) when planned. */
  before: FileStats;
  /** Partitions looked at (after the filter). */
  partitionsScanned: number;
  /** The options in force (config defaults + the caller's overrides). */
  options: CompactOptions;
  /**
   * Set when the plan is staged (PlanCompactionInput.runId given): `groups` are summaries without
   * files, and each group's files are in the object store at `<staged>-g<index>.json`
   * (activities/maintenance/compact.ts `stagedGroupLocation`), protected by the run's pending marker.
   * Keeps history O(groups) instead of O(files): a plan over ~15k files no longer nears 2 MB.
   */
  staged?: string;
}

export interface PlanCompactionInput {
  table: string;
  /**
   * The run's id (output and marker prefix `<runId>-`): when given, the plan is staged and the
   * result carries group summaries only. Absent (runs started before staging existed): inline plan.
   */
  runId?: string;
  /** Overrides of the table's configured compaction options. */
  options?: Partial<CompactOptions>;
  /** Scheduled start time (ISO) of a scheduled run: with `lookbackPartitions` it picks the partitions. */
  window?: string | null;
}

export interface RewriteGroupInput {
  table: string;
  location: string;
  /** Unique per compaction run: output names carry it, so runs never collide. */
  runId: string;
  group: FileGroup;
  targetFileSizeBytes: number;
  /** CompactionPlan.staged: read the group's files from the stage, and stage the outputs there. */
  staged?: string;
}

export interface RewriteGroupResult {
  index: number;
  /** Output files without partition/spec (the commit takes them from the replaced files); empty when staged. */
  outputs: WireDataFile[];
  /** Staged rewrites: number of outputs, listed at `<staged>-g<index>-out-a<attempt>.json`. */
  outputCount?: number;
  /** Staged rewrites: the attempt that wrote (and listed) the outputs. */
  attempt?: number;
  inputBytes: number;
  outputBytes: number;
  records: number;
  durationMs: number;
  peakRssBytes: number;
}

export interface CommitRewriteInput {
  table: string;
  location: string;
  /** Workflow-made, so a retried commit finds its own snapshot (`floe.commit-id`). */
  commitId: string;
  /** Inline plans: the groups with their files and outputs. Empty when `staged` is set. */
  groups: Array<{ group: FileGroup; result: RewriteGroupResult }>;
  /** Staged plans: only which groups (and which rewrite attempt's outputs); the rest is read from the stage. */
  staged?: { plan: string; groups: StagedGroupRef[] };
}

/** A finished group of a staged plan: its index and the rewrite attempt whose outputs to commit. */
export interface StagedGroupRef {
  index: number;
  attempt: number;
}

export interface CommitRewriteResult {
  snapshotId: string | null;
  alreadyCommitted: boolean;
  committedGroups: number[];
  /** Groups left out because some input is no longer live (a concurrent rewrite or expiry). */
  skippedGroups: Array<{ index: number; reason: string }>;
}

export interface FailedGroup {
  index: number;
  partitionPath: string;
  reason: string;
}

export interface CompactResult {
  table: string;
  window: string | null;
  rewritten_data_files_count: number;
  added_data_files_count: number;
  rewritten_bytes_count: number;
  added_bytes_count: number;
  failed_data_file_groups: FailedGroup[];
  commits: number;
  snapshotIds: string[];
  before: FileStats;
  after: FileStats;
  durationMs: number;
}

export interface CompactProgress {
  phase: 'planning' | 'rewriting' | 'committing' | 'done';
  groupsTotal: number;
  groupsDone: number;
  groupsFailed: number;
  bytesTotal: number;
  bytesDone: number;
  commits: number;
}

interface ExpireOptions {
  /** Snapshots older than (asOf - olderThanMs) may go. */
  olderThanMs: number;
  /** Always keep this many newest snapshots of main's ancestry. */
  retainLast: number;
}

export interface ExpireCommitInput extends ExpireOptions {
  table: string;
  /** Workflow-made id recorded in the table properties, so a retried commit finds itself. */
  expireId: string;
  /** Reference time of the run (scheduled start time for scheduled runs). */
  asOfMs: number;
  dryRun?: boolean;
}

export interface ExpireCommitResult {
  expiredSnapshotIds: string[];
  /** Ingest ids whose legacy summary-only cursor this commit carried into a table property. */
  carriedCursors: string[];
  retainedSnapshots: number;
  /** Metadata the expiry commit was based on and the one it produced (null: nothing expired). */
  beforeMetadataLocation: string | null;
  afterMetadataLocation: string | null;
  alreadyCommitted: boolean;
}

export interface DeletedCounts {
  dataFiles: number;
  manifests: number;
  manifestLists: number;
  metadataFiles: number;
  other: number;
}

export interface DeleteExpiredInput {
  table: string;
  beforeMetadataLocation: string;
  afterMetadataLocation: string;
  /** Old metadata.json files (fallen off the metadata log) older than this go too. */
  metadataOlderThanMs: number;
  dryRun?: boolean;
}

export interface DeleteExpiredResult {
  deleted: DeletedCounts;
  sample: string[];
}

export interface ExpireResult {
  table: string;
  window: string | null;
  cutoffMs: number;
  expiredSnapshots: number;
  carriedCursors: string[];
  retainedSnapshots: number;
  deleted: DeletedCounts;
  dryRun: boolean;
  durationMs: number;
}

interface OrphansOptions {
  /** Grace period: only files last modified before (asOf - olderThanMs) go. */
  olderThanMs: number;
  dryRun: boolean;
  /** Allow a grace period below the safety floor. */
  force: boolean;
}

export interface OrphansInput extends OrphansOptions {
  table: string;
  asOfMs: number;
}

export interface OrphansResult {
  table: string;
  window: string | null;
  cutoffMs: number;
  filesListed: number;
  reachableFiles: number;
  orphans: number;
  orphanBytes: number;
  /** Unreachable but younger than the grace period (an in-flight commit may still claim them). */
  keptByGracePeriod: number;
  /** Unreachable but announced by a pending commit's marker (table/pending.ts), whatever their age. */
  keptByPending: number;
  /** Pending markers found (never deleted by the sweep). */
  pendingMarkers: number;
  /** Owners of markers older than 7 days: their runs probably died without clearing them. */
  stalePendingOwners: string[];
  /** Files under the location of another table nested in this one's, left to that table. */
  keptByOtherTables: number;
  /** Tables whose location lies inside (or is) this table's location. */
  nestedTables: string[];
  deleted: number;
  dryRun: boolean;
  /** Up to 1000 orphan locations (all of them in a dry run up to that cap). */
  sample: string[];
  durationMs: number;
}

export interface Progress {
  phase: string;
  done: number;
  total: number;
  unit: string;
}
