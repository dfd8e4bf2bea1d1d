/**
 * The pure state of a compaction run, apart from the workflow function: the empty result, the
 * commit batching, what a commit of finished groups carries, and how its outcome updates the
 * result and progress. Deterministic, no I/O, no Temporal (test/unit/compact-state.test.ts).
 */
import type {
  CommitRewriteInput,
  CommitRewriteResult,
  CompactionPlan,
  CompactProgress,
  CompactResult,
  FailedGroup,
  FileGroup,
  RewriteGroupResult,
} from '../maintenance/types';

export interface RewrittenGroup {
  group: FileGroup;
  result: RewriteGroupResult;
}

export const initialProgress = (): CompactProgress => ({
  phase: 'planning',
  groupsTotal: 0,
  groupsDone: 0,
  groupsFailed: 0,
  bytesTotal: 0,
  bytesDone: 0,
  commits: 0,
});

export function emptyResult(table: string, window: string | null, plan: CompactionPlan): CompactResult {
  return {
    table,
    window,
    rewritten_data_files_count: 0,
    added_data_files_count: 0,
    rewritten_bytes_count: 0,
    added_bytes_count: 0,
    failed_data_file_groups: [],
    commits: 0,
    snapshotIds: [],
    before: plan.before,
    after: plan.before,
    durationMs: 0,
  };
}

/** Input files of a group: a staged plan's summaries count them, inline plans list them. */
const groupFileCount = (g: FileGroup): number => g.fileCount ?? g.files.length;

/** Finished groups per commit: all at the end, or with partial progress at most `maxCommits` commits. */
export const commitBatchSize = (plan: CompactionPlan): number =>
  plan.options.partialProgress ? Math.max(1, Math.ceil(plan.groups.length / plan.options.maxCommits)) : plan.groups.length;

/** What the commit of `batch` carries: a staged plan's commit names its groups only (the activity reads files and outputs back). */
export function commitInput(table: string, plan: CompactionPlan, batch: RewrittenGroup[], commitId: string): CommitRewriteInput {
  return plan.staged
    ? {
        table,
        location: plan.location,
        commitId,
        groups: [],
        staged: { plan: plan.staged, groups: batch.map((b) => ({ index: b.group.index, attempt: b.result.attempt ?? 1 })) },
      }
    : { table, location: plan.location, commitId, groups: batch };
}

export function recordFailed(result: CompactResult, progress: CompactProgress, g: FileGroup, reason: string): void {
  result.failed_data_file_groups.push({ index: g.index, partitionPath: g.partitionPath, reason } satisfies FailedGroup);
  progress.groupsFailed++;
}

/** A commit's outcome: committed groups count, skipped ones are failed with the commit's reason. */
export function recordCommit(
  result: CompactResult,
  progress: CompactProgress,
  plan: CompactionPlan,
  batch: RewrittenGroup[],
  r: CommitRewriteResult,
): void {
  const byIndex = new Map(plan.groups.map((g) => [g.index, g]));
  for (const s of r.skippedGroups) recordFailed(result, progress, byIndex.get(s.index)!, `skipped at commit: ${s.reason}`);
  const committed = new Set(r.committedGroups);
  for (const { group, result: rr } of batch) {
    if (!committed.has(group.index)) continue;
    result.rewritten_data_files_count += groupFileCount(group);
    result.rewritten_bytes_count += group.bytes;
    result.added_data_files_count += rr.outputCount ?? rr.outputs.length;
    result.added_bytes_count += rr.outputBytes;
  }
  if (r.snapshotId) {
    result.commits++;
    progress.commits++;
    result.snapshotIds.push(r.snapshotId);
  }
}
