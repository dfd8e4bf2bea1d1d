/**
 * Temporal's payload limit (2 MB a payload) never stops a table, against the real stack (Temporal
 * dev server, Kafka, SeaweedFS S3, SQLite catalog): one ingest cycle that writes 3,200 data files
 * (bucket[320] x 10 currencies) through the real ingest workflow commits them all, and its history
 * stays small because past the inline budget pollAndWrite stages its file list as an Iceberg
 * manifest under `<table>/metadata/floe-staged/` and history carries a reference
 * (table/staged-files.ts). Inline, the same list would be ~2.5 MB in one payload.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { temporal } from '@temporalio/proto';
import { ensureStack } from '../../stack/stack';
import { scenarioConfig } from '../../demo/scenario';
import { duckdbCounts } from '../../demo/verify';
import { loadConfig, findTable, type FloeConfig } from '../../config';
import { connectClient, waitForIngest } from '../../client';
import { drainAndStopSignal, ingestWorkflow, ingestWorkflowId } from '../../workflows';
import { openTables } from '../../table/tables';
import { mapConcurrent, planFiles, readParquetBatches, dataFileToWire, applyTransform, currentSnapshot } from '../../iceberg';
import { STAGED_DIR } from '../../table/staged-files';
import { floeHome } from '../../stack/paths';
import { spawnWorker, type WorkerProcess } from '../../workers/process';
import { createTopicsReady } from '../../demo/topics';

const BUCKETS = 320;
const CURRENCIES = ['EUR', 'USD', 'GBP', 'JPY', 'CHF', 'SEK', 'NOK', 'DKK', 'PLN', 'CZK'];
/** Messages per (bucket, currency) partition: rows != files. */
const PER_PARTITION = 2;
const FILES = BUCKETS * CURRENCIES.length;
const MESSAGES = FILES * PER_PARTITION;
const MiB = 1024 * 1024;

/** PER_PARTITION distinct order ids for every bucket of bucket[BUCKETS] over a long. */
function orderIdsByBucket(): bigint[][] {
  const ids: bigint[][] = Array.from({ length: BUCKETS }, () => []);
  let filled = 0;
  for (let id = 1_000_000n; filled < BUCKETS; id++) {
    const b = applyTransform(`bucket[${BUCKETS}]`, 'long', id) as number;
    if (ids[b]!.length < PER_PARTITION && ids[b]!.push(id) === PER_PARTITION) filled++;
  }
  return ids;
}

/** Seconds from scheduling to completion of each activity of type `name` in a history. */
function activitySeconds(events: temporal.api.history.v1.IHistoryEvent[], name: string): number[] {
  const ms = (e: temporal.api.history.v1.IHistoryEvent) =>
    Number(e.eventTime!.seconds) * 1000 + Math.round((e.eventTime!.nanos ?? 0) / 1e6);
  const scheduled = new Map<string, number>();
  const out: number[] = [];
  for (const e of events) {
    const a = e.activityTaskScheduledEventAttributes;
    if (a?.activityType?.name === name) scheduled.set(String(e.eventId), ms(e));
    const c = e.activityTaskCompletedEventAttributes;
    const at = c && scheduled.get(String(c.scheduledEventId));
    if (at !== undefined && at !== null) out.push((ms(e) - at) / 1000);
  }
  return out;
}

/** Every payload in a history event, by where it sits. */
function payloadSizes(ev: temporal.api.history.v1.IHistoryEvent): Array<{ where: string; bytes: number }> {
  const out: Array<{ where: string; bytes: number }> = [];
  const walk = (o: unknown, path: string): void => {
    if (!o || typeof o !== 'object' || o instanceof Uint8Array) return;
    const p = o as { data?: unknown; metadata?: unknown };
    if (p.data instanceof Uint8Array && p.metadata && typeof p.metadata === 'object') {
      out.push({ where: path, bytes: p.data.length });
      return;
    }
    for (const [k, v] of Object.entries(o)) walk(v, `${path}.${k}`);
  };
  walk(ev, String(ev.eventType));
  return out;
}

