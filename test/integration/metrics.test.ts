/**
 * The worker's /metrics on the real stack (issue 14 item 1): a worker process with
 * FLOE_METRICS_PORT ingests N messages; a scrape over HTTP agrees with the table (rows committed ==
 * the table's row count, one commit-latency observation per ingest commit), lag reaches 0, the
 * Temporal runtime's metrics are served on the same port, and compaction's, expiry's and orphan
 * removal's results are counted.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Kafka, logLevel } from 'kafkajs';
import { ensureStack } from '../../stack/stack';
import { floeHome } from '../../stack/paths';
import { scenarioConfig } from '../../demo/config';
import { orderEvents, eventKey } from '../../demo/generator';
import { loadConfig } from '../../config';
import { connectClient, signalIngest, startIngest, waitForIngest, type FloeClient } from '../../client';
import { compactTable, expireTable, removeOrphans } from '../../client/maintenance';
import { plantOrphan } from '../support/orphans';
import { tableCommitRows } from '../../client/tables';
import { spawnWorker, type WorkerProcess } from '../../workers/process';
import { freeLoopbackPort } from '../../observability/metrics-server';
import { scrape, sumOf, type Sample } from '../../observability/prom-text';
import { dashboardSeries } from '../support/dashboard';
import { createTopicsReady } from '../../demo/topics';

const N = 600;

async function until(ok: () => Promise<boolean>, timeoutMs = 40_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await ok().catch(() => false)) return;
    if (Date.now() > end) throw new Error(`not reached within ${timeoutMs} ms`);
    await sleep(250);
  }
}

describe('worker /metrics (real stack)', { timeout: 180_000 }, () => {
  const name = `it_metrics_${Date.now().toString(36)}`;
  const { path: configPath, table, topic } = scenarioConfig(name, 3, '1s');
  const cfg = loadConfig(configPath);
  let worker: WorkerProcess | undefined;
  let fc: FloeClient | undefined;
  let url = '';

  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3']);
    const port = await freeLoopbackPort();
    url = `http://127.0.0.1:${port}/metrics`;
    worker = spawnWorker(configPath, join(floeHome(), 'logs', `${name}-worker.log`), { FLOE_METRICS_PORT: String(port) });
    const kafka = new Kafka({ clientId: 'floe-test', brokers: cfg.kafka.brokers, logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await createTopicsReady(admin, [{ topic, numPartitions: 3, replicationFactor: 1 }]);
    await admin.disconnect();
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const events = orderEvents();
    // Two bursts, so the ingest commits more than once.
    for (const n of [N / 2, N / 2]) {
      const messages = Array.from({ length: n }, () => {
        const e = events.next().value!;
        return { key: eventKey(e), value: JSON.stringify(e) };
      });
      await producer.send({ topic, messages });
      if (!fc) {
        fc = await connectClient(cfg);
        await startIngest(fc, table);
      }
      // Scraped while the ingest runs: the first burst is committed before the second is sent.
      await until(async () => sumOf((await scrape(url)).samples, 'floe_rows_committed_total', { table }) >= N / 2);
    }
    await producer.disconnect();
  });

  after(async () => {
    await worker?.kill('SIGTERM');
    await fc?.close();
  });

  it('serves floe and Temporal metrics that agree with the table', async () => {
    await signalIngest(fc!, table, 'stop');
    const status = await waitForIngest(fc!, table);
    const { text, samples } = await scrape(url);
    const t = { table };

    const commits = await tableCommitRows(cfg, table);
    const ingestCommits = commits.filter((c) => c.commit_id !== '');
    const tableRows = Number(commits.at(-1)!.total_rows);
    assert.equal(tableRows, N);
    assert.equal(sumOf(samples, 'floe_rows_committed_total', t), tableRows, 'rows committed == the table row count');
    assert.equal(sumOf(samples, 'floe_dead_letters_total', t), 0);
    assert.ok(sumOf(samples, 'floe_records_read_total', t) >= N);
    assert.ok(sumOf(samples, 'floe_bytes_read_total', t) > 0);
    assert.ok(ingestCommits.length >= 2, `expected >= 2 commits, found ${ingestCommits.length}`);
    assert.equal(sumOf(samples, 'floe_commit_duration_seconds_count', t), ingestCommits.length, 'one latency observation per commit');
    assert.equal(sumOf(samples, 'floe_commit_files_count', t), ingestCommits.length);
    assert.equal(status.commits, ingestCommits.length);
    const files = ingestCommits.reduce((n, c) => n + Number(c.files), 0);
    assert.equal(sumOf(samples, 'floe_commit_files_sum', t), files, 'files per commit add up to the files the commits added');
    assert.equal(sumOf(samples, 'floe_data_file_size_bytes_count', t), files);
    assert.ok(sumOf(samples, 'floe_cycle_duration_seconds_count', t) >= 1);

    const lag = samples.filter((s: Sample) => s.name === 'floe_consumer_lag_records' && s.labels.table === table);
    assert.deepEqual(lag.map((s) => s.labels.partition).sort(), ['0', '1', '2'], 'lag per partition');
    assert.deepEqual(
      lag.map((s) => s.value),
      [0, 0, 0],
      'caught up: lag 0',
    );
    const age = sumOf(samples, 'floe_cursor_age_seconds', t);
    assert.ok(age >= 0 && age < 60, `cursor age ${age}`);
    assert.ok(sumOf(samples, 'floe_last_commit_timestamp_seconds', t) * 1000 <= Date.now());

    // The Temporal runtime's exporter, merged on the same port.
    assert.equal(sumOf(samples, 'floe_temporal_metrics_up'), 1);
    assert.ok(
      samples.some((s) => s.name.startsWith('temporal_')),
      'Temporal runtime metrics are served',
    );
    assert.ok(sumOf(samples, 'temporal_activity_execution_latency_seconds_count') > 0, 'activity latency from the SDK runtime');
    // The dashboard's Temporal panels query series the runtime really exports.
    const temporalSeries = [...dashboardSeries()].filter((n) => n.startsWith('temporal_'));
    assert.ok(temporalSeries.length > 0);
    for (const n of temporalSeries)
      assert.ok(
        samples.some((s) => s.name === n),
        `the worker exports ${n} (dashboard)`,
      );
    // Node's process metrics (prom-client defaults).
    assert.ok(samples.some((s) => s.name === 'process_resident_memory_bytes'));
    // No metric family is declared twice in the merged exposition.
    const types = text.split('\n').filter((l) => l.startsWith('# TYPE '));
    assert.equal(new Set(types.map((l) => l.split(' ')[2])).size, types.length);
  });

  it('counts compaction results and the table files maintenance saw', async () => {
    const res = await compactTable(fc!, table, { minInputFiles: 2, minFileSizeBytes: 64 * 1024 * 1024 });
    const { samples } = await scrape(url);
    const t = { table };
    assert.ok(res.rewritten_data_files_count >= 2, `compaction rewrote ${res.rewritten_data_files_count} files`);
    assert.equal(sumOf(samples, 'floe_compaction_rewritten_files_total', t), res.rewritten_data_files_count);
    assert.equal(sumOf(samples, 'floe_compaction_output_files_total', t), res.added_data_files_count);
    assert.equal(sumOf(samples, 'floe_compaction_rewritten_bytes_total', t), res.rewritten_bytes_count);
    assert.equal(sumOf(samples, 'floe_compaction_groups_total', { table, result: 'committed' }) > 0, true);
    assert.equal(sumOf(samples, 'floe_table_data_files', t), res.after.files, 'table files as compaction left them');
    assert.equal(sumOf(samples, 'floe_table_data_bytes', t), res.after.bytes);
  });

  it('counts expiry and orphan removal results', async () => {
    const expired = await expireTable(fc!, table, { olderThanMs: 1, retainLast: 1 });
    assert.ok(expired.expiredSnapshots >= 1, `expiry removed ${expired.expiredSnapshots} snapshots`);
    // One orphan in the data directory (no commit references it), old enough once the grace passes.
    await plantOrphan(cfg, table, name, 64);
    await sleep(2500);
    const orphans = await removeOrphans(fc!, table, { olderThanMs: 1000, force: true });
    assert.ok(orphans.orphans >= 1 && orphans.deleted === orphans.orphans, JSON.stringify(orphans));
    const { samples } = await scrape(url);
    const t = { table };
    assert.equal(sumOf(samples, 'floe_expired_snapshots_total', t), expired.expiredSnapshots);
    for (const [kind, n] of Object.entries(expired.deleted))
      assert.equal(sumOf(samples, 'floe_expiry_deleted_files_total', { table, kind }), n, `deleted ${kind}`);
    assert.ok(sumOf(samples, 'floe_expiry_deleted_files_total', t) >= 1, 'expiry deleted files');
    assert.equal(sumOf(samples, 'floe_orphan_files_found_total', t), orphans.orphans);
    assert.equal(sumOf(samples, 'floe_orphan_files_deleted_total', t), orphans.deleted);
    assert.equal(sumOf(samples, 'floe_orphan_bytes_found_total', t), orphans.orphanBytes);
  });
});
