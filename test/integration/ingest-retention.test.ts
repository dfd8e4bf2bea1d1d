/**
 * Kafka deleting records past the cursor (retention, or `deleteRecords`) before the table got
 * them, against the real stack (issue 29 item 13). The choice: a flagged skip. The records are gone
 * from Kafka, so they cannot be rows nor dead letters (a dead letter keeps a record's bytes), and
 * stopping the table would not bring them back; the cycle starts at the earliest retained offset
 * and its snapshot records the jump in its summary (`floe.skipped`: `<p>:<from>-<to>`), the
 * ingest status counts the skipped records and the worker's floe_records_skipped_total too.
 * Everything still in Kafka lands exactly once (floe's reader and DuckDB).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { ensureStack } from '../../stack/stack';
import { scenarioConfig } from '../../demo/scenario';
import { duckdbCounts } from '../../demo/verify';
import { loadConfig, type FloeConfig } from '../../config';
import { connectClient, signalIngest, startIngest, waitForIngest, type FloeClient } from '../../client';
import { readColumnValues } from '../../client/tables';
import { openTables } from '../../table/tables';
import { floeHome } from '../../stack/paths';
import { spawnWorker, type WorkerProcess } from '../../workers/process';
import { produceMessages } from '../support/produce';
import { createTopicsReady } from '../../demo/topics';

describe('records deleted by Kafka before the table got them (real stack)', { timeout: 10 * 60_000 }, () => {
  let cfg: FloeConfig;
  let table: string;
  let topic: string;
  let fc: FloeClient;
  let worker: WorkerProcess;
  let kafka: Kafka;

  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3']);
    const c = scenarioConfig(`it_retention_${Date.now().toString(36)}`, 1, '2s', {
      columns: [{ name: 'event_id', type: 'string', required: true }],
      partitionBy: [],
    });
    cfg = loadConfig(c.path);
    ({ table, topic } = c);
    kafka = new Kafka({ clientId: 'test', brokers: cfg.kafka.brokers, logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await createTopicsReady(admin, [{ topic, numPartitions: 1 }]);
    await admin.disconnect();
    worker = spawnWorker(c.path, join(floeHome(), 'logs', `${table.replace(/\W/g, '_')}-worker.log`));
    fc = await connectClient(cfg);
  });
  after(async () => {
    await fc?.close();
    await worker?.kill('SIGTERM');
  });

  const send = (from: number, n: number) =>
    produceMessages(
      cfg,
      topic,
      Array.from({ length: n }, (_, i) => ({ value: JSON.stringify({ event_id: `e${from + i}` }), partition: 0 })),
    );
  const drain = async () => {
    await startIngest(fc, table);
    await signalIngest(fc, table, 'stop');
    return waitForIngest(fc, table);
  };

  it('a flagged skip: the snapshot says which offsets Kafka deleted, the status counts them, the rest lands once', async () => {
    await send(0, 20);
    const first = await drain();
    assert.equal(first.totalRows, 20);
    await send(20, 30);
    const admin = kafka.admin();
    await admin.connect();
    try {
      await admin.fetchTopicMetadata({ topics: [topic] }); // deleteTopicRecords needs it loaded
      await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '35' }] });
    } finally {
      await admin.disconnect();
    }
    const second = await drain();
    assert.equal(second.totalRows, 15);
    assert.equal(second.skippedRecords, '15');
    assert.deepEqual(second.cursor, { 0: '50' });
    const tables = await openTables(cfg);
    try {
      const { metadata, metadataLocation } = await tables.load(table);
      const summaries = metadata.snapshots.map((s) => s.summary['floe.skipped']).filter((x) => x !== undefined);
      assert.deepEqual(summaries, ['0:20-35'], 'one snapshot records the jump');
      const ids = (await readColumnValues(tables, table, 'event_id')).map(String).sort();
      const expected = [...Array.from({ length: 20 }, (_, i) => `e${i}`), ...Array.from({ length: 15 }, (_, i) => `e${35 + i}`)].sort();
      assert.deepEqual(ids, expected);
      const duck = await duckdbCounts(metadataLocation);
      assert.deepEqual(duck, { rows: 35, distinctEventIds: 35 });
    } finally {
      await tables.close?.();
    }
  });
});
