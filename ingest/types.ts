/**
 * Activity inputs/outputs. Everything here crosses Temporal history as JSON: offsets and
 * snapshot ids are decimal strings, data files are in their wire form (iceberg/spec/data-file.ts).
 */
import type { OffsetRange, Offsets } from '../table/cursor';
import type { FileListEntry } from '../table/wire';

export type { OffsetRange };

export type { FileListEntry };

export interface TableRef {
  table: string;
  ingestId: string;
  /** Backfills: the bounded offset range [from, to) this ingest id loads, then stops. */
  range?: OffsetRange;
  /** Start even though another live ingest id already holds the table's topic. */
  force?: boolean;
  /** An entry of several topics: the one topic this ingest id reads (config/topics.ts). */
  topic?: string;
  /** The ingest is stalled (a step failed K times for a service's trouble): the worker's metrics show it. */
  stalled?: StallReport;
  /**
   * A route's workflow commits it in bulk (one commitRoute per cycle, only the tables that changed,
   * the base table last with the route cursor): its plan may be staged. Absent in histories before.
   */
  bulk?: boolean;
}

/** A JSON object staged beside the base table's metadata (table/staged-files.ts) instead of carried in history. */
export interface StagedJson {
  staged: string;
  /** Entries it holds (tables), and its size: read back, both must match. */
  count: number;
  bytes: number;
}

/** A stalled ingest as its activity inputs report it to the worker's metrics (floe_ingest_stalled_*). */
export interface StallReport {
  sinceMs: number;
  attempts: number;
}

export interface CyclePlan {
  /** Snapshot carrying this ingest's cursor when the cycle began (null: never committed). Fencing token. */
  baseSnapshotId: string | null;
  /** Next offset per partition: the table's cursor, and the earliest offset for partitions it lacks. */
  startOffsets: Offsets;
  highWatermarks: Offsets;
  /** Dead letters below these offsets are already in the dead-letter table (skip them). */
  deadLetterFloor: Offsets;
  /** Commit that last moved the dead-letter cursor (its fencing token); null: none yet. */
  deadLetterBaseCommitId: string | null;
  /** Partition groups, one pollAndWrite activity each. */
  groups: number[][];
  commitIntervalMs: number;
  maxRecordsPerCycle: number;
  maxBytesPerCycle: number;
  cyclesPerRun: number;
  /** Config `isolateAfterAttempts`: attempts of a cycle step before its records are isolated (absent: before it existed). */
  isolateAfterAttempts?: number;
  /**
   * A route (config `route`): every table of it with its own cursor, the base table first. Then
   * `startOffsets` is their per-partition minimum (where the one poll starts) and `baseSnapshotId`
   * the base table's.
   */
  routeTables?: RouteTablePlan[];
  /**
   * A bulk route (TableRef.bulk) whose tables' list is past the inline budget: `routeTables` is
   * empty and the list is staged here (read by the polls and the commit).
   */
  routeStaged?: StagedJson;
  /** A bulk route: the route cursor the plan read (`floe.route.cursor.<ingest id>` of the base table). */
  routeCursor?: Offsets;
  /**
   * Kafka's id of the topic the plan read (ingest/topic-ids.ts), checked against the cursor's; the
   * poll checks the topic still has it, the commit records it. Absent: the cluster has no topic ids,
   * or a plan made before floe read them.
   */
  topicId?: string;
}

export interface RouteTablePlan {
  table: string;
  /** Snapshot carrying this table's cursor of the ingest id (its fencing token); null: never committed. */
  baseSnapshotId: string | null;
  /** This table's cursor: records below it on a partition are already in the table (or covered). */
  startOffsets: Offsets;
}

/** One table's share of a routed poll. */
export interface RoutedFiles {
  table: string;
  files: FileListEntry[];
  records: number;
}

export interface PollInput extends TableRef {
  commitId: string;
  groupIndex: number;
  partitions: number[];
  startOffsets: Offsets;
  /** Stop polling after this long (the commit interval). */
  maxWaitMs: number;
  maxRecords: number;
  maxBytes: number;
  /** End when every partition reached these offsets (backfill). */
  stopAt?: Offsets;
  /** Draining: end as soon as every partition reached its high watermark of the poll's start. */
  untilCaughtUp?: boolean;
  /** Never read at or past these offsets (backfill upper bound). */
  limit?: Offsets;
  /** Dead letters below these offsets are already recorded: not written again. */
  deadLetterFloor?: Offsets;
  /**
   * A route: each planned table's cursor (a record routed to a table is written only at or past
   * it), and the cycle's start (a table created by this poll starts there).
   */
  route?: { tables: Record<string, Offsets>; start: Offsets; staged?: StagedJson; bulk?: boolean };
  /**
   * Isolation (workflows/isolation.ts): the one record in [startOffsets, limit) failed its cycle
   * alone K times; it is written to the dead-letter table with this reason, not decoded.
   */
  deadLetterReason?: string;
  /** The plan's topic id (CyclePlan.topicId): the poll fails if the topic no longer has it. */
  topicId?: string;
}

