/**
 * The bulk commit of a routed cycle (workflows/ingest.ts, from patch 'floe-route-bulk'): one
 * activity commits every table that changed, each with the existing idempotent, fenced commit
 * (commit-cycle.ts), and then the base table with the route cursor. A table that got no rows gets
 * no snapshot: its effective cursor is the route cursor (route.ts; why that is exact:
 * docs/DESIGN-NOTES.md, "Routes into many tables"). No Temporal here (activities/index.ts binds it).
 *
 * Concurrency: the tables other than the base commit a few at a time (each its own table's CAS);
 * the base table only after every one of them landed. A refusal (StaleCursor, FilesMissing) of
 * any table leaves the base table alone, so the route cursor never passes a table's missing rows.
 */
import { mapConcurrent, type TableMetadata } from '../iceberg';
import { maxOffsets, type Offsets } from '../table/cursor';
import { deleteStaged, readStagedJson } from '../table/staged-files';
import { commitCycleTo } from './commit-cycle';
import { ingestTableConfig, type Deps } from './deps';
import { readStagedPlan } from './route-write';
import type {
  CommitInput,
  FileListEntry,
  RouteCommitInput,
  RouteCommitResult,
  RouteTableCommit,
  RouteTablePlan,
  RoutedFiles,
  StagedJson,
} from './types';

/** Tables of one route committed at once. */
const COMMIT_CONCURRENCY = 8;
/** Per-table outcomes are reported (and kept in the workflow's status) up to this many tables a cycle. */
const ROUTE_STATUS_TABLES = 100;

/** One table's commit of a routed cycle. */
interface RouteTableChange {
  table: string;
  baseSnapshotId: string | null;
  startOffsets: Offsets;
  endOffsets: Offsets;
  files: FileListEntry[];
  records: number;
}

/** The polls' per-table lists merged by table (groups write the same table in one cycle). */
export function mergeRouted(lists: readonly RoutedFiles[]): Map<string, RoutedFiles> {
  const by = new Map<string, RoutedFiles>();
  for (const r of lists) {
    const m = by.get(r.table);
    by.set(r.table, m ? { table: r.table, files: [...m.files, ...r.files], records: m.records + r.records } : r);
  }
  return by;
}

/**
 * The commits of a bulk routed cycle: every table that got files (planned ones in plan order, then
 * those the poll created, by name), then the base table, always (it carries the route cursor), last.
 * Each table's cursor moves to the cycle's end, never backwards. A table that got nothing is left
 * out: its own cursor stays where it is and the route cursor covers it.
 */
export function changedRouteCommits(
  baseTable: string,
  planned: readonly RouteTablePlan[],
  routed: ReadonlyMap<string, RoutedFiles>,
  startOffsets: Offsets,
  endOffsets: Offsets,
): RouteTableChange[] {
  const known = new Set(planned.map((r) => r.table));
  const created = [...routed.keys()].filter((n) => !known.has(n)).sort();
  const all = [...planned, ...created.map((table) => ({ table, baseSnapshotId: null, startOffsets }))];
  const change = (r: RouteTablePlan): RouteTableChange => {
    const got = routed.get(r.table);
    return {
      table: r.table,
      baseSnapshotId: r.baseSnapshotId,
      startOffsets: r.startOffsets,
      endOffsets: maxOffsets(r.startOffsets, endOffsets),
      files: got?.files ?? [],
      records: got?.records ?? 0,
    };
  };
  const base = all.find((r) => r.table === baseTable);
  if (!base) throw new Error(`route of ${baseTable}: the plan does not name its base table`);
  return [...all.filter((r) => r.table !== baseTable && (routed.get(r.table)?.files.length ?? 0) > 0).map(change), change(base)];
}

async function readStagedRouted(deps: Deps, ref: StagedJson): Promise<RoutedFiles[]> {
  const lists = await readStagedJson<RoutedFiles[]>(deps.tables.io, ref.staged);
  if (!Array.isArray(lists) || lists.length !== ref.count)
    throw new Error(
      `staged routed lists ${ref.staged}: expected ${ref.count} tables, found ${Array.isArray(lists) ? lists.length : typeof lists}`,
    );
  return lists;
}

/**
 * What a caller does after a table's commit landed, and after the dead-letter table's (the
 * activity: expiry of a dynamic or dead-letter table that needs it); returns snapshots expired.
 */
