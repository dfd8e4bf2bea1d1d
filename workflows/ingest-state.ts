/**
 * The pure state of an ingest loop, apart from the workflow function (as samples-typescript's
 * cluster-manager keeps state apart from its workflow): what each group polls, how a cycle's poll
 * results merge into one commit, and how the status follows a cycle. Deterministic, no I/O, no
 * Temporal: unit-tested with plain node:test (test/unit/ingest-state.test.ts).
 */
import type { Offsets } from '../table/cursor';
import type {
  CommitResult,
  CyclePlan,
  FileListEntry,
  OffsetRange,
  PollInput,
  PollResult,
  RouteCommitResult,
  RoutedFiles,
  StagedJson,
  TableRef,
  UpsertCommit,
} from '../ingest/types';
import { DEFAULT_ISOLATE_AFTER_ATTEMPTS, type Failing, type Isolation } from './isolation';

export interface IngestInput {
  table: string;
  ingestId: string;
  /** Backfill: load exactly [from, to) and stop. */
  range?: OffsetRange;
  /** Start even though another live ingest id already holds the table's topic. */
  force?: boolean;
  /** An entry of several topics: the one topic this ingest reads (started by ingestTopicsWorkflow). */
  topic?: string;
  /** carried across continueAsNew */
  carry?: IngestStatus;
}

/**
 * `failed` is never reported by the workflow itself: the client derives it from a failed run.
 * `stalled`: a step has failed K times or more in a row for a service's trouble (or records that
 * all fail alone) and is retried with backoff; `failing` says what, since when, how many attempts.
 */
export type IngestState = 'running' | 'paused' | 'draining' | 'stopped' | 'failed' | 'stalled';

export interface IngestStatus {
  table: string;
  ingestId: string;
  state: IngestState;
  cursor: Offsets;
  /** high watermark - cursor, per partition (decimal strings) */
  lag: Record<string, string>;
  lastCommitId: string | null;
  lastSnapshotId: string | null;
  lastCommitTimeMs: number | null;
  cycles: number;
  commits: number;
  fencedCommits: number;
  totalRows: number;
  totalDeadLetters: number;
  /**
   * rows/s averaged over the last minute of commits (`windowRowsPerSecond`), as of the last commit;
   * clients recompute it as of now from `recentCommits`.
   */
  rowsPerSecond: number;
  /** The last commits as [committed at ms, total rows after it], oldest first (carried across continueAsNew). */
  recentCommits?: [number, number][];
  filesPerCommit: number;
  /** failed runs: the innermost failure, `Type: message` */
  error?: string;
  /** A route: each of its tables, by identifier (the entry's `cursor` is then their minimum). */
  tables?: Record<string, RouteTableStatus>;
  /** A bulk route: how many tables its last plan named (`tables` is left out past the inline budget). */
  routeTables?: number;
  /** One topic of an entry of several topics: why it stopped when its topic was deleted. */
  topicGone?: string;
  /** A step failing again and again (cleared by the next cycle that completes): `stalled` from K attempts. */
  failing?: Failing;
  /** Records of a cycle that failed K times being isolated (workflows/isolation.ts). */
  isolation?: Isolation;
  /**
   * Records Kafka deleted (retention) before this ingest read them: the cursor jumped past them,
   * each jump recorded in its snapshot's summary (`floe.skipped`). Decimal; absent: none.
   */
  skippedRecords?: string;
  /** K: config `isolateAfterAttempts` as of the last plan. */
  isolateAfter?: number;
}

export interface RouteTableStatus {
  /** This table's own cursor (as of the last plan or commit). */
  cursor: Offsets;
  /** Rows committed to it by this ingest (since it started, carried across continueAsNew). */
  rows: number;
  commits: number;
  lastSnapshotId: string | null;
}

/** The `topic` field of an ingest of one topic of several, for every activity input (absent otherwise, as in older histories). */
export const topicOf = (input: { topic?: string }): { topic?: string } => (input.topic !== undefined ? { topic: input.topic } : {});

/** The plan's topic id for the cycle's polls and commits (absent when the plan has none, as in older histories). */
export const topicIdOf = (plan: { topicId?: string }): { topicId?: string } =>
  plan.topicId !== undefined ? { topicId: plan.topicId } : {};

/** What a cycle's plan (loadCursor) is asked for. */
export const cycleRef = (input: IngestInput): TableRef => ({
  table: input.table,
  ingestId: input.ingestId,
  range: input.range,
  force: input.force,
  ...topicOf(input),
});

