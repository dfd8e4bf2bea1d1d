/**
 * Scale-out: one 4-partition ingest (4 partition groups) served by 1, 2 and 3 worker processes on
 * one task queue. Temporal hands each group's poll activity to whichever worker asks first, so
 * more processes use more cores. Per worker count: floe's rec/s over a pre-produced backlog, the
 * ratio to 1 worker and to a bare kafkajs consumer of the same topic (same run), and how the poll
 * activities spread over the workers (from the workflow's history: the identity that ran each).
 *
 * Usage: npx tsx bench/scale-out.ts [--events 200000] [--workers 1,2,3] [--slots resource|fixed]
 */
import { Kafka, logLevel } from 'kafkajs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureStack } from '../stack/stack';
import { bareConsumeSeconds, produceBenchEvents, writeBenchConfig } from './support/events';
import { floeHome } from '../stack/paths';
import { loadConfig } from '../config';
import { connectClient, ingestStatus, signalIngest, startIngest, waitForIngest } from '../client';
import { ingestWorkflowId } from '../contract';
import { spawnWorker, type WorkerProcess } from '../workers/process';
import { benchArgs } from './support/args';

const args = benchArgs('npx tsx bench/scale-out.ts [--events 200000] [--workers 1,2,3] [--slots resource|fixed]', {
  events: { type: 'string', default: '200000' },
  workers: { type: 'string', default: '1,2,3' },
  slots: { type: 'string', default: 'resource' },
});
const EVENTS = Number(args.events);
const WORKERS = args.workers.split(',').map(Number);
/** Activity slots of each worker process (workers/index.ts activitySlots): fixed or resource. */
const SLOTS = args.slots;
const PARTITIONS = 4;

async function run(workers: number): Promise<{ seconds: number; refSeconds: number; spread: Record<string, number> }> {
  const name = `bench_scale${workers}_${Date.now().toString(36)}`;
  const path = writeBenchConfig(name, {
    commitInterval: '10s',
    parallelism: PARTITIONS,
    maxRecordsPerCycle: 100_000,
    maxBytesPerCycle: 256 * 1024 * 1024,
  });
  const cfg = loadConfig(path);
  const kafka = new Kafka({ clientId: 'bench', brokers: cfg.kafka.brokers, logLevel: logLevel.NOTHING });
  await produceBenchEvents(kafka, name, PARTITIONS, EVENTS);
  const refSeconds = await bareConsumeSeconds(kafka, name, EVENTS);
  const procs: WorkerProcess[] = Array.from({ length: workers }, (_, i) =>
    spawnWorker(path, join(floeHome(), 'logs', `${name}-w${i}.log`), { FLOE_ACTIVITY_SLOTS: SLOTS }),
  );
  const fc = await connectClient(cfg);
  const table = cfg.tables[0]!.table;
  try {
    await sleep(8000); // every worker process is up and polling before the clock starts
    const t0 = Date.now();
    await startIngest(fc, table);
    for (;;) {
      const s = await ingestStatus(fc, table).catch(() => null);
      if (s && s.totalRows >= EVENTS) break;
      await sleep(200);
    }
    const seconds = (Date.now() - t0) / 1000;
    await signalIngest(fc, table, 'stop');
    await waitForIngest(fc, table);
    // Which worker ran each poll (ActivityTaskStarted.identity), over every run of the workflow.
    const spread: Record<string, number> = {};
    const handle = fc.client.workflow.getHandle(ingestWorkflowId(table, cfg.tables[0]!.ingestId));
    const { events } = await handle.fetchHistory();
    const polls = new Set(
      (events ?? [])
        .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'pollAndWrite')
        .map((e) => String(e.eventId)),
    );
    for (const e of events ?? []) {
      const a = e.activityTaskStartedEventAttributes;
      if (a && polls.has(String(a.scheduledEventId))) spread[a.identity ?? '?'] = (spread[a.identity ?? '?'] ?? 0) + 1;
    }
    return { seconds, refSeconds, spread };
  } finally {
    await fc.close();
    await Promise.all(procs.map((p) => p.kill('SIGTERM')));
  }
}

async function main() {
  await ensureStack(['temporal', 'kafka', 's3']);
  console.log(
    `scale-out: ${EVENTS} events of ~1 KiB JSON, 4 partitions (4 groups), worker processes ${WORKERS.join(', ')}, activity slots ${SLOTS}, ${new Date().toISOString()}`,
  );
  console.log('workers  floe s  floe rec/s  | kafkajs-only rec/s | floe/ref  vs 1 worker  polls per worker');
  let one: number | undefined;
  for (const w of WORKERS) {
    const r = await run(w);
    const f = EVENTS / r.seconds,
      ref = EVENTS / r.refSeconds;
    one ??= f;
    console.log(
      `${String(w).padEnd(8)} ${r.seconds.toFixed(1).padEnd(7)} ${f.toFixed(0).padEnd(11)} | ${ref.toFixed(0).padEnd(18)} | ${(f / ref).toFixed(2).padEnd(8)}  ${(f / one).toFixed(2).padEnd(11)}  ${Object.values(r.spread).join('/')}`,
    );
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
