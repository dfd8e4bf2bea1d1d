/**
 * A route into thousands of tables on the real stack (Kafka, Temporal; a SQLite catalog file and
 * a file:// warehouse of its own, so the other tests' catalog never lists these tables): a route
 * field with 3,000 distinct values, one record per value per round.
 *
 * 1. Round one creates the 3,000 dynamic tables in one cycle: the plan and the polls' file lists
 *    are staged (history carries references), the commit lands every table, the base table last.
 * 2. Round two gives every value one more record: the ingest keeps committing; every table holds
 *    its two rows once.
 * 3. Round three touches 5 values only: only those 5 tables and the base table get a snapshot.
 * Then every table's effective cursor (its own, raised to the route cursor) is the topic's end,
 * and no event of the workflow's history carries a payload near Temporal's 2 MB limit.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { stringify as stringifyYaml } from 'yaml';
import { ensureStack } from '../../stack/stack';
import { floeHome } from '../../stack/paths';
import { loadConfig, type FloeConfig } from '../../config';
import { connectClient, ingestStatus, signalIngest, startIngest, waitForIngest } from '../../client';
import { openTables } from '../../table/tables';
import { readCursor } from '../../table/cursor';
import { effectiveCursor, listedRouteTables, readRouteCursor } from '../../ingest/route';
import { topicWatermarks } from '../../ingest/kafka';
import { connectKafka } from '../../ingest/kafka-security';
import { mapConcurrent } from '../../iceberg';
import { readColumnValues } from '../../client/tables';
import { runPythonJson } from '../../stack/python';
import { ingestWorkflowId } from '../../workflows';
import { spawnWorker, type WorkerProcess } from '../../workers/process';
import { produceMessages } from '../support/produce';
import { createTopicsReady } from '../../demo/topics';

const VALUES = 3000;
const READ = `
import json, sys
from floe_duckdb import connect
out = {}
for loc in sys.argv[1:]:
    out[loc] = [r[0] for r in connect().sql(f"SELECT event_id FROM iceberg_scan('{loc}')").fetchall()]
print(json.dumps(out))
`;
const PARTITIONS = 2;

describe('a route into 3,000 tables keeps committing (real Kafka and Temporal, SQLite file catalog)', { timeout: 30 * 60_000 }, () => {
  const workers: WorkerProcess[] = [];
  let root: string;
  before(async () => {
    await ensureStack(['temporal', 'kafka']);
    root = mkdtempSync(join(tmpdir(), 'floe-route-many-'));
  });
  after(async () => {
    for (const w of workers) await w.kill('SIGKILL').catch(() => undefined);
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it('3,000 distinct values: staged plan and lists, every table exactly once, only changed tables commit', async () => {
    const run = `it_many_${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
    const table = `demo.${run}`;
    const path = join(root, 'floe.yaml');
    writeFileSync(
      path,
      stringifyYaml({
        catalog: { type: 'sql', uri: `sqlite:///${join(root, 'catalog.db')}`, warehouse: pathToFileURL(join(root, 'warehouse')).href },
        temporal: { taskQueue: `floe-${run}` },
        tables: [
          {
            table,
            topic: run,
            // Long enough for a poll to create a few hundred tables (each a catalog create) before it ends.
            commitInterval: '15s',
            parallelism: PARTITIONS,
            columns: [
              { name: 'event_id', type: 'string', required: true },
              { name: 'v', type: 'string', required: true },
            ],
            route: { field: 'v', dynamic: `${table}_{value}` },
          },
        ],
      }),
    );
    const cfg = loadConfig(path);
    const log = (name: string) => join(floeHome(), 'logs', `${run}-${name}.log`);
    const value = (i: number) => `v${String(i).padStart(4, '0')}`;
    const round = (r: number, values: number[]) =>
      values.map((i) => ({ value: JSON.stringify({ event_id: `r${r}-${value(i)}`, v: value(i) }), partition: i % PARTITIONS }));
    const all = Array.from({ length: VALUES }, (_, i) => i);
    await createTopic(cfg, run);
    await produceMessages(cfg, run, round(1, all), PARTITIONS);

    workers.push(spawnWorker(path, log('w1')));
    const fc = await connectClient(cfg);
    try {
      await startIngest(fc, table);
      // Round one committed: the base table's route cursor is at the topic's end.
      await waitFor(async () => sameEnd(cfg, table, await topicEnd(cfg, run)), 'round one committed', 20 * 60_000);
      await produceMessages(cfg, run, round(2, all), PARTITIONS);
      await waitFor(async () => sameEnd(cfg, table, await topicEnd(cfg, run)), 'round two committed', 20 * 60_000);
      const before3 = await snapshotCounts(cfg, table);
      const touched = [7, 1234, 2000, 2001, 2999];
      await produceMessages(cfg, run, round(3, touched), PARTITIONS);
      await signalIngest(fc, table, 'stop');
      const status = await waitForIngest(fc, table);
      assert.equal(status.state, 'stopped');
      assert.equal(status.totalRows, 2 * VALUES + touched.length, 'every record a row');
      assert.equal(status.routeTables !== undefined && status.routeTables >= VALUES, true, 'the status counts the tables');
      assert.equal(status.tables, undefined, 'past the inline budget the status keeps no per-table lines');

      // Round three: a snapshot for the five tables it touched and the base table, none for the others.
      const after3 = await snapshotCounts(cfg, table);
      const grew = Object.keys(after3).filter((t) => after3[t] !== before3[t]);
      assert.deepEqual(
        grew.sort(),
        [table, ...touched.map((i) => `${table}_${value(i)}`)].sort(),
        'only the tables that changed committed',
      );

      // Every table: its rows once; every effective cursor at the topic's end.
      const end = await topicEnd(cfg, run);
      const tables = await openTables(cfg);
      try {
        const base = (await tables.load(table)).metadata;
        const names = listedRouteTables(base.properties);
        assert.equal(names.length, VALUES, 'every value made its table');
        const route = readRouteCursor(base.properties, 'main');
        assert.deepEqual(route, end, 'the route cursor at the end');
        const problems = (
          await mapConcurrent(names, 8, async (n) => {
            const m = (await tables.load(n)).metadata;
            const ids = (await readColumnValues(tables, n, 'event_id')).map(String).sort();
            const v = n.slice(table.length + 1);
            const want = [`r1-${v}`, `r2-${v}`, ...(touched.map(value).includes(v) ? [`r3-${v}`] : [])];
            const out: string[] = [];
            if (JSON.stringify(ids) !== JSON.stringify(want)) out.push(`${n}: rows ${ids.join(',')}, expected ${want.join(',')}`);
            const eff = effectiveCursor(readCursor(m, 'main').offsets, route);
            if (JSON.stringify(eff) !== JSON.stringify(end)) out.push(`${n}: effective cursor ${JSON.stringify(eff)}`);
            return out;
          })
        ).flat();
        assert.deepEqual(problems.slice(0, 10), [], `${problems.length} tables wrong`);
        // Another reader agrees, on a sample (DuckDB's iceberg_scan of the metadata floe wrote).
        const sample = [names[0]!, names[1234]!, names[2999]!];
        const locations = await Promise.all(sample.map(async (n) => (await tables.load(n)).metadataLocation));
        const read = await runPythonJson<Record<string, string[]>>(READ, locations, { timeoutMs: 120_000 });
        sample.forEach((n, i) =>
          assert.equal(read[locations[i]!]!.length, touched.map(value).includes(n.slice(table.length + 1)) ? 3 : 2, n),
        );
      } finally {
        await tables.close();
      }

      // History: the plan and the lists were staged; no payload near the 2 MB limit.
      const sizes = await historyPayloadSizes(fc, table);
      console.log(
        `history of ${ingestWorkflowId(table, 'main')}: largest payload ${sizes.max} bytes (${sizes.largest}), ${sizes.events} events`,
      );
      assert.ok(sizes.max < 512 * 1024, `largest history payload ${sizes.max} bytes (${sizes.largest})`);
      const view = await ingestStatus(fc, table);
      assert.ok(view);
    } finally {
      await fc.close();
    }
  });
});

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > until) throw new Error(`timed out waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 2000));
  }
}

/**
 * The topic, created before anything is produced: a broker another test just restarted answers
 * UNKNOWN_TOPIC_OR_PARTITION for a while; creating is safe to retry, producing is not (a retried
 * send could write a record twice).
 */