export function initialStatus(input: IngestInput): IngestStatus {
  return (
    input.carry ?? {
      table: input.table,
      ingestId: input.ingestId,
      state: 'running',
      cursor: {},
      lag: {},
      lastCommitId: null,
      lastSnapshotId: null,
      lastCommitTimeMs: null,
      cycles: 0,
      commits: 0,
      fencedCommits: 0,
      totalRows: 0,
      totalDeadLetters: 0,
      rowsPerSecond: 0,
      filesPerCommit: 0,
    }
  );
}

/** High watermark minus cursor per partition, never negative (decimal strings). */
export function lagOf(cursor: Offsets, high: Offsets): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [p, h] of Object.entries(high)) {
    const d = BigInt(h) - BigInt(cursor[p] ?? '0');
    out[p] = (d > 0n ? d : 0n).toString();
  }
  return out;
}

/** A backfill is done when the cursor reached the end of its range on every partition. */
export const rangeDone = (cursor: Offsets, range: OffsetRange): boolean =>
  Object.keys(range.to).every((p) => BigInt(cursor[p] ?? '0') >= BigInt(range.to[p]!));

/** Records waiting per group when the cycle was planned (high watermark - cursor). */
function groupBacklogs(plan: CyclePlan): bigint[] {
  return plan.groups.map((ps) =>
    ps.reduce((n, p) => {
      const d = BigInt(plan.highWatermarks[String(p)] ?? '0') - BigInt(plan.startOffsets[String(p)] ?? '0');
      return n + (d > 0n ? d : 0n);
    }, 0n),
  );
}

/**
 * Each group's share of the cycle's record bound.
 * - A backlog of at least a full cycle: shares proportional to each group's backlog, rounded up,
 *   so every group reaches its bound at about the same moment and the cycle ends at once (rounded
 *   down, a few records per group were left behind to wait out an interval in a cycle of their own).
 *   The shares may sum to one record per group over the bound.
 * - Less than a full cycle: each group's whole backlog plus an even part of the room left, so
 *   nothing already waiting is left for the next cycle, and new records still fit.
 * A group with no backlog still gets a share (new records may arrive).
 */
export function recordShares(plan: CyclePlan): number[] {
  const n = plan.groups.length;
  const max = BigInt(plan.maxRecordsPerCycle);
  const backlog = groupBacklogs(plan);
  const total = backlog.reduce((a, b) => a + b, 0n);
  if (n < 2) return [Math.max(1, plan.maxRecordsPerCycle)];
  if (total >= max) return backlog.map((b) => Math.max(1, Number((b * max + total - 1n) / total)));
  const room = (max - total) / BigInt(n);
  return backlog.map((b) => Math.max(1, Number(b + room)));
}

/**
 * A cycle that starts with at least a quarter of its record bound already waiting is catching up:
 * its polls stop once they reach the high watermark they saw at their start, instead of waiting
 * out the commit interval for more (the files are of a fair size already, and the rows visible
 * sooner). A live stream's cycles, which find less waiting, still end at the interval, so they do
 * not turn into many small commits.
 */
export function catchingUp(plan: CyclePlan): boolean {
  const total = groupBacklogs(plan).reduce((a, b) => a + b, 0n);
  return total > 0n && total * 4n >= BigInt(plan.maxRecordsPerCycle);
}

/**
 * The previous cycle ended (at a record, byte or time bound) before it reached records that were
 * already there when its polls started: the ingest is behind, and the next cycle catches up.
 */
export function leftBehind(cycle: Pick<MergedCycle, 'endOffsets' | 'highWatermarks'>): boolean {
  return Object.values(lagOf(cycle.endOffsets, cycle.highWatermarks)).some((d) => d !== '0');
}

/**
 * The poll of each partition group of a cycle: record bounds by `recordShares`, bytes split evenly.
 * Polls stop once caught up (rather than at the commit interval) when draining, when the previous
 * cycle left records behind (`leftBehind`), or when the cycle finds a quarter of its bound waiting.
 */
