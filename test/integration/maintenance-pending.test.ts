/**
 * Real stack (Temporal dev server, SeaweedFS S3, SQLite catalog): a pending commit's files are
 * never orphans, a compaction never commits a reference to a missing output, and a garbage or
 * future maintenance window is refused at every edge instead of becoming a NaN cutoff that makes
 * every unreachable file an orphan.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { WorkflowFailedError } from '@temporalio/client';
import { ensureStack } from '../../stack/stack';
import { connectClient } from '../../client';
import { compactTable, maintainTable, removeOrphans } from '../../client/maintenance';
import { openTables, type Tables } from '../../table/tables';
import { commitRewrite, planCompaction, rewriteFileGroup } from '../../maintenance/index';
import { findTable, type FloeConfig } from '../../config';
import { clearPending, listPending, markPending } from '../../table/pending';
import { InvalidWindowError } from '../../maintenance/window';
import { maintainWorkflow, orphansWorkflow } from '../../workflows';
import { maintenanceTestConfig, orderRows, seedSmallFiles, withWorker } from './maintenance-oracles';
import { setTimeout as sleep } from 'node:timers/promises';

const uniq = (p: string) => `${p}_${Date.now().toString(36)}`;
const REPO = resolve(__dirname, '../..');

async function withTables<T>(cfg: FloeConfig, fn: (t: Tables) => Promise<T>): Promise<T> {
  const tables = await openTables(cfg);
  try {
    return await fn(tables);
  } finally {
    await tables.close();
  }
}

const failureType = (e: unknown): string | undefined => {
  let c: unknown = e;
  while (c && typeof c === 'object') {
    if ('type' in c && typeof (c as { type?: unknown }).type === 'string') return (c as { type: string }).type;
    c = (c as { cause?: unknown }).cause;
  }
  return undefined;
};

describe('pending commits, missing outputs and bad windows (real stack)', { timeout: 10 * 60_000 }, () => {
  before(async () => {
    await ensureStack(['temporal', 's3']);
  });

  it("an in-flight cycle's marked files survive a forced sweep that deletes an unmarked file of the same age; cleared, they are swept", async () => {
    const { table, cfg } = maintenanceTestConfig(uniq('it_pending'));
    await seedSmallFiles(cfg, table, 2, 20);
    const t = findTable(cfg, table);
    const owner = `floe-ingest/${table}/main`;
    const { location, inflight, dead } = await withTables(cfg, async (tables) => {
      const { metadata } = await tables.load(table);
      // As an ingest cycle does it: mark first, then write the cycle's data files under data/.
      await markPending(tables.io, metadata.location, owner, 'cycle-42-a1');
      const inflight = await tables.writeDataFiles(table, orderRows(1000, 30), 'cycle-42-a1', t.targetFileSizeBytes);
      // A dead attempt of the same age that nothing protects.
      const dead = await tables.writeDataFiles(table, orderRows(2000, 30), 'cycle-41-a1', t.targetFileSizeBytes);
      return { location: metadata.location, inflight: inflight.map((f) => f.filePath), dead: dead.map((f) => f.filePath) };
    });
    assert.ok(inflight.length > 0 && dead.length > 0);
    await sleep(1500); // both older than the 1 s grace below

    await withWorker(cfg, async () => {
      const fc = await connectClient(cfg);
      try {
        const r = await removeOrphans(fc, table, { olderThanMs: 1000, force: true });
        assert.deepEqual([...r.sample].sort(), [...dead].sort(), 'only the unmarked files are orphans');
        assert.equal(r.deleted, dead.length);
        assert.equal(r.keptByPending, inflight.length);
        assert.equal(r.pendingMarkers, 1);
        await withTables(cfg, async (tables) => {
          for (const f of inflight) assert.ok(await tables.io.exists(f), `${f} of the pending commit is kept`);
          for (const f of dead) assert.ok(!(await tables.io.exists(f)), `${f} is swept`);
          assert.deepEqual(
            (await listPending(tables.io, location)).map((p) => p.owner),
            [owner],
            'the sweep never deletes a marker',
          );
          await clearPending(tables.io, location, owner); // the cycle ended without a commit
        });
        const r2 = await removeOrphans(fc, table, { olderThanMs: 1000, force: true });
        assert.deepEqual([...r2.sample].sort(), [...inflight].sort(), "unmarked, the abandoned cycle's files are orphans");
        await withTables(cfg, async (tables) => {
          for (const f of inflight) assert.ok(!(await tables.io.exists(f)));
        });
      } finally {
        await fc.close();
      }
    });
  });

  it('compaction marks its outputs while it runs and clears the marker at the end', async () => {
    const { table, cfg } = maintenanceTestConfig(uniq('it_pending_compact'));
    await seedSmallFiles(cfg, table, 6, 40);
    const location = await withTables(cfg, async (tables) => (await tables.load(table)).metadata.location);
    await withWorker(cfg, async () => {
      const fc = await connectClient(cfg);
      const owners = new Set<string>();
      let done = false;
      try {
        const poll = (async () => {
          await withTables(cfg, async (tables) => {
            while (!done) {
              for (const p of await listPending(tables.io, location)) owners.add(`${p.owner}|${p.filePrefix}`);
              await sleep(25);
            }
          });
        })();
        const r = await compactTable(fc, table, { minInputFiles: 2, maxConcurrentFileGroupRewrites: 1 }).finally(() => {
          done = true;
        });
        await poll;
        assert.ok(r.commits >= 1);
        assert.equal(owners.size, 1, `one marker during the run, found ${[...owners].join(', ')}`);
        const [owner, prefix] = [...owners][0]!.split('|');
        assert.match(owner!, /^compact-/);
        assert.equal(prefix, `${owner}-`, "the marker protects exactly the run's output names");
        await withTables(cfg, async (tables) =>
          assert.deepEqual(await listPending(tables.io, location), [], 'cleared at the end of the run'),
        );
      } finally {
        done = true;
        await fc.close();
      }
    });
  });

  it('a compaction commit whose output vanished leaves that group out (rewritten next run) and commits the rest', async () => {
    const { table, cfg } = maintenanceTestConfig(uniq('it_missing_output'));
    await seedSmallFiles(cfg, table, 6, 40);
    await withTables(cfg, async (tables) => {
      const env = new MockActivityEnvironment();
      const act = <R>(fn: () => Promise<R>): Promise<R> => env.run(fn) as Promise<R>;
      const plan = await act(() => planCompaction(tables, findTable(cfg, table), { table, options: { minInputFiles: 2 } }));
      assert.ok(plan.groups.length >= 2, `need two groups, planned ${plan.groups.length}`);
      const runId = `compact-test-${Date.now()}`;
      const results: Array<Awaited<ReturnType<typeof rewriteFileGroup>>> = [];
      for (const g of plan.groups) {
        results.push(
          await act(() =>
            rewriteFileGroup(tables, {
              table,
              location: plan.location,
              runId,
              group: g,
              targetFileSizeBytes: plan.options.targetFileSizeBytes,
            }),
          ),
        );
      }
      const lost = String(results[0]!.outputs[0]!.filePath);
      await tables.io.delete(lost); // a lifecycle rule, a sweep, a lost write
      const before = (await tables.load(table)).metadata;
      const r = await act(() =>
        commitRewrite(tables, {
          table,
          location: plan.location,
          commitId: `c-${runId}`,
          groups: plan.groups.map((g, i) => ({ group: g, result: results[i]! })),
        }),
      );
      assert.deepEqual(
        r.skippedGroups.map((s) => s.index),
        [plan.groups[0]!.index],
      );
      assert.match(
        r.skippedGroups[0]!.reason,
        /missing or incomplete \(e\.g\. s3:\/\/.* does not exist\); not committed, the group is rewritten on the next run/,
      );
      assert.deepEqual(
        r.committedGroups,
        plan.groups.slice(1).map((g) => g.index),
      );
      const after = (await tables.load(table)).metadata;
      assert.equal(after.snapshots.length, before.snapshots.length + 1);
      const { liveDataFiles } = await import('../../maintenance/reachable');
      const live = new Set((await liveDataFiles(tables.io, after)).map((f) => f.dataFile.filePath));
      for (const f of live) assert.ok(await tables.io.exists(f), `every live file exists: ${f}`);
      assert.ok(!live.has(lost));
      for (const f of plan.groups[0]!.files) assert.ok(live.has(`${plan.location}/${f.path}`), "the failed group's inputs stay live");
    });
  });

  it('a garbage or future window is refused by the CLI, the client, and the workflows themselves (InvalidWindow), and nothing is deleted', async () => {
    const { table, cfg, path } = maintenanceTestConfig(uniq('it_window'));
    await seedSmallFiles(cfg, table, 3, 20);
    const future = new Date(Date.now() + 86_400_000).toISOString();
    const cli = (args: string[]) =>
      spawnSync(process.execPath, ['--import', 'tsx', resolve(REPO, 'cli/main.ts'), '-c', path, ...args], {
        cwd: REPO,
        encoding: 'utf8',
        timeout: 120_000,
      });
    for (const w of ['garbage', future]) {
      const r = cli(['maintain', table, '--window', w]);
      assert.equal(r.status, 2, r.stdout + r.stderr); // a usage error (README "Exit codes")
      assert.match(r.stderr, /--window: expected (an ISO 8601 time|a time not in the future)/);
    }
    // An unreferenced old file: a NaN cutoff would have deleted it.
    const stray = await withTables(cfg, async (tables) => {
      const l = `${(await tables.load(table)).metadata.location}/data/stray-${Date.now()}.parquet`;
      await tables.io.write(l, new TextEncoder().encode('x'));
      return l;
    });
    await sleep(1200);
    const snapshots = async () => withTables(cfg, async (tables) => (await tables.load(table)).metadata.snapshots.length);
    const before = await snapshots();
    await withWorker(cfg, async () => {
      const fc = await connectClient(cfg);
      try {
        for (const window of ['garbage', future]) {
          await assert.rejects(removeOrphans(fc, table, { olderThanMs: 1000, force: true, window }), InvalidWindowError);
          await assert.rejects(maintainTable(fc, table, { window }), InvalidWindowError);
          // Past the client: the workflows refuse it too.
          for (const [wf, args] of [
            [orphansWorkflow, { table, window, olderThanMs: 1000, force: true }],
            [maintainWorkflow, { table, window }],
          ] as const) {
            await assert.rejects(
              fc.client.workflow.execute(wf as typeof orphansWorkflow, {
                taskQueue: cfg.temporal.taskQueue,
                workflowId: uniq(`it-window-${wf.name}`),
                args: [args as never],
              }),
              (e: unknown) => e instanceof WorkflowFailedError && failureType(e) === 'InvalidWindow',
            );
          }
        }
      } finally {
        await fc.close();
      }
    });
    assert.equal(await snapshots(), before, 'maintain refused before compacting');
    await withTables(cfg, async (tables) => assert.ok(await tables.io.exists(stray), 'nothing was swept'));
  });
});
