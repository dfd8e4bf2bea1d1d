/**
 * Compaction throughput: floe's compaction (through Temporal, in a real worker process) vs a
 * pyarrow reference rewrite of the same files (read every file of a partition, concatenate, write
 * one zstd Parquet file per partition, on the same S3) — printed side by side with the ratio,
 * plus the peak memory (RSS high-water mark) of the worker that ran the rewrite activities.
 *
 *   npx tsx bench/compaction.ts [--files 10000] [--rows-per-file 100]
 *   FLOE_BENCH_FILES=500 npx tsx bench/compaction.ts        # a quick run
 *
 * Needs the local stack (`floe stack up`): Temporal, SeaweedFS S3, the Python venv (pyarrow).
 * floe's time is the workflow's own duration (plan + rewrite + commit), not worker start-up.
 * The reference does strictly less work: no Iceberg metrics, no manifests, no commit.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { ensureStack } from '../stack/stack';
import { floeHome } from '../stack/paths';
import { runPythonJson } from '../stack/python';
import { loadConfig, findTable, type FloeConfig } from '../config';
import { openTables } from '../ingest/tables';
import { mapConcurrent } from '../iceberg/scan/parallel';
import { liveDataFiles, toLiveFiles } from '../maintenance/index';
import { fastAppend } from '../iceberg/transaction';
import { connectClient } from '../client';
import { compactTable } from '../client/maintenance';
import { spawnWorker } from '../workers/process';
import { orderEvents } from '../demo/generator';
import type { Row } from '../ingest/decode';
import type { DataFile } from '../iceberg/spec/types';

const arg = (name: string, env: string, def: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? process.argv[i + 1] : process.env[env];
  return v === undefined ? def : Number(v);
};
const FILES = arg('files', 'FLOE_BENCH_FILES', 10_000);
const ROWS = arg('rows-per-file', 'FLOE_BENCH_ROWS_PER_FILE', 100);

function benchConfig(name: string): { path: string; table: string; cfg: FloeConfig } {
  const base = parseYaml(readFileSync(resolve(__dirname, '../examples/orders.yaml'), 'utf8')) as any;
  const table = `bench.${name}`;
  Object.assign(base.tables[0], { table, topic: name });
  base.temporal = { ...(base.temporal ?? {}), taskQueue: `floe-${name}` };
  const dir = join(floeHome(), 'runs');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.yaml`);
  writeFileSync(path, stringifyYaml(base));
  return { path, table, cfg: loadConfig(path) };
}

/** Rows of events [from, from+count): both event types, so one file per partition per call. */
function rowsAt(all: Row[], from: number, count: number): Row[] {
  return all.slice(from, from + count);
}