describe('payload limit (real stack)', { timeout: 15 * 60_000 }, () => {
  let cfg: FloeConfig;
  let table: string;
  let topic: string;
  let configPath: string;
  let worker: WorkerProcess | undefined;

  // A worker process of its own, as in production (an in-process worker would keep this process
  // alive for minutes after the test: the commit's best-effort Kafka offset mirror leaves a
  // consumer-group client connected).
  after(async () => {
    await worker?.kill('SIGTERM');
  });

  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3']);
    const c = scenarioConfig(`it_payload_${Date.now().toString(36)}`, 2, '30s', {
      partitionBy: [
        { column: 'order_id', transform: `bucket[${BUCKETS}]` },
        { column: 'currency', transform: 'identity' },
      ],
      parallelism: 2,
    });
    cfg = loadConfig(c.path);
    ({ table, topic, path: configPath } = c);
    const kafka = new Kafka({ clientId: 'test', brokers: cfg.kafka.brokers, logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await createTopicsReady(admin, [{ topic, numPartitions: 2 }]);
    await admin.disconnect();
    // Every (bucket, currency) partition gets PER_PARTITION rows; currencies alternate between the
    // two Kafka partitions, so each of the two partition groups writes 2,560 files.
    const ids = orderIdsByBucket();
    const messages: Array<{ key: string; value: string; partition: number }> = [];
    let n = 0;
    for (const [ci, currency] of CURRENCIES.entries()) {
      for (const bucketIds of ids) {
        for (const orderId of bucketIds) {
          messages.push({
            key: `${orderId}-${currency}`,
            partition: ci % 2,
            value: JSON.stringify({
              event_id: `evt-${n}`,
              order_id: Number(orderId),
              event_type: 'placed',
              event_time: new Date(Date.UTC(2026, 6, 1) + n).toISOString(),
              customer_id: n,
              amount: (n % 1000) / 4,
              currency,
            }),
          });
          n++;
        }
      }
    }
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    for (let i = 0; i < messages.length; i += 2000) await producer.send({ topic, messages: messages.slice(i, i + 2000) });
    await producer.disconnect();
  });

  it(`one cycle writing ${FILES} files commits through the ingest workflow, and no history payload nears the limit`, async (t) => {
    const fc = await connectClient(cfg);
    const tc = findTable(cfg, table);
    const workflowId = ingestWorkflowId(tc.table, tc.ingestId);
    let cycleMs = 0;
    try {
      worker = spawnWorker(configPath, join(floeHome(), 'logs', `${table.replace(/\W/g, '_')}-worker.log`));
      const started = Date.now();
      // Started with the drain signal already delivered: the first cycle polls until caught up
      // with the topic (one cycle reads it all), the second finds nothing and ends the run.
      await fc.client.workflow.signalWithStart(ingestWorkflow, {
        taskQueue: cfg.temporal.taskQueue,
        workflowId,
        args: [{ table: tc.table, ingestId: tc.ingestId }],
        signal: drainAndStopSignal,
        signalArgs: [],
      });
      const status = await waitForIngest(fc, table);
      cycleMs = Date.now() - started;
      assert.equal(status.state, 'stopped');
      assert.equal(status.commits, 1, 'one commit for the whole topic');
      assert.equal(status.totalRows, MESSAGES);

      const tables = await openTables(cfg);
      const leftStaged: string[] = [];
      let files;
      try {
        const loaded = await tables.load(table);
        const snap = currentSnapshot(loaded.metadata)!;
        assert.equal(snap.summary['added-data-files'], String(FILES));
        assert.equal(snap.summary['added-records'], String(MESSAGES));
        files = await planFiles(loaded.metadata, tables.io);
        assert.equal(files.length, FILES);
        // rows == messages, read back from the files themselves (floe's Parquet reader)
        const ids = new Set<string>();
        await mapConcurrent(files, 16, async (f) => {
          for await (const b of readParquetBatches(tables.io, f.filePath, { columns: ['event_id'] }))
            for (const v of b.getChild('event_id')!) ids.add(v as string);
        });
        assert.equal(ids.size, MESSAGES);
        // and by an independent engine
        const duck = await duckdbCounts(loaded.metadataLocation);
        assert.deepEqual(duck, { rows: MESSAGES, distinctEventIds: MESSAGES });
        // Staged lists the commit used are deleted once it landed; a list of a poll attempt that was
        // retried (a heartbeat timeout on a loaded machine) never reached history and is an orphan.
        for await (const f of tables.io.list(`${loaded.metadata.location}/${STAGED_DIR}/`)) leftStaged.push(f.location);
      } finally {
        await tables.close();
      }

      // History: every payload small; the file lists travelled as references.
      const history = await fc.client.workflow.getHandle(workflowId).fetchHistory();
      const carried = payloadTexts(history.events ?? []).join('\n');
      for (const l of leftStaged)
        assert.ok(!carried.includes(l), `staged list ${l} was carried by the workflow, yet not deleted after the commit`);
      const payloads = (history.events ?? []).flatMap(payloadSizes).sort((a, b) => b.bytes - a.bytes);
      const total = payloads.reduce((a, p) => a + p.bytes, 0);
      const largest = payloads[0]!;
      const inlineBytesPerFile = Buffer.byteLength(JSON.stringify(files.map(dataFileToWire))) / FILES;
      const polls = activitySeconds(history.events ?? [], 'pollAndWrite')
        .map((x) => x.toFixed(1))
        .join(' s, ');
      const commits = activitySeconds(history.events ?? [], 'commit')
        .map((x) => x.toFixed(1))
        .join(' s, ');
      t.diagnostic(
        `${FILES} files, ${MESSAGES} rows: start to drained ${(cycleMs / 1000).toFixed(1)} s (pollAndWrite ${polls} s; commit ${commits} s); history payloads ${total} bytes in all (${(total / FILES).toFixed(2)} bytes per file), largest ${largest.bytes} bytes (${largest.where}); inline wire form ${inlineBytesPerFile.toFixed(0)} bytes per file (${((inlineBytesPerFile * FILES) / MiB).toFixed(1)} MiB per list, twice per cycle)`,
      );
      assert.ok(largest.bytes < 1 * MiB, `largest payload ${largest.bytes} bytes at ${largest.where}`);
      assert.ok(largest.bytes < 64 * 1024, `file lists travel as references: largest payload ${largest.bytes} bytes at ${largest.where}`);
      assert.ok(inlineBytesPerFile * FILES > 2 * MiB, 'inline, this cycle would have exceeded the 2 MB payload limit');
    } finally {
      await fc.close();
    }
  });
});

/** Every payload's data as text (history payloads are JSON-encoded bytes). */
function payloadTexts(node: unknown, out: string[] = []): string[] {
  if (node instanceof Uint8Array) {
    out.push(Buffer.from(node).toString('utf8'));
    return out;
  }
  if (Array.isArray(node)) {
    for (const x of node) payloadTexts(x, out);
    return out;
  }
  if (node !== null && typeof node === 'object') for (const v of Object.values(node)) payloadTexts(v, out);
  return out;
}
