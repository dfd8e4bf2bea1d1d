/**
 * Peak memory of floe's poll + write path for large messages, on the real stack (Kafka, S3,
 * the SQLite catalog; no Temporal server: activities are driven by MockActivityEnvironment):
 *  - ~400 JSON order events of ~1 MB each (demo/generator.ts plus a large `note` string column) into a
 *    fresh 4-partition topic;
 *  - floe: `loadCursor` + 4 concurrent `pollAndWrite` groups of 16 MiB (`maxBytesPerCycle` 64 MiB) +
 *    `commit`, cycle after cycle until the topic is consumed, as workflows/ingest.ts does while
 *    draining; once with FLOE_WORKER_BUFFER_BYTES at its default (256 MiB), once at 64 MiB, and once
 *    at 64 MiB with the heap capped as README advises (--max-old-space-size = 5x 64 MiB + 300 MB);
 *  - reference: a bare kafkajs consumer reading the same topic, holding 64 MiB of message Buffers per
 *    "cycle", then dropping them.
 * Every run is a child process, so its peak RSS (getrusage maxRSS) is its own. Each run also samples
 * process.memoryUsage() and parquet-wasm's linear memory by phase (poll+decode, write, commit) to
 * show where the memory goes. The bound checked is README "Memory": heap ≈ 5x the budget + 300 MB,
 * both with the worker budget and with the 64 MiB a single table's cycle actually holds.
 * ~2 minutes; each floe run leaves its table (demo.bench_mem_*) like bench/ingest.ts; the topic is deleted.
 *
 * Usage: npx tsx bench/memory.ts [--messages 400] [--message-bytes 1000000] [--heap-prof]
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Kafka, logLevel, CompressionTypes } from 'kafkajs';
import { benchArgs, numberArg } from './support/args';
import { createTopicsReady } from '../demo/topics';

const args = benchArgs('npx tsx bench/memory.ts [--messages 400] [--message-bytes 1000000] [--heap-prof]', {
  messages: { type: 'string' },
  'message-bytes': { type: 'string' },
  'heap-prof': { type: 'boolean', default: false },
  // a run's child process (runChild): --child reference --topic T --brokers B --total N, or --child floe --config PATH
  child: { type: 'string' },
  topic: { type: 'string' },
  brokers: { type: 'string' },
  total: { type: 'string' },
  config: { type: 'string' },
});
const MESSAGES = numberArg(args.messages, 400);
const MESSAGE_BYTES = numberArg(args['message-bytes'], 1_000_000);
const PARTITIONS = 4;
const MiB = 1024 * 1024;
const MB = 1e6;
const CYCLE_BYTES = 64 * MiB;

// ---------------------------------------------------------------- memory sampling (child side)
interface Sample {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
  wasm: number;
}
const ZERO: Sample = { rss: 0, heapUsed: 0, heapTotal: 0, external: 0, arrayBuffers: 0, wasm: 0 };

class Sampler {
  /** peak of each field per phase, and the full sample at each phase's peak RSS */
  readonly peaks = new Map<string, { max: Sample; atRss: Sample; n: number }>();
  phase = 'setup';
  private timer: NodeJS.Timeout | undefined;
  constructor(private readonly wasmBytes: () => number = () => 0) {}
  sample(phase = this.phase): void {
    const m = process.memoryUsage();
    const s: Sample = {
      rss: m.rss,
      heapUsed: m.heapUsed,
      heapTotal: m.heapTotal,
      external: m.external,
      arrayBuffers: m.arrayBuffers,
      wasm: this.wasmBytes(),
    };
    let p = this.peaks.get(phase);
    if (!p) this.peaks.set(phase, (p = { max: { ...ZERO }, atRss: { ...ZERO }, n: 0 }));
    p.n++;
    for (const k of Object.keys(s) as (keyof Sample)[]) p.max[k] = Math.max(p.max[k], s[k]);
    if (s.rss >= p.atRss.rss) p.atRss = s;
  }
  start(): void {
    this.timer = setInterval(() => this.sample(), 20);
  }
  stop(): void {
    clearInterval(this.timer);
  }
}

const vmHwm = (): number => {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
};

