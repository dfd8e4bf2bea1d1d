/**
 * `floe ingest status`, `floe ingest stop --wait` and `floe status` as a user runs them (the CLI
 * as a child process) against the real stack: Temporal dev server, Kafka, SeaweedFS S3, SQLite
 * catalog, with an in-process worker. One config, two tables:
 * - table B's ingest fails non-retryably (another engine widened a column: TableDrift);
 *   `ingest status --json` and `floe status --json` show it failed with that error;
 * - `ingest stop --wait` on table A returns only once the workflow has completed, and prints the
 *   final status (all rows, rows/s averaged, not the last cycle's);
 * - `floe status --json` covers both tables: ingest state, files, maintenance Schedules, failures.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { ensureStack } from '../../stack/stack';
import { runPythonJson } from '../../stack/python';
import { connectClient, ingestStatus, startIngest, type FloeClient } from '../../client';
import { applySchedules } from '../../client/maintenance';
import { loadConfig, type FloeConfig } from '../../config';
import { ingestWorkflowId, maintenanceScheduleId } from '../../workflows';
import { windowRowsPerSecond, type IngestStatus } from '../../workflows/ingest-state';
import { scenarioConfig } from '../../demo/config';
import { produceOrderEvents } from '../support/produce';
import { withWorker } from './maintenance-oracles';

const ROOT = resolve(__dirname, '../..');
const uniq = (p: string) => `${p}_${Date.now().toString(36)}`;

/** Runs `floe <args>` from the sources; resolves with the exit code and output whatever the code. */
async function floe(configPath: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', resolve(ROOT, 'cli/main.ts'), '-c', configPath, ...args],
      {
        cwd: ROOT,
        timeout: 50_000,
      },
    );
    return { code: 0, stdout, stderr };
  } catch (e) {
    const x = e as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof x.code === 'number' ? x.code : -1, stdout: x.stdout ?? '', stderr: x.stderr ?? '' };
  }
}

const PY_WIDEN = `
import sys
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.types import LongType
from floe_duckdb import pyiceberg_s3_properties
name, uri, warehouse, table = sys.argv[1:]
t = SqlCatalog(name, uri=uri, warehouse=warehouse, **pyiceberg_s3_properties()).load_table(table)
with t.update_schema() as u:
    u.update_column("kafka_partition", field_type=LongType())
print("[]")
`;

