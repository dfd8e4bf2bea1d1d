/**
 * A compaction run's pure state (workflows/compact-state.ts): commit batching, commit inputs for
 * inline and staged plans, and how committed, skipped and failed groups add up.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compactDefaults, type CompactionPlan, type FileGroup, type RewriteGroupResult } from '../../maintenance/types';
import { commitBatchSize, commitInput, emptyResult, initialProgress, recordCommit, recordFailed } from '../../workflows/compact-state';

const group = (index: number, files: number, bytes: number, staged = false): FileGroup => ({
  index,
  partitionPath: `day=${index}`,
  specId: 0,
  bytes,
  records: files * 10,
  files: staged ? [] : Array.from({ length: files }, (_, i) => ({ path: `data/f${index}-${i}.parquet`, size: bytes / files, records: 10 })),
  ...(staged ? { fileCount: files } : {}),
});
const rewritten = (index: number, outputs: number, outputBytes: number, attempt?: number): RewriteGroupResult => ({
  index,
  outputs: Array.from({ length: outputs }, () => ({})),
  outputBytes,
  inputBytes: 0,
  records: 0,
  durationMs: 1,
  peakRssBytes: 1,
  ...(attempt ? { outputs: [], outputCount: outputs, attempt } : {}),
});
const plan = (groups: FileGroup[], over: Partial<CompactionPlan['options']> = {}, staged?: string): CompactionPlan => ({
  table: 'db.t',
  location: 's3://b/t',
  snapshotId: '1',
  groups,
  partitionsScanned: groups.length,
  before: { files: 9, bytes: 900, avgFileSizeBytes: 100 },
  options: { ...compactDefaults(1000), ...over },
  ...(staged ? { staged } : {}),
});

void test('groups commit all at once, or in at most maxCommits batches with partial progress', () => {
  const gs = Array.from({ length: 7 }, (_, i) => group(i, 2, 200));
  assert.equal(commitBatchSize(plan(gs)), 7);
  assert.equal(commitBatchSize(plan(gs, { partialProgress: true, maxCommits: 3 })), 3);
  assert.equal(commitBatchSize(plan(gs, { partialProgress: true, maxCommits: 100 })), 1);
});

void test('an inline plan commits its groups with their outputs; a staged plan names groups and attempts only', () => {
  const g = group(0, 2, 200);
  const inline = commitInput('db.t', plan([g]), [{ group: g, result: rewritten(0, 1, 150) }], 'cid');
  assert.equal(inline.groups.length, 1);
  assert.equal(inline.staged, undefined);
  const sg = group(3, 4, 400, true);
  const staged = commitInput(
    'db.t',
    plan([sg], {}, 's3://b/t/metadata/floe-staged/run-plan-a1'),
    [{ group: sg, result: rewritten(3, 2, 300, 2) }],
    'cid',
  );
  assert.deepEqual(staged.groups, []);
  assert.deepEqual(staged.staged, { plan: 's3://b/t/metadata/floe-staged/run-plan-a1', groups: [{ index: 3, attempt: 2 }] });
});

void test('a commit counts only its committed groups; skipped groups fail with the reason; failures sort by the caller', () => {
  const gs = [group(0, 2, 200), group(1, 3, 300, true), group(2, 4, 400)];
  const p = plan(gs);
  const result = emptyResult('db.t', null, p);
  const progress = initialProgress();
  const batch = [
    { group: gs[0]!, result: rewritten(0, 1, 180) },
    { group: gs[1]!, result: rewritten(1, 2, 250, 1) },
    { group: gs[2]!, result: rewritten(2, 1, 390) },
  ];
  recordCommit(result, progress, p, batch, {
    snapshotId: '5',
    alreadyCommitted: false,
    committedGroups: [0, 1],
    skippedGroups: [{ index: 2, reason: 'outputs missing' }],
  });
  assert.deepEqual(
    [result.rewritten_data_files_count, result.rewritten_bytes_count, result.added_data_files_count, result.added_bytes_count],
    [5, 500, 3, 430],
  );
  assert.deepEqual([result.commits, progress.commits, result.snapshotIds], [1, 1, ['5']]);
  assert.deepEqual(result.failed_data_file_groups, [{ index: 2, partitionPath: 'day=2', reason: 'skipped at commit: outputs missing' }]);
  recordFailed(result, progress, gs[0]!, 'boom');
  assert.equal(progress.groupsFailed, 2);
  // nothing committed (e.g. everything skipped): no snapshot, no commit counted
  recordCommit(result, progress, p, [], { snapshotId: null, alreadyCommitted: false, committedGroups: [], skippedGroups: [] });
  assert.equal(result.commits, 1);
});