async function createTopic(cfg: FloeConfig, topic: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const admin = (await connectKafka(cfg.kafka)).admin();
    try {
      await admin.connect();
      await createTopicsReady(admin, [{ topic, numPartitions: PARTITIONS, replicationFactor: 1 }]);
      if ((await topicWatermarks(admin, topic)).high['0'] !== undefined) return;
    } catch (e) {
      if (attempt >= 10) throw e;
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
    await new Promise((r) => setTimeout(r, 3000));
  }
}

async function topicEnd(cfg: FloeConfig, topic: string): Promise<Record<string, string>> {
  const admin = (await connectKafka(cfg.kafka)).admin();
  await admin.connect();
  try {
    return (await topicWatermarks(admin, topic)).high;
  } finally {
    await admin.disconnect();
  }
}

async function sameEnd(cfg: FloeConfig, table: string, end: Record<string, string>): Promise<boolean> {
  const tables = await openTables(cfg);
  try {
    const m = (await tables.load(table)).metadata;
    return JSON.stringify(readRouteCursor(m.properties, 'main')) === JSON.stringify(end);
  } finally {
    await tables.close();
  }
}

/** Snapshots of the base table and of every table it lists. */
async function snapshotCounts(cfg: FloeConfig, table: string): Promise<Record<string, number>> {
  const tables = await openTables(cfg);
  try {
    const base = (await tables.load(table)).metadata;
    const names = [table, ...listedRouteTables(base.properties)];
    const counts = await mapConcurrent(names, 8, async (n) => (await tables.load(n)).metadata.snapshots.length);
    return Object.fromEntries(names.map((n, i) => [n, counts[i]!]));
  } finally {
    await tables.close();
  }
}