async function seed(cfg: FloeConfig, table: string): Promise<{ files: number; bytes: number }> {
  const t = findTable(cfg, table);
  const tables = await openTables(cfg);
  try {
    await tables.ensureIngestTables(t);
    const calls = Math.ceil(FILES / 2); // each call writes one file per partition (placed, paid)
    const all: Row[] = [];
    let n = 0;
    for (const e of orderEvents()) {
      if (n >= calls * ROWS) break;
      all.push({
        event_id: e.event_id,
        order_id: BigInt(e.order_id),
        event_type: e.event_type,
        event_time: BigInt(Date.parse(e.event_time)) * 1000n,
        customer_id: BigInt(e.customer_id),
        amount: e.amount,
        currency: e.currency,
        kafka_partition: 0,
        kafka_offset: BigInt(n++),
      });
    }
    const started = Date.now();
    const written = (
      await mapConcurrent(
        Array.from({ length: calls }, (_, i) => i),
        8,
        async (i) => {
          if (i % 500 === 0) process.stderr.write(`seeding: ${i * 2}/${FILES} files\n`);
          return tables.writeDataFiles(t.table, rowsAt(all, i * ROWS, ROWS), `seed-${i}`, t.targetFileSizeBytes);
        },
      )
    ).flat();
    const loaded = await tables.load(t.table);
    await fastAppend(tables.catalog, tables.io, loaded, written as DataFile[], { 'floe.commit-id': 'bench-seed' });
    process.stderr.write(`seeded ${written.length} files in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
    return { files: written.length, bytes: written.reduce((a, f) => a + f.fileSizeInBytes, 0) };
  } finally {
    await tables.close();
  }
}

const REFERENCE = String.raw`
import json, sys, time, resource
import pyarrow as pa, pyarrow.parquet as pq, pyarrow.fs as pafs
from floe_duckdb import s3_settings
s = s3_settings()
fs = pafs.S3FileSystem(access_key=s["key_id"], secret_key=s["secret"], endpoint_override=s["endpoint"], region=s["region"], scheme="https" if s["use_ssl"] else "http")
groups = json.load(open(sys.argv[1]))
strip = lambda p: p.split("://", 1)[1]
t0 = time.time()
rows = 0
for g in groups:
    tables = [pq.read_table(strip(f), filesystem=fs) for f in g["files"]]
    t = pa.concat_tables(tables, promote_options="default")
    rows += t.num_rows
    pq.write_table(t, strip(g["out"]), filesystem=fs, compression="zstd")
dt = time.time() - t0
print(json.dumps({"seconds": dt, "rows": rows, "peakRssBytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
`;

function vm(pid: number, key: 'VmHWM' | 'VmRSS'): number {
  const m = new RegExp(`${key}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : NaN;
}

async function main(): Promise<void> {
  await ensureStack(['temporal', 's3']);
  const name = `compact_${Date.now().toString(36)}`;
  const { path, table, cfg } = benchConfig(name);
  const seeded = await seed(cfg, table);
  const MB = seeded.bytes / 1024 / 1024;

  // Reference: the same files, grouped by partition like floe's plan.
  const tables = await openTables(cfg);
  const { metadata } = await tables.load(table);
  const live = toLiveFiles(
    metadata,
    (await liveDataFiles(tables.io, metadata)).map((f) => f.dataFile),
  );
  await tables.close();
  const byPart = new Map<string, string[]>();
  for (const f of live) byPart.set(f.partitionPath, [...(byPart.get(f.partitionPath) ?? []), `${metadata.location}/${f.path}`]);
  const groupsFile = join(floeHome(), 'runs', `${name}-groups.json`);
  writeFileSync(
    groupsFile,
    JSON.stringify([...byPart].map(([p, files], i) => ({ files, out: `${metadata.location}/reference/${p}/ref-${i}.parquet` }))),
  );
  const ref = await runPythonJson<{ seconds: number; rows: number; peakRssBytes: number }>(REFERENCE, [groupsFile], {
    timeoutMs: 60 * 60_000,
  });

  const worker = spawnWorker(path, join(floeHome(), 'logs', `${name}-worker.log`));
  const fc = await connectClient(cfg);
  try {
    await sleep(15_000); // worker start-up (workflow bundle) is not part of the measurement
    const baseline = vm(worker.pid, 'VmRSS');
    const r = await compactTable(fc, table, { minInputFiles: 2 });
    const peak = vm(worker.pid, 'VmHWM');
    const s = r.durationMs / 1000;
    const rows = [
      ['', 'floe (Temporal)', 'pyarrow reference', 'floe / reference'],
      ['input files', String(r.rewritten_data_files_count), String(live.length), ''],
      ['input MB', (r.rewritten_bytes_count / 1048576).toFixed(1), MB.toFixed(1), ''],
      ['output files', String(r.added_data_files_count), String(byPart.size), ''],
      ['seconds', s.toFixed(1), ref.seconds.toFixed(1), ''],
      [
        'MB/s',
        (r.rewritten_bytes_count / 1048576 / s).toFixed(2),
        (MB / ref.seconds).toFixed(2),
        (r.rewritten_bytes_count / 1048576 / s / (MB / ref.seconds)).toFixed(2),
      ],
      [
        'files/s',
        (r.rewritten_data_files_count / s).toFixed(0),
        (live.length / ref.seconds).toFixed(0),
        (r.rewritten_data_files_count / s / (live.length / ref.seconds)).toFixed(2),
      ],
      ['peak RSS MB', (peak / 1048576).toFixed(0), (ref.peakRssBytes / 1048576).toFixed(0), ''],
    ];
    const w = rows[0]!.map((_, i) => Math.max(...rows.map((x) => x[i]!.length)));
    console.log(`compaction of ${live.length} files (${ROWS} rows each, ${byPart.size} partitions), ${MB.toFixed(1)} MB`);
    for (const row of rows) console.log(row.map((c, i) => (i === 0 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  '));
    console.log(`worker RSS before the run ${(baseline / 1048576).toFixed(0)} MB (peak includes the workflow bundle and Temporal runtime)`);
    if (r.failed_data_file_groups.length) console.log(`failed groups: ${JSON.stringify(r.failed_data_file_groups)}`);
  } finally {
    await fc.close();
    await worker.kill('SIGTERM');
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
