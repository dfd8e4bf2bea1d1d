/**
 * The end-to-end ingest scenario shared by the demo (README's main command) and the chaos tests:
 * stream generated order events into a fresh topic while a real worker process ingests them, kill
 * the worker with SIGKILL on schedule, restart it, drain, and verify exactly-once.
 */
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Kafka, logLevel, CompressionTypes, type Admin, type Producer } from 'kafkajs';
import { connectClient, startIngest, signalIngest, waitForIngest, ingestStatus, type FloeClient } from '../client';
import { loadConfig, type FloeConfig } from '../config';
import { spawnWorker, type WorkerProcess } from '../workers/process';
import { floeHome } from '../stack/paths';
import { orderEvents, eventKey, type OrderEvent } from './generator';
import { countTopicMessages, verifyTable, type Verification } from './verify';
import { scenarioConfig } from './config';
import type { ProgressEvent, ProgressSample } from './progress';
import { ingestWorkflowId, statusQuery, type IngestStatus } from '../workflows';
import { createTopicsReady } from './topics';
import { CustomerSource, changeMessages, verifyUpsertTable } from './customers';

export { scenarioConfig };

interface Kill {
  atS: number;
  restartAfterS: number;
  signal?: NodeJS.Signals;
}

interface ScenarioOptions {
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
  /**
   * Stream a customer table's changes (examples/customers.yaml) instead of order events: `upsert`
   * keyed rows and tombstones, `cdc` Debezium's envelope; `keys` customer ids. The table must
   * then equal the source state.
   */
  changes?: { mode: 'upsert' | 'cdc'; keys: number };
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
  /** A changes scenario: the source state the table must equal, as (id, version) sorted by id. */
  sourceState?: Array<[number, number]>;
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
  committedOf: (s: IngestStatus) => number,
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
        last = { committed: committedOf(s), commits: s.commits };
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

/** The worker process: killed and restarted on schedule, and with `supervise` restarted when it exits by itself. */
class ScenarioWorker {
  current: WorkerProcess;
  kills = 0;
  selfExits = 0;
  private readonly logDir = join(floeHome(), 'logs');
  private started = 0;
  private stopping = false;
  private killing = false;

  constructor(
    private readonly configPath: string,
    private readonly name: string,
    private readonly o: ScenarioOptions,
    private readonly log: (msg: string) => void,
  ) {
    this.current = this.start();
  }

  get pid(): number {
    return this.current.pid;
  }

  private start(): WorkerProcess {
    const w = spawnWorker(this.configPath, join(this.logDir, `${this.name}-worker-${++this.started}.log`), this.o.workerEnv ?? {});
    void w.exited.then(({ code, signal }) => {
      if (this.stopping || this.killing || !this.o.supervise || w !== this.current) return;
      this.selfExits++;
      this.log(`worker ${w.pid} exited by itself (code ${code}, signal ${signal}); restarting in 1 s`);
      setTimeout(() => {
        if (!this.stopping && w === this.current) this.current = this.start();
      }, 1000);
    });
    return w;
  }

  restart(): void {
    this.current = this.start();
  }

  async kill(signal: NodeJS.Signals): Promise<void> {
    this.killing = true;
    await this.current.kill(signal);
    this.killing = false;
    this.kills++;
  }

  /** A kill or restart, reported to `onWorkerEvent` or else logged as `text`. */
  event(kind: ProgressEvent['kind'], elapsedS: number, text: string): void {
    if (this.o.onWorkerEvent) this.o.onWorkerEvent({ tS: elapsedS, kind, pid: this.current.pid });
    else this.log(text);
  }

  /** The scenario is over: no more restarts, and the worker stops. */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.current.kill('SIGTERM').catch(() => undefined);
  }
}

/** The scheduled kills: one due kills the worker, and its restart comes `restartAfterS` later. */
class KillSchedule {
  private readonly pending: Kill[];
  private restartAt: number | null = null;

  constructor(
    kills: readonly Kill[],
    private readonly worker: ScenarioWorker,
  ) {
    this.pending = [...kills].sort((a, b) => a.atS - b.atS);
  }

