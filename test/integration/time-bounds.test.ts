/**
 * Issue 29 item 13: the time bounds of `floe backfill --from/--to <time>` and
 * `floe ingest reset --to <time>`, against the real stack. Records are produced with known
 * timestamps, one partition's out of order, so the test pins Kafka's offsets-for-times semantics
 * floe relies on: a time resolves, per partition, to the earliest offset whose timestamp is at or
 * after it (an equal timestamp is inside `--from`, outside the exclusive `--to`), and to the end
 * of the partition when no record is that late. The rows that land are read with DuckDB.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { ensureStack } from '../../stack/stack';
import { runPythonJson } from '../../stack/python';
import { scenarioConfig } from '../../demo/scenario';
import { connectClient, parseBackfillBound, runBackfill, signalIngest, startIngest, waitForIngest } from '../../client';
import { openTables } from '../../table/tables';
import { createDeps } from '../../ingest/deps';
import { parseResetTarget, resetCursor, resolveResetTarget } from '../../ingest/reset';
import { ensureIngestTables } from '../../ingest/tables';
import { findTable, loadConfig, type FloeConfig } from '../../config';
import { withWorker } from './maintenance-oracles';
import { createTopicsReady } from '../../demo/topics';

const REPO = resolve(__dirname, '../..');
const COLUMNS = [
  { name: 'event_id', type: 'string', required: true },
  { name: 'p', type: 'int', source: 'partition', required: true },
  { name: 'o', type: 'long', source: 'offset', required: true },
];
// Milliseconds after T0 of each offset's timestamp: partition 0 in order, partition 1 not
// (offset 2 is stamped later than offsets 3-5, as a producer with a skewed clock would).
const STAMPS = { 0: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map((s) => s * 1000), 1: [0, 1000, 5000, 2000, 3000, 4000, 6000, 7000, 8000, 9000] };
// Recent enough that retention (by record timestamp) never deletes them during the test.
const T0 = Math.floor(Date.now() / 1000) * 1000 - 3_600_000;

/** `ms` as an ISO time in another zone's offset (+01:00): bounds are instants, whatever the zone. */
const isoPlusOne = (ms: number) => `${new Date(ms + 3_600_000).toISOString().slice(0, -1)}+01:00`;

/** The (partition, offset) of every row of the table, read by DuckDB's iceberg_scan. */
async function duckRows(cfg: FloeConfig, table: string): Promise<string[]> {
  const tables = await openTables(cfg);
  let location: string;
  try {
    location = (await tables.load(table)).metadataLocation;
  } finally {
    await tables.close();
  }
  const rows = await runPythonJson<Array<[number, number]>>(
    String.raw`
import json, sys
from floe_duckdb import connect
print(json.dumps(connect().sql(f"SELECT p, o FROM iceberg_scan('{sys.argv[1]}') ORDER BY p, o").fetchall()))
`,
    [location],
    { timeoutMs: 180_000 },
  );
  return rows.map(([p, o]) => `${p}:${o}`);
}

const span = (p: number, from: number, to: number) => Array.from({ length: to - from }, (_, i) => `${p}:${from + i}`);