export interface PollResult {
  groupIndex: number;
  /** Inline when small; past INLINE_FILE_LIST_BUDGET_BYTES (per group share) one staged reference. */
  files: FileListEntry[];
  deadLetterFiles: FileListEntry[];
  /** Next offset per polled partition (== start when nothing was read). */
  endOffsets: Offsets;
  highWatermarks: Offsets;
  records: number;
  deadLetters: number;
  bytes: number;
  /** A route: the files of each table written to (`files` is then empty; `records` counts them all). */
  routed?: RoutedFiles[];
  /** A bulk route whose per-table lists pass the group's inline budget: `routed` is empty, the lists are staged here. */
  routedStaged?: StagedJson;
  /** An upsert or CDC table (issue 31): what the poll's changes delete. Absent for append tables. */
  upsert?: UpsertPollResult;
}

/** The deletes of an upsert or CDC poll. */
export interface UpsertPollResult {
  /** position delete files (wire form), one per partition of the rows they delete */
  deleteFiles: FileListEntry[];
  /** every data file they name: the commit fails if one is no longer live (compaction rewrote it) */
  referencedDataFiles: string[];
  /** the snapshot the key index was at ('' for none): no data may have been added since but by compaction */
  indexSnapshotId: string;
  /** keys whose last change deleted them, and old rows deleted */
  deletedKeys: number;
  deletedRows: number;
}

export interface CommitInput extends TableRef {
  commitId: string;
  baseSnapshotId: string | null;
  deadLetterFloor: Offsets;
  deadLetterBaseCommitId: string | null;
  startOffsets: Offsets;
  endOffsets: Offsets;
  /** Concatenated PollResult lists: wire data files and staged references. */
  files: FileListEntry[];
  deadLetterFiles: FileListEntry[];
  records: number;
  deadLetters: number;
  range?: OffsetRange;
  /** A route: the table of the route this commit appends to (default: the entry's table). */
  routeTable?: string;
  /** A route: this commit's place among the cycle's commits (0: the first)... */
  routeIndex?: number;
  /** ...and how many commits the cycle makes. */
  routeCount?: number;
  /** A bulk route: the route cursor the plan read (the table's cursor is at least that; skipped records count from there). */
  routeFloor?: Offsets;
  /** A bulk route's base table: the route cursor this commit records with its snapshot. */
  routeCursor?: Offsets;
  /** The plan's topic id (CyclePlan.topicId), recorded with the cursor. */
  topicId?: string;
  /** An upsert or CDC table: the polls' deletes, merged (workflows/ingest-state.ts mergeCycle). */
  upsert?: UpsertCommit;
}

/** An upsert or CDC cycle's deletes as its commit takes them. */
export interface UpsertCommit {
  deleteFiles: FileListEntry[];
  referencedDataFiles: string[];
  /** each poll's key index snapshot ('' for none) */
  indexSnapshotIds: string[];
  deletedKeys: number;
  deletedRows: number;
}

export interface CommitResult {
  snapshotId: string;
  /** true when a retried attempt found the commit already in the table */
  alreadyCommitted: boolean;
  committedAtMs: number;
  totalRecords: string;
  /** Records this commit skipped past the cursor (lost to retention before they were read), decimal; absent: none. */
  skippedRecords?: string;
}

/**
 * One bulk commit of a routed cycle (commitRoute): every table that changed, the base table last
 * with the route cursor. Plan and file lists inline or staged, as the plan and polls gave them.
 */
export interface RouteCommitInput extends TableRef {
  commitId: string;
  /** The plan's tables (inline), or `routeStaged`. */
  routeTables: RouteTablePlan[];
  routeStaged?: StagedJson;
  /** The route cursor the plan read; the base commit records max(it, endOffsets). */
  routeCursor: Offsets;
  /** The cycle's start (the poll's start: the minimum of the tables' effective cursors). */
  startOffsets: Offsets;
  endOffsets: Offsets;
  deadLetterFloor: Offsets;
  deadLetterBaseCommitId: string | null;
  deadLetterFiles: FileListEntry[];
  deadLetters: number;
  /** Rows of the cycle over all tables (metrics). */
  records: number;
  /** The polls' per-table lists: inline (merged over groups) and staged. */
  routed: RoutedFiles[];
  routedStaged: StagedJson[];
  /** The plan's topic id (CyclePlan.topicId), recorded with every table's cursor. */
  topicId?: string;
}

/** A route's per-table outcome, reported only for small routes (the status keeps per-table lines for those). */
export interface RouteTableCommit {
  table: string;
  snapshotId: string;
  records: number;
  cursor: Offsets;
}

export interface RouteCommitResult extends CommitResult {
  /** Tables that got a snapshot this cycle (the base table included). */
  committedTables: number;
  /** Per table, when the cycle committed at most ROUTE_STATUS_TABLES of them. */
  tables?: RouteTableCommit[];
  /** Snapshots the commit's own expiry removed from the dynamic tables it committed. */
  expiredSnapshots?: number;
}
