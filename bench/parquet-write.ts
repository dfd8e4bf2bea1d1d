/**
 * Parquet write throughput: floe's writer (JS -> Arrow -> Parquet, with Iceberg metrics; this flat
 * schema takes the flat encoder, flat-encoder.ts, nested ones parquet-wasm)
 * vs pyarrow `pq.write_table` on the same 1M-row x 8-column event batch, both ZSTD: on one thread,
 * and as the worker writes (Arrow built on the reading thread beside one encoder thread). The
 * one-thread lines call `writeParquetFile` with the columns (or row objects): it builds Arrow 16Ki
 * rows at a time and encodes each chunk before building the next. Both sides get one uncounted
 * warm-up run.
 *
 *   npx tsx bench/parquet-write.ts [--rows 1000000] [--runs 3]
 *
 * The data is generated deterministically here and handed to Python as an Arrow IPC file, so
 * both sides encode identical bytes. Python: $FLOE_PYTHON, else $FLOE_HOME/venv/bin/python
 * (FLOE_HOME defaults to ~/.cache/floe); it needs pyarrow. pyarrow runs in a Python process that
 * stays up for the whole benchmark, and each floe run is followed by a pyarrow run: on a shared
 * machine whose speed drifts from second to second, both sides are timed under the same load.
 *
 * Besides the headline ratio (same run, same codec) it prints where floe's time goes (CPU ms per
 * step of `encodeParquet`, run step by step) and both writers without compression, which
 * separates each encoder from its ZSTD (both native: Node's zlib, pyarrow's libzstd).
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import * as arrow from 'apache-arrow';
import {
  arrowByteLength,
  columnsToRecordBatch,
  EncoderPool,
  encodeParquet,
  icebergToArrowSchema,
  MetricsCollector,
  writeParquetFile,
  highCardinalityColumns,
  readFooterFacts,
  type Columns,
  type Schema,
} from '../iceberg';
import { FlatParquetEncoder } from '../iceberg/parquet/flat-encoder';
import { parquetWasm } from '../iceberg/parquet/wasm';
import { writerProperties } from '../iceberg/parquet/writer';
import { benchArgs, numberArg } from './support/args';
import { prng } from './support/prng';

const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'event_time', required: true, type: 'timestamptz' },
    { id: 3, name: 'event_type', required: true, type: 'string' },
    { id: 4, name: 'user_id', required: true, type: 'string' },
    { id: 5, name: 'amount', required: false, type: 'double' },
    { id: 6, name: 'quantity', required: false, type: 'int' },
    { id: 7, name: 'flag', required: false, type: 'boolean' },
    { id: 8, name: 'payload', required: false, type: 'string' },
  ],
};

const EVENT_TYPES = ['page_view', 'click', 'add_to_cart', 'purchase', 'signup', 'logout', 'search', 'share'];
const WORDS = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india', 'juliet', 'kilo', 'lima'];

/** A flat (sequential) copy of a string: what decoders produce. */
const flat = (s: string): string => Buffer.from(s, 'latin1').toString('latin1');

function generate(n: number, seed = 42): Columns {
  const r = prng(seed);
  const id = new BigInt64Array(n),
    eventTime = new BigInt64Array(n);
  const eventType: string[] = new Array(n),
    userId: string[] = new Array(n),
    payload: Array<string | null> = new Array(n);
  const amount: Array<number | null> = new Array(n),
    quantity: Array<number | null> = new Array(n),
    flag: Array<boolean | null> = new Array(n);
  const t0 = 1_700_000_000_000_000n;
  for (let i = 0; i < n; i++) {
    id[i] = BigInt(i);
    eventTime[i] = t0 + BigInt(i) * 1000n + BigInt(Math.floor(r() * 1000));
    eventType[i] = EVENT_TYPES[Math.floor(r() * EVENT_TYPES.length)]!;
    userId[i] = `user-${Math.floor(r() * 100_000)
      .toString()
      .padStart(6, '0')}`;
    amount[i] = r() < 0.05 ? null : Math.round(r() * 100_000) / 100;
    quantity[i] = r() < 0.05 ? null : Math.floor(r() * 20);
    flag[i] = r() < 0.05 ? null : r() < 0.5;
    let p = '';
    while (p.length < 100) p += `${WORDS[Math.floor(r() * WORDS.length)]}-${Math.floor(r() * 1e6).toString(36)} `;
    // flat strings, as JSON.parse and avsc hand them over (a slice would be a V8 SlicedString)
    payload[i] = r() < 0.02 ? null : flat(p.slice(0, 100));
  }
  return { id, event_time: eventTime, event_type: eventType, user_id: userId, amount, quantity, flag, payload };
}

