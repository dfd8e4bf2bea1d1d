/**
 * Issue 29 item 13: a maintenance commit that landed, then the worker died before the activity
 * reported it (crash points `compact-after-commit`, `expire-after-commit`). Temporal retries the
 * activity after its heartbeat timeout; the retry must see that the commit landed: no second
 * commit, no live file deleted, and for expiry the deletion of what the landed commit expired still
 * runs. Rows are compared through PyIceberg and DuckDB, not floe's reader.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { ensureStack } from '../../stack/stack';
import { connectClient, type FloeClient } from '../../client';
import { compactTable } from '../../client/maintenance';
import { openTables } from '../../table/tables';
import { liveDataFiles } from '../../maintenance/reachable';
import { compactWorkflow, expireWorkflow } from '../../workflows';
import type { FloeConfig } from '../../config';
import { activityResults, killMarker, retriedAttempts, unreachable } from '../support/maintenance-kills';
import { superviseWorker } from '../support/supervised-worker';
import { engineReads, maintenanceTestConfig, seedSmallFiles } from './maintenance-oracles';

const uniq = (p: string) => `${p}_${Date.now().toString(36)}`;
const HEARTBEAT = 4; // temporal.api.enums.v1.TimeoutType.TIMEOUT_TYPE_HEARTBEAT

const rowsOf = (r: Awaited<ReturnType<typeof engineReads>>) => [
  r.pyiceberg.rows,
  r.pyiceberg.distinctEventIds,
  r.duckdb.rows,
  r.duckdb.distinctEventIds,
  r.duckdb.amountSum,
];

/** The table's snapshots (operation, summary commit id) and whether every live data file exists. */
async function tableState(cfg: FloeConfig, table: string) {
  const tables = await openTables(cfg);
  try {
    const { metadata } = await tables.load(table);
    const live = await liveDataFiles(tables.io, metadata, { metrics: false });
    const missing: string[] = [];
    for (const f of live) if (!(await tables.io.exists(f.dataFile.filePath))) missing.push(f.dataFile.filePath);
    return {
      operations: metadata.snapshots.map((s) => s.summary.operation),
      liveFiles: live.length,
      missing,
    };
  } finally {
    await tables.close();
  }
}

describe('a maintenance commit that landed before its worker died is not committed twice (real stack)', { timeout: 15 * 60_000 }, () => {
  before(async () => {
    await ensureStack(['temporal', 's3']);
  });

  it('compaction: the worker killed after the rewrite commit; the retry finds it landed, commits nothing again, deletes no live file', async () => {
    const name = uniq('it_kill_compact_after');
    const { table, cfg, path } = maintenanceTestConfig(name);
    const seeded = await seedSmallFiles(cfg, table, 6, 40);
    const before_ = await engineReads((await unreachable(cfg, table)).metadataLocation);
    const { env, marker } = killMarker('compact-after-commit');
    const worker = superviseWorker(path, name, env);
    let fc: FloeClient | undefined;
    try {
      fc = await connectClient(cfg);
      const handle = await fc.client.workflow.start(compactWorkflow, {
        taskQueue: cfg.temporal.taskQueue,
        workflowId: `test-${name}`,
        args: [{ table, options: { minInputFiles: 2 }, window: null }],
      });
      const r = await handle.result();
      assert.match(readFileSync(marker, 'utf8'), /^compact-after-commit /, 'the worker died right after the commit landed');
      assert.ok(worker.exits >= 1, 'the killed worker exited and was restarted');
      assert.deepEqual(r.failed_data_file_groups, []);
      assert.equal(r.rewritten_data_files_count, seeded, 'the result counts the landed commit');

      const { events } = await handle.fetchHistory();
      const retries = retriedAttempts(events ?? [], 'commitRewrite');
      assert.equal(retries.length, 1, `one retried commitRewrite attempt: ${JSON.stringify(retries)}`);
      assert.equal(retries[0]!.timeoutType, HEARTBEAT, JSON.stringify(retries[0]));
      const results = activityResults<{ alreadyCommitted: boolean; committedGroups: number[] }>(events ?? [], 'commitRewrite');
      assert.equal(results.length, 1);
      assert.equal(results[0]!.alreadyCommitted, true, 'the retry reports the commit of the dead attempt');
      assert.ok(results[0]!.committedGroups.length > 0);

      const state = await tableState(cfg, table);
      assert.deepEqual(state.operations, [...Array<string>(6).fill('append'), 'replace'], 'exactly one replace snapshot');
      assert.deepEqual(state.missing, [], 'every live data file exists');
      assert.ok(state.liveFiles < seeded, `${seeded} small files became ${state.liveFiles}`);
      const end = await unreachable(cfg, table);
      assert.deepEqual(end.files, [], 'nothing was written twice: no unreferenced output');
      assert.deepEqual(rowsOf(await engineReads(end.metadataLocation)), rowsOf(before_));
    } finally {
      await worker.stop();
      await fc?.close();
    }
  });

  it('expiry: the worker killed after the expire commit; the retry finds it landed, reports what it expired and deletes those files', async () => {
    const name = uniq('it_kill_expire_after');
    const { table, cfg, path } = maintenanceTestConfig(name);
    const seeded = await seedSmallFiles(cfg, table, 6, 40);
    const { env, marker } = killMarker('expire-after-commit');
    const worker = superviseWorker(path, name, env);
    let fc: FloeClient | undefined;
    try {
      fc = await connectClient(cfg);
      const c = await compactTable(fc, table, { minInputFiles: 2 });
      assert.deepEqual(c.failed_data_file_groups, []);
      const compacted = await unreachable(cfg, table);
      const before_ = await engineReads(compacted.metadataLocation);

      const handle = await fc.client.workflow.start(expireWorkflow, {
        taskQueue: cfg.temporal.taskQueue,
        workflowId: `test-${name}`,
        args: [{ table, olderThanMs: 0, retainLast: 1, window: null }],
      });
      const r = await handle.result();
      assert.ok(existsSync(marker), 'the worker reached crash point expire-after-commit');
      assert.match(readFileSync(marker, 'utf8'), /^expire-after-commit /);
      assert.ok(worker.exits >= 1, 'the killed worker exited and was restarted');

      const { events } = await handle.fetchHistory();
      const retries = retriedAttempts(events ?? [], 'expireSnapshotsCommit');
      assert.equal(retries.length, 1, `one retried expireSnapshotsCommit attempt: ${JSON.stringify(retries)}`);
      assert.equal(retries[0]!.timeoutType, HEARTBEAT, JSON.stringify(retries[0]));
      const results = activityResults<{ alreadyCommitted: boolean }>(events ?? [], 'expireSnapshotsCommit');
      assert.equal(results[0]?.alreadyCommitted, true, 'the retry found the landed commit by its expire id');

      // Before, the retry reported 0 expired snapshots (and metrics counted none).
      assert.equal(r.expiredSnapshots, 6, 'the six seed snapshots, expired by the dead attempt’s commit');
      assert.equal(r.deleted.dataFiles, seeded, 'the small files compaction replaced are deleted after all');
      assert.equal(r.deleted.manifestLists, 6, JSON.stringify(r.deleted));

      const state = await tableState(cfg, table);
      assert.deepEqual(state.operations, ['replace'], 'one expiry commit; the compaction snapshot stays');
      assert.deepEqual(state.missing, []);
      const end = await unreachable(cfg, table);
      assert.deepEqual(end.files, [], 'no file only the expired snapshots reached is left');
      assert.deepEqual(rowsOf(await engineReads(end.metadataLocation)), rowsOf(before_));
    } finally {
      await worker.stop();
      await fc?.close();
    }
  });
});
