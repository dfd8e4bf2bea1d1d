/**
 * Table drift against the real stack (Temporal dev server, Kafka, SeaweedFS S3, SQLite catalog):
 * floe creates a table, PyIceberg changes it the way another engine would (widen int -> long,
 * rename a column, drop a dead-letter column), and then
 * - an ingest workflow that was running before the change FAILS (not retrying forever) with the
 *   non-retryable TableDrift failure, naming the table, the column and both types;
 * - `startIngest` (and `floe ingest start`) refuse to start, with the same problems.
 */
import { produceOrderEvents } from '../support/produce';
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { WorkflowNotFoundError } from '@temporalio/client';
import { ensureStack } from '../../stack/stack';
import { runPythonJson } from '../../stack/python';
import { connectClient, ingestStatus, rootCause, startIngest, TableDriftError } from '../../client';
import { openTables } from '../../table/tables';
import { findTable, loadConfig, type FloeConfig } from '../../config';
import { ingestWorkflowId } from '../../workflows';
import { scenarioConfig } from '../../demo/config';
import { withWorker } from './maintenance-oracles';
import { ensureIngestTables } from '../../ingest/tables';

const uniq = (p: string) => `${p}_${Date.now().toString(36)}`;

/** Another engine's schema change, through PyIceberg on the same SQL catalog. */
const PY_ALTER = `
import json, sys
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.types import LongType
from floe_duckdb import pyiceberg_s3_properties
name, uri, warehouse, table, op, *args = sys.argv[1:]
cat = SqlCatalog(name, uri=uri, warehouse=warehouse, **pyiceberg_s3_properties())
t = cat.load_table(table)
with t.update_schema() as u:
    if op == "widen":
        u.update_column(args[0], field_type=LongType())
    elif op == "rename":
        u.rename_column(args[0], args[1])
    elif op == "delete":
        u.delete_column(args[0])
    else:
        raise SystemExit("unknown op " + op)
t = t.refresh()
print(json.dumps([[f.name, str(f.field_type)] for f in t.schema().fields]))
`;

async function alter(
  cfg: FloeConfig,
  table: string,
  op: 'widen' | 'rename' | 'delete',
  ...args: string[]
): Promise<Array<[string, string]>> {
  return runPythonJson(PY_ALTER, [cfg.catalog.name, cfg.catalog.uri, cfg.catalog.warehouse, table, op, ...args]);
}

const produce = (cfg: FloeConfig, topic: string, count: number) => produceOrderEvents(cfg, topic, 0, count);

async function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

describe('table drift (real stack)', { timeout: 10 * 60_000 }, () => {
  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3']);
  });

  it('a running ingest fails with TableDrift when another engine widens int -> long; ingest start then refuses', async () => {
    const c = scenarioConfig(uniq('it_drift_widen'), 1, '1s');
    const cfg = loadConfig(c.path);
    const t = findTable(cfg, c.table);
    await produce(cfg, c.topic, 20);
    const fc = await connectClient(cfg);
    try {
      await withWorker(cfg, async () => {
        await startIngest(fc, c.table);
        // Everything in the topic committed: from now on cycles poll an idle topic and write nothing.
        for (const deadline = Date.now() + 60_000; ; await sleep(250)) {
          const s = await ingestStatus(fc, c.table);
          if (s && s.totalRows >= 20) break;
          assert.ok(Date.now() < deadline, `the ingest committed 20 rows within 60 s (status ${JSON.stringify(s)})`);
        }
        const columns = await alter(cfg, c.table, 'widen', 'kafka_partition');
        assert.deepEqual(
          columns.find(([n]) => n === 'kafka_partition'),
          ['kafka_partition', 'long'],
        );

        // The next cycle's loadCursor sees the drift and fails the workflow, once, visibly.
        const handle = fc.client.workflow.getHandle(ingestWorkflowId(c.table, t.ingestId));
        const err = await within(
          60_000,
          'the ingest workflow fails',
          handle.result().then(
            () => null,
            (e: unknown) => e,
          ),
        );
        assert.ok(err, 'the ingest workflow failed instead of going on');
        const cause = rootCause(err);
        assert.equal(cause.name, 'TableDrift');
        assert.match(
          cause.message,
          new RegExp(`table ${c.table.replace('.', '\\.')}: column "kafka_partition" is long in the table but int in the config`),
        );
        const d = await handle.describe();
        assert.equal(d.status.name, 'FAILED');
      });

      // Starting again is refused before any workflow starts.
      await assert.rejects(startIngest(fc, c.table), (e: unknown) => {
        assert.ok(e instanceof TableDriftError, `expected a TableDriftError, found ${String(e)}`);
        assert.deepEqual(e.problems, [`table ${c.table}: column "kafka_partition" is long in the table but int in the config`]);
        return true;
      });
    } finally {
      await fc.close();
    }
  });

  it('ingest start refuses a renamed column and a dead-letter table that lost a column, naming both tables; no workflow starts', async () => {
    const c = scenarioConfig(uniq('it_drift_rename'), 1, '1s');
    const cfg = loadConfig(c.path);
    const t = findTable(cfg, c.table);
    const tables = await openTables(cfg);
    try {
      await ensureIngestTables(tables, t, cfg.schemaRegistry);
    } finally {
      await tables.close();
    }
    await alter(cfg, c.table, 'rename', 'amount', 'amount_eur');
    await alter(cfg, t.deadLetterTable, 'delete', 'error');
    const expected = [
      `table ${c.table}: column "amount" (double in the config) was renamed to "amount_eur" (double in the table)`,
      `table ${t.deadLetterTable}: column "error" (string in floe's dead-letter schema) was dropped from the table (it was string)`,
    ];
    const fc = await connectClient(cfg);
    try {
      await assert.rejects(startIngest(fc, c.table), (e: unknown) => {
        assert.ok(e instanceof TableDriftError, `expected a TableDriftError, found ${String(e)}`);
        assert.deepEqual(e.problems, expected);
        return true;
      });
      await assert.rejects(fc.client.workflow.getHandle(ingestWorkflowId(c.table, t.ingestId)).describe(), WorkflowNotFoundError);
    } finally {
      await fc.close();
    }

    // The CLI prints one line per problem and exits 1.
    const root = resolve(__dirname, '../..');
    const run = promisify(execFile)(process.execPath, ['--import', 'tsx', 'cli/main.ts', '-c', c.path, 'ingest', 'start', c.table], {
      cwd: root,
    });
    await assert.rejects(run, (e: { code?: number; stderr?: string }) => {
      assert.equal(e.code, 1);
      assert.match(e.stderr ?? '', new RegExp(`ingest ${c.table.replace('.', '\\.')} not started`));
      for (const p of expected) assert.ok(e.stderr!.includes(`  - ${p}\n`), `stderr lists: ${p}\n${e.stderr}`);
      return true;
    });
  });
});
