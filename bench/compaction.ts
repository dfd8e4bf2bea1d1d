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
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { ensureStack } from '../stack/stack';
import { floeHome } from '../stack/paths';
import { runPythonJson } from '../stack/python';
import { loadConfig, findTable, type FloeConfig } from '../config';
import { openTables } from '../table/tables';
import { mapConcurrent, fastAppend, type DataFile } from '../iceberg';
import { liveDataFiles, toLiveFiles } from '../maintenance/index';
import { connectClient } from '../client';
import { compactTable } from '../client/maintenance';
import { spawnWorker, WORKER_V8_FLAGS } from '../workers/process';
import { orderEvents } from '../demo/generator';
import type { Row } from '../ingest/decode';
import { s3Options } from '../table/storage';
import { attachValue, benchArgs, numberArg } from './support/args';
import { ensureIngestTables } from '../ingest/tables';

const args = benchArgs(
  'npx tsx bench/compaction.ts [--files 10000] [--rows-per-file 100] [--no-reference] [--source] [--node-args "<V8 flags>"]',
  {
    files: { type: 'string' },
    'rows-per-file': { type: 'string' },
    'no-reference': { type: 'boolean', default: false },
    source: { type: 'boolean', default: false },
    'node-args': { type: 'string' },
  },
  attachValue(process.argv.slice(2), 'node-args'),
);
const FILES = numberArg(args.files ?? process.env.FLOE_BENCH_FILES, 10_000);
const ROWS = numberArg(args['rows-per-file'] ?? process.env.FLOE_BENCH_ROWS_PER_FILE, 100);
/** `--no-reference`: floe only (quicker iterations on floe's side). */
const SKIP_REFERENCE = args['no-reference'];
/** `--source`: the worker runs the TypeScript sources through tsx instead of the compiled build (dist/, as in production). */
const FROM_SOURCE = args.source;
/** `--node-args "--max-semi-space-size=4"`: the worker's V8 flags (default WORKER_V8_FLAGS; `--node-args ""` for V8's defaults). */
const NODE_ARGS = args['node-args'] === undefined ? WORKER_V8_FLAGS : args['node-args'].split(/\s+/).filter(Boolean);

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
    await ensureIngestTables(tables, t, cfg.schemaRegistry);
    // Each call writes one file per partition (placed, paid) from ROWS events, so a file holds
    // ~ROWS/2 rows (the line printed says how many); kept so figures stay comparable across runs.
    const calls = Math.ceil(FILES / 2);
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

// Imports only what the rewrite needs (pyarrow; S3 settings come as an argument, not from
// floe_duckdb, which would load DuckDB too: +34 MB of RSS that is no part of the rewrite).
const REFERENCE = String.raw`
import json, sys, time, resource
import pyarrow as pa, pyarrow.parquet as pq, pyarrow.fs as pafs
def rss():
    return int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) * 1024
s = json.loads(sys.argv[2])
fs = pafs.S3FileSystem(access_key=s["key"], secret_key=s["secret"], endpoint_override=s["endpoint"].split("://", 1)[1], region=s["region"], scheme=s["endpoint"].split("://", 1)[0])
groups = json.load(open(sys.argv[1]))
strip = lambda p: p.split("://", 1)[1]
baseline = rss()
t0 = time.time()
rows = 0
for g in groups:
    tables = [pq.read_table(strip(f), filesystem=fs) for f in g["files"]]
    t = pa.concat_tables(tables, promote_options="default")
    rows += t.num_rows
    pq.write_table(t, strip(g["out"]), filesystem=fs, compression="zstd")
dt = time.time() - t0
print(json.dumps({"seconds": dt, "rows": rows, "baselineRssBytes": baseline, "peakRssBytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
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
  const o = s3Options(cfg.s3);
  const s3 = { endpoint: o.endpoint, region: o.region, key: o.accessKeyId, secret: o.secretAccessKey };
  const ref = SKIP_REFERENCE
    ? { seconds: NaN, rows: 0, baselineRssBytes: NaN, peakRssBytes: NaN }
    : await runPythonJson<{ seconds: number; rows: number; baselineRssBytes: number; peakRssBytes: number }>(
        REFERENCE,
        [groupsFile, JSON.stringify(s3)],
        { timeoutMs: 60 * 60_000 },
      );

  if (!FROM_SOURCE && !existsSync(resolve(__dirname, '../dist/cli/main.js'))) {
    throw new Error('bench/compaction.ts runs the compiled worker: npm run build first (or pass --source)');
  }
  const worker = spawnWorker(path, join(floeHome(), 'logs', `${name}-worker.log`), {}, { compiled: !FROM_SOURCE, nodeArgs: NODE_ARGS });
  const fc = await connectClient(cfg);
  try {
    await sleep(15_000); // worker start-up (workflow bundle) is not part of the measurement
    // The peak is the compaction's: the start-up high-water mark (bundling the workflows) is
    // printed, then reset (Linux: "5" > clear_refs sets VmHWM to the current RSS). An RSS sampler
    // every 20 ms cross-checks it (and stands in where clear_refs is not allowed).
    const startupPeak = vm(worker.pid, 'VmHWM');
    let reset = true;
    try {
      writeFileSync(`/proc/${worker.pid}/clear_refs`, '5');
    } catch {
      reset = false;
    }
    const baseline = vm(worker.pid, 'VmRSS');
    const t0 = Date.now();
    let sampled = { rss: 0, at: 0 };
    const sampler = setInterval(() => {
      const rss = vm(worker.pid, 'VmRSS');
      if (rss > sampled.rss) sampled = { rss, at: Date.now() - t0 };
    }, 20);
    const r = await compactTable(fc, table, { minInputFiles: 2 }).finally(() => clearInterval(sampler));
    const peak = reset ? vm(worker.pid, 'VmHWM') : sampled.rss;
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
      ['peak RSS MB', (peak / 1048576).toFixed(0), (ref.peakRssBytes / 1048576).toFixed(0), (peak / ref.peakRssBytes).toFixed(2)],
      ['RSS before the rewrite MB', (baseline / 1048576).toFixed(0), (ref.baselineRssBytes / 1048576).toFixed(0), ''],
      [
        'peak - before MB',
        ((peak - baseline) / 1048576).toFixed(0),
        ((ref.peakRssBytes - ref.baselineRssBytes) / 1048576).toFixed(0),
        ((peak - baseline) / (ref.peakRssBytes - ref.baselineRssBytes)).toFixed(2),
      ],
    ];
    const w = rows[0]!.map((_, i) => Math.max(...rows.map((x) => x[i]!.length)));
    const records = live.reduce((a, f) => a + f.records, 0);
    console.log(
      `compaction of ${live.length} files (${(records / live.length).toFixed(0)} rows each on average, ${byPart.size} partitions), ${MB.toFixed(1)} MB`,
    );
    for (const row of rows) console.log(row.map((c, i) => (i === 0 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  '));
    console.log(
      `floe's peak is the worker process's VmHWM during the compaction (${reset ? 'reset after start-up' : 'sampled every 20 ms'}; start-up peak ${(startupPeak / 1048576).toFixed(0)} MB; 20 ms samples max ${(sampled.rss / 1048576).toFixed(0)} MB at ${(sampled.at / 1000).toFixed(1)} s), including the Temporal runtime and workflow bundle (worker: ${FROM_SOURCE ? 'sources through tsx' : 'compiled dist/'}${NODE_ARGS.length ? ` ${NODE_ARGS.join(' ')}` : ''}); pyarrow's is its process's ru_maxrss, including the interpreter and pyarrow`,
    );
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
