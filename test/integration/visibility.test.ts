/**
 * Temporal visibility by table (real stack): floe's search attributes are registered, and an
 * ingest, a compaction started by hand and the table's maintenance Schedules are all found with
 * `FloeTable = '<table>'` through the visibility API, with the right FloeKind / FloeIngestId, a
 * static summary, and (the ingest) current details showing cursor, lag and the last commit.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { WorkflowExecutionInfo } from '@temporalio/client';
import { ensureStack } from '../../stack/stack';
import { floeHome } from '../../stack/paths';
import { scenarioConfig } from '../../demo/config';
import { loadConfig } from '../../config';
import { connectClient, ingestStatus, signalIngest, startIngest, waitForIngest } from '../../client';
import { registerSearchAttributes } from '../../client/connection';
import { applySchedules, compactTable, SCHEDULE_KINDS } from '../../client/maintenance';
import { INGEST_ID_ATTRIBUTE, KIND_ATTRIBUTE, TABLE_ATTRIBUTE, maintenanceScheduleId } from '../../workflows';
import { spawnWorker } from '../../workers/process';
import { produceOrderEvents } from '../support/produce';

/**
 * Visibility is eventually consistent: poll until `ok` holds. The bound is a hang guard, not a
 * speed check (speed lives in bench/): `npm test` runs this beside other files, and on a loaded
 * 2-core machine a fresh worker took over 20 s to its first commit.
 */
async function eventually<T>(what: string, get: () => Promise<T>, ok: (v: T) => boolean, ms = 120_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await get();
    if (ok(v)) return v;
    if (Date.now() > deadline) assert.fail(`${what}: ${JSON.stringify(v)}`);
    await sleep(300);
  }
}

describe('workflows and schedules listed by table (real stack)', { timeout: 8 * 60_000 }, () => {
  it('ingest, compaction and schedules carry FloeTable/FloeKind/FloeIngestId and summaries', async () => {
    await ensureStack(['temporal', 'kafka', 's3']);
    const name = `it_vis_${Date.now().toString(36)}_${randomBytes(2).toString('hex')}`;
    const { path, table, topic } = scenarioConfig(name, 1, '1s');
    const cfg = loadConfig(path);
    const t = cfg.tables.find((x) => x.table === table)!;
    await produceOrderEvents(cfg, topic, 0, 20);
    const worker = spawnWorker(path, join(floeHome(), 'logs', `${name}-worker.log`));
    const fc = await connectClient(cfg);
    const ns = fc.client.options.namespace;
    try {
      // floe setup's registration is idempotent (the stack registered them already).
      const setup = await registerSearchAttributes(fc.client.connection, ns);
      assert.deepEqual([...setup.created, ...setup.existing].sort(), ['FloeIngestId', 'FloeKind', 'FloeTable']);

      const { workflowId } = await startIngest(fc, table);
      await eventually(
        'ingest commits',
        () => ingestStatus(fc, table),
        (s) => (s?.commits ?? 0) > 0,
      );

      const list = async (query: string) => {
        const out: WorkflowExecutionInfo[] = [];
        for await (const w of fc.client.workflow.list({ query })) out.push(w);
        return out;
      };
      const byTable = `FloeTable = '${table}'`;
      const [ingest] = await eventually(
        'the ingest listed by table and kind',
        () => list(`${byTable} AND FloeKind = 'ingest' AND FloeIngestId = '${t.ingestId}'`),
        (l) => l.length === 1,
      );
      assert.equal(ingest!.workflowId, workflowId);
      assert.equal(ingest!.typedSearchAttributes.get(TABLE_ATTRIBUTE), table);
      assert.equal(ingest!.typedSearchAttributes.get(INGEST_ID_ATTRIBUTE), t.ingestId);
      const handle = fc.client.workflow.getHandle(workflowId);
      const desc = await handle.describe();
      assert.equal(await desc.staticSummary(), `ingest ${topic} → ${table}`);
      assert.match((await desc.staticDetails()) ?? '', new RegExp(`ingest id \`${t.ingestId}\``));
      const meta = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
      assert.match(meta.currentDetails ?? '', /\*\*running\*\*/);
      assert.match(meta.currentDetails ?? '', /- cursor: 0:\d+/);
      assert.match(meta.currentDetails ?? '', /- lag: \d+ records/);
      assert.match(meta.currentDetails ?? '', /- last commit: \d{4}-\d\d-\d\dT.*commit id [0-9a-f-]{36}/);

      // A maintenance workflow started by hand.
      await compactTable(fc, table);
      const [compact] = await eventually(
        'the compaction listed by table',
        () => list(`${byTable} AND FloeKind = 'compact'`),
        (l) => l.length === 1,
      );
      assert.equal(compact!.typedSearchAttributes.get(KIND_ATTRIBUTE), 'compact');
      assert.match(
        (await fc.client.workflow
          .getHandle(compact!.workflowId)
          .describe()
          .then((d) => d.staticSummary())) ?? '',
        /^compact /,
      );

      // Every workflow of the table, whatever its kind.
      const all = await list(byTable);
      assert.deepEqual(new Set(all.map((w) => w.typedSearchAttributes.get(KIND_ATTRIBUTE))), new Set(['ingest', 'compact']));

      // The table's Schedules, listed by table; the workflows they start carry the attributes too.
      await applySchedules(fc, [table]);
      try {
        const schedules = await eventually(
          'the schedules listed by table',
          async () => {
            const out: string[] = [];
            for await (const s of fc.client.schedule.list({ query: byTable })) out.push(s.scheduleId);
            return out.sort();
          },
          (l) => l.length === SCHEDULE_KINDS.length,
        );
        assert.deepEqual(schedules, SCHEDULE_KINDS.map((k) => maintenanceScheduleId(k, table)).sort());
        const d = await fc.client.schedule.getHandle(maintenanceScheduleId('compact', table)).describe();
        const sa = d.action.typedSearchAttributes;
        assert.ok(sa && 'get' in sa, 'the scheduled action carries search attributes');
        assert.equal(sa.get(TABLE_ATTRIBUTE), table);
        assert.equal(sa.get(KIND_ATTRIBUTE), 'compact');
      } finally {
        for (const kind of SCHEDULE_KINDS) await fc.client.schedule.getHandle(maintenanceScheduleId(kind, table)).delete();
      }

      await signalIngest(fc, table, 'stop');
      await waitForIngest(fc, table);
    } finally {
      await fc.close();
      await worker.kill('SIGTERM');
    }
  });
});