export function pollInputs(input: IngestInput, plan: CyclePlan, commitId: string, draining: boolean, behind = false): PollInput[] {
  const shares = recordShares(plan);
  const untilCaughtUp = draining || behind || catchingUp(plan);
  return plan.groups.map((partitions, groupIndex) => ({
    table: input.table,
    ingestId: input.ingestId,
    ...topicOf(input),
    commitId,
    groupIndex,
    partitions,
    startOffsets: Object.fromEntries(partitions.map((p) => [String(p), plan.startOffsets[String(p)] ?? '0'])),
    // Draining: take what is there now without waiting out a full interval.
    maxWaitMs: draining ? Math.max(5000, plan.commitIntervalMs) : plan.commitIntervalMs,
    untilCaughtUp,
    ...(input.range ? { stopAt: input.range.to, limit: input.range.to } : {}),
    maxRecords: shares[groupIndex]!,
    maxBytes: Math.max(1, Math.floor(plan.maxBytesPerCycle / plan.groups.length)),
    deadLetterFloor: plan.deadLetterFloor,
    ...topicIdOf(plan),
    ...(plan.routeTables
      ? {
          route: {
            tables: Object.fromEntries(plan.routeTables.map((r) => [r.table, r.startOffsets])),
            start: plan.startOffsets,
            // A bulk plan (it carries the route cursor): the tables may be staged, and so may the poll's lists.
            ...(plan.routeStaged ? { staged: plan.routeStaged } : {}),
            ...(plan.routeCursor ? { bulk: true } : {}),
          },
        }
      : {}),
  }));
}

/** A cycle's poll results merged: what one commit carries. */
export interface MergedCycle {
  endOffsets: Offsets;
  highWatermarks: Offsets;
  files: FileListEntry[];
  deadLetterFiles: FileListEntry[];
  records: number;
  deadLetters: number;
  /** Some partition moved: there is something to commit (records, dead letters or skipped markers). */
  advanced: boolean;
  /** A route: each table's files and rows, in the order tables were first met (merged over groups). */
  routed?: RoutedFiles[];
  /** A bulk route: the polls' staged per-table lists. */
  routedStaged?: StagedJson[];
  /** An upsert or CDC table: the polls' deletes. */
  upsert?: UpsertCommit;
}

export function mergeCycle(plan: CyclePlan, results: PollResult[]): MergedCycle {
  const endOffsets: Offsets = { ...plan.startOffsets };
  const highWatermarks: Offsets = { ...plan.highWatermarks };
  let records = 0,
    deadLetters = 0;
  for (const r of results) {
    Object.assign(endOffsets, r.endOffsets);
    Object.assign(highWatermarks, r.highWatermarks);
    records += r.records;
    deadLetters += r.deadLetters;
  }
  const merged: MergedCycle = {
    endOffsets,
    highWatermarks,
    records,
    deadLetters,
    files: results.flatMap((r) => r.files),
    deadLetterFiles: results.flatMap((r) => r.deadLetterFiles),
    advanced: Object.keys(endOffsets).some((p) => endOffsets[p] !== plan.startOffsets[p]),
  };
  const upserts = results.flatMap((r) => (r.upsert ? [r.upsert] : []));
  if (upserts.length > 0)
    merged.upsert = {
      deleteFiles: upserts.flatMap((u) => u.deleteFiles),
      referencedDataFiles: [...new Set(upserts.flatMap((u) => u.referencedDataFiles))],
      indexSnapshotIds: [...new Set(upserts.map((u) => u.indexSnapshotId))],
      deletedKeys: upserts.reduce((n, u) => n + u.deletedKeys, 0),
      deletedRows: upserts.reduce((n, u) => n + u.deletedRows, 0),
    };
  if (plan.routeTables) {
    const byTable = new Map<string, RoutedFiles>();
    for (const r of results.flatMap((x) => x.routed ?? [])) {
      const m = byTable.get(r.table);
      if (m) byTable.set(r.table, { table: r.table, files: [...m.files, ...r.files], records: m.records + r.records });
      else byTable.set(r.table, r);
    }
    merged.routed = [...byTable.values()];
    const staged = results.flatMap((x) => (x.routedStaged ? [x.routedStaged] : []));
    if (staged.length > 0) merged.routedStaged = staged;
  }
  return merged;
}

/** One table's commit of a routed cycle. */
interface RouteCommit {
  table: string;
  baseSnapshotId: string | null;
  startOffsets: Offsets;
  endOffsets: Offsets;
  files: FileListEntry[];
  records: number;
}

/** Per-partition maximum (the workflow's own copy: table/cursor.ts is not workflow code). */
function maxOffsets(a: Offsets, b: Offsets): Offsets {
  const out: Offsets = { ...a };
  for (const [p, o] of Object.entries(b)) if (out[p] === undefined || BigInt(o) > BigInt(out[p]!)) out[p] = o;
  return out;
}