describe('floe status and ingest stop --wait (real stack, the CLI as a process)', { timeout: 120_000 }, () => {
  let cfg: FloeConfig;
  let path: string;
  let a: string, b: string;
  let fc: FloeClient;

  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3']);
    // One config with two tables: scenarioConfig's table, and a copy on its own topic.
    const c = scenarioConfig(uniq('it_status_a'), 1, '1s');
    const doc = parseYaml(readFileSync(c.path, 'utf8')) as { tables: Record<string, unknown>[] };
    const second: Record<string, unknown> = { ...doc.tables[0]!, table: `${c.table}_b`, topic: `${c.topic}_b` };
    delete second.deadLetterTable;
    doc.tables.push(second);
    writeFileSync(c.path, stringifyYaml(doc));
    path = c.path;
    cfg = loadConfig(path);
    [a, b] = [cfg.tables[0]!.table, cfg.tables[1]!.table];
    await Promise.all([produceOrderEvents(cfg, cfg.tables[0]!.topic, 0, 20), produceOrderEvents(cfg, cfg.tables[1]!.topic, 0, 20)]);
    fc = await connectClient(cfg);
  });

  after(async () => {
    for (const kind of ['compact', 'expire', 'orphans'] as const)
      await fc.client.schedule
        .getHandle(maintenanceScheduleId(kind, a))
        .delete()
        .catch(() => undefined);
    await fc.close();
  });

  it('a failed ingest shows failed with its error; stop --wait returns after completion with the final status; floe status covers both tables', async () => {
    await withWorker(cfg, async () => {
      await Promise.all([startIngest(fc, a), startIngest(fc, b)]);
      // A new worker's first cycle (creating both tables) can take ~30 s on this shared machine.
      for (const deadline = Date.now() + 45_000; ; await sleep(250)) {
        const [sa, sb] = await Promise.all([ingestStatus(fc, a), ingestStatus(fc, b)]);
        if (sa && sb && sa.totalRows >= 20 && sb.totalRows >= 20) break;
        assert.ok(Date.now() < deadline, `both ingests committed 20 rows within 45 s (${JSON.stringify([sa, sb])})`);
      }
      // The Schedules only now: a scheduled run before the table exists would fail (and be listed).
      await applySchedules(fc, [a]);
      // Another engine widens a column of B: its next cycle fails the workflow with TableDrift.
      await runPythonJson(PY_WIDEN, [cfg.catalog.name, cfg.catalog.uri, cfg.catalog.warehouse, b]);
      await fc.client.workflow
        .getHandle(ingestWorkflowId(b, 'main'))
        .result()
        .catch(() => undefined);

      const [statusB, stopA] = await Promise.all([
        floe(path, 'ingest', 'status', b, '--json'),
        floe(path, 'ingest', 'stop', a, '--wait', '--timeout', '40s', '--json'),
      ]);
      assert.equal(statusB.code, 0, statusB.stderr);
      const sb = JSON.parse(statusB.stdout) as {
        state: string;
        error?: string;
        cursor: Record<string, string>;
        lastCommitId: string | null;
      };
      assert.equal(sb.state, 'failed');
      // What the run had committed before it failed (its replayed status, else the table's cursor).
      assert.deepEqual(sb.cursor, { '0': '20' });
      assert.ok(sb.lastCommitId);
      assert.match(
        sb.error ?? '',
        new RegExp(`^TableDrift: .*table ${b.replace('.', '\\.')}: column "kafka_partition" is long in the table but int in the config`),
      );

      // stop --wait: exit 0 with the final status, and by then the run has completed.
      assert.equal(stopA.code, 0, stopA.stderr);
      const final = JSON.parse(stopA.stdout) as IngestStatus & { rowsPerSecond: number; recentCommits: [number, number][] };
      assert.equal(final.state, 'stopped');
      assert.equal(final.totalRows, 20);
      assert.ok(final.recentCommits.length >= 1);
      // rows/s is the average over the last minute of commits as of the last commit, not the last cycle's.
      const windowed = windowRowsPerSecond(final.recentCommits, final.lastCommitTimeMs!);
      if (windowed !== null) assert.equal(final.rowsPerSecond, windowed);
      assert.ok(final.rowsPerSecond >= 0);
      assert.equal((await fc.client.workflow.getHandle(ingestWorkflowId(a, 'main')).describe()).status.name, 'COMPLETED');

      const st = await floe(path, 'status', '--json');
      assert.equal(st.code, 0, st.stderr);
      const o = JSON.parse(st.stdout) as { tables: Array<Record<string, any>> };
      assert.deepEqual(
        o.tables.map((t) => t.table),
        [a, b],
      );
      const [ta, tb] = o.tables;
      assert.equal(ta!.ingest.state, 'stopped');
      assert.equal(ta!.ingest.totalRows, 20);
      assert.ok(ta!.files.dataFiles >= 1, JSON.stringify(ta!.files));
      assert.equal(ta!.files.smallFiles, ta!.files.dataFiles, 'a few rows make small files');
      assert.deepEqual(
        ta!.maintenance.map((m: { kind: string }) => m.kind),
        ['compact', 'expire', 'orphans'],
      );
      assert.ok(ta!.maintenance.every((m: { nextRunAtMs: number | null }) => m.nextRunAtMs! > Date.now() - 60_000));
      assert.deepEqual(ta!.failures, []);
      assert.equal(tb!.ingest.state, 'failed');
      assert.match(tb!.ingest.error, /^TableDrift: /);
      assert.ok(
        tb!.failures.some((f: string) => /^ingest failed: TableDrift: /.test(f)),
        JSON.stringify(tb!.failures),
      );

      // The text screen: one row per table, the failure listed.
      const text = await floe(path, 'status');
      assert.equal(text.code, 0, text.stderr);
      assert.match(text.stdout, new RegExp(`${b.replace('.', '\\.')}: ingest failed: TableDrift`));

      // --watch --json: one document per refresh until interrupted (SIGINT, as Ctrl-C), then exit 0.
      const watch = spawn(
        process.execPath,
        ['--import', 'tsx', resolve(ROOT, 'cli/main.ts'), '-c', path, 'status', '--watch', '1s', '--json'],
        {
          cwd: ROOT,
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let out = '';
      watch.stdout.on('data', (d: Buffer) => (out += d.toString()));
      const exited = new Promise<number | null>((res) => watch.on('exit', (code) => res(code)));
      const t0 = Date.now();
      while (out.split('\n').filter(Boolean).length < 3 && Date.now() - t0 < 40_000) await sleep(200);
      watch.kill('SIGINT');
      assert.equal(await exited, 0);
      const docs = out
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { tables: { table: string }[] });
      assert.ok(docs.length >= 3, `${docs.length} refreshes`);
      for (const d of docs)
        assert.deepEqual(
          d.tables.map((x) => x.table),
          [a, b],
        );
    });
  });
});