interface ChildResult {
  mode: string;
  records: number;
  bytes: number;
  seconds: number;
  cycles: number;
  baselineRss: number;
  maxRss: number;
  vmHwm: number;
  files?: number;
  parquetBytes?: number;
  phases: Record<string, { max: Sample; atRss: Sample; n: number }>;
}

function report(r: ChildResult): void {
  // one JSON line, last on stdout: the parent parses it
  process.stdout.write(`\n@@RESULT ${JSON.stringify(r)}\n`);
}

// ---------------------------------------------------------------- children
async function childReference(topic: string, brokers: string[], total: number): Promise<void> {
  const sampler = new Sampler();
  const kafka = new Kafka({ clientId: 'bench-mem-ref', brokers, logLevel: logLevel.NOTHING });
  const c = kafka.consumer({ groupId: `bench-mem-ref-${randomUUID()}`, maxWaitTimeInMs: 250 });
  await c.connect();
  await c.subscribe({ topics: [topic], fromBeginning: true });
  global.gc?.();
  const baselineRss = process.memoryUsage().rss;
  sampler.phase = 'poll';
  sampler.start();
  let held: Buffer[] = [];
  let heldBytes = 0,
    seen = 0,
    bytes = 0,
    cycles = 0;
  const t0 = Date.now();
  await new Promise<void>((resolve) => {
    void c.run({
      eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
        for (const m of batch.messages) {
          const size = (m.value?.length ?? 0) + (m.key?.length ?? 0);
          // a "cycle": 64 MiB of raw message bytes held, then dropped (as floe's bound counts them)
          if (heldBytes > 0 && heldBytes + size > CYCLE_BYTES) {
            sampler.sample('cycle-full');
            held = [];
            heldBytes = 0;
            cycles++;
          }
          held.push(m.value!);
          heldBytes += size;
          seen++;
          bytes += size;
          resolveOffset(m.offset);
        }
        await heartbeat();
        if (seen >= total) resolve();
      },
    });
  });
  if (heldBytes > 0) {
    sampler.sample('cycle-full');
    cycles++;
  }
  held = [];
  const seconds = (Date.now() - t0) / 1000;
  sampler.stop();
  await c.disconnect();
  report({
    mode: 'reference',
    records: seen,
    bytes,
    seconds,
    cycles,
    baselineRss,
    maxRss: process.resourceUsage().maxRSS * 1024,
    vmHwm: vmHwm(),
    phases: Object.fromEntries(sampler.peaks),
  });
}

