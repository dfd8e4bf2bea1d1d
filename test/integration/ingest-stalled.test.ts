// npm test: stack to itself (stops and restarts Kafka; no deadline tighter than minutes)
/**
 * A service that is down stalls an ingest visibly and never costs a record (issue 29 item 1), on
 * the real stack: Kafka is stopped under a live ingest; within isolateAfterAttempts attempts the
 * ingest shows `stalled` with the error, attempt count and since when (`floe ingest status`'s
 * view), the worker's /metrics carries floe_ingest_stalled_seconds for the table (what the
 * FloeIngestStalled alert reads), and nothing is dead-lettered; Kafka comes back, the ingest
 * recovers by itself, and every message is a row exactly once.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureStack, stackDown } from '../../stack/stack';
import { scenarioConfig } from '../../demo/scenario';
import { verifyTable } from '../../demo/verify';
import { loadConfig, type FloeConfig } from '../../config';
import { connectClient, signalIngest, startIngest, waitForIngest, type FloeClient } from '../../client';
import { ingestStatus, type IngestStatusView } from '../../client/ingest-status';
import { floeHome } from '../../stack/paths';
import { freeLoopbackPort } from '../../observability/metrics-server';
import { spawnWorker, type WorkerProcess } from '../../workers/process';
import { produceMessages } from '../support/produce';

const quiet = (m: string) => {
  if (process.env.FLOE_TEST_VERBOSE) console.log(m);
};

/** Events e<from>.. e<from+n-1> into the 2-partition topic (created on first use). */
const produce = (cfg: FloeConfig, topic: string, from: number, n: number) =>
  produceMessages(
    cfg,
    topic,
    Array.from({ length: n }, (_, i) => ({
      key: `k${from + i}`,
      value: JSON.stringify({ event_id: `e${from + i}`, note: `n${from + i}` }),
    })),
    2,
  );

describe('a Kafka outage stalls the ingest visibly and it recovers by itself (real stack)', { timeout: 15 * 60_000 }, () => {
  let cfg: FloeConfig;
  let table: string;
  let topic: string;
  let fc: FloeClient;
  let worker: WorkerProcess;
  let metricsPort: number;

  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3']);
    const c = scenarioConfig(`it_stalled_${Date.now().toString(36)}`, 2, '2s', {
      columns: [
        { name: 'event_id', type: 'string', required: true },
        { name: 'note', type: 'string' },
      ],
      partitionBy: [],
      isolateAfterAttempts: 2,
    });
    cfg = loadConfig(c.path);
    ({ table, topic } = c);
    metricsPort = await freeLoopbackPort();
    worker = spawnWorker(c.path, join(floeHome(), 'logs', `${table.replace(/\W/g, '_')}-worker.log`), {
      FLOE_METRICS_PORT: String(metricsPort),
    });
    fc = await connectClient(cfg);
  });
  after(async () => {
    await ensureStack(['kafka'], { log: quiet });
    await fc?.close();
    await worker?.kill('SIGTERM');
  });

  it('stalled with error, attempts and since; the stall gauge; no dead letter; then every message lands once', async () => {
    await produce(cfg, topic, 0, 50);
    await startIngest(fc, table);
    // The first 50 are in the table: the ingest is live.
    for (let i = 0; ; i++) {
      const s = await ingestStatus(fc, table);
      if ((s?.totalRows ?? 0) >= 50) break;
      assert.ok(i < 300, `the first 50 rows did not land: ${JSON.stringify(s)}`);
      await sleep(200);
    }
    await stackDown(['kafka'], { log: quiet });
    let stalled: IngestStatusView | null = null;
    let polls = 0;
    for (; polls < 600 && stalled === null; polls++) {
      const s = await ingestStatus(fc, table);
      if (s?.state === 'stalled') stalled = s;
      else await sleep(500);
    }
    assert.ok(stalled, 'the ingest showed stalled while Kafka was down');
    assert.ok(stalled.failing!.attempts >= 2, `attempts ${stalled.failing!.attempts}`);
    assert.ok(stalled.failing!.sinceMs <= Date.now() && stalled.failing!.sinceMs > Date.now() - 10 * 60_000);
    assert.match(stalled.failing!.error, /ServiceUnavailable|worker lost|KafkaJS|ECONNREFUSED/);
    assert.equal(stalled.isolation, undefined, 'an outage is never blamed on records');
    assert.equal(stalled.totalDeadLetters, 0);
    // The next retry carries the stall to the worker's metrics.
    let gauge: string | undefined;
    for (let i = 0; i < 240 && !gauge; i++) {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      gauge = text.split('\n').find((l) => l.startsWith(`floe_ingest_stalled_seconds{table="${table}"}`));
      if (!gauge) await sleep(500);
    }
    assert.ok(gauge, 'floe_ingest_stalled_seconds for the table');
    assert.ok(Number(gauge.split(' ')[1]) >= 0);

    await ensureStack(['kafka'], { log: quiet });
    await produce(cfg, topic, 50, 50);
    await signalIngest(fc, table, 'stop');
    const status = await waitForIngest(fc, table);
    assert.equal(status.state, 'stopped');
    assert.equal(status.failing, undefined, 'recovered: the failure is cleared');
    assert.equal(status.totalRows, 100);
    assert.equal(status.totalDeadLetters, 0);
    const v = await verifyTable(cfg, table, topic);
    assert.deepEqual(v.problems, [], v.problems.join('; '));
  });
});