export type AfterTableCommit = (table: string, metadata: TableMetadata) => Promise<number>;

/**
 * Commits a bulk routed cycle (see the file comment). Idempotent: a retried attempt finds each
 * table's landed commit by the cycle's commit id and commits only the rest. `beat` is called as
 * tables land (the activity heartbeats with it).
 */
export async function commitRoute(
  deps: Deps,
  input: RouteCommitInput,
  opts: { beat?: (done: number, of: number) => void; afterTable?: AfterTableCommit } = {},
): Promise<RouteCommitResult> {
  const t = ingestTableConfig(deps.cfg, input.table, input.topic);
  const io = deps.tables.io;
  const planned = input.routeStaged ? await readStagedPlan(io, input.routeStaged) : input.routeTables;
  const staged = (await Promise.all(input.routedStaged.map((r) => readStagedRouted(deps, r)))).flat();
  const routed = mergeRouted([...input.routed, ...staged]);
  const commits = changedRouteCommits(t.table, planned, routed, input.startOffsets, input.endOffsets);
  const routeCursor = maxOffsets(input.routeCursor, input.endOffsets);
  let done = 0,
    expired = 0;
  const one = async (c: RouteTableChange, i: number): Promise<RouteTableCommit & { result: RouteCommitResult }> => {
    const isBase = c.table === t.table;
    const commitInput: CommitInput = {
      table: input.table,
      ingestId: input.ingestId,
      ...(input.topic !== undefined ? { topic: input.topic } : {}),
      ...(input.stalled ? { stalled: input.stalled } : {}),
      ...(input.topicId !== undefined ? { topicId: input.topicId } : {}),
      commitId: input.commitId,
      baseSnapshotId: c.baseSnapshotId,
      deadLetterFloor: input.deadLetterFloor,
      deadLetterBaseCommitId: input.deadLetterBaseCommitId,
      startOffsets: c.startOffsets,
      endOffsets: c.endOffsets,
      files: c.files,
      // Dead letters go with the cycle's first commit, before any table's rows.
      deadLetterFiles: i === 0 ? input.deadLetterFiles : [],
      records: c.records,
      deadLetters: i === 0 ? input.deadLetters : 0,
      routeTable: c.table,
      routeIndex: i,
      routeCount: commits.length,
      routeFloor: input.routeCursor,
      ...(isBase ? { routeCursor } : {}),
    };
    const { result, metadata } = await commitCycleTo(deps, commitInput);
    opts.beat?.(++done, commits.length);
    if (!isBase && opts.afterTable) expired += await opts.afterTable(c.table, metadata);
    return {
      table: c.table,
      snapshotId: result.snapshotId,
      records: c.records,
      cursor: c.endOffsets,
      result: { ...result, committedTables: 0 },
    };
  };
  const results: Array<Awaited<ReturnType<typeof one>>> = [];
  // The first commit alone (it carries the dead letters), then the other tables a few at a time.
  results.push(await one(commits[0]!, 0));
  if (input.deadLetterFiles.length > 0 && opts.afterTable)
    expired += await opts.afterTable(t.deadLetterTable, (await deps.tables.load(t.deadLetterTable)).metadata);
  const middle = commits.slice(1, -1);
  const settled = await mapConcurrent(middle, COMMIT_CONCURRENCY, (c, i) =>
    one(c, i + 1).then(
      (r) => ({ ok: true as const, r }),
      (e: unknown) => ({ ok: false as const, e }),
    ),
  );
  // Every table in flight has settled: only then does a refusal end the cycle, before the base table.
  const failed = settled.find((s) => !s.ok);
  if (failed) throw failed.e;
  for (const s of settled) if (s.ok) results.push(s.r);
  if (commits.length > 1) results.push(await one(commits.at(-1)!, commits.length - 1));
  const base = results.at(-1)!;
  // Read and committed: the staged plan and lists are not needed any more (best effort).
  await deleteStaged(io, [...(input.routeStaged ? [input.routeStaged.staged] : []), ...input.routedStaged.map((r) => r.staged)]);
  return {
    ...base.result,
    committedTables: results.length,
    ...(results.length <= ROUTE_STATUS_TABLES ? { tables: results.map(({ result: _r, ...rest }) => rest) } : {}),
    ...(expired > 0 ? { expiredSnapshots: expired } : {}),
  };
}
