/**
 * Maintenance activities: compaction, snapshot expiry and orphan removal, over the worker's
 * catalog + FileIO. The logic lives in maintenance/ (no Temporal there); this binds it to Deps,
 * the activity's attempt, heartbeats and cancellation (currentRun) and the failure mapping.
 */
import type { Deps } from '../ingest/deps';
import {
  commitRewrite,
  deleteExpiredFiles,
  expireSnapshotsCommit,
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
import type { MaintenanceConfig } from '../config';
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
  /** The table's maintenance config, so scheduled workflows need only the table name. */
  async maintenanceSettings(input: { table: string }): Promise<TableMaintenanceSettings> {
    return tableConfigOrUndefined(deps.cfg, input.table)?.maintenance ?? null;
  },
});
