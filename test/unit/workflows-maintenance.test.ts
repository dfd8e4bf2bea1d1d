/**
 * The maintenance workflows (compact, expire, orphans, maintain, scheduled) over mocked
 * activities (test/support/workflow-env.ts): compaction with partial progress reports failed groups
 * and commits the others; windows set the cutoffs, are refused when invalid, and a scheduled window
 * runs once. What the activities do to a table is tested in test/integration/maintenance-*.test.ts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ApplicationFailure, ChildWorkflowFailure, WorkflowFailedError, WorkflowIdReusePolicy, type Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { FailureType } from '../../contract';
import {
  compactProgressQuery,
  compactWorkflow,
  expireWorkflow,
  maintainWorkflow,
  maintenanceWorkflowId,
  orphansWorkflow,
  SCHEDULED_START_TIME,
  scheduledMaintenanceWorkflow,
  windowOf,
  type MaintenanceWorkflowKind,
} from '../../workflows';
import { createWorkflowEnv, fakeMaintenance, MiB, testWorkflowBundle, uniqueId, withWorker } from '../support/workflow-env';

/** The failure type a workflow failed with: its own ApplicationFailure, or the one under an activity/child. */
function failureType(e: unknown): string | undefined {
  if (!(e instanceof WorkflowFailedError)) return undefined;
  let c: unknown = e.cause;
  while (c !== undefined && !(c instanceof ApplicationFailure)) c = (c as { cause?: unknown }).cause;
  return c instanceof ApplicationFailure ? (c.type ?? undefined) : undefined;
}

const HOUR = 3_600_000;