async function childFloe(configPath: string): Promise<void> {
  const { MockActivityEnvironment } = await import('@temporalio/testing');
  const { loadConfig } = await import('../config');
  const { createActivities, createDeps } = await import('../activities');
  const { parquetWasm } = await import('../iceberg/parquet/wasm');
  type PollInput = import('../ingest/types').PollInput;
  type PollResult = import('../ingest/types').PollResult;
  type CyclePlan = import('../ingest/types').CyclePlan;
  type CommitResult = import('../ingest/types').CommitResult;

  const wasmMem = (parquetWasm as unknown as { wasmMemory?: () => { buffer: ArrayBuffer } }).wasmMemory;
  const sampler = new Sampler(() => wasmMem?.().buffer.byteLength ?? 0);
  const cfg = loadConfig(configPath);
  const t = cfg.tables[0]!;
  const deps = await createDeps(cfg);
  // Phases by group: poll (reading + decoding rows) until the group's writeDataFiles begins, write
  // (rows -> Arrow -> Parquet in wasm -> S3) until it returns. With 4 groups they overlap: the label
  // is the "most advanced" phase any group is in (write > poll), which is what holds the most.
  const groupPhase = new Map<number, 'poll' | 'write'>();
  const count = (ph: string) => [...groupPhase.values()].filter((x) => x === ph).length;
  const label = () => {
    const w = count('write'),
      p = count('poll');
    return w > 0 ? (p > 0 ? 'write (+poll)' : 'write') : p > 0 ? 'poll+decode' : 'poll tail';
  };
  let files = 0,
    parquetBytes = 0;
  const writeDataFiles = deps.tables.writeDataFiles.bind(deps.tables);
  deps.tables.writeDataFiles = async (table, rows, prefix, target) => {
    sampler.sample(label()); // rows decoded, nothing written yet: the poll's peak
    const g = Number(/-g(\d+)-a\d+$/.exec(prefix)?.[1] ?? -1);
    groupPhase.set(g, 'write');
    sampler.phase = label();
    try {
      const out = await writeDataFiles(table, rows, prefix, target);
      files += out.length;
      for (const f of out) parquetBytes += Number(f.fileSizeInBytes);
      return out;
    } finally {
      sampler.sample(label());
      groupPhase.delete(g);
      sampler.phase = label();
    }
  };
  const ioWrite = deps.tables.io.write.bind(deps.tables.io);
  deps.tables.io.write = (async (path: string, data: Uint8Array) => {
    sampler.sample(label()); // a finished file's bytes in hand, wasm at its high
    return ioWrite(path, data);
  }) as typeof deps.tables.io.write;

  const acts = createActivities(deps);
  const run = <T>(fn: (...a: any[]) => Promise<unknown>, input: unknown) =>
    new MockActivityEnvironment().run(fn as any, input) as Promise<T>;
  // warm-up: load the modules and the table (created by loadCursor) before the baseline
  await run<CyclePlan>(acts.loadCursor, { table: t.table, ingestId: t.ingestId });
  global.gc?.();
  const baselineRss = process.memoryUsage().rss;
  sampler.start();
  const t0 = Date.now();
  let records = 0,
    bytes = 0,
    cycles = 0;
  for (;;) {
    sampler.phase = 'loadCursor';
    const plan = await run<CyclePlan>(acts.loadCursor, { table: t.table, ingestId: t.ingestId });
    if (Object.keys(plan.highWatermarks).every((p) => BigInt(plan.startOffsets[p] ?? '0') >= BigInt(plan.highWatermarks[p]!))) break;
    const commitId = randomUUID();
    plan.groups.forEach((_, g) => groupPhase.set(g, 'poll'));
    sampler.phase = label();
    const results = await Promise.all(
      plan.groups.map((partitions, groupIndex) =>
        run<PollResult>(acts.pollAndWrite, {
          table: t.table,
          ingestId: t.ingestId,
          commitId,
          groupIndex,
          partitions,
          startOffsets: Object.fromEntries(partitions.map((p) => [String(p), plan.startOffsets[String(p)] ?? '0'])),
          maxWaitMs: Math.max(5000, plan.commitIntervalMs),
          untilCaughtUp: true,
          maxRecords: Math.max(1, Math.floor(plan.maxRecordsPerCycle / plan.groups.length)),
          maxBytes: Math.max(1, Math.floor(plan.maxBytesPerCycle / plan.groups.length)),
          deadLetterFloor: plan.deadLetterFloor,
        } satisfies PollInput).finally(() => groupPhase.delete(groupIndex)),
      ),
    );
    groupPhase.clear();
    sampler.phase = 'commit';
    const endOffsets = { ...plan.startOffsets };
    for (const r of results) Object.assign(endOffsets, r.endOffsets);
    const n = results.reduce((s, r) => s + r.records, 0);
    await run<CommitResult>(acts.commit, {
      table: t.table,
      ingestId: t.ingestId,
      commitId,
      baseSnapshotId: plan.baseSnapshotId,
      deadLetterFloor: plan.deadLetterFloor,
      deadLetterBaseCommitId: plan.deadLetterBaseCommitId,
      startOffsets: plan.startOffsets,
      endOffsets,
      files: results.flatMap((r) => r.files),
      deadLetterFiles: results.flatMap((r) => r.deadLetterFiles),
      records: n,
      deadLetters: results.reduce((s, r) => s + r.deadLetters, 0),
    });
    records += n;
    bytes += results.reduce((s, r) => s + r.bytes, 0);
    cycles++;
    if (results.some((r) => r.deadLetters > 0)) throw new Error(`unexpected dead letters in cycle ${cycles}`);
  }
  const seconds = (Date.now() - t0) / 1000;
  sampler.stop();
  await deps.close();
  report({
    mode: 'floe',
    records,
    bytes,
    seconds,
    cycles,
    baselineRss,
    files,
    parquetBytes,
    maxRss: process.resourceUsage().maxRSS * 1024,
    vmHwm: vmHwm(),
    phases: Object.fromEntries(sampler.peaks),
  });
}