/**
 * The commits of a routed cycle, one per table, in a fixed order: the planned tables (base first),
 * then tables the poll created, by name. Every table's cursor moves to the cycle's end offsets (a
 * table with no rows too: the records routed elsewhere are covered for it), never backwards (a
 * table already past them, after a crash between two tables' commits, keeps its cursor); a table
 * the cycle neither moves nor writes is not committed.
 */
export function routeCommits(plan: CyclePlan, cycle: MergedCycle): RouteCommit[] {
  const planned = plan.routeTables ?? [];
  const routed = new Map((cycle.routed ?? []).map((r) => [r.table, r]));
  const created = [...routed.keys()].filter((n) => !planned.some((r) => r.table === n)).sort();
  return [...planned, ...created.map((table) => ({ table, baseSnapshotId: null, startOffsets: plan.startOffsets }))]
    .map((r) => {
      const endOffsets = maxOffsets(r.startOffsets, cycle.endOffsets);
      const got = routed.get(r.table);
      return {
        table: r.table,
        baseSnapshotId: r.baseSnapshotId,
        startOffsets: r.startOffsets,
        endOffsets,
        files: got?.files ?? [],
        records: got?.records ?? 0,
      };
    })
    .filter((c) => c.files.length > 0 || Object.keys(c.endOffsets).some((p) => c.endOffsets[p] !== c.startOffsets[p]));
}

/** The per-table status as a cycle is planned. */
export function recordRoutePlan(status: IngestStatus, plan: CyclePlan): void {
  if (!plan.routeTables) return;
  // Too many tables for the status (it is carried across continue-as-new): their count only.
  if (plan.routeStaged) {
    delete status.tables;
    status.routeTables = plan.routeStaged.count;
    return;
  }
  if (plan.routeCursor) status.routeTables = plan.routeTables.length;
  const tables = (status.tables ??= {});
  for (const r of plan.routeTables) {
    const s = (tables[r.table] ??= { cursor: {}, rows: 0, commits: 0, lastSnapshotId: null });
    s.cursor = r.startOffsets;
  }
}

/** The per-table status after one table's commit of a routed cycle landed. */
export function recordRouteCommit(status: IngestStatus, c: RouteCommit, res: CommitResult): void {
  const s = ((status.tables ??= {})[c.table] ??= { cursor: {}, rows: 0, commits: 0, lastSnapshotId: null });
  s.cursor = c.endOffsets;
  s.rows += c.records;
  s.commits++;
  s.lastSnapshotId = res.snapshotId;
}

/** The per-table status after a bulk routed commit: per table unless the plan was staged (count only then). */
export function recordRouteBulkCommit(status: IngestStatus, plan: CyclePlan, cycle: MergedCycle, res: RouteCommitResult): void {
  if (plan.routeStaged) return;
  // A table without a snapshot this cycle is as far as the new route cursor.
  const route = maxOffsets(plan.routeCursor ?? {}, cycle.endOffsets);
  for (const s of Object.values(status.tables ?? {})) s.cursor = maxOffsets(s.cursor, route);
  for (const c of res.tables ?? []) {
    const s = ((status.tables ??= {})[c.table] ??= { cursor: {}, rows: 0, commits: 0, lastSnapshotId: null });
    s.cursor = c.cursor;
    s.rows += c.records;
    s.commits++;
    s.lastSnapshotId = c.snapshotId;
  }
}

/** The status after a cycle's commit landed. */
export function recordCommit(status: IngestStatus, cycle: MergedCycle, commitId: string, res: CommitResult, elapsedMs: number): void {
  status.commits++;
  status.lastCommitId = commitId;
  status.lastSnapshotId = res.snapshotId;
  status.lastCommitTimeMs = res.committedAtMs;
  status.totalRows += cycle.records;
  status.totalDeadLetters += cycle.deadLetters;
  if (res.skippedRecords !== undefined)
    status.skippedRecords = (BigInt(status.skippedRecords ?? '0') + BigInt(res.skippedRecords)).toString();
  status.filesPerCommit = cycle.routed ? cycle.routed.reduce((n, r) => n + r.files.length, 0) : cycle.files.length;
  const recent = (status.recentCommits ??= []);
  recent.push([res.committedAtMs, status.totalRows]);
  if (recent.length > RECENT_COMMITS) recent.splice(0, recent.length - RECENT_COMMITS);
  // One commit is no window yet: its own cycle's rate.
  status.rowsPerSecond = windowRowsPerSecond(recent, res.committedAtMs) ?? roundRate((cycle.records * 1000) / Math.max(1, elapsedMs));
  status.cursor = cycle.endOffsets;
}

