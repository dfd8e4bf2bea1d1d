/**
 * Freshness across a worker SIGKILL: a live stream (steady rate, 2 partitions, commit interval
 * 5 s) into one worker process that is SIGKILLed every ~25 s at a random moment of its cycle and
 * restarted at once (as a supervisor would). Per kill: seconds from the kill to the first commit
 * after it (rows visible again), from the table's snapshot timestamps. The goal is 15 s.
 * Exactly-once is checked at the end: rows == messages, 0 duplicates.
 *
 * Usage: npx tsx bench/kill-recovery.ts [--kills 5] [--rate 100]
 */
import { Kafka, logLevel } from 'kafkajs';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify as stringifyYaml } from 'yaml';
import { ensureStack } from '../stack/stack';
import { floeHome } from '../stack/paths';
import { loadConfig } from '../config';
import { connectClient, signalIngest, startIngest, waitForIngest } from '../client';
import { openTables } from '../table/tables';
import { readColumnValues } from '../client/tables';
import { spawnWorker, type WorkerProcess } from '../workers/process';
import { benchArgs, numberArg } from './support/args';
import { createTopicsReady } from '../demo/topics';

const args = benchArgs('npx tsx bench/kill-recovery.ts [--kills 5] [--rate 100]', {
  kills: { type: 'string' },
  rate: { type: 'string' },
});
const KILLS = numberArg(args.kills, 5);
const RATE = numberArg(args.rate, 100);

async function main() {
  await ensureStack(['temporal', 'kafka', 's3']);
  const name = `bench_kill_${Date.now().toString(36)}`;
  const dir = join(floeHome(), 'runs');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.yaml`);
  writeFileSync(
    path,
    stringifyYaml({
      temporal: { taskQueue: `floe-${name}` },
      tables: [
        {
          table: `bench.${name}`,
          topic: name,
          commitInterval: '5s',
          parallelism: 2,
          columns: [
            { name: 'id', type: 'long', required: true },
            { name: 'kafka_partition', type: 'int', source: 'partition', required: true },
            { name: 'kafka_offset', type: 'long', source: 'offset', required: true },
          ],
        },
      ],
    }),
  );
  const cfg = loadConfig(path);
  const table = cfg.tables[0]!.table;
  const kafka = new Kafka({ clientId: 'bench', brokers: cfg.kafka.brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await createTopicsReady(admin, [{ topic: name, numPartitions: 2 }]);
  await admin.disconnect();

  const logs = join(floeHome(), 'logs');
  let n = 0;
  let worker: WorkerProcess = spawnWorker(path, join(logs, `${name}-${n++}.log`));
  const fc = await connectClient(cfg);
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  let produced = 0;
  let producing = true;
  const produceLoop = (async () => {
    const t0 = Date.now();
    for (let tick = 0; producing; tick++) {
      const due = Math.round(((tick + 1) * 100 * RATE) / 1000);
      const messages = [];
      for (; produced < due; produced++) messages.push({ key: String(produced), value: JSON.stringify({ id: produced }) });
      if (messages.length) await producer.send({ topic: name, messages });
      await sleep(Math.max(0, t0 + (tick + 1) * 100 - Date.now()));
    }
  })();
  const kills: number[] = [];
  try {
    await startIngest(fc, table);
    await sleep(15_000);
    for (let k = 0; k < KILLS; k++) {
      await sleep(15_000 + Math.random() * 10_000);
      kills.push(Date.now());
      await worker.kill('SIGKILL');
      worker = spawnWorker(path, join(logs, `${name}-${n++}.log`));
    }
    await sleep(20_000);
    producing = false;
    await produceLoop;
    await signalIngest(fc, table, 'stop');
    await waitForIngest(fc, table);
  } finally {
    await producer.disconnect();
    await worker.kill('SIGTERM');
    await fc.close();
  }
  const tables = await openTables(cfg);
  try {
    const { metadata } = await tables.load(table);
    const commits = metadata.snapshots.map((s) => Number(s['timestamp-ms'])).sort((a, b) => a - b);
    const ids = await readColumnValues(tables, table, 'id');
    const distinct = new Set(ids.map(String)).size;
    console.log(
      `kill recovery: ${KILLS} SIGKILLs of the only worker (restarted at once), ${RATE} msg/s, 2 partitions, commit interval 5 s`,
    );
    const gaps = kills.map((k) => (commits.find((c) => c > k) ?? NaN) - k);
    console.log(
      `seconds from kill to the next commit: ${gaps.map((g) => (g / 1000).toFixed(1)).join(', ')}; max ${(Math.max(...gaps) / 1000).toFixed(1)} s (goal 15 s)`,
    );
    console.log(
      `exactly-once: ${ids.length} rows for ${produced} messages, ${distinct} distinct, duplicates ${ids.length - distinct}, lost ${produced - distinct}`,
    );
  } finally {
    await tables.close();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
