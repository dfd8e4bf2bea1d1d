/**
 * Ingest backfills against the real stack: a bounded range loads exactly once, a re-run adds
 * nothing, an overlapping range is refused with a clear error unless forced. Rows are counted by
 * DuckDB reading the table, not by floe's reader or its snapshot summaries.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Kafka, logLevel } from 'kafkajs';
import { ensureStack } from '../../stack/stack';
import { scenarioConfig } from '../../demo/scenario';
import { loadConfig, type FloeConfig } from '../../config';
import { connectClient, runBackfill, parseBackfillBound, type FloeClient } from '../../client';
import { tableCommitRows } from '../../client/tables';
import { duckdbCounts } from '../../demo/verify';
import { openTables } from '../../table/tables';
import { createWorker } from '../../workers';
import { orderEvents } from '../../demo/generator';
import type { Worker } from '@temporalio/worker';
import { createTopicsReady } from '../../demo/topics';

describe('backfill (real stack)', { timeout: 15 * 60_000 }, () => {
  let cfg: FloeConfig;
  let table: string;
  let fc: FloeClient;
  let worker: Worker;
  let closeWorker: () => Promise<void>;
  let running: Promise<void>;

  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3']);
    const c = scenarioConfig(`it_backfill_${Date.now().toString(36)}`, 2, '2s');
    cfg = loadConfig(c.path);
    table = c.table;
    const kafka = new Kafka({ clientId: 'test', brokers: cfg.kafka.brokers, logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await createTopicsReady(admin, [{ topic: c.topic, numPartitions: 2 }]);
    await admin.disconnect();
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const ev = orderEvents();
    for (const partition of [0, 1]) {
      await producer.send({
        topic: c.topic,
        messages: Array.from({ length: 100 }, () => {
          const e = ev.next().value!;
          return { partition, key: String(e.order_id), value: JSON.stringify(e) };
        }),
      });
    }
    await producer.disconnect();
    ({ worker, close: closeWorker } = await createWorker(cfg));
    running = worker.run();
    fc = await connectClient(cfg);
  });
  after(async () => {
    await fc?.close();
    worker?.shutdown();
    await running;
    await closeWorker?.();
  });

  /** Rows as DuckDB reads the table; every test but the forced one also checks no event id twice. */
  const duck = async () => {
    const tables = await openTables(cfg);
    try {
      return await duckdbCounts((await tables.load(table)).metadataLocation);
    } finally {
      await tables.close();
    }
  };
  const totalRows = async () => {
    const d = await duck();
    assert.equal(d.distinctEventIds, d.rows, 'no event id twice');
    return d.rows;
  };

  it('loads a range once; a re-run adds nothing; overlap is refused unless forced', async () => {
    const first = await runBackfill(fc, table, parseBackfillBound('0', '--from'), parseBackfillBound('0:50,1:50', '--to'));
    assert.equal(first.prepared.records, '100');
    assert.equal(await totalRows(), 100);
    const commitsAfterFirst = (await tableCommitRows(cfg, table)).length;

    // Same arguments: same workflow id -> the completed run's result; nothing new lands.
    const again = await runBackfill(fc, table, parseBackfillBound('0', '--from'), parseBackfillBound('0:50,1:50', '--to'));
    assert.equal(again.prepared.ingestId, first.prepared.ingestId);
    assert.equal(await totalRows(), 100);
    assert.equal((await tableCommitRows(cfg, table)).length, commitsAfterFirst);

    // Same range spelled differently: different workflow id, same ingest id -> finds it complete.
    const respelled = await runBackfill(fc, table, parseBackfillBound('0:0,1:0', '--from'), parseBackfillBound('0:50,1:50', '--to'));
    assert.equal(respelled.prepared.ingestId, first.prepared.ingestId);
    assert.equal(respelled.status.commits, 0);
    assert.equal(await totalRows(), 100);

    await assert.rejects(
      runBackfill(fc, table, parseBackfillBound('25', '--from'), parseBackfillBound('75', '--to')),
      (e: Error) => e.name === 'BackfillOverlap' && /overlaps backfill "backfill-[0-9a-f]+" \(partition 0: 0-50/.test(e.message),
    );
    assert.equal(await totalRows(), 100);

    const rest = await runBackfill(fc, table, parseBackfillBound('0:50,1:50', '--from'), parseBackfillBound('100', '--to'));
    assert.equal(rest.prepared.records, '100');
    assert.equal(await totalRows(), 200);

    // Forced overlap loads what was asked (the caller accepted the duplicates).
    const forced = await runBackfill(fc, table, parseBackfillBound('90', '--from'), parseBackfillBound('100', '--to'), true);
    assert.equal(forced.prepared.records, '20');
    assert.deepEqual(await duck(), { rows: 220, distinctEventIds: 200 }, 'the forced range, 20 rows, twice');
  });

  it('rejects a malformed bound with the flag named', () => {
    assert.throws(() => parseBackfillBound('yesterday', '--from'), /--from: expected an ISO time/);
  });
});