/** Bytes of an event's binary fields (its payloads' data and metadata). */
function bytesOf(x: unknown): number {
  if (x instanceof Uint8Array) return x.length;
  if (x === null || typeof x !== 'object') return 0;
  return Object.values(x).reduce((n: number, v) => n + bytesOf(v), 0);
}

/**
 * The largest event (bytes) of the ingest's history, across its runs. Paged by hand, 50 events a
 * page: a page of a thousand large events passes the client's 4 MB gRPC message limit.
 */
async function historyPayloadSizes(
  fc: Awaited<ReturnType<typeof connectClient>>,
  table: string,
): Promise<{ max: number; largest: string; events: number }> {
  let max = 0,
    largest = '',
    events = 0;
  const wid = ingestWorkflowId(table, 'main');
  for await (const w of fc.client.workflow.list({ query: `WorkflowId = '${wid}'` })) {
    let nextPageToken: Uint8Array | undefined;
    do {
      const page = await fc.client.workflowService.getWorkflowExecutionHistory({
        namespace: fc.client.options.namespace,
        execution: { workflowId: wid, runId: w.runId },
        maximumPageSize: 50,
        ...(nextPageToken ? { nextPageToken } : {}),
      });
      for (const e of page.history?.events ?? []) {
        events++;
        const n = bytesOf(e);
        if (n > max) {
          max = n;
          largest = String(Object.keys(e).find((k) => k.endsWith('Attributes')) ?? 'event');
        }
      }
      nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
    } while (nextPageToken);
  }
  return { max, largest, events };
}
