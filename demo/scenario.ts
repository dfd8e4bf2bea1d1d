/**
 * The end-to-end ingest scenario shared by the demo (README's main command) and the chaos tests:
 * stream generated order events into a fresh topic while a real worker process ingests them, kill
 * the worker with SIGKILL on schedule, restart it, drain, and verify exactly-once.
 */
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Kafka, logLevel, CompressionTypes } from 'kafkajs';
import { connectClient, startIngest, signalIngest, waitForIngest, ingestStatus, type FloeClient } from '../client';
import { loadConfig } from '../config';
import { spawnWorker, type WorkerProcess } from '../workers/process';
import { floeHome } from '../stack/paths';
import { orderEvents, eventKey } from './generator';
import { verifyTable, type Verification } from './verify';
import { scenarioConfig } from './config';
import type { ProgressEvent, ProgressSample } from './progress';
import { ingestWorkflowId, statusQuery } from '../workflows';

export { scenarioConfig };

export interface Kill {
  atS: number;
  restartAfterS: number;
  signal?: NodeJS.Signals;
}

export interface ScenarioOptions {
  name?: string;
  ratePerS: number;
  durationS: number;
  partitions: number;
  kills: Kill[];
  /** Every n-th message is malformed (bad JSON / missing field / wrong type), 0 = none. */
  malformedEvery?: number;
  commitInterval?: string;
  /** Extra env for the worker processes (e.g. FLOE_TEST_KILL_AT). */
  workerEnv?: Record<string, string>;
  /** Extra keys for the table's config entry (e.g. cyclesPerRun). */
  tableOverrides?: Record<string, unknown>;
  /** Restart a worker that died on its own (a crash point, a lost server) after 1 s, as a supervisor would. */
  supervise?: boolean;
  log?: (msg: string) => void;
  /** How long to wait for the drain to finish. */
  drainTimeoutS?: number;
  /** Called while streaming, with the elapsed seconds (tests hook extra actions here). */
  onTick?: (elapsedS: number) => Promise<void>;
  /** Called every `progressEveryMs` (default 2000) while streaming and draining, and once at the end. */
  onProgress?: (s: ProgressSample) => void;
  progressEveryMs?: number;
  /** Called at each kill and restart (instead of the log line). */
  onWorkerEvent?: (e: ProgressEvent) => void;
}

export interface ScenarioResult extends Verification {
  table: string;
  topic: string;
  configPath: string;
  produced: number;
  malformed: number;
  kills: number;
  /** worker exits the supervisor restarted (crash points, lost servers) */
  selfExits: number;
  elapsedS: number;
}

function malformed(n: number, good: string): string {
  switch (n % 3) {
    case 0:
      return good.slice(0, Math.max(1, good.length - 7)); // truncated: not JSON
    case 1:
      return JSON.stringify({ ...JSON.parse(good), order_id: undefined }); // required field missing
    default:
      return JSON.stringify({ ...JSON.parse(good), amount: 'twelve' }); // wrong type
  }
}

interface Sampler {
  stop(): Promise<void>;
}

/**
 * Every `everyMs`, the ingest's own status, asked with a short deadline: a killed worker cannot
 * answer (the last answer stands, marked worker down), and the producer's schedule never waits
 * for it (this loop runs beside it).
 */
function startSampler(
  fc: FloeClient,
  table: string,
  ingestId: string,
  t0: number,
  produced: () => number,
  onProgress: (s: ProgressSample) => void,
  everyMs: number,
): Sampler {
  let running = true;
  let last = { committed: 0, commits: 0 };
  const handle = fc.client.workflow.getHandle(ingestWorkflowId(table, ingestId));
  const loop = (async () => {
    for (let k = 1; running; k++) {
      await sleep(Math.max(0, t0 + k * everyMs - Date.now()));
      if (!running) break;
      let workerUp = true;
      try {
        const s = await fc.client.connection.withDeadline(Date.now() + 1500, () => handle.query(statusQuery));
        last = { committed: s.totalRows + s.totalDeadLetters, commits: s.commits };
      } catch {
        workerUp = false;
      }
      if (running) onProgress({ tS: (Date.now() - t0) / 1000, produced: produced(), ...last, workerUp });
    }
  })();
  return {
    stop: () => {
      running = false;
      return loop;
    },
  };
}

