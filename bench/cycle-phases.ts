/**
 * Where an ingest cycle's time goes, phase by phase, on the real stack but without Temporal (the
 * domain steps are called directly): plan (load table + cursor + watermarks), the Kafka poll
 * (consumer start and group join, first record, all records), decoding, the Parquet write and
 * upload, and the commit (files-exist check, manifests, metadata, catalog CAS). A bare kafkajs
 * read of the same records runs in the same process as the reference.
 *
 * By default the poll runs as the worker runs it (ingest/poll-write.ts: rows are encoded on the
 * encoder threads while the poll reads on), timed as one "poll+write" phase; `--split` reads
 * everything, then decodes, then writes, each timed alone (where the time would go unpipelined).
 * FLOE_PARQUET_THREADS=0 encodes on the reading thread.
 *
 * Usage: npx tsx bench/cycle-phases.ts [--events 100000] [--partitions 1] [--cycles 3] [--fresh] [--split]
 */
import { Kafka, logLevel } from 'kafkajs';
import { ensureStack } from '../stack/stack';
import { bareConsumeSeconds, produceBenchEvents, writeBenchConfig } from './support/events';
import { loadConfig, type FloeConfig } from '../config';
import { DETACHED_RUN } from '../contract';
import { createDeps } from '../ingest/deps';
import { planCycle } from '../ingest/plan-cycle';
import { pollPartitions } from '../ingest/kafka';
import { decodeRecord, type Row } from '../ingest/decode';
import { pollAndWrite } from '../ingest/poll-write';
import type { FileListEntry } from '../ingest/types';
import { commitCycle } from '../ingest/commit-cycle';
import { dataFileToWire } from '../iceberg';
import { ensureIngestTables } from '../ingest/tables';
import { benchArgs, numberArg } from './support/args';

const args = benchArgs(
  'npx tsx bench/cycle-phases.ts [--events 100000] [--partitions 1] [--cycles 3] [--fresh] [--split] [--codec lz4|snappy|zstd|uncompressed]',
  {
    events: { type: 'string' },
    partitions: { type: 'string' },
    cycles: { type: 'string' },
    fresh: { type: 'boolean', default: false },
    split: { type: 'boolean', default: false },
    codec: { type: 'string' },
  },
);
/** `--codec lz4|snappy|zstd|uncompressed`: the table's write.parquet.compression-codec (default: Iceberg's zstd). */
const CODEC = args.codec;
const EVENTS = numberArg(args.events, 100_000);
const PARTITIONS = numberArg(args.partitions, 1);
const CYCLES = numberArg(args.cycles, 3);
/** Poll with a fresh consumer (and group join) per cycle instead of the worker's kept consumer. */
const FRESH = args.fresh;
const SPLIT = args.split;

function config(name: string): FloeConfig {
  return loadConfig(
    writeBenchConfig(name, {
      commitInterval: '10s',
      parallelism: 1,
      maxRecordsPerCycle: Math.ceil(EVENTS / CYCLES),
      maxBytesPerCycle: 256 * 1024 * 1024,
      ...(CODEC ? { properties: { 'write.parquet.compression-codec': CODEC } } : {}),
    }),
  );
}

const now = () => performance.now();