function findPython(): string {
  const p = process.env.FLOE_PYTHON ?? join(process.env.FLOE_HOME ?? join(homedir(), '.cache', 'floe'), 'venv', 'bin', 'python');
  if (!existsSync(p)) throw new Error(`python with pyarrow: expected ${p} (set FLOE_PYTHON), found nothing`);
  return p;
}

/**
 * pyarrow `write_table` on the batch in `ipcFile`, in a Python process that stays up: `run(codec)`
 * writes the table once to memory and returns its wall and CPU seconds and size.
 */
async function pyarrowWriter(ipcFile: string): Promise<{
  version: string;
  run: (codec: 'zstd' | 'none') => Promise<{ wall: number; cpu: number; bytes: number }>;
  close: () => void;
}> {
  const py = spawn(
    findPython(),
    [
      '-c',
      `
import json, sys, time, pyarrow as pa, pyarrow.parquet as pq
t = pa.ipc.open_file(sys.argv[1]).read_all()
print(json.dumps({'version': pa.__version__}), flush=True)
for line in sys.stdin:
    sink = pa.BufferOutputStream()
    s, c = time.perf_counter(), time.process_time()
    pq.write_table(t, sink, compression=line.strip())
    print(json.dumps({'wall': time.perf_counter() - s, 'cpu': time.process_time() - c, 'bytes': sink.getvalue().size}), flush=True)
`,
      ipcFile,
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: py.stdout })[Symbol.asyncIterator]();
  const next = async <T>(): Promise<T> => {
    const r = await lines.next();
    if (r.done) throw new Error(`pyarrow process ended (exit ${py.exitCode})`);
    return JSON.parse(r.value as string) as T;
  };
  const { version } = await next<{ version: string }>();
  return {
    version,
    run: (codec) => {
      py.stdin.write(`${codec}\n`);
      return next();
    },
    close: () => py.stdin.end(),
  };
}

