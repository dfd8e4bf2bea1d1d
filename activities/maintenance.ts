/**
 * Maintenance activities: compaction, snapshot expiry and orphan removal, over the worker's
 * catalog + FileIO. The logic lives in maintenance/ (no Temporal there); this binds it to Deps,
 * the activity's attempt, heartbeats and cancellation (currentRun) and the failure mapping.
 */
import type { Deps } from '../ingest/deps';
import {
  commitRewrite,
  deleteExpiredFiles,
  expireNow,
  expireSnapshotsCommit,
  expiryDue,
  planCompaction,
  removeOrphanFiles,
  rewriteFileGroup,
  tableFileStats,
  type CommitRewriteInput,
  type CommitRewriteResult,
  type CompactionPlan,
  type DeleteExpiredInput,
  type DeleteExpiredResult,
  type ExpireCommitInput,
  type ExpireCommitResult,
  type FileStats,
  type OrphansInput,
  type OrphansResult,
  type PlanCompactionInput,
  type RewriteGroupInput,
  type RewriteGroupResult,
} from '../maintenance/index';
import { tableConfigOrUndefined } from '../maintenance/compact';
import { clearPending, markPending } from '../table/pending';
import type { MaintenanceConfig, TableConfig } from '../config';
import { randomUUID } from 'node:crypto';
import { ROUTE_BASE_PROPERTY } from '../ingest/route';
import type { AfterTableCommit } from '../ingest/route-commit';
import { heartbeating } from './heartbeat';
import { currentRun } from './failures';

/** The configured maintenance settings of a table (null when the table is not in the config). */
export type TableMaintenanceSettings = MaintenanceConfig | null;

export const createMaintenanceActivities = (deps: Deps) => ({
  /** Plans compaction file groups from the current snapshot. Read-only. */
  async planCompaction(input: PlanCompactionInput): Promise<CompactionPlan> {
    return heartbeating(() => planCompaction(deps.tables, tableConfigOrUndefined(deps.cfg, input.table), input, currentRun()));
  },
  /** Rewrites one file group into new files (not committed). Heartbeats per input file. */
  async rewriteFileGroup(input: RewriteGroupInput): Promise<RewriteGroupResult> {
    return rewriteFileGroup(deps.tables, input, currentRun());
  },
  /** Commits rewritten groups as one replace snapshot, once per commit id. Optimistic. */
  async commitRewrite(input: CommitRewriteInput): Promise<CommitRewriteResult> {
    return heartbeating(() => commitRewrite(deps.tables, input));
  },
  /** Live data files count / bytes / average size. Read-only. */
  async tableFileStats(input: { table: string }): Promise<FileStats> {
    return heartbeating(() => tableFileStats(deps.tables, input.table));
  },
  /** Commits `remove-snapshots` for what is old enough (never a ref head). Once per expire id. */
  async expireSnapshotsCommit(input: ExpireCommitInput): Promise<ExpireCommitResult> {
    return heartbeating(() => expireSnapshotsCommit(deps.tables, input));
  },
  /** Deletes what only the expired snapshots reached. Idempotent. */
  async deleteExpiredFiles(input: DeleteExpiredInput): Promise<DeleteExpiredResult> {
    return heartbeating(() => deleteExpiredFiles(deps.tables, input, currentRun()));
  },
  /** Lists the table location and deletes unreachable files older than the grace period. Idempotent. */
  async removeOrphanFiles(input: OrphansInput): Promise<Omit<OrphansResult, 'window' | 'durationMs'>> {
    return removeOrphanFiles(deps.tables, input, currentRun());
  },
  /**
   * Announces that files named `<filePrefix>...` under the table location belong to a commit in
   * flight, so the orphan sweep keeps them (table/pending.ts). Idempotent.
   */
  async markPendingFiles(input: { location: string; owner: string; filePrefix: string }): Promise<void> {
    await markPending(deps.tables.io, input.location, input.owner, input.filePrefix);
  },
  /** Removes every marker of `owner`. Best effort, idempotent. */
  async clearPendingFiles(input: { location: string; owner: string }): Promise<void> {
    await clearPending(deps.tables.io, input.location, input.owner);
  },
  /**
   * The table's maintenance config, so scheduled workflows need only the table name. A dead-letter
   * table (scheduled with its entry since routes into many tables) takes its entry's.
   */
  async maintenanceSettings(input: { table: string }): Promise<TableMaintenanceSettings> {
    return (
      tableConfigOrUndefined(deps.cfg, input.table)?.maintenance ??
      deps.cfg.tables.find((e) => e.deadLetterTable === input.table)?.maintenance ??
      null
    );
  },
});

/**
 * Expiry of the tables floe creates on its own, by the ingest that commits to them: a route's
 * dynamic tables (they come and go with the data, so no schedule names them) and the entry's
 * dead-letter table. After a commit to one of them, when it holds INGEST_EXPIRE_BATCH snapshots
 * past the entry's `maintenance.expire` policy, they are expired at once. Tables the config names
 * (the base table, static routes) are left to their schedules. Best effort: a failed expiry is a
 * warning, never a failed commit (nothing stalls a table; the next commit tries again).
 */
export function ingestExpiry(deps: Deps, t: TableConfig, warn: (msg: string) => void, now: () => number = Date.now): AfterTableCommit {
  const policy = t.maintenance.expire;
  return async (table, metadata) => {
    const ours = table === t.deadLetterTable || metadata.properties[ROUTE_BASE_PROPERTY] === t.table;
    if (!ours || policy.paused) return 0;
    const asOfMs = now();
    if (!expiryDue(metadata, asOfMs, policy)) return 0;
    try {
      return await expireNow(deps.tables, {
        table,
        asOfMs,
        olderThanMs: policy.olderThanMs,
        retainLast: policy.retainLast,
        expireId: `ingest-${randomUUID()}`,
      });
    } catch (e) {
      warn(`expiry of ${table} by the ingest failed (the next commit tries again): ${(e as Error).message}`);
      return 0;
    }
  };
}
