/**
 * Maintenance survives a SIGKILLed worker at its two most exposed moments, found by bench/chaos.ts:
 * - killed inside `commitRewrite` before its CAS: the attempt is retried within the heartbeat
 *   timeout (the history shows a heartbeat timeout, not a 10-minute start-to-close wait) and the
 *   compaction completes;
 * - killed between the deletion phases of `deleteExpiredFiles` (data files and manifests gone,
 *   manifest lists not yet): the retry reads the expired snapshots' lists, finds their manifests
 *   gone, counts them as deleted and finishes, where it used to fail NotFound on every attempt.
 * Both end with the table as PyIceberg and DuckDB read it unchanged and nothing unreachable left.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { ensureStack } from '../../stack/stack';
import { connectClient, type FloeClient } from '../../client';
import { compactTable, expireTable } from '../../client/maintenance';
import { compactWorkflow } from '../../workflows';
import { killMarker, retriedAttempts, unreachable } from '../support/maintenance-kills';
import { superviseWorker } from '../support/supervised-worker';
import { engineReads, maintenanceTestConfig, seedSmallFiles } from './maintenance-oracles';

const uniq = (p: string) => `${p}_${Date.now().toString(36)}`;
const HEARTBEAT = 4; // temporal.api.enums.v1.TimeoutType.TIMEOUT_TYPE_HEARTBEAT

describe('maintenance with a worker SIGKILLed mid-activity (real stack)', { timeout: 15 * 60_000 }, () => {
  before(async () => {
    await ensureStack(['temporal', 's3']);
  });

  it('a compaction killed in commitRewrite before its CAS is retried after the heartbeat timeout and completes', async () => {
    const name = uniq('it_kill_commit');
    const { table, cfg, path } = maintenanceTestConfig(name);
    const seeded = await seedSmallFiles(cfg, table, 6, 40);
    const before_ = await engineReads((await unreachable(cfg, table)).metadataLocation);
    const { env, marker } = killMarker('compact-before-commit');
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
      assert.ok(existsSync(marker), 'the worker reached crash point compact-before-commit');
      assert.match(readFileSync(marker, 'utf8'), /^compact-before-commit /);
      assert.ok(worker.exits >= 1, 'the killed worker exited and was restarted');
      assert.deepEqual(r.failed_data_file_groups, []);
      assert.equal(r.rewritten_data_files_count, seeded);

      const { events } = await handle.fetchHistory();
      const retries = retriedAttempts(events ?? [], 'commitRewrite');
      assert.equal(retries.length, 1, `one retried commitRewrite attempt: ${JSON.stringify(retries)}`);
      assert.equal(
        retries[0]!.timeoutType,
        HEARTBEAT,
        `the dead attempt ended by its heartbeat timeout, not start-to-close: ${JSON.stringify(retries[0])}`,
      );

      const after = await unreachable(cfg, table);
      assert.deepEqual(
        await engineReads(after.metadataLocation).then((x) => [x.pyiceberg.rows, x.duckdb.distinctEventIds, x.duckdb.amountSum]),
        [before_.pyiceberg.rows, before_.duckdb.distinctEventIds, before_.duckdb.amountSum],
      );
    } finally {
      await worker.stop();
      await fc?.close();
    }
  });

  it('an expiry killed between its deletion phases finishes on retry instead of failing NotFound forever', async () => {
    const name = uniq('it_kill_expire');
    const { table, cfg, path } = maintenanceTestConfig(name);
    await seedSmallFiles(cfg, table, 6, 40);
    const { env, marker } = killMarker('expire-delete');
    const worker = superviseWorker(path, name, env);
    let fc: FloeClient | undefined;
    try {
      fc = await connectClient(cfg);
      const c = await compactTable(fc, table, { minInputFiles: 2 });
      assert.deepEqual(c.failed_data_file_groups, []);
      const compacted = await unreachable(cfg, table);
      assert.deepEqual(compacted.files, [], 'compaction leaves nothing unreachable: the replaced files are still reached by history');
      const before_ = await engineReads(compacted.metadataLocation);

      const r = await expireTable(fc, table, { olderThanMs: 0, retainLast: 1 });
      assert.ok(existsSync(marker), 'the worker reached crash point expire-delete');
      assert.ok(worker.exits >= 1, 'the killed worker exited and was restarted');
      assert.equal(r.expiredSnapshots, 6, 'six seed snapshots expire; the compaction snapshot stays');
      // The retry counts what its own attempt deleted: the dead attempt already removed the data
      // files and manifests, so the retry deletes the manifest lists it could still read.
      assert.equal(r.deleted.manifestLists, 6, JSON.stringify(r.deleted));

      const end = await unreachable(cfg, table);
      assert.deepEqual(end.files, [], 'no file only the expired snapshots reached is left');
      const after = await engineReads(end.metadataLocation);
      assert.deepEqual(
        [after.pyiceberg.rows, after.duckdb.distinctEventIds, after.duckdb.amountSum],
        [before_.pyiceberg.rows, before_.duckdb.distinctEventIds, before_.duckdb.amountSum],
      );
    } finally {
      await worker.stop();
      await fc?.close();
    }
  });
});