describe('time bounds of backfill and ingest reset (real stack)', { timeout: 10 * 60_000 }, () => {
  const run = `it_timebounds_${Date.now().toString(36)}`;
  let backfillCfg: { path: string; table: string; topic: string };
  let resetCfg: { path: string; table: string; topic: string };
  let cfg: FloeConfig;

  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3']);
    // Two tables on two topics with the same records: one for backfills, one for resets.
    backfillCfg = scenarioConfig(`${run}_b`, 2, '1s', { columns: COLUMNS, partitionBy: [] });
    resetCfg = scenarioConfig(`${run}_r`, 2, '1s', { columns: COLUMNS, partitionBy: [] });
    cfg = loadConfig(backfillCfg.path);
    const kafka = new Kafka({ clientId: 'test', brokers: cfg.kafka.brokers, logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await createTopicsReady(
      admin,
      [backfillCfg.topic, resetCfg.topic].map((topic) => ({
        topic,
        numPartitions: 2,
        configEntries: [{ name: 'retention.ms', value: '-1' }],
      })),
    );
    await admin.disconnect();
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    for (const topic of [backfillCfg.topic, resetCfg.topic]) {
      for (const [p, stamps] of Object.entries(STAMPS)) {
        await producer.send({
          topic,
          messages: stamps.map((s, o) => ({
            partition: Number(p),
            timestamp: String(T0 + s),
            value: JSON.stringify({ event_id: `${p}-${o}` }),
          })),
        });
      }
    }
    await producer.disconnect();
  });

  it('backfill --from/--to <time>: each partition from the earliest offset stamped at/after --from up to the one at/after --to', async () => {
    const bcfg = loadConfig(backfillCfg.path);
    const fcb = await connectClient(bcfg);
    try {
      await withWorker(bcfg, async () => {
        const table = backfillCfg.table;
        // --from T0+2.5 s: partition 0 offset 3 (3 s); partition 1 offset 2 (5 s, the earliest
        // offset stamped that late, though offsets 3-5 are stamped earlier). --to T0+6 s exactly:
        // offset 6 on both, exclusive.
        const first = await runBackfill(
          fcb,
          table,
          parseBackfillBound(new Date(T0 + 2500).toISOString(), '--from'),
          parseBackfillBound(isoPlusOne(T0 + 6000), '--to'),
        );
        assert.deepEqual(first.prepared.range, { from: { 0: '3', 1: '2' }, to: { 0: '6', 1: '6' } });
        assert.equal(first.prepared.records, '7');
        assert.deepEqual(await duckRows(bcfg, table), [...span(0, 3, 6), ...span(1, 2, 6)]);

        // From T0+6 s (equal: inclusive) to a time after every record: the end of each partition.
        const rest = await runBackfill(
          fcb,
          table,
          parseBackfillBound(new Date(T0 + 6000).toISOString(), '--from'),
          parseBackfillBound(new Date(T0 + 3_000_000).toISOString(), '--to'),
        );
        assert.deepEqual(rest.prepared.range, { from: { 0: '6', 1: '6' }, to: { 0: '10', 1: '10' } });
        assert.deepEqual(await duckRows(bcfg, table), [...span(0, 3, 10), ...span(1, 2, 10)], 'adjacent ranges: no row twice');

        // A range that starts before the first record and ends inside the loaded ones overlaps them.
        await assert.rejects(
          runBackfill(fcb, table, parseBackfillBound(new Date(T0 - 60_000).toISOString(), '--from'), parseBackfillBound('5', '--to')),
          (e: Error) => e.name === 'BackfillOverlap',
        );
      });
    } finally {
      await fcb.close();
    }
  });

  it('ingest reset --to <time> moves the cursor to the earliest offset stamped at/after it; the ingest resumes there', async () => {
    const rcfg = loadConfig(resetCfg.path);
    const table = resetCfg.table;
    // The command once (its --to parsing included), the same steps in-process otherwise.
    const resetCli = (to: string) => {
      const r = spawnSync(
        process.execPath,
        ['--import', 'tsx', resolve(REPO, 'cli/main.ts'), '-c', resetCfg.path, 'ingest', 'reset', table, '--to', to, '--json'],
        {
          cwd: REPO,
          encoding: 'utf8',
          timeout: 120_000,
        },
      );
      assert.equal(r.status, 0, r.stdout + r.stderr);
      return JSON.parse(r.stdout) as { changed: boolean; after: Record<string, string> };
    };
    const t = findTable(rcfg, table);
    const deps = await createDeps(rcfg);
    await ensureIngestTables(deps.tables, t, rcfg.schemaRegistry); // as the command does
    const reset = async (to: string) =>
      resetCursor(deps.tables, t, t.ingestId, await resolveResetTarget(deps.admin, t.topic, parseResetTarget(to)));
    try {
      // After every record: the end of both partitions (Kafka answers -1 there).
      assert.deepEqual((await reset(new Date(T0 + 3_000_000).toISOString())).after, { 0: '10', 1: '10' });
      // Back to T0+4.5 s: partition 0 offset 5 (5 s), partition 1 offset 2 (5 s).
      const back = resetCli(isoPlusOne(T0 + 4500));
      assert.deepEqual(back, { ...back, changed: true, after: { 0: '5', 1: '2' } });
      assert.equal((await reset(new Date(T0 + 4500).toISOString())).changed, false, 'the same instant again: nothing to do');
    } finally {
      await deps.close();
    }

    const fc = await connectClient(rcfg);
    try {
      await withWorker(rcfg, async () => {
        await startIngest(fc, table);
        await signalIngest(fc, table, 'stop');
        const status = await waitForIngest(fc, table);
        assert.deepEqual(status.cursor, { 0: '10', 1: '10' });
      });
    } finally {
      await fc.close();
    }
    assert.deepEqual(await duckRows(rcfg, table), [...span(0, 5, 10), ...span(1, 2, 10)]);
  });
});