/** Wall and CPU seconds of `fn` (CPU time is what to compare on a shared, loaded machine). */
async function timed<T>(fn: () => Promise<T> | T): Promise<{ wall: number; cpu: number; value: T }> {
  const c = process.cpuUsage(),
    t = performance.now();
  const value = await fn();
  const d = process.cpuUsage(c);
  return { wall: (performance.now() - t) / 1000, cpu: (d.user + d.system) / 1e6, value };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
async function main(): Promise<void> {
  const args = benchArgs('npx tsx bench/parquet-write.ts [--rows 1000000] [--runs 3]', {
    rows: { type: 'string' },
    runs: { type: 'string' },
  });
  const rows = numberArg(args.rows, 1_000_000),
    runs = numberArg(args.runs, 3);
  const arrowSchema = icebergToArrowSchema(schema);
  console.log(`generating ${rows} rows x 8 columns (seeded) ...`);
  const columns = generate(rows);
  const batch = columnsToRecordBatch(schema, columns, rows, arrowSchema);
  const dir = mkdtempSync(join(tmpdir(), 'floe-bench-'));
  const ipcFile = join(dir, 'events.arrow');
  writeFileSync(ipcFile, arrow.tableToIPC(new arrow.Table([batch]), 'file'));
  const pyarrow = await pyarrowWriter(ipcFile);
  const pyRuns = {
    zstd: { wall: [] as number[], cpu: [] as number[], bytes: 0 },
    none: { wall: [] as number[], cpu: [] as number[], bytes: 0 },
  };
  const pyRun = async (codec: 'zstd' | 'none'): Promise<void> => {
    const r = await pyarrow.run(codec),
      into = pyRuns[codec];
    into.wall.push(r.wall);
    into.cpu.push(r.cpu);
    into.bytes = r.bytes;
  };
  await pyarrow.run('zstd'); // warm-up, not counted

  // floe, columnar API (writeParquetFile): JS arrays -> Arrow, built BUILD_CHUNK_ROWS rows at a
  // time -> Parquet + Iceberg metrics + footer facts, all on this thread (pages compress on
  // libuv's pool). One run first, uncounted, as pyarrow's: the JIT warms up in both.
  const floeWall: number[] = [],
    floeCpu: number[] = [];
  let parquetBytes = 0;
  const arrowBytes = arrowByteLength(batch.data);
  await writeParquetFile(schema, { columns, numRows: rows }, { codec: 'zstd' });
  for (let k = 0; k < runs; k++) {
    const r = await timed(() => writeParquetFile(schema, { columns, numRows: rows }, { codec: 'zstd' }));
    floeWall.push(r.wall);
    floeCpu.push(r.cpu);
    parquetBytes = r.value.bytes.length;
    await pyRun('zstd');
  }
  // floe, encode only (Arrow already built): isolates parquet-wasm + metrics
  const viaArrow = await timed(() => encodeParquet(schema, arrowSchema, [batch], { codec: 'zstd' }));
  const viaArrowPlain = await timed(() => encodeParquet(schema, arrowSchema, [batch], { codec: 'uncompressed' }));
  for (let k = 0; k < runs; k++) await pyRun('none');

  // where the time goes: encodeParquet's steps one by one on the whole batch, CPU ms, median of `runs`
  const phases: Record<string, number[]> = {},
    phases2: Record<string, number[]> = {};
  const phase = async <T>(name: string, fn: () => Promise<T> | T): Promise<T> => {
    const r = await timed(fn);
    (phases[name] ??= []).push(r.cpu * 1000);
    return r.value;
  };
  const plainCols = highCardinalityColumns(batch);
  for (let k = 0; k < runs; k++) {
    const b = await phase('columns -> Arrow', () => columnsToRecordBatch(schema, columns, rows, arrowSchema));
    await phase('metrics', () => {
      const m = new MetricsCollector(schema);
      m.add(b);
      return m.result();
    });
    await phase('highCardinalityColumns', () => highCardinalityColumns(b));
    const flatEncode = async (codec: 'zstd' | 'uncompressed'): Promise<Uint8Array> => {
      const e = new FlatParquetEncoder(schema, { codec, plainColumns: plainCols });
      await e.write(b);
      return (await e.finish()).bytes;
    };
    const bytes = await phase('flat encode (ZSTD)', () => flatEncode('zstd'));
    await phase('readFooterFacts', () => readFooterFacts(schema, bytes));
    const t = await timed(() => flatEncode('uncompressed'));
    (phases2['flat encode, no compression'] ??= []).push(t.cpu * 1000);
    // the encoder nested schemas take, for comparison (not part of the sum)
    const ipc = arrow.tableToIPC(new arrow.Table(arrowSchema, [b]), 'stream');
    const w = await timed(() =>
      parquetWasm.writeParquet(parquetWasm.Table.fromIPCStream(ipc), writerProperties({ codec: 'zstd' }, plainCols)),
    );
    (phases2['parquet-wasm encode (ZSTD), nested path'] ??= []).push(w.cpu * 1000);
  }

  // floe as the worker runs it (iceberg/parquet/encoder-pool.ts): the reading thread builds Arrow
  // from 16Ki-row chunks of the columns while the previous chunk is encoded (metrics, the flat
  // encoder) on one encoder thread, its pages compressed on libuv's thread pool; one write in
  // flight, as the ingest's partitioned writer keeps it. Wall time is what a cycle waits; CPU is
  // the whole process (all threads).
  const pool = new EncoderPool(1).warm();
  const CHUNK = 16_384;
  const chunks: Array<{ cols: Columns; n: number }> = [];
  for (let a = 0; a < rows; a += CHUNK) {
    const b = Math.min(rows, a + CHUNK);
    chunks.push({
      cols: Object.fromEntries(Object.entries(columns).map(([k, v]) => [k, (v as unknown[]).slice(a, b)])) as Columns,
      n: b - a,
    });
  }
  const pooled = async (): Promise<number> => {
    const enc = pool.open(schema, arrowSchema, { codec: 'zstd' });
    let inFlight: Promise<void> = Promise.resolve();
    for (const c of chunks) {
      const b = columnsToRecordBatch(schema, c.cols, c.n, arrowSchema);
      await inFlight;
      // handed over, as the worker's rolling writer hands the batches it builds (moved, not copied)
      inFlight = enc.write(b, undefined, true);
    }
    await inFlight;
    return (await enc.finish()).bytes.length;
  };
  await pooled(); // the thread's wasm warms up, as in a running worker
  const poolWall: number[] = [],
    poolCpu: number[] = [];
  let poolBytes = 0;
  for (let k = 0; k < runs; k++) {
    const r = await timed(pooled);
    poolWall.push(r.wall);
    poolCpu.push(r.cpu);
    poolBytes = r.value;
    await pyRun('zstd');
  }
  await pool.close();

  // floe, row-object API (what the ingest path hands over), one run: row objects are built untimed,
  // last, so that their 500k objects do not weigh on the garbage collections timed above
  const viaRows = await (async () => {
    const rowObjects = Array.from({ length: rows }, (_, i) => {
      const o: Record<string, unknown> = {};
      for (const [name, col] of Object.entries(columns)) o[name] = col[i];
      return o;
    });
    return timed(() => writeParquetFile(schema, { rows: rowObjects }, { codec: 'zstd' }));
  })();

  pyarrow.close();
  rmSync(dir, { recursive: true, force: true });

  const mb = arrowBytes / 1e6;
  const line = (label: string, wall: number, cpu: number, bytes?: number): string =>
    `${label.padEnd(34)} wall ${wall.toFixed(2).padStart(6)} s  cpu ${cpu.toFixed(2).padStart(6)} s  ` +
    `${Math.round(rows / wall)
      .toLocaleString('en-US')
      .padStart(10)} rows/s  ${(mb / wall).toFixed(1).padStart(6)} MB/s` +
    `${bytes === undefined ? '' : `  -> ${(bytes / 1e6).toFixed(1)} MB`}`;
  const fw = median(floeWall),
    fc = median(floeCpu),
    pw = median(pyRuns.zstd.wall),
    pc = median(pyRuns.zstd.cpu);
  console.log(
    `\n${rows.toLocaleString('en-US')} rows x 8 columns, ${mb.toFixed(1)} MB of Arrow data, ZSTD, median of ${runs} (pyarrow: of ${pyRuns.zstd.wall.length}, each run right after a floe run)`,
  );
  console.log('(rows/s and MB/s from wall time; MB/s = Arrow MB in per second; cpu = process CPU time)');
  console.log(line('floe columns -> Parquet + metrics', fw, fc, parquetBytes));
  console.log(line('floe rows -> Parquet + metrics', viaRows.wall, viaRows.cpu));
  console.log(line('floe Arrow -> Parquet + metrics', viaArrow.wall, viaArrow.cpu, viaArrow.value.bytes.length));
  console.log(line(`pyarrow ${pyarrow.version} write_table`, pw, pc, pyRuns.zstd.bytes));
  console.log(`floe(columns) / pyarrow: wall ${(fw / pw).toFixed(2)}x, cpu ${(fc / pc).toFixed(2)}x`);
  console.log(`floe(columns) throughput = ${(pw / fw).toFixed(2)}x pyarrow's (wall), ${(pc / fc).toFixed(2)}x (cpu)`);
  console.log(line('floe columns, as the worker: encoder thread', median(poolWall), median(poolCpu), poolBytes));
  console.log(
    `floe as the worker writes (Arrow built beside one encoder thread) = ${(pw / median(poolWall)).toFixed(2)}x pyarrow's (wall), ${(pc / median(poolCpu)).toFixed(2)}x (cpu)`,
  );
  console.log('\nwithout compression (the encoders alone; ZSTD cost = the difference):');
  console.log(line('floe Arrow -> Parquet + metrics', viaArrowPlain.wall, viaArrowPlain.cpu, viaArrowPlain.value.bytes.length));
  console.log(line(`pyarrow write_table(compression='none')`, median(pyRuns.none.wall), median(pyRuns.none.cpu), pyRuns.none.bytes));
  const floeZstd = median(phases['flat encode (ZSTD)']!) / 1000 - median(phases2['flat encode, no compression']!) / 1000;
  console.log(
    `ZSTD cpu (medians): floe (node:zlib) ${floeZstd.toFixed(2)} s, pyarrow (native) ${(pc - median(pyRuns.none.cpu)).toFixed(2)} s`,
  );
  console.log(`\nfloe step by step, CPU ms (median of ${runs}):`);
  let total = 0;
  for (const [name, ms] of Object.entries(phases)) {
    total += median(ms);
    console.log(`  ${name.padEnd(36)} ${median(ms).toFixed(0).padStart(6)}`);
  }
  console.log(`  ${'sum'.padEnd(36)} ${total.toFixed(0).padStart(6)}`);
  for (const [name, ms] of Object.entries(phases2)) console.log(`  (${name.padEnd(40)} ${median(ms).toFixed(0).padStart(6)})`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