export async function runScenario(o: ScenarioOptions): Promise<ScenarioResult> {
  const log = o.log ?? ((m: string) => console.log(m));
  const name =
    o.name ??
    `orders_${new Date()
      .toISOString()
      .replace(/[-:T.Z]/g, '')
      .slice(0, 14)}`;
  const { path: configPath, table, topic } = scenarioConfig(name, o.partitions, o.commitInterval ?? '5s', o.tableOverrides);
  const cfg = loadConfig(configPath);
  const kafka = new Kafka({ clientId: 'floe-demo', brokers: cfg.kafka.brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: o.partitions, replicationFactor: 1 }], waitForLeaders: true });
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, retry: { retries: 30, maxRetryTime: 5000 } });
  await producer.connect();

  const logDir = join(floeHome(), 'logs');
  let workerN = 0;
  let stopping = false;
  let selfExits = 0;
  let killing = false;
  const startWorker = (): WorkerProcess => {
    const w = spawnWorker(configPath, join(logDir, `${name}-worker-${++workerN}.log`), o.workerEnv ?? {});
    void w.exited.then(({ code, signal }) => {
      if (stopping || killing || !o.supervise || w !== worker) return;
      selfExits++;
      log(`worker ${w.pid} exited by itself (code ${code}, signal ${signal}); restarting in 1 s`);
      setTimeout(() => {
        if (!stopping && w === worker) worker = startWorker();
      }, 1000);
    });
    return w;
  };
  let worker: WorkerProcess = startWorker();
  log(
    `worker ${worker.pid} started; streaming ${o.ratePerS} events/s for ${o.durationS}s into topic ${topic} (${o.partitions} partitions)`,
  );
  const fc = await connectClient(cfg);
  const t0 = Date.now();
  let produced = 0,
    malformedCount = 0,
    kills = 0;
  let sampler: Sampler | null = null;
  const workerEvent = (kind: ProgressEvent['kind'], pid: number, elapsed: number, text: string) => {
    if (o.onWorkerEvent) o.onWorkerEvent({ tS: elapsed, kind, pid });
    else log(text);
  };
  try {
    await startIngest(fc, table);
    if (o.onProgress)
      sampler = startSampler(fc, table, cfg.tables[0]!.ingestId, t0, () => produced, o.onProgress, o.progressEveryMs ?? 2000);
    const events = orderEvents();
    const pending = [...o.kills].sort((a, b) => a.atS - b.atS);
    const total = Math.round(o.ratePerS * o.durationS);
    let restartAt: number | null = null;
    // Produce in small batches on a fixed schedule so the rate holds whatever the broker latency.
    const batchEvery = 100;
    for (let tick = 0; produced < total; tick++) {
      const due = Math.min(total, Math.round(((tick + 1) * batchEvery * o.ratePerS) / 1000));
      const messages = [];
      while (produced < due) {
        const e = events.next().value!;
        const good = JSON.stringify(e);
        produced++;
        let value = good;
        if (o.malformedEvery && produced % o.malformedEvery === 0) {
          value = malformed(produced / o.malformedEvery, good);
          malformedCount++;
        }
        messages.push({ key: eventKey(e!), value });
      }
      if (messages.length) await producer.send({ topic, messages, compression: CompressionTypes.None });
      const elapsed = (Date.now() - t0) / 1000;
      if (pending.length && elapsed >= pending[0]!.atS) {
        const k = pending.shift()!;
        killing = true;
        await worker.kill(k.signal ?? 'SIGKILL');
        killing = false;
        kills++;
        workerEvent('kill', worker.pid, elapsed, `t=${elapsed.toFixed(1)}s: worker ${worker.pid} killed with ${k.signal ?? 'SIGKILL'}`);
        restartAt = elapsed + k.restartAfterS;
      }
      if (restartAt !== null && elapsed >= restartAt) {
        worker = startWorker();
        restartAt = null;
        workerEvent('restart', worker.pid, elapsed, `t=${elapsed.toFixed(1)}s: worker ${worker.pid} restarted`);
      }
      if (o.onTick) await o.onTick(elapsed);
      const next = t0 + (tick + 1) * batchEvery;
      await sleep(Math.max(0, next - Date.now()));
    }
    if (restartAt !== null) {
      await sleep(Math.max(0, restartAt * 1000 - (Date.now() - t0)));
      worker = startWorker();
      const elapsed = (Date.now() - t0) / 1000;
      workerEvent('restart', worker.pid, elapsed, `worker ${worker.pid} restarted`);
    }
    log(`produced ${produced} messages (${malformedCount} malformed) in ${((Date.now() - t0) / 1000).toFixed(1)}s; draining`);
    await signalIngest(fc, table, 'stop');
    let drainTimer: NodeJS.Timeout | undefined;
    const status = await Promise.race([
      waitForIngest(fc, table),
      new Promise<never>((_, reject) => {
        drainTimer = setTimeout(
          () => {
            void ingestStatus(fc, table).then(
              (s) => reject(new Error(`ingest did not drain within ${o.drainTimeoutS ?? 180}s; status: ${JSON.stringify(s)}`)),
              reject,
            );
          },
          (o.drainTimeoutS ?? 180) * 1000,
        );
      }),
    ]).finally(() => clearTimeout(drainTimer));
    await sampler?.stop();
    o.onProgress?.({
      tS: (Date.now() - t0) / 1000,
      produced,
      committed: status.totalRows + status.totalDeadLetters,
      commits: status.commits,
      workerUp: true,
    });
    log(
      `ingest stopped after ${status.commits} commits (${status.fencedCommits} fenced), ${status.totalRows} rows, ${status.totalDeadLetters} dead letters`,
    );
    const v = await verifyTable(cfg, table, topic);
    return { ...v, table, topic, configPath, produced, malformed: malformedCount, kills, selfExits, elapsedS: (Date.now() - t0) / 1000 };
  } finally {
    await sampler?.stop().catch(() => undefined);
    stopping = true;
    await worker.kill('SIGTERM').catch(() => undefined);
    await producer.disconnect().catch(() => undefined);
    await admin.disconnect().catch(() => undefined);
    await fc.close().catch(() => undefined);
  }
}
