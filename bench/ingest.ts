/**
 * End-to-end ingest benchmark on this machine, one worker (in-process), real stack:
 *  1. throughput: N pre-produced ~1 KiB JSON events, commit interval 10 s, for 1 and 4 partitions;
 *     floe's records/s and MB/s beside a reference: a bare kafkajs consumer reading the same topic
 *     (the ceiling for a kafkajs-based sink), with the ratio.
 *  2. freshness: events produced at a steady rate while the ingest runs; per row, the time from
 *     produce (Kafka timestamp) to the commit of the snapshot that made it visible; p50/p99.
 * Usage: npx tsx bench/ingest.ts [--events 300000] [--fresh-seconds 60 (0: skip)] [--rate 200] [--fresh-interval 5]
 */
import { Kafka, logLevel } from 'kafkajs';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureStack } from '../stack/stack';
import { bareConsumeSeconds, benchEvent, produceBenchEvents, writeBenchConfig } from './support/events';
import { loadConfig, type FloeConfig } from '../config';
import { connectClient, startIngest, signalIngest, waitForIngest, ingestStatus } from '../client';
import { createWorker } from '../workers';
import { openTables } from '../ingest/tables';
import { parseOffsets } from '../ingest/cursor';
import { ancestors } from '../iceberg/spec/metadata';
import { readColumnValues } from '../client/tables';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const EVENTS = arg('events', 300_000);
const FRESH_S = arg('fresh-seconds', 60);
const RATE = arg('rate', 200);
/** Commit interval of the freshness run (the goal is stated at 5 s). */
const FRESH_INTERVAL_S = arg('fresh-interval', 5);

function config(name: string, partitions: number, commitInterval: string): FloeConfig {
  return loadConfig(
    writeBenchConfig(name, {
      commitInterval,
      parallelism: Math.min(4, partitions),
      // Cycles end at 100k records or the commit interval, whichever comes first: a backlog is
      // drained in record-bounded cycles, a live stream in time-bounded ones.
      maxRecordsPerCycle: 100_000,
      maxBytesPerCycle: 256 * 1024 * 1024,
    }),
  );
}

async function withWorker<T>(cfg: FloeConfig, fn: () => Promise<T>): Promise<T> {
  const { worker, close } = await createWorker(cfg);
  try {
    return await worker.runUntil(fn());
  } finally {
    await close();
  }
}

async function throughput(partitions: number) {
  const name = `bench_tp${partitions}_${Date.now().toString(36)}`;
  const cfg = config(name, partitions, '10s');
  const kafka = new Kafka({ clientId: 'bench', brokers: cfg.kafka.brokers, logLevel: logLevel.NOTHING });
  const bytes = await produceBenchEvents(kafka, name, partitions, EVENTS);
  const refS = await bareConsumeSeconds(kafka, name, EVENTS);
  const fc = await connectClient(cfg);
  const table = cfg.tables[0]!.table;
  // The table exists before the clock starts: creating it checks every table of the catalog for an
  // overlapping location (seconds on a catalog of thousands of tables), which is not ingest speed.
  const tables = await openTables(cfg);
  await tables.ensureIngestTables(cfg.tables[0]!).finally(() => tables.close());
  const floeS = await withWorker(cfg, async () => {
    const t0 = Date.now();
    await startIngest(fc, table);
    for (;;) {
      const s = await ingestStatus(fc, table).catch(() => null);
      if (s && s.totalRows >= EVENTS) break;
      await sleep(200);
    }
    const took = (Date.now() - t0) / 1000;
    await signalIngest(fc, table, 'stop');
    await waitForIngest(fc, table);
    return took;
  });
  await fc.close();
  const mb = bytes / 1e6;
  return { partitions, events: EVENTS, mb, floeS, refS };
}

async function freshness() {
  const name = `bench_fresh_${Date.now().toString(36)}`;
  const cfg = config(name, 4, `${FRESH_INTERVAL_S}s`);
  const kafka = new Kafka({ clientId: 'bench', brokers: cfg.kafka.brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: name, numPartitions: 4 }], waitForLeaders: true });
  await admin.disconnect();
  const fc = await connectClient(cfg);
  const table = cfg.tables[0]!.table;
  await withWorker(cfg, async () => {
    await startIngest(fc, table);
    await sleep(3000);
    const p = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await p.connect();
    const t0 = Date.now();
    for (let i = 0, tick = 0; i < RATE * FRESH_S; tick++) {
      const due = Math.min(RATE * FRESH_S, Math.round(((tick + 1) * 100 * RATE) / 1000));
      const messages = [];
      for (; i < due; i++) messages.push({ key: String(i), value: benchEvent(i) });
      await p.send({ topic: name, messages });
      await sleep(Math.max(0, t0 + (tick + 1) * 100 - Date.now()));
    }
    await p.disconnect();
    await signalIngest(fc, table, 'stop');
    await waitForIngest(fc, table);
  });
  await fc.close();
  // Visibility time of offset o in partition p: the first snapshot whose cursor passed it.
  const tables = await openTables(cfg);
  const { metadata } = await tables.load(table);
  const commits = [...ancestors(metadata)]
    .reverse()
    .filter((s) => s.summary['floe.offsets'])
    .map((s) => ({ at: Number(s['timestamp-ms']), offsets: parseOffsets(s.summary['floe.offsets']) }));
  const parts = await readColumnValues(tables, table, 'kafka_partition');
  const offs = await readColumnValues(tables, table, 'kafka_offset');
  const produced = await readColumnValues(tables, table, 'produced_at');
  await tables.close();
  const lat: number[] = [];
  for (let i = 0; i < parts.length; i++) {
    const p = String(parts[i]),
      o = BigInt(offs[i] as bigint);
    const c = commits.find((x) => BigInt(x.offsets[p] ?? '0') > o)!;
    lat.push(c.at - Number(produced[i]));
  }
  lat.sort((a, b) => a - b);
  const q = (x: number) => lat[Math.min(lat.length - 1, Math.floor(x * lat.length))]!;
  return { rows: lat.length, p50: q(0.5), p99: q(0.99), max: lat.at(-1)! };
}

async function main() {
  await ensureStack(['temporal', 'kafka', 's3']);
  console.log(`floe ingest benchmark: ${EVENTS} events of ~1 KiB JSON, commit interval 10 s, one worker, ${new Date().toISOString()}`);
  console.log('partitions  events   MB      floe s  floe rec/s  floe MB/s  | kafkajs-only s  rec/s    | floe/ref');
  for (const partitions of [1, 4]) {
    const r = await throughput(partitions);
    const f = r.events / r.floeS,
      ref = r.events / r.refS;
    console.log(
      `${String(r.partitions).padEnd(11)} ${String(r.events).padEnd(8)} ${r.mb.toFixed(1).padEnd(7)} ${r.floeS.toFixed(1).padEnd(7)} ${f.toFixed(0).padEnd(11)} ${(r.mb / r.floeS).toFixed(2).padEnd(10)} | ${r.refS.toFixed(1).padEnd(15)} ${ref.toFixed(0).padEnd(8)} | ${(f / ref).toFixed(2)}`,
    );
  }
  if (FRESH_S <= 0) return;
  const fr = await freshness();
  console.log(
    `freshness (${RATE} events/s for ${FRESH_S} s, 4 partitions, commit interval ${FRESH_INTERVAL_S} s): produce -> visible p50 ${(fr.p50 / 1000).toFixed(2)} s, p99 ${(fr.p99 / 1000).toFixed(2)} s, max ${(fr.max / 1000).toFixed(2)} s over ${fr.rows} rows`,
  );
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