describe('maintenance workflows with mocked activities', () => {
  let env: TestWorkflowEnvironment;
  let client: Client;
  before(async () => {
    env = await createWorkflowEnv();
    client = env.client;
    await testWorkflowBundle();
  });
  after(async () => {
    await env?.teardown();
  });

  const id = (p: string) => `${p}-${randomUUID().slice(0, 8)}`;

  it('compaction with partial progress: a group whose rewrite fails non-retryably is reported, the others commit', async () => {
    const fake = fakeMaintenance({
      groups: 4,
      beforeRewrite: (input) => {
        if (input.group.index === 1)
          throw ApplicationFailure.nonRetryable('data/day=1/small-3.parquet is gone', FailureType.InputsVanished);
      },
    });
    const table = uniqueId('db.compact');
    const { result, progress } = await withWorker(env, fake.activities, async (taskQueue) => {
      const handle = await client.workflow.start(compactWorkflow, {
        taskQueue,
        workflowId: id('compact'),
        args: [{ table, options: { partialProgress: true, maxCommits: 2, maxConcurrentFileGroupRewrites: 1 } }],
      });
      const result = await handle.result();
      return { result, progress: await handle.query(compactProgressQuery) };
    });

    // One rewriter, groups in order, commits of ceil(4 / 2) = 2 finished groups: [0, 2], then the rest [3].
    assert.deepEqual(
      fake.calls.commitRewrite.map((c) => c.groups.map((g) => g.group.index)),
      [[0, 2], [3]],
    );
    assert.equal(result.commits, 2);
    assert.equal(result.snapshotIds.length, 2);
    assert.deepEqual(
      result.failed_data_file_groups.map((f) => f.index),
      [1],
    );
    assert.match(result.failed_data_file_groups[0]!.reason, /is gone/);
    assert.equal(result.failed_data_file_groups[0]!.partitionPath, 'day=1');
    assert.deepEqual(
      fake.calls.rewriteFileGroup.filter((c) => c.input.group.index === 1).map((c) => c.attempt),
      [1],
      'not retried',
    );
    assert.equal(result.rewritten_data_files_count, 15);
    assert.equal(result.added_data_files_count, 3);
    assert.equal(result.rewritten_bytes_count, 15 * MiB);
    assert.equal(result.added_bytes_count, 3 * (5 * MiB - 1000));
    assert.deepEqual(progress, {
      phase: 'done',
      groupsTotal: 4,
      groupsDone: 4,
      groupsFailed: 1,
      bytesTotal: 20 * MiB,
      bytesDone: 20 * MiB,
      commits: 2,
    });
    // The pending marker covers every output name of the run, from before the first rewrite to after the last commit.
    const runId = fake.calls.rewriteFileGroup[0]!.input.runId;
    assert.ok(fake.calls.rewriteFileGroup.every((c) => c.input.runId === runId));
    assert.deepEqual(fake.calls.markPendingFiles, [{ location: `s3://floe/${table}`, owner: runId, filePrefix: `${runId}-` }]);
    assert.deepEqual(fake.calls.clearPendingFiles, [{ location: `s3://floe/${table}`, owner: runId }]);
    assert.equal(fake.calls.order.indexOf('markPendingFiles'), fake.calls.order.indexOf('planCompaction') + 1);
    assert.ok(fake.calls.order.lastIndexOf('commitRewrite') < fake.calls.order.indexOf('clearPendingFiles'));
  });

  it('compaction with concurrent rewrites commits every finished group at most once, in at most maxCommits commits', async () => {
    const fake = fakeMaintenance({
      groups: 7,
      beforeRewrite: (input) => {
        if (input.group.index === 4) throw ApplicationFailure.nonRetryable('value out of range', FailureType.DataInvalid);
      },
    });
    const table = uniqueId('db.compact-par');
    const result = await withWorker(env, fake.activities, async (taskQueue) =>
      client.workflow.execute(compactWorkflow, {
        taskQueue,
        workflowId: id('compact'),
        args: [{ table, options: { partialProgress: true, maxCommits: 3, maxConcurrentFileGroupRewrites: 3 } }],
      }),
    );
    const committed = fake.calls.commitRewrite.flatMap((c) => c.groups.map((g) => g.group.index)).sort((a, b) => a - b);
    assert.deepEqual(committed, [0, 1, 2, 3, 5, 6]);
    // Whatever order the rewrites finish in: 6 finished groups in batches of ceil(7 / 3) = 3.
    assert.equal(result.commits, 2);
    assert.ok(fake.calls.commitRewrite.every((c) => c.groups.length === 3));
    assert.deepEqual(
      result.failed_data_file_groups.map((f) => f.index),
      [4],
    );
    assert.equal(result.rewritten_data_files_count, 30);
  });

  it('compaction without partial progress commits once at the end; groups the commit skips and a failed commit are reported', async () => {
    const skipping = fakeMaintenance({
      groups: 3,
      beforeCommitRewrite: () => [{ index: 2, reason: 'data/day=2/small-0.parquet was rewritten concurrently' }],
    });
    const table = uniqueId('db.compact-skip');
    const result = await withWorker(env, skipping.activities, async (taskQueue) =>
      client.workflow.execute(compactWorkflow, {
        taskQueue,
        workflowId: id('compact'),
        args: [{ table }],
      }),
    );
    assert.deepEqual(
      skipping.calls.commitRewrite.map((c) => c.groups.map((g) => g.group.index)),
      [[0, 1, 2]],
    );
    assert.equal(result.commits, 1);
    assert.deepEqual(
      result.failed_data_file_groups.map((f) => [f.index, f.reason]),
      [[2, 'skipped at commit: data/day=2/small-0.parquet was rewritten concurrently']],
    );
    assert.equal(result.rewritten_data_files_count, 10, 'only the committed groups count');

    // Partial progress, the first of two commits fails: its groups are reported, the second lands.
    const failing = fakeMaintenance({
      groups: 4,
      beforeCommitRewrite: (_input, n) => {
        if (n === 1) throw ApplicationFailure.nonRetryable('manifest entry violates the spec', FailureType.DataInvalid);
      },
    });
    const partial = await withWorker(env, failing.activities, async (taskQueue) =>
      client.workflow.execute(compactWorkflow, {
        taskQueue,
        workflowId: id('compact'),
        args: [{ table, options: { partialProgress: true, maxCommits: 2 } }],
      }),
    );
    assert.equal(failing.calls.commitRewrite.length, 2, 'the failed commit is not retried');
    assert.equal(partial.commits, 1);
    assert.deepEqual(
      partial.failed_data_file_groups.map((f) => f.index),
      [0, 1],
    );
    assert.ok(partial.failed_data_file_groups.every((f) => f.reason.startsWith('commit failed: manifest entry violates the spec')));
    assert.equal(partial.rewritten_data_files_count, 10);
  });

  it('compaction of a table with nothing to rewrite writes no marker; a marker that cannot be cleared does not fail the run', async () => {
    const empty = fakeMaintenance({ groups: 0 });
    const table = uniqueId('db.compact-empty');
    const r0 = await withWorker(env, empty.activities, async (taskQueue) =>
      client.workflow.execute(compactWorkflow, { taskQueue, workflowId: id('compact'), args: [{ table }] }),
    );
    assert.equal(r0.commits, 0);
    assert.deepEqual(empty.calls.order, ['planCompaction']);

    const stuck = fakeMaintenance({ groups: 2, clearPendingFails: true });
    const r1 = await withWorker(env, stuck.activities, async (taskQueue) =>
      client.workflow.execute(compactWorkflow, { taskQueue, workflowId: id('compact'), args: [{ table }] }),
    );
    assert.equal(r1.commits, 1);
    assert.equal(stuck.calls.clearPendingFiles.length, 1);
  });

  it(`a future or unparsable window is refused with ${FailureType.InvalidWindow} before any activity runs`, async () => {
    const future = new Date(Date.now() + 24 * HOUR).toISOString();
    for (const [name, start] of [
      [
        'compact',
        (taskQueue: string, window: string) =>
          client.workflow.execute(compactWorkflow, { taskQueue, workflowId: id('compact'), args: [{ table: 't', window }] }),
      ],
      [
        'expire',
        (taskQueue: string, window: string) =>
          client.workflow.execute(expireWorkflow, { taskQueue, workflowId: id('expire'), args: [{ table: 't', window }] }),
      ],
      [
        'orphans',
        (taskQueue: string, window: string) =>
          client.workflow.execute(orphansWorkflow, { taskQueue, workflowId: id('orphans'), args: [{ table: 't', window }] }),
      ],
      [
        'maintain',
        (taskQueue: string, window: string) =>
          client.workflow.execute(maintainWorkflow, { taskQueue, workflowId: id('maintain'), args: [{ table: 't', window }] }),
      ],
    ] as const) {
      const fake = fakeMaintenance();
      await withWorker(env, fake.activities, async (taskQueue) => {
        for (const window of [future, '2026-02-30T00:00:00Z', 'yesterday']) {
          const err = await start(taskQueue, window).then(
            () => undefined,
            (e: unknown) => e,
          );
          assert.equal(failureType(err), FailureType.InvalidWindow, `${name} with window ${window}: ${String(err)}`);
        }
      });
      assert.deepEqual(fake.calls.order, [], `${name}: no activity runs for a refused window`);
    }
  });

  it('expiry and orphan removal count their cutoffs back from the window: a re-run of a past window is never more aggressive', async () => {
    const fake = fakeMaintenance();
    const window = '2026-01-01T03:00:00Z';
    const asOf = Date.parse(window);
    const [e1, e2, o1, o2] = await withWorker(env, fake.activities, async (taskQueue) => {
      const expire = () =>
        client.workflow.execute(expireWorkflow, {
          taskQueue,
          workflowId: id('expire'),
          args: [{ table: 't', window, olderThanMs: 5 * 24 * HOUR, retainLast: 2 }],
        });
      const orphans = () =>
        client.workflow.execute(orphansWorkflow, {
          taskQueue,
          workflowId: id('orphans'),
          args: [{ table: 't', window, olderThanMs: 3 * 24 * HOUR }],
        });
      return [await expire(), await expire(), await orphans(), await orphans()] as const;
    });
    assert.deepEqual(
      fake.calls.expireSnapshotsCommit.map((c) => c.asOfMs),
      [asOf, asOf],
    );
    assert.equal(e1.cutoffMs, asOf - 5 * 24 * HOUR);
    assert.equal(e2.cutoffMs, e1.cutoffMs);
    assert.notEqual(
      fake.calls.expireSnapshotsCommit[0]!.expireId,
      fake.calls.expireSnapshotsCommit[1]!.expireId,
      'each run commits under its own expire id',
    );
    assert.deepEqual(
      fake.calls.deleteExpiredFiles.map((c) => c.metadataOlderThanMs),
      [asOf - 5 * 24 * HOUR, asOf - 5 * 24 * HOUR],
    );
    assert.deepEqual(
      fake.calls.removeOrphanFiles.map((c) => c.asOfMs),
      [asOf, asOf],
    );
    assert.equal(o1.cutoffMs, asOf - 3 * 24 * HOUR);
    assert.equal(o2.cutoffMs, o1.cutoffMs);
    assert.equal(o1.window, window);
  });

  it('expiry: a dry run or nothing expired deletes nothing; orphans: a grace period under an hour needs force', async () => {
    const fake = fakeMaintenance({ expired: [] });
    await withWorker(env, fake.activities, async (taskQueue) => {
      const nothing = await client.workflow.execute(expireWorkflow, { taskQueue, workflowId: id('expire'), args: [{ table: 't' }] });
      assert.equal(nothing.expiredSnapshots, 0);
      const dry = await client.workflow.execute(expireWorkflow, {
        taskQueue,
        workflowId: id('expire'),
        args: [{ table: 't', dryRun: true, olderThanMs: HOUR, retainLast: 1 }],
      });
      assert.equal(dry.dryRun, true);
      const err = await client.workflow
        .execute(orphansWorkflow, { taskQueue, workflowId: id('orphans'), args: [{ table: 't', olderThanMs: HOUR / 2 }] })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      assert.equal(failureType(err), FailureType.UnsafeGracePeriod);
      const forced = await client.workflow.execute(orphansWorkflow, {
        taskQueue,
        workflowId: id('orphans'),
        args: [{ table: 't', olderThanMs: HOUR / 2, force: true }],
      });
      assert.equal(forced.deleted, 3);
    });
    assert.equal(fake.calls.deleteExpiredFiles.length, 0);
    assert.equal(fake.calls.expireSnapshotsCommit.length, 2);
    assert.equal(fake.calls.expireSnapshotsCommit[0]!.olderThanMs, 5 * 24 * HOUR, 'defaults when the table has no maintenance config');
    assert.equal(fake.calls.expireSnapshotsCommit[0]!.retainLast, 1);
    assert.deepEqual(
      fake.calls.removeOrphanFiles.map((c) => c.force),
      [true],
      'the refused run never listed the table',
    );
  });

  it('maintain runs compact, expire, orphans in order as children named after it, all with its window', async () => {
    const fake = fakeMaintenance({ groups: 2 });
    const window = '2026-01-02T00:00:00Z';
    const workflowId = id('maintain');
    const result = await withWorker(env, fake.activities, async (taskQueue) =>
      client.workflow.execute(maintainWorkflow, { taskQueue, workflowId, args: [{ table: 't', window }] }),
    );
    const firstOf = (name: string) => fake.calls.order.indexOf(name);
    assert.ok(firstOf('planCompaction') < firstOf('commitRewrite'));
    assert.ok(fake.calls.order.lastIndexOf('clearPendingFiles') < firstOf('expireSnapshotsCommit'), 'compaction finished before expiry');
    assert.ok(fake.calls.order.lastIndexOf('deleteExpiredFiles') < firstOf('removeOrphanFiles'), 'expiry finished before orphan removal');
    assert.equal(result.window, window);
    assert.equal(result.compact?.commits, 1);
    assert.equal(result.expire?.cutoffMs, Date.parse(window) - 5 * 24 * HOUR);
    assert.equal(result.orphans?.cutoffMs, Date.parse(window) - 3 * 24 * HOUR);
    assert.deepEqual(
      fake.calls.planCompaction.map((c) => c.window),
      [window],
    );
    for (const kind of ['compact', 'expire', 'orphans']) {
      const d = await client.workflow.getHandle(`${workflowId}/${kind}`).describe();
      assert.equal(d.status.name, 'COMPLETED', `child ${workflowId}/${kind}`);
    }

    const skipped = fakeMaintenance();
    const r2 = await withWorker(env, skipped.activities, async (taskQueue) =>
      client.workflow.execute(maintainWorkflow, {
        taskQueue,
        workflowId: id('maintain'),
        args: [{ table: 't', skip: ['compact', 'orphans'] }],
      }),
    );
    assert.equal(r2.compact, null);
    assert.equal(r2.orphans, null);
    assert.deepEqual(
      skipped.calls.order.filter((n) => n !== 'maintenanceSettings'),
      ['expireSnapshotsCommit', 'deleteExpiredFiles'],
    );
  });

  const scheduled = (taskQueue: string, kind: MaintenanceWorkflowKind, table: string, at: Date) =>
    client.workflow.execute(scheduledMaintenanceWorkflow, {
      taskQueue,
      workflowId: id(`floe-scheduled-${kind}`),
      args: [{ table, kind }],
      // What a Schedule sets on every run it starts, also on `temporal schedule backfill`.
      typedSearchAttributes: [{ key: SCHEDULED_START_TIME, value: at }],
    });

  it('a scheduled window that already ran is a no-op the second time (maintain: no activity runs again)', async () => {
    const fake = fakeMaintenance({ groups: 2 });
    const table = uniqueId('db.scheduled');
    const at = new Date('2026-01-03T04:00:00.250Z');
    const window = windowOf(at);
    assert.equal(window, '2026-01-03T04:00:00Z');
    const [first, second] = await withWorker(env, fake.activities, async (taskQueue) => [
      await scheduled(taskQueue, 'maintain', table, at),
      await scheduled(taskQueue, 'maintain', table, at),
    ]);

    assert.equal(first!.ran, true);
    assert.equal(first!.window, window);
    assert.equal(first!.workflowId, maintenanceWorkflowId('maintain', table, window));
    assert.equal((first!.result as { window: string }).window, window);
    assert.equal(second!.ran, false);
    assert.equal(second!.result, null);
    assert.equal(second!.workflowId, first!.workflowId);
    assert.equal(fake.calls.planCompaction.length, 1);
    assert.equal(fake.calls.expireSnapshotsCommit.length, 1);
    assert.equal(fake.calls.removeOrphanFiles.length, 1);
    assert.deepEqual(
      fake.calls.removeOrphanFiles.map((c) => c.asOfMs),
      [Date.parse(window)],
    );
  });

  it('a scheduled window whose run failed runs again; other windows run independently', async () => {
    const fake = fakeMaintenance({
      beforeExpire: (_input, n) => {
        if (n === 1) throw ApplicationFailure.nonRetryable('metadata file vanished', FailureType.MetadataGone);
      },
    });
    const table = uniqueId('db.scheduled-retry');
    const at = new Date('2026-01-04T00:00:00Z');
    const later = new Date('2026-01-05T00:00:00Z');
    const { err, again, other } = await withWorker(env, fake.activities, async (taskQueue) => {
      const err = await scheduled(taskQueue, 'expire', table, at).then(
        () => undefined,
        (e: unknown) => e,
      );
      return { err, again: await scheduled(taskQueue, 'expire', table, at), other: await scheduled(taskQueue, 'expire', table, later) };
    });
    assert.ok(
      err instanceof WorkflowFailedError && err.cause instanceof ChildWorkflowFailure,
      `expected the child's failure, found ${String(err)}`,
    );
    assert.equal(failureType(err), FailureType.MetadataGone);
    assert.equal(again.ran, true, 'ALLOW_DUPLICATE_FAILED_ONLY: a failed window may run again');
    assert.equal(other.ran, true);
    assert.equal(other.window, windowOf(later));
    assert.deepEqual(
      fake.calls.expireSnapshotsCommit.map((c) => c.asOfMs),
      [at.getTime(), at.getTime(), later.getTime()],
    );
  });

  // maintainWorkflow names its children `<its id>/compact|expire|orphans` with
  // ALLOW_DUPLICATE_FAILED_ONLY; a re-run of a window whose maintain failed after some children
  // completed used to fail again on WorkflowExecutionAlreadyStartedError, forever.
  it('a maintain window that failed in its last step can run again', async () => {
    const fake = fakeMaintenance({
      groups: 2,
      beforeOrphans: (_input, n) => {
        if (n === 1) throw ApplicationFailure.nonRetryable('listing refused', FailureType.DataInvalid);
      },
    });
    const window = '2026-01-06T00:00:00Z';
    const workflowId = maintenanceWorkflowId('maintain', uniqueId('db.maintain-retry'), window);
    const { first, second } = await withWorker(env, fake.activities, async (taskQueue) => {
      // As client/maintenance.ts maintainTable starts it.
      const start = () =>
        client.workflow
          .execute(maintainWorkflow, {
            taskQueue,
            workflowId,
            workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
            args: [{ table: 't', window }],
          })
          .then(
            (r) => r,
            (e: unknown) => e,
          );
      return { first: await start(), second: await start() };
    });
    assert.equal(failureType(first), FailureType.DataInvalid, `first run: ${String(first)}`);
    assert.ok(!(second instanceof Error), `the re-run of the failed window failed: ${String(second)} (${String((second as Error).cause)})`);
    assert.equal(fake.calls.removeOrphanFiles.length, 2);
  });
});