// ---------------------------------------------------------------- parent
/** mulberry32: deterministic filler text (letters and spaces: no digit runs, so JSON.parse stays native). */
function filler(n: number, seed = 7): string {
  let a = seed >>> 0;
  const abc = 'abcdefghijklmnopqrstuvwxyz     ';
  const out = new Array<string>(n);
  for (let i = 0; i < n; i++) {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    out[i] = abc[((t ^ (t >>> 14)) >>> 0) % abc.length]!;
  }
  return out.join('');
}

async function produce(kafka: Kafka, topic: string): Promise<number> {
  const { orderEvents } = await import('../demo/generator');
  const admin = kafka.admin();
  await admin.connect();
  await createTopicsReady(admin, [{ topic, numPartitions: PARTITIONS }]);
  await admin.disconnect();
  // One ~1 MB message per partition per request: each is its own record batch, under the broker's
  // default message.max.bytes (1 MiB + 12).
  const p = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await p.connect();
  const pool = filler(2 * MESSAGE_BYTES);
  const ev = orderEvents();
  let bytes = 0;
  for (let i = 0; i < MESSAGES; i += PARTITIONS) {
    const messages = [];
    for (let j = i; j < Math.min(MESSAGES, i + PARTITIONS); j++) {
      const e = ev.next().value!;
      const overhead = JSON.stringify({ ...e, note: '' }).length;
      const off = (j * 7919) % MESSAGE_BYTES;
      const value = JSON.stringify({ ...e, note: pool.slice(off, off + Math.max(0, MESSAGE_BYTES - overhead)) });
      const key = String(e.order_id);
      bytes += value.length + key.length;
      messages.push({ key, value, partition: j % PARTITIONS });
    }
    await p.send({ topic, messages, compression: CompressionTypes.None });
  }
  await p.disconnect();
  return bytes;
}

interface Run {
  label: string;
  mode: 'floe' | 'reference';
  budgetBytes?: number;
  env: Record<string, string>;
  args: string[];
  nodeArgs?: string[];
}

function runChild(r: Run, heapProfDir?: string): Promise<ChildResult> {
  const nodeArgs = [
    '--expose-gc',
    '--disable-warning=NodeVersionSupportWarning',
    ...(r.nodeArgs ?? []),
    '--import',
    'tsx',
    ...(heapProfDir && r.mode === 'floe' ? ['--heap-prof', `--heap-prof-dir=${heapProfDir}`] : []),
  ];
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, [...nodeArgs, __filename, '--child', r.mode, ...r.args], {
      env: { ...process.env, ...r.env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    c.stdout.on('data', (d) => {
      out += d;
    });
    // a run stuck on a restarting service: kill it (the caller retries)
    const timer = setTimeout(() => c.kill('SIGKILL'), 240_000);
    c.on('exit', (code) => {
      clearTimeout(timer);
      const line = out.split('\n').find((l) => l.startsWith('@@RESULT '));
      if (code !== 0 || !line) reject(new Error(`${r.label}: child exited ${code}\n${out.slice(-2000)}`));
      else resolve(JSON.parse(line.slice('@@RESULT '.length)) as ChildResult);
    });
  });
}

const mb = (b: number) => (b / MB).toFixed(0);