async function main() {
  await ensureStack(['kafka', 's3']);
  const name = `bench_phases_${Date.now().toString(36)}`;
  const cfg = config(name);
  const t = cfg.tables[0]!;
  const kafka = new Kafka({ clientId: 'bench', brokers: cfg.kafka.brokers, logLevel: logLevel.NOTHING });
  await produceBenchEvents(kafka, name, PARTITIONS, EVENTS);
  const deps = await createDeps(cfg);
  // created before the clock starts (the overlap check over the catalog's tables is not ingest speed)
  await ensureIngestTables(deps.tables, t, deps.cfg.schemaRegistry);
  const partitions = Array.from({ length: PARTITIONS }, (_, i) => i);
  console.log(
    `cycle phases: ${EVENTS} events of ~1 KiB JSON, ${PARTITIONS} partition(s), ${CYCLES} cycles of ${t.maxRecordsPerCycle} records, ${SPLIT ? `read, decode, write one after another (${FRESH ? 'a fresh consumer per cycle' : 'kept consumer'})` : "the worker's poll step (encoding while reading)"}, encoder threads ${deps.encoders?.size ?? 0}, ${new Date().toISOString()}`,
  );
  console.log(
    `cycle  records  plan ms  poll: join+first ms  read ms  decode ms  ${SPLIT ? 'write ms' : 'poll+decode+write ms'}  commit ms  total ms  rec/s`,
  );
  let total = 0,
    totalMs = 0;
  try {
    for (let c = 0; c < CYCLES; c++) {
      const t0 = now();
      const plan = await planCycle(deps, { table: t.table, ingestId: 'main' }, DETACHED_RUN);
      const t1 = now();
      let first = 0,
        t2: number,
        t3: number,
        files: FileListEntry[],
        count: number,
        endOffsets: Record<string, string>;
      if (SPLIT) {
        const records: Parameters<typeof decodeRecord>[1][] = [];
        const outcome = await (FRESH ? pollPartitions.bind(null, deps.kafka) : deps.consumers.poll.bind(deps.consumers, t.table))(
          t.topic,
          partitions,
          plan.startOffsets,
          {
            maxWaitMs: 10_000,
            maxRecords: t.maxRecordsPerCycle,
            maxBytes: t.maxBytesPerCycle,
            stopAt: plan.highWatermarks,
          },
          (r) => {
            if (records.length === 0) first = now();
            records.push(r);
          },
        );
        t2 = now();
        const rows: Row[] = records.map((r) => decodeRecord(t, r));
        t3 = now();
        files = (await deps.tables.writeDataFiles(t.table, rows, `bench-${c}`, t.targetFileSizeBytes)).map(dataFileToWire);
        count = rows.length;
        endOffsets = outcome.next;
      } else {
        const r = await pollAndWrite(
          deps,
          {
            table: t.table,
            ingestId: 'main',
            commitId: `bench-${name}-${c}`,
            groupIndex: 0,
            partitions,
            startOffsets: plan.startOffsets,
            maxWaitMs: 10_000,
            maxRecords: t.maxRecordsPerCycle,
            maxBytes: t.maxBytesPerCycle,
            stopAt: plan.highWatermarks,
          },
          DETACHED_RUN,
        );
        t2 = t3 = now();
        files = r.files;
        count = r.records;
        endOffsets = r.endOffsets;
      }
      const t4 = now();
      await commitCycle(deps, {
        table: t.table,
        ingestId: 'main',
        commitId: `bench-${name}-${c}`,
        baseSnapshotId: plan.baseSnapshotId,
        deadLetterFloor: plan.deadLetterFloor,
        deadLetterBaseCommitId: plan.deadLetterBaseCommitId,
        startOffsets: plan.startOffsets,
        endOffsets,
        files,
        deadLetterFiles: [],
        records: count,
        deadLetters: 0,
      });
      const t5 = now();
      total += count;
      totalMs += t5 - t0;
      const f = (x: number) => x.toFixed(0).padStart(8);
      console.log(
        `${String(c).padEnd(6)} ${String(count).padEnd(8)} ${f(t1 - t0)} ${(SPLIT ? f((first || t2) - t1) : '-').padStart(20)} ${(SPLIT ? f(t2 - (first || t2)) : '-').padStart(8)} ${(SPLIT ? f(t3 - t2) : '-').padStart(10)} ${f(t4 - (SPLIT ? t3 : t1)).padStart(9)} ${f(t5 - t4).padStart(10)} ${f(t5 - t0).padStart(9)} ${(count / ((t5 - t0) / 1000)).toFixed(0).padStart(6)}`,
      );
    }
    // Reference: a bare kafkajs consumer reading the same records (its group join included).
    const refMs = (await bareConsumeSeconds(kafka, name, EVENTS)) * 1000;
    const floe = total / (totalMs / 1000),
      ref = EVENTS / (refMs / 1000);
    console.log(`floe cycles: ${floe.toFixed(0)} rec/s; bare kafkajs consumer: ${ref.toFixed(0)} rec/s; ratio ${(floe / ref).toFixed(2)}`);
  } finally {
    await deps.close();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