/** rows/s is averaged over this much time... */
const RATE_WINDOW_MS = 60_000;
/** ...or over this many commits when they span less (a catching-up ingest commits often). */
export const RECENT_COMMITS = 32;

const roundRate = (r: number): number => (r >= 10 ? Math.round(r) : Math.round(r * 10) / 10);

/**
 * Rows per second over the window ending at `endMs`, from cumulative samples [time, total rows]
 * (as Prometheus' rate() does with a counter): rows committed after the newest sample at or before
 * the window's start (else the oldest sample), divided by the time since it. A stalled ingest
 * decays towards 0 as `endMs` moves on; the last cycle alone (a small drain cycle) cannot make it
 * read "1 rows/s". Null with fewer than two samples.
 */
export function windowRowsPerSecond(
  recent: readonly (readonly [number, number])[],
  endMs: number,
  windowMs = RATE_WINDOW_MS,
): number | null {
  if (recent.length < 2) return null;
  const last = recent[recent.length - 1]!;
  let base = recent[0]!;
  for (const s of recent) {
    if (s[0] > endMs - windowMs) break;
    base = s;
  }
  if (base === last) return 0;
  return roundRate(((last[1] - base[1]) * 1000) / Math.max(1, endMs - base[0]));
}

/** The status a query reports: signals received but not yet acted on show at once. */
export const reportedState = (status: IngestStatus, paused: boolean, draining: boolean): IngestStatus['state'] =>
  draining ? 'draining' : paused ? 'paused' : status.state;

/**
 * The state a query and the UI show: `stalled` over running and draining (a drain cannot end while
 * a step keeps failing), not over paused. Not carried across continue-as-new (reportedState is).
 */
export const shownState = (status: IngestStatus, paused: boolean, draining: boolean): IngestStatus['state'] =>
  stalled(status) && !(paused && !draining) ? 'stalled' : reportedState(status, paused, draining);

/** K: attempts of a step before its records are isolated, or before a service's trouble shows `stalled`. */
export const isolateAfter = (status: IngestStatus): number => status.isolateAfter ?? DEFAULT_ISOLATE_AFTER_ATTEMPTS;

/** A step has failed at least K times in a row (status.failing). */
export const stalled = (status: IngestStatus): boolean =>
  status.state !== 'stopped' && (status.failing?.attempts ?? 0) >= isolateAfter(status);

const offsetsText = (o: Record<string, string>): string =>
  Object.keys(o).length === 0
    ? 'none'
    : Object.entries(o)
        .sort(([a], [b]) => Number(a) - Number(b))
        .map(([p, v]) => `${p}:${v}`)
        .join(' ');

/**
 * The workflow's current details (Temporal UI, `setCurrentDetails`, Markdown): state, cursor, lag and
 * the last commit, so a workflow list reads like the table's status page.
 */
export function currentDetails(status: IngestStatus, state: IngestState = status.state): string {
  const lag = Object.values(status.lag).reduce((a, v) => a + BigInt(v), 0n);
  const last =
    status.lastCommitId === null
      ? 'no commit yet'
      : `${new Date(status.lastCommitTimeMs ?? 0).toISOString()}, snapshot ${status.lastSnapshotId}, commit id ${status.lastCommitId}`;
  return [
    `**${state}** · ${status.table} · ingest id ${status.ingestId}`,
    `- cursor: ${offsetsText(status.cursor)}`,
    `- lag: ${lag} records (${offsetsText(status.lag)})`,
    `- last commit: ${last}`,
    `- ${status.commits} commits, ${status.totalRows} rows, ${status.totalDeadLetters} dead letters, ${status.rowsPerSecond} rows/s`,
    ...Object.entries(status.tables ?? {}).map(([t, s]) => `- ${t}: cursor ${offsetsText(s.cursor)}, ${s.rows} rows`),
    ...(status.failing
      ? [`- failing since ${new Date(status.failing.sinceMs).toISOString()}, ${status.failing.attempts} attempts: ${status.failing.error}`]
      : []),
    ...(status.isolation
      ? [
          `- isolating the records of a failed cycle: ${status.isolation.ranges.length} ranges to check, ${status.isolation.deadLettered} dead-lettered (${status.isolation.reason})`,
        ]
      : []),
  ].join('\n');
}