async function main() {
  const { ensureStack } = await import('../stack/stack');
  const { scenarioConfig } = await import('../demo/config');
  const { loadConfig } = await import('../config');
  const { floeHome } = await import('../stack/paths');
  // A chaos test elsewhere may be restarting services: wait for them rather than fail.
  const stackUp = async () => {
    for (let i = 1; ; i++) {
      try {
        await ensureStack(['kafka', 's3']);
        return;
      } catch (e) {
        if (i >= 5) throw e;
        console.error(`stack not ready (${(e as Error).message.split('\n')[0]}); waiting 10 s`);
        await sleep(10_000);
      }
    }
  };
  await stackUp();
  let name = '',
    topic = '',
    bytes = 0;
  const brokers = loadConfig(scenarioConfig('bench_mem_probe', PARTITIONS, '10s').path).kafka.brokers;
  const kafka = new Kafka({ clientId: 'bench-mem', brokers, logLevel: logLevel.NOTHING, retry: { retries: 8 } });
  const tp = Date.now();
  for (let attempt = 1; ; attempt++) {
    // a fresh topic per attempt: a produce cut short by a broker restart must not leave duplicates
    name = `bench_mem_${Date.now().toString(36)}`;
    topic = name;
    try {
      bytes = await produce(kafka, topic);
      break;
    } catch (e) {
      if (attempt >= 3) throw e;
      console.error(`producing failed (${(e as Error).message}); retrying with a fresh topic`);
      await stackUp();
    }
  }
  const tableOverrides = (run: string) => {
    const base = scenarioConfig(`${name}_${run}`, PARTITIONS, '10s');
    const cfg = loadConfig(base.path);
    const columns = cfg.tables[0]!.columns.map((c) => ({
      name: c.name,
      type: c.type,
      required: c.required,
      ...(c.source ? { source: c.source } : {}),
    }));
    return scenarioConfig(`${name}_${run}`, PARTITIONS, '10s', {
      topic,
      parallelism: PARTITIONS,
      maxBytesPerCycle: CYCLE_BYTES,
      columns: [...columns, { name: 'note', type: 'string' }],
      maintenance: undefined,
    });
  };
  const cfgDefault = tableOverrides('b256');
  const cfg64 = tableOverrides('b64');
  const cfg64cap = tableOverrides('b64cap');
  console.log(
    `floe memory benchmark: ${MESSAGES} JSON messages of ~${mb(MESSAGE_BYTES)} MB (${mb(bytes)} MB) in topic ${topic} (${PARTITIONS} partitions, produced in ${((Date.now() - tp) / 1000).toFixed(1)} s), ` +
      `maxBytesPerCycle ${CYCLE_BYTES / MiB} MiB = ${PARTITIONS} groups x ${CYCLE_BYTES / PARTITIONS / MiB} MiB, Node ${process.version}, ${new Date().toISOString()}`,
  );

  const heapProfDir = args['heap-prof'] ? join(floeHome(), 'runs', `${name}-heap-prof`) : undefined;
  if (heapProfDir) mkdirSync(heapProfDir, { recursive: true });
  const runs: Run[] = [
    {
      label: 'reference: bare kafkajs, 64 MiB Buffers/cycle',
      mode: 'reference',
      env: {},
      args: ['--topic', topic, '--brokers', brokers.join(','), '--total', String(MESSAGES)],
    },
    {
      label: 'floe, FLOE_WORKER_BUFFER_BYTES default (256 MiB)',
      mode: 'floe',
      budgetBytes: 256 * MiB,
      env: {},
      args: ['--config', cfgDefault.path],
    },
    {
      label: 'floe, FLOE_WORKER_BUFFER_BYTES=64 MiB',
      mode: 'floe',
      budgetBytes: 64 * MiB,
      env: { FLOE_WORKER_BUFFER_BYTES: String(64 * MiB) },
      args: ['--config', cfg64.path],
    },
    // The README's advice taken literally: the heap capped at 5x the budget + 300 MB.
    {
      label: `floe, 64 MiB, --max-old-space-size=${Math.floor((5 * 64 * MiB + 300 * MB) / MiB)}`,
      mode: 'floe',
      budgetBytes: 64 * MiB,
      env: { FLOE_WORKER_BUFFER_BYTES: String(64 * MiB) },
      args: ['--config', cfg64cap.path],
      nodeArgs: [`--max-old-space-size=${Math.floor((5 * 64 * MiB + 300 * MB) / MiB)}`],
    },
  ];
  const results: Array<{ r: Run; res: ChildResult }> = [];
  for (const r of runs) {
    if (r.mode === 'floe' && !('FLOE_WORKER_BUFFER_BYTES' in r.env)) delete process.env.FLOE_WORKER_BUFFER_BYTES;
    let res: ChildResult | undefined;
    for (let attempt = 1; !res; attempt++) {
      try {
        res = await runChild(r, heapProfDir);
      } catch (e) {
        if (attempt >= 3) throw e;
        console.error(`${(e as Error).message.slice(0, 500)}\nretrying ${r.label} (a service may have been restarting)`);
        await stackUp();
        if (r.mode === 'floe') {
          // a fresh table for the retry: the first attempt may have committed part of the topic
          const c = tableOverrides(`r${runs.indexOf(r)}_retry${attempt}`);
          r.args = ['--config', c.path];
        }
      }
    }
    if (res.records !== MESSAGES) throw new Error(`${r.label}: read ${res.records} records, expected ${MESSAGES}`);
    results.push({ r, res });
  }

  const ref = results.find((x) => x.r.mode === 'reference')!.res;
  const refDelta = ref.maxRss - ref.baselineRss;
  console.log('');
  console.log(
    'run                                                 peak RSS MB  baseline MB  peak-base MB  MB/s    cycles | RSS floe/ref  (peak-base) | README bound MB (5x budget+300)  within | 5x 64 MiB in use+300  within',
  );
  for (const { r, res } of results) {
    const delta = res.maxRss - res.baselineRss;
    const mbps = res.bytes / MB / res.seconds;
    let tail = '|';
    if (r.mode === 'floe') {
      const bound = 5 * r.budgetBytes! + 300 * MB;
      const inUse = Math.min(r.budgetBytes!, CYCLE_BYTES);
      const tight = 5 * inUse + 300 * MB;
      tail = `| ${(res.maxRss / ref.maxRss).toFixed(2).padEnd(13)} ${(delta / refDelta).toFixed(2).padEnd(12)}| ${mb(bound).padEnd(32)} ${(res.maxRss <= bound ? 'yes' : 'NO').padEnd(6)} | ${mb(tight).padEnd(21)} ${res.maxRss <= tight ? 'yes' : 'NO'}`;
    } else {
      tail = `| ${'1.00'.padEnd(13)} ${'1.00'.padEnd(12)}| -`;
    }
    console.log(
      `${r.label.padEnd(51)} ${mb(res.maxRss).padEnd(12)} ${mb(res.baselineRss).padEnd(12)} ${mb(delta).padEnd(13)} ${mbps.toFixed(1).padEnd(7)} ${String(res.cycles).padEnd(6)} ${tail}`,
    );
  }
  console.log(
    '(peak RSS: getrusage maxRSS of the child; baseline: RSS after modules, connections and table load, before the first byte is read; MB = 10^6 bytes)',
  );

  console.log('');
  console.log(
    'where it goes: per phase, the sample with the highest RSS (MB; sampled every 20 ms and at phase edges; wasm = parquet-wasm linear memory, never shrinks)',
  );
  console.log('run                          phase            samples  rss    heapUsed heapTotal external arrayBuf wasm');
  for (const { r, res } of results) {
    const short = r.mode === 'reference' ? 'reference' : `floe ${r.budgetBytes! / MiB} MiB budget${r.nodeArgs ? ' capped' : ''}`;
    for (const [phase, p] of Object.entries(res.phases)) {
      const s = p.atRss;
      console.log(
        `${short.padEnd(28)} ${phase.padEnd(16)} ${String(p.n).padEnd(8)} ${mb(s.rss).padEnd(6)} ${mb(s.heapUsed).padEnd(8)} ${mb(s.heapTotal).padEnd(9)} ${mb(s.external).padEnd(8)} ${mb(s.arrayBuffers).padEnd(8)} ${mb(s.wasm)}`,
      );
    }
    if (r.mode === 'floe')
      console.log(`${''.padEnd(28)} (${res.files} Parquet files, ${mb(res.parquetBytes!)} MB written, ${res.seconds.toFixed(1)} s)`);
  }
  if (heapProfDir) console.log(`heap profiles (.heapprofile, open in Chrome DevTools): ${heapProfDir}`);

  const admin = kafka.admin();
  await admin.connect();
  await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
  await admin.disconnect();
}

if (args.child !== undefined) {
  const mode = args.child;
  const p =
    mode === 'reference' ? childReference(args.topic!, args.brokers!.split(','), numberArg(args.total, MESSAGES)) : childFloe(args.config!);
  p.then(
    () => process.exit(0),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
} else {
  main().then(
    () => process.exit(0),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
}
