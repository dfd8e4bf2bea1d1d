/**
 * Temporal Schedules of table maintenance against the real dev server: `schedules apply` creates
 * then updates, pause/unpause work, and a backfill over three past windows runs three compaction
 * workflows (ids floe-compact/<table>/<window>); the same backfill again changes nothing: no new
 * run of any window and the table's metadata stays where it was.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { WorkflowNotFoundError } from '@temporalio/client';
import { ensureStack } from '../../stack/stack';
import { stackEnv } from '../../stack/env';
import { runCommand } from '../../stack/proc';
import { connectClient } from '../../client';
import {
  applySchedules,
  backfillSchedule,
  maintenanceScheduleId,
  maintenanceWorkflowId,
  setSchedulesPaused,
  tableFiles,
  windowOf,
} from '../../client/maintenance';
import { currentMetadataLocation, engineReads, maintenanceTestConfig, seedSmallFiles, withWorker } from './maintenance-oracles';
import { resolveTemporalTarget } from '../../client/connection';
import { setTimeout as sleep } from 'node:timers/promises';

const uniq = (p: string) => `${p}_${Date.now().toString(36)}`;
const HOUR = 3_600_000;

describe('maintenance schedules (real stack)', { timeout: 20 * 60_000 }, () => {
  before(async () => {
    await ensureStack(['temporal', 's3']);
  });

  it('a backfill over three past windows runs three workflows; running it again changes nothing', async () => {
    const name = uniq('it_sched');
    const paused = { paused: true };
    const { table, cfg } = maintenanceTestConfig(name, {
      compact: { cron: '0 * * * *', minInputFiles: 2, ...paused },
      expire: { cron: '0 3 * * *', ...paused },
      orphans: { cron: '30 3 * * *', ...paused },
    });
    const seeded = await seedSmallFiles(cfg, table, 6, 30);
    const fc = await connectClient(cfg);
    const ids = (['compact', 'expire', 'orphans'] as const).map((k) => maintenanceScheduleId(k, table));
    try {
      const created = await applySchedules(fc, [table]);
      assert.deepEqual(
        created.map((s) => [s.kind, s.action, s.paused]),
        [
          ['compact', 'created', true],
          ['expire', 'created', true],
          ['orphans', 'created', true],
        ],
      );
      const updated = await applySchedules(fc, [table]);
      assert.deepEqual(
        updated.map((s) => s.action),
        ['updated', 'updated', 'updated'],
      );
      const h = fc.client.schedule.getHandle(ids[0]!);
      const d = await h.describe();
      assert.equal(d.state.paused, true);
      assert.equal(d.policies.overlap, 'SKIP');
      await setSchedulesPaused(fc, table, false, 'compact');
      assert.equal((await h.describe()).state.paused, false);
      await setSchedulesPaused(fc, table, true, 'compact');
      assert.equal((await h.describe()).state.paused, true);

      const top = Math.floor(Date.now() / HOUR) * HOUR;
      const windows = [top - 3 * HOUR, top - 2 * HOUR, top - HOUR].map((t) => windowOf(new Date(t)));
      const children = windows.map((w) => fc.client.workflow.getHandle(maintenanceWorkflowId('compact', table, w)));
      const describeAll = async () =>
        Promise.all(
          children.map((c) =>
            c.describe().catch((e) => {
              if (e instanceof WorkflowNotFoundError) return null;
              throw e;
            }),
          ),
        );

      await withWorker(cfg, async () => {
        // Backfills run on a paused schedule too (they are manual actions).
        await backfillSchedule(fc, table, 'compact', new Date(top - 3 * HOUR - 60_000), new Date(top - HOUR + 60_000));
        let runs = await describeAll();
        for (let i = 0; i < 120 && !runs.every((r) => r?.status.name === 'COMPLETED'); i++) {
          await sleep(1000);
          runs = await describeAll();
        }
        assert.deepEqual(
          runs.map((r) => r?.status.name),
          ['COMPLETED', 'COMPLETED', 'COMPLETED'],
          'three windows, three workflows',
        );
        const results = await Promise.all(
          children.map((c) => c.result() as Promise<{ commits: number; window: string; rewritten_data_files_count: number }>),
        );
        assert.deepEqual(
          results.map((r) => r.window),
          windows,
          'each run got its window from its scheduled start time',
        );
        assert.equal(
          results.reduce((a, r) => a + r.rewritten_data_files_count, 0),
          seeded,
          'the files were rewritten once, by one of the windows',
        );
        const metadata1 = await currentMetadataLocation(cfg, table);
        const files1 = await tableFiles(cfg, table);
        const reads1 = await engineReads(metadata1);
        assert.equal(files1.overall.files, files1.partitions.length);

        // Same backfill again, through the temporal CLI as an operator would.
        const temporal = `${stackEnv().python.bin}/temporal`;
        const target = resolveTemporalTarget(cfg.temporal);
        await runCommand(temporal, [
          'schedule',
          'backfill',
          '--address',
          target.address,
          '--namespace',
          target.namespace,
          '--schedule-id',
          ids[0]!,
          '--overlap-policy',
          'BufferAll',
          '--start-time',
          new Date(top - 3 * HOUR - 60_000).toISOString(),
          '--end-time',
          new Date(top - HOUR + 60_000).toISOString(),
        ]);
        // Let the scheduler start whatever it starts for those windows and let it finish.
        await sleep(15_000);
        const runs2 = await describeAll();
        assert.deepEqual(
          runs2.map((r) => r?.runId),
          runs.map((r) => r?.runId),
          'no window ran a second time',
        );
        assert.equal(await currentMetadataLocation(cfg, table), metadata1, 'the table did not change');
        assert.deepEqual(await engineReads(metadata1), reads1);
      });
    } finally {
      for (const id of ids)
        await fc.client.schedule
          .getHandle(id)
          .delete()
          .catch(() => undefined);
      await fc.close();
    }
  });
});