  /** Kills and restarts due at `elapsed` seconds. */
  async at(elapsed: number): Promise<void> {
    if (this.pending.length && elapsed >= this.pending[0]!.atS) {
      const k = this.pending.shift()!;
      await this.worker.kill(k.signal ?? 'SIGKILL');
      this.worker.event('kill', elapsed, `t=${elapsed.toFixed(1)}s: worker ${this.worker.pid} killed with ${k.signal ?? 'SIGKILL'}`);
      this.restartAt = elapsed + k.restartAfterS;
    }
    if (this.restartAt !== null && elapsed >= this.restartAt) {
      this.worker.restart();
      this.restartAt = null;
      this.worker.event('restart', elapsed, `t=${elapsed.toFixed(1)}s: worker ${this.worker.pid} restarted`);
    }
  }

  /** After the stream: a restart still pending comes at its time. */
  async finish(t0: number): Promise<void> {
    if (this.restartAt === null) return;
    await sleep(Math.max(0, this.restartAt * 1000 - (Date.now() - t0)));
    this.worker.restart();
    const elapsed = (Date.now() - t0) / 1000;
    this.worker.event('restart', elapsed, `worker ${this.worker.pid} restarted`);
  }
}

/** Messages produced so far (the sampler reads them while streaming). */
interface Produced {
  produced: number;
  malformed: number;
  /** messages sent (a CDC delete is two: the event and its tombstone) */
  messages: number;
}

/** A fresh topic of `partitions` partitions, and an idempotent producer connected to the cluster. */
async function openTopic(cfg: FloeConfig, topic: string, partitions: number): Promise<{ admin: Admin; producer: Producer }> {
  const kafka = new Kafka({ clientId: 'floe-demo', brokers: cfg.kafka.brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await createTopicsReady(admin, [{ topic, numPartitions: partitions, replicationFactor: 1 }]);
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, retry: { retries: 30, maxRetryTime: 5000 } });
  await producer.connect();
  return { admin, producer };
}

/** The next events up to the `due`-th, every `malformedEvery`-th one malformed. */
function nextMessages(
  events: Generator<OrderEvent>,
  due: number,
  malformedEvery: number | undefined,
  n: Produced,
): Array<{ key: string; value: string | null }> {
  const messages = [];
  while (n.produced < due) {
    const e = events.next().value!;
    const good = JSON.stringify(e);
    n.produced++;
    n.messages++;
    let value = good;
    if (malformedEvery && n.produced % malformedEvery === 0) {
      value = malformed(n.produced / malformedEvery, good);
      n.malformed++;
    }
    messages.push({ key: eventKey(e!), value });
  }
  return messages;
}

/** A customer table's next changes up to the `due`-th, as messages. */
function nextChanges(
  source: CustomerSource,
  mode: 'upsert' | 'cdc',
  due: number,
  n: Produced,
): Array<{ key: string; value: string | null }> {
  const out: Array<{ key: string; value: string | null }> = [];
  while (n.produced < due) out.push(...changeMessages(source.next(), mode, n.produced++));
  n.messages += out.length;
  return out;
}

/** Produce batch period: small batches on a fixed schedule hold the rate whatever the broker latency. */
const BATCH_EVERY_MS = 100;

/** Streams `ratePerS` events for `durationS` into `topic`, killing and restarting the worker on schedule. */
async function streamEvents(
  o: ScenarioOptions,
  producer: Producer,
  topic: string,
  worker: ScenarioWorker,
  t0: number,
  n: Produced,
  source: CustomerSource | undefined,
) {
  const events = orderEvents();
  const kills = new KillSchedule(o.kills, worker);
  const total = Math.round(o.ratePerS * o.durationS);
  for (let tick = 0; n.produced < total; tick++) {
    const due = Math.min(total, Math.round(((tick + 1) * BATCH_EVERY_MS * o.ratePerS) / 1000));
    const messages = source ? nextChanges(source, o.changes!.mode, due, n) : nextMessages(events, due, o.malformedEvery, n);
    if (messages.length) await producer.send({ topic, messages, compression: CompressionTypes.None });
    const elapsed = (Date.now() - t0) / 1000;
    await kills.at(elapsed);
    if (o.onTick) await o.onTick(elapsed);
    const next = t0 + (tick + 1) * BATCH_EVERY_MS;
    await sleep(Math.max(0, next - Date.now()));
  }
  await kills.finish(t0);
}

/** Stops the ingest and waits for it to drain; past `timeoutS`, fails with its status. */
export async function drain(fc: FloeClient, table: string, timeoutS: number): Promise<IngestStatus> {
  await signalIngest(fc, table, 'stop');
  let drainTimer: NodeJS.Timeout | undefined;
  return Promise.race([
    waitForIngest(fc, table),
    new Promise<never>((_, reject) => {
      drainTimer = setTimeout(() => {
        void ingestStatus(fc, table).then(
          (s) => reject(new Error(`ingest did not drain within ${timeoutS}s; status: ${JSON.stringify(s)}`)),
          reject,
        );
      }, timeoutS * 1000);
    }),
  ]).finally(() => clearTimeout(drainTimer));
}

const defaultName = (what: string): string =>
  `${what}_${new Date()
    .toISOString()
    .replace(/[-:T.Z]/g, '')
    .slice(0, 14)}`;

/** An upsert/CDC table against its source state, in the terms of an append table's verification. */
async function verifyChanges(cfg: FloeConfig, table: string, topic: string, source: CustomerSource): Promise<Verification> {
  const u = await verifyUpsertTable(cfg, table, source.state);
  return {
    messagesInTopic: await countTopicMessages(cfg.kafka.brokers, topic),
    rows: u.rows,
    distinctEventIds: u.expected,
    deadLetters: u.deadLetters,
    duckdb: 'error' in u.duckdb ? u.duckdb : { rows: u.duckdb.rows, distinctEventIds: u.duckdb.distinct, deadLetters: u.deadLetters },
    metadataLocation: u.metadataLocation,
    ok: u.ok,
    problems: u.problems,
  };
}

export async function runScenario(o: ScenarioOptions): Promise<ScenarioResult> {
  const log = o.log ?? ((m: string) => console.log(m));
  const name = o.name ?? defaultName(o.changes ? 'customers' : 'orders');
  const {
    path: configPath,
    table,
    topic,
  } = o.changes
    ? scenarioConfig(name, o.partitions, o.commitInterval ?? '3s', { mode: o.changes.mode, ...o.tableOverrides }, 'customers.yaml')
    : scenarioConfig(name, o.partitions, o.commitInterval ?? '5s', o.tableOverrides);
  const source = o.changes ? new CustomerSource(o.changes.keys) : undefined;
  const cfg = loadConfig(configPath);
  const { admin, producer } = await openTopic(cfg, topic, o.partitions);
  const worker = new ScenarioWorker(configPath, name, o, log);
  log(
    `worker ${worker.pid} started; streaming ${o.ratePerS} events/s for ${o.durationS}s into topic ${topic} (${o.partitions} partitions)`,
  );
  const fc = await connectClient(cfg);
  const t0 = Date.now();
  const n: Produced = { produced: 0, malformed: 0, messages: 0 };
  // What the ingest has covered: rows and dead letters of an append table; the cursor's offsets
  // (from 0 in the fresh topic) of a table whose rows change (its rows are fewer than its records).
  const committedOf = (s: IngestStatus): number =>
    source ? Object.values(s.cursor).reduce((x, o) => x + Number(o), 0) : s.totalRows + s.totalDeadLetters;
  let sampler: Sampler | null = null;
  try {
    await startIngest(fc, table);
    if (o.onProgress)
      sampler = startSampler(
        fc,
        table,
        cfg.tables[0]!.ingestId,
        t0,
        () => n.messages,
        o.onProgress,
        o.progressEveryMs ?? 2000,
        committedOf,
      );
    await streamEvents(o, producer, topic, worker, t0, n, source);
    log(`produced ${n.messages} messages (${n.malformed} malformed) in ${((Date.now() - t0) / 1000).toFixed(1)}s; draining`);
    const status = await drain(fc, table, o.drainTimeoutS ?? 180);
    await sampler?.stop();
    o.onProgress?.({
      tS: (Date.now() - t0) / 1000,
      produced: n.messages,
      committed: committedOf(status),
      commits: status.commits,
      workerUp: true,
    });
    log(
      `ingest stopped after ${status.commits} commits (${status.fencedCommits} fenced), ${status.totalRows} rows, ${status.totalDeadLetters} dead letters`,
    );
    const v = source ? await verifyChanges(cfg, table, topic, source) : await verifyTable(cfg, table, topic);
    return {
      ...v,
      table,
      topic,
      configPath,
      produced: n.produced,
      malformed: n.malformed,
      kills: worker.kills,
      selfExits: worker.selfExits,
      ...(source
        ? { sourceState: [...source.state.values()].map((c): [number, number] => [c.id, c.version]).sort((a, b) => a[0] - b[0]) }
        : {}),
      elapsedS: (Date.now() - t0) / 1000,
    };
  } finally {
    await sampler?.stop().catch(() => undefined);
    await worker.stop();
    await producer.disconnect().catch(() => undefined);
    await admin.disconnect().catch(() => undefined);
    await fc.close().catch(() => undefined);
  }
}
