#!/usr/bin/env -S npx tsx
/**
 * Chaos proof: exactly-once ingest and safe maintenance while everything dies.
 *
 *   npx tsx bench/chaos.ts [--duration 20m] [--workers 3] [--rate 50] [--kill-every 8s]
 *       [--restart-delay 1s-5s] [--restarts 3 | --restarts kafka:3,temporal:3,s3:3,postgres:3]
 *       [--partitions 4] [--malformed-every 50] [--commit-interval 5s] [--backfill-block 60s]
 *       [--orphans-every 2m] [--orphan-grace 60s] [--expire-older-than 1m] [--retain-last 5]
 *       [--compact-cron <cron>] [--expire-cron <cron>] [--drain-timeout 15m] [--quiesce-timeout 12m]
 *       [--seed N] [--name chaos_x]
 *
 * What runs, for --duration:
 * - 3 `floe worker` OS processes (workers/process.ts, as the demo spawns them) on a task queue of
 *   their own. Every ~--kill-every (uniformly 0.5x..1.5x) a random running worker is SIGKILLed
 *   and restarted after a random --restart-delay; a worker that dies by itself (e.g. when the
 *   Temporal server goes away) is restarted after 1 s, as a supervisor would.
 * - A live ingest of the demo orders config (day(event_time) + identity(event_type) partitions,
 *   a 4-partition topic, every --malformed-every-th message malformed so it is dead-lettered) at a
 *   steady --rate, into a table on the **Postgres** catalog (so restarting Postgres matters: every
 *   commit is a CAS on its `iceberg_tables` row), data and metadata on SeaweedFS S3.
 * - Compaction on a **real Temporal Schedule** (`floe schedules apply` from the table's
 *   `maintenance:` config, cron every minute — a cron's finest step — overlap SKIP); expiry on a
 *   Schedule too (every 2 minutes, olderThan 1m, retainLast 5). The orphan sweep cannot be
 *   scheduled with a short grace: scheduled runs take the config's grace and a grace below 1 hour
 *   needs `force`, which Schedules do not pass. So a loop here starts `floe orphans --force
 *   --older-than <grace>` (client/maintenance removeOrphans) on the table and its dead-letter table
 *   every --orphans-every; the table's orphan Schedule is applied paused.
 * - A backfill into the same table, of a range the live ingest does not cover: before anything
 *   starts, --backfill-block seconds' worth of messages are produced; the live ingest's cursor is
 *   then moved to the end of that block with `floe ingest reset --to latest` (a cursor-only
 *   exactly-once commit), so the live ingest reads only what is produced afterwards; early in the
 *   run `floe backfill --from <low> --to <block end> --force` loads the block. (--force: the
 *   backfill's overlap check refuses any range while a live ingest holds the topic, although this
 *   live ingest's cursor starts at the block's end.) Same table, so the invariant stays one
 *   simple statement about the whole topic — every good message exactly once in the table, every
 *   bad one exactly once in the dead-letter table — while backfill commits race the live ingest's
 *   commits, compaction and expiry under the same kills and restarts. Once loaded, the backfill
 *   is run a second time, which must add nothing.
 * - Restarts of Kafka, the Temporal dev server, SeaweedFS and Postgres, --restarts times each,
 *   spread over the run in random order, one at a time (stop, 1-6 s down, start).
 *
 * At the end: chaos stops, every service and worker is brought up, the producer stops, the
 * backfill is awaited, the ingest drained (`floe ingest stop --wait`: drain signal, await the
 * workflow's result), the maintenance Schedules paused and running maintenance awaited, and one
 * last orphan sweep runs (the next scheduled sweep of a real deployment). Then, without floe's
 * reader or catalog code (test/support/chaos-check.ts): the topic read back, the metadata
 * location read from the catalog's Postgres row, both tables read by PyIceberg and DuckDB, the
 * table locations listed on S3. Invariants: rows == good messages in the topic (by partition and
 * offset, each exactly once: duplicates 0, lost 0, nothing unexpected), dead letters == bad
 * messages (same), both engines agree, every file the current metadata references exists, no
 * unreferenced file older than the grace (as of the last sweep) remains, and no workflow on the
 * run's task queue failed. Prints one summary line and exits 1 if anything fails.
 */
import { join, resolve } from 'node:path';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { CompressionTypes, Kafka, logLevel, type Message, type Producer } from 'kafkajs';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { ScheduleNotFoundError, WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure, ChildWorkflowFailure } from '@temporalio/common';
import { ensureStack, stackDown } from '../stack/stack';
import { stackEnv } from '../stack/env';
import { floeHome } from '../stack/paths';
import type { ServiceName } from '../stack/service';

/** The services chaos restarts (the stack's other services are left alone). */
type ChaosService = Extract<ServiceName, 'kafka' | 'temporal' | 's3' | 'postgres'>;
import { findTable, loadConfig, parseDuration } from '../config';
import { connectClient, runBackfill, signalIngest, startIngest, waitForIngest, ingestStatus, type FloeClient } from '../client';
import { applySchedules, maintenanceScheduleId, removeOrphans, setSchedulesPaused, SCHEDULE_KINDS } from '../client/maintenance';
import { createDeps } from '../activities';
import { resetCursor, resolveResetTarget } from '../ingest/reset';
import { orderEvents, eventKey } from '../demo/generator';
import { ChaosWorkerPool } from '../test/support/chaos-workers';
import {
  KIND_HEADER,
  SEQ_HEADER,
  auditFiles,
  catalogMetadataLocation,
  engineCheck,
  listLocation,
  readTopic,
  type EngineReport,
  type FileAudit,
  type TopicContents,
} from '../test/support/chaos-check';
import { prng } from './support/prng';
import { ensureIngestTables } from '../ingest/tables';

const SERVICES: ChaosService[] = ['kafka', 'temporal', 's3', 'postgres'];
/** The running main's cleanup, for the CLI's SIGINT/SIGTERM handler. */
let interrupted: (() => Promise<void>) | null = null;
const CATALOG_NAME = 'floe_chaos';

export interface ChaosOptions {
  durationMs: number;
  workers: number;
  ratePerS: number;
  /** mean time between two SIGKILLs (each interval uniformly 0.5x..1.5x) */
  killEveryMs: number;
  /** a killed worker comes back after a uniformly random delay in this range */
  restartDelayMs: [number, number];
  /** restarts per service over the run */
  restarts: Record<ChaosService, number>;
  /** how long a restarted service stays down, uniformly random in this range */
  serviceDownMs: [number, number];
  partitions: number;
  /** every n-th message is malformed (0: none) */
  malformedEvery: number;
  commitInterval: string;
  /** seconds' worth of messages (at --rate) produced before the live ingest starts, loaded by the backfill */
  backfillBlockS: number;
  /** when (fraction of the duration) the backfill starts */
  backfillAtFrac: number;
  compactCron: string;
  expireCron: string;
  expireOlderThan: string;
  retainLast: number;
  orphansEveryMs: number;
  orphanGraceMs: number;
  drainTimeoutMs: number;
  /** how long to wait for running maintenance after the Schedules are paused */
  quiesceTimeoutMs: number;
  seed: number;
  name?: string;
  log?: (msg: string) => void;
}

export const DEFAULTS: ChaosOptions = {
  durationMs: 20 * 60_000,
  workers: 3,
  ratePerS: 50,
  killEveryMs: 8000,
  restartDelayMs: [1000, 5000],
  restarts: { kafka: 3, temporal: 3, s3: 3, postgres: 3 },
  serviceDownMs: [1000, 6000],
  partitions: 4,
  malformedEvery: 50,
  commitInterval: '5s',
  backfillBlockS: 60,
  backfillAtFrac: 0.1,
  compactCron: '* * * * *',
  expireCron: '*/2 * * * *',
  expireOlderThan: '1m',
  retainLast: 5,
  orphansEveryMs: 2 * 60_000,
  orphanGraceMs: 60_000,
  drainTimeoutMs: 15 * 60_000,
  quiesceTimeoutMs: 12 * 60_000,
  seed: Date.now() % 1_000_000,
};

export interface ChaosResult {
  name: string;
  table: string;
  durationMs: number;
  kills: number;
  workerSelfExits: number;
  restarts: Record<ChaosService, number>;
  produced: { good: number; bad: number };
  topic: { good: number; bad: number; resent: number; foreign: number };
  rows: number;
  duplicates: number;
  lost: number;
  unexpected: number;
  deadLetters: number;
  badMessages: number;
  missingFiles: number;
  orphans: number;
  failures: number;
  problems: string[];
  workflows: Record<string, Record<string, number>>;
  /** maintenance still running after --quiesce-timeout (not an invariant failure; see the log) */
  stillRunning: string[];
  report?: EngineReport;
  audits?: { main: FileAudit; deadLetters: FileAudit };
  summary: string;
  ok: boolean;
}

/** An elapsed time for the log, to the second: `45s`, `20m00s` (not a duration to parse back; see config/units). */
function formatElapsed(ms: number): string {
  const s = Math.round(ms / 1000);
  return s >= 60 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s` : `${s}s`;
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

/** The demo orders table on the Postgres catalog, with maintenance crons for the chaos run. */
function writeConfig(name: string, o: ChaosOptions): { path: string; table: string; topic: string } {
  const base = parseYaml(readFileSync(resolve(__dirname, '../examples/orders.yaml'), 'utf8')) as any;
  const table = `chaos.${name}`;
  base.catalog = { type: 'sql', uri: stackEnv().postgres.url, warehouse: `s3://${stackEnv().s3.bucket}/chaos`, name: CATALOG_NAME };
  base.temporal = { ...(base.temporal ?? {}), taskQueue: `floe-${name}` };
  const t = base.tables[0];
  Object.assign(t, { table, topic: name, commitInterval: o.commitInterval, parallelism: Math.min(2, o.partitions) });
  t.maintenance = {
    compact: { cron: o.compactCron, minInputFiles: 5, targetFileSizeBytes: 64 * 1024 * 1024 },
    expire: { cron: o.expireCron, olderThan: o.expireOlderThan, retainLast: o.retainLast },
    // Scheduled sweeps cannot pass `force`; the chaos loop sweeps with a short grace instead.
    orphans: { cron: '30 3 * * *', olderThan: '3d', paused: true },
  };
  const dir = join(floeHome(), 'runs');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.yaml`);
  writeFileSync(path, stringifyYaml(base));
  return { path, table, topic: name };
}

/** A workflow that ended failed: retrying the call cannot help (client/ rootCause wraps it as the cause). */
const workflowFailed = (e: unknown): boolean =>
  e instanceof WorkflowFailedError || (e as { cause?: unknown })?.cause instanceof WorkflowFailedError;

/**
 * Retries `fn` until it succeeds or `deadline`; every failure is logged (servers restart under
 * us). A failed workflow is not retried.
 */
async function retrying<T>(what: string, fn: () => Promise<T>, log: (m: string) => void, deadline: number, pauseMs = 2000): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (e) {
      if (workflowFailed(e)) throw e;
      if (Date.now() + pauseMs > deadline) throw new Error(`${what}: still failing after ${attempt} attempts: ${(e as Error).message}`);
      log(`${what}: attempt ${attempt} failed (${(e as Error).message.split('\n')[0]}); retrying`);
      await sleep(pauseMs);
    }
  }
}

export async function main(opts: Partial<ChaosOptions> = {}): Promise<ChaosResult> {
  const o: ChaosOptions = { ...DEFAULTS, ...opts, restarts: { ...DEFAULTS.restarts, ...(opts.restarts ?? {}) } };
  const t00 = Date.now();
  const log = (m: string) => (o.log ?? ((x: string) => console.log(x)))(`[chaos +${((Date.now() - t00) / 1000).toFixed(1)}s] ${m}`);
  const rnd = prng(o.seed);
  const between = ([a, b]: [number, number]) => a + rnd() * (b - a);
  const problems: string[] = [];

  await ensureStack(SERVICES);
  const name =
    o.name ??
    `chaos_${new Date()
      .toISOString()
      .replace(/[-:T.Z]/g, '')
      .slice(0, 14)}_${o.seed}`;
  const { path: configPath, table, topic } = writeConfig(name, o);
  const cfg = loadConfig(configPath);
  const t = findTable(cfg, table);
  log(
    `run ${name} (seed ${o.seed}): table ${table} (catalog ${CATALOG_NAME} on Postgres), topic ${topic}, ${o.workers} workers, ${o.ratePerS} msg/s for ${formatElapsed(o.durationMs)}, kill every ~${o.killEveryMs / 1000}s; config ${configPath}`,
  );

  const kafka = new Kafka({ clientId: 'floe-chaos', brokers: cfg.kafka.brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: o.partitions, replicationFactor: 1 }], waitForLeaders: true });
  await admin.disconnect();
  const producer: Producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, retry: { retries: 10, maxRetryTime: 5000 } });
  await producer.connect();

  // ---- messages: n -> (key, value, headers); every n-th is malformed ----
  const events = orderEvents();
  let nextSeq = 0;
  const produced = { good: 0, bad: 0 };
  let producerErrors = 0;
  const makeBatch = (count: number): Message[] => {
    const out: Message[] = [];
    for (let i = 0; i < count; i++) {
      const n = nextSeq++;
      const e = events.next().value!;
      const good = JSON.stringify(e);
      const bad = o.malformedEvery > 0 && (n + 1) % o.malformedEvery === 0;
      out.push({
        key: eventKey(e),
        value: bad ? malformed(n, good) : good,
        headers: { [SEQ_HEADER]: String(n), [KIND_HEADER]: bad ? 'bad' : 'good' },
      });
    }
    return out;
  };
  const send = async (messages: Message[], deadline: number) => {
    // At-least-once into Kafka: a send that failed after the broker stored it is sent again; the
    // checker sees the copy as a repeated chaos-seq, not as a floe duplicate.
    await retrying(
      `produce ${messages.length} messages`,
      () => producer.send({ topic, messages, compression: CompressionTypes.None }),
      (m) => {
        producerErrors++;
        log(m);
      },
      deadline,
      1000,
    );
    for (const m of messages) produced[m.headers![KIND_HEADER] === 'bad' ? 'bad' : 'good']++;
  };

  // ---- the backfill block, then the live cursor past it ----
  const blockSize = Math.round(o.backfillBlockS * o.ratePerS);
  for (let sent = 0; sent < blockSize;) {
    const n = Math.min(1000, blockSize - sent);
    await send(makeBatch(n), Date.now() + 5 * 60_000);
    sent += n;
  }
  const deps = await createDeps(cfg);
  let blockRange: { from: Record<string, string>; to: Record<string, string> };
  try {
    await ensureIngestTables(deps.tables, t, deps.cfg.schemaRegistry);
    const low = await resolveResetTarget(deps.admin, topic, { kind: 'earliest' });
    const high = await resolveResetTarget(deps.admin, topic, { kind: 'latest' });
    blockRange = { from: low, to: high };
    const r = await resetCursor(deps.tables, t, t.ingestId, high); // floe ingest reset --to latest
    log(
      `produced a block of ${blockSize} messages for the backfill (offsets ${JSON.stringify(low)}..${JSON.stringify(high)}); live cursor reset to the block's end (snapshot ${r.snapshotId})`,
    );
  } finally {
    await deps.close();
  }

  const fc: FloeClient = await connectClient(cfg);
  const pool = new ChaosWorkerPool({ configPath, count: o.workers, logDir: join(floeHome(), 'logs'), name, log, random: rnd });
  const restarts: Record<ChaosService, number> = { kafka: 0, temporal: 0, s3: 0, postgres: 0 };
  let stopChaos = false;
  const chaosSleep = async (ms: number) => {
    const until = Date.now() + ms;
    while (!stopChaos && Date.now() < until) await sleep(Math.min(250, until - Date.now()));
  };
  const orphanSweeps = { runs: 0, deleted: 0, errors: 0 };
  let backfillDone = false;
  let drained = false;

  // Runs once, at the end or on SIGINT/SIGTERM (the CLI): workers stopped, Schedules deleted and
  // nothing of this run left running on the server (its task queue has no worker any more).
  let cleaned: Promise<void> | null = null;
  const cleanup = () =>
    (cleaned ??= (async () => {
      stopChaos = true;
      await pool.stopAll().catch(() => undefined);
      await producer.disconnect().catch(() => undefined);
      for (const k of SCHEDULE_KINDS) {
        await fc.client.schedule
          .getHandle(maintenanceScheduleId(k, table))
          .delete()
          .catch((e) => {
            if (!(e instanceof ScheduleNotFoundError)) log(`deleting schedule ${k}: ${(e as Error).message}`);
          });
      }
      const left = await listWorkflows(fc, `TaskQueue = '${cfg.temporal.taskQueue}' AND ExecutionStatus = 'Running'`).catch(() => []);
      for (const w of left) {
        await fc.client.workflow
          .getHandle(w.workflowId, w.runId)
          .terminate('chaos run ended')
          .catch((e) => {
            if (!(e instanceof WorkflowNotFoundError)) log(`terminate ${w.workflowId}: ${(e as Error).message}`);
          });
      }
      await fc.close().catch(() => undefined);
    })());
  interrupted = cleanup;

  try {
    pool.startAll();
    await startIngest(fc, table);
    const applied = await applySchedules(fc, [table]);
    log(`schedules: ${applied.map((s) => `${s.kind} "${s.cron}"${s.paused ? ' (paused)' : ''}`).join(', ')}`);
    const t0 = Date.now();
    const tEnd = t0 + o.durationMs;

    // ---- producer: steady rate, catching up after a broker restart ----
    const producing = (async () => {
      let sent = 0;
      while (Date.now() < tEnd) {
        const due = Math.floor(((Date.now() - t0) / 1000) * o.ratePerS);
        if (due > sent) {
          const n = Math.min(2000, due - sent);
          await send(makeBatch(n), tEnd + 10 * 60_000);
          sent += n;
        } else {
          await sleep(100);
        }
      }
    })();

    // ---- SIGKILL a random worker at random moments ----
    const killing = (async () => {
      while (!stopChaos) {
        await chaosSleep(o.killEveryMs * (0.5 + rnd()));
        if (stopChaos) break;
        const delay = between(o.restartDelayMs);
        const k = await pool.killRandom(delay);
        if (k) log(`kill #${pool.kills}: worker w${k.slot} (pid ${k.pid}) SIGKILLed; back in ${(delay / 1000).toFixed(1)}s`);
      }
    })();

    // ---- service restarts: spread over the run, random order, one at a time ----
    const plan: ChaosService[] = SERVICES.flatMap((s) => Array.from({ length: o.restarts[s] }, () => s));
    for (let i = plan.length - 1; i > 0; i--) {
      const j = Math.floor(rnd() * (i + 1));
      [plan[i], plan[j]] = [plan[j]!, plan[i]!];
    }
    const restarting = (async () => {
      const span = o.durationMs * 0.9;
      for (let i = 0; i < plan.length && !stopChaos; i++) {
        const slot = span / (plan.length + 1);
        const at = t0 + slot * (i + 1) + (rnd() - 0.5) * slot * 0.5;
        await chaosSleep(at - Date.now());
        if (stopChaos) break;
        const svc = plan[i]!;
        const t1 = Date.now();
        try {
          await stackDown([svc], { log: () => undefined });
          await sleep(between(o.serviceDownMs));
          await retrying(`start ${svc}`, () => ensureStack([svc], { log: () => undefined }), log, Date.now() + 5 * 60_000, 3000);
          restarts[svc]++;
          log(`restart: ${svc} stopped and back in ${((Date.now() - t1) / 1000).toFixed(1)}s`);
        } catch (e) {
          problems.push(`restart of ${svc} failed: ${(e as Error).message}`);
          log(`restart of ${svc} failed: ${(e as Error).message}`);
        }
      }
    })();

    // ---- orphan sweeps with a short grace (force) on both tables ----
    const sweep = async (): Promise<Array<{ table: string; cutoffMs: number }>> => {
      const out: Array<{ table: string; cutoffMs: number }> = [];
      for (const tbl of [table, t.deadLetterTable]) {
        const r = await removeOrphans(fc, tbl, { olderThanMs: o.orphanGraceMs, force: true });
        orphanSweeps.runs++;
        orphanSweeps.deleted += r.deleted;
        out.push({ table: tbl, cutoffMs: r.cutoffMs });
        log(
          `orphan sweep ${tbl}: listed ${r.filesListed}, deleted ${r.deleted}, kept young ${r.keptByGracePeriod}, kept pending ${r.keptByPending}`,
        );
      }
      return out;
    };
    const sweeping = (async () => {
      while (!stopChaos) {
        await chaosSleep(o.orphansEveryMs);
        if (stopChaos) break;
        try {
          await sweep();
        } catch (e) {
          orphanSweeps.errors++;
          log(`orphan sweep: ${(e as Error).message.split('\n')[0]}`);
        }
      }
    })();

    // ---- the backfill of the block (then once more: must add nothing) ----
    const backfillBounds = { from: { offsets: blockRange.from }, to: { offsets: blockRange.to } };
    const backfilling = (async () => {
      await sleep(Math.max(0, t0 + o.durationMs * o.backfillAtFrac - Date.now()));
      log(`backfill of ${JSON.stringify(blockRange)} started`);
      const deadline = tEnd + o.drainTimeoutMs;
      const first = await retrying(
        'backfill',
        () => runBackfill(fc, table, backfillBounds.from, backfillBounds.to, true),
        log,
        deadline,
        3000,
      );
      log(
        `backfill done: ${first.status.totalRows} rows, ${first.status.totalDeadLetters} dead letters in ${first.status.commits} commits (${first.status.fencedCommits} fenced)`,
      );
      const again = await retrying(
        'backfill re-run',
        () => runBackfill(fc, table, backfillBounds.from, backfillBounds.to, true),
        log,
        deadline,
        3000,
      );
      log(`backfill re-run: ${again.status.totalRows} rows`);
      backfillDone = true;
    })();
    backfilling.catch(() => undefined); // awaited below

    // ---- progress ----
    const reporting = (async () => {
      while (Date.now() < tEnd && !stopChaos) {
        await chaosSleep(60_000);
        const s = await ingestStatus(fc, table).catch(() => null);
        log(
          `progress: produced ${produced.good + produced.bad}, kills ${pool.kills}, workers up ${pool.running()}/${o.workers}, restarts ${JSON.stringify(restarts)}` +
            (s
              ? `, ingest ${s.state}: ${s.commits} commits (${s.fencedCommits} fenced), ${s.totalRows} rows, lag ${JSON.stringify(s.lag)}`
              : ''),
        );
      }
    })();

    await producing;
    log(
      `produced ${produced.good + produced.bad} messages (${produced.bad} malformed, incl. the block) with ${producerErrors} failed sends; stopping chaos`,
    );
    stopChaos = true;
    await Promise.all([killing, restarting, sweeping, reporting]);
    await retrying('stack up', () => ensureStack(SERVICES, { log: () => undefined }), log, Date.now() + 5 * 60_000, 3000);
    pool.ensureAllRunning();

    // ---- drain: backfill finished, ingest stopped (floe ingest stop --wait) ----
    const drainDeadline = Date.now() + o.drainTimeoutMs;
    const timeout = <T>(p: Promise<T>, what: string) =>
      Promise.race([
        p,
        new Promise<never>((_, rej) => {
          const left = drainDeadline - Date.now();
          setTimeout(
            () => rej(new Error(`${what} not done within the drain timeout (${formatElapsed(o.drainTimeoutMs)})`)),
            Math.max(0, left),
          ).unref();
        }),
      ]);
    try {
      await timeout(backfilling, 'backfill');
    } catch (e) {
      problems.push(`backfill: ${(e as Error).message}`);
    }
    try {
      await retrying('drain signal', () => signalIngest(fc, table, 'stop'), log, drainDeadline);
      log('drain signalled; waiting for the ingest to finish');
      const final = await timeout(
        retrying('await ingest', () => waitForIngest(fc, table), log, drainDeadline),
        'ingest drain',
      );
      drained = true;
      log(
        `ingest drained: ${final.commits} commits (${final.fencedCommits} fenced) in its last run, cursor ${JSON.stringify(final.cursor)}`,
      );
    } catch (e) {
      const s = await ingestStatus(fc, table).catch(() => null);
      problems.push(`drain: ${(e as Error).message}; status ${JSON.stringify(s)}`);
    }

    // ---- quiesce maintenance, final sweep ----
    await retrying(
      'pause schedules',
      () => setSchedulesPaused(fc, table, true, undefined, 'chaos run draining'),
      log,
      Date.now() + 2 * 60_000,
    );
    // Running maintenance is awaited. One that outlives the wait is not a failure of an invariant
    // (e.g. an activity without a heartbeat timeout whose worker was SIGKILLed waits out its
    // start-to-close timeout); it is reported with its pending activities, and files its pending
    // markers protect count as in flight instead of orphans.
    const quiesceDeadline = Date.now() + o.quiesceTimeoutMs;
    let stillRunning: ListedWorkflow[] = [];
    for (;;) {
      const running = await listWorkflows(fc, `TaskQueue = '${cfg.temporal.taskQueue}' AND ExecutionStatus = 'Running'`).catch(() => null);
      if (running && running.length === 0) break;
      if (Date.now() > quiesceDeadline) {
        stillRunning = running ?? [];
        for (const w of stillRunning) {
          const d = await fc.client.workflow
            .getHandle(w.workflowId, w.runId)
            .describe()
            .catch(() => null);
          const acts = (d?.raw.pendingActivities ?? []).map(
            (a) => `${a.activityType?.name} attempt ${a.attempt} (${a.state}) last failure: ${a.lastFailure?.message ?? '-'}`,
          );
          log(
            `still running ${formatElapsed(o.quiesceTimeoutMs)} after the schedules were paused: ${w.workflowId} (${w.type}); pending activities: ${acts.join('; ') || 'none'}`,
          );
        }
        break;
      }
      await sleep(3000);
    }
    let cutoffs: Record<string, number> = {};
    try {
      cutoffs = Object.fromEntries(
        (await retrying('final orphan sweep', sweep, log, Date.now() + 5 * 60_000)).map((c) => [c.table, c.cutoffMs]),
      );
    } catch (e) {
      problems.push(`final orphan sweep: ${(e as Error).message}`);
    }
    await pool.stopAll();

    // ---- failed workflows of this run; slow maintenance; skipped schedule runs ----
    // A workflow that failed because its child failed (a scheduled run whose compaction or expiry
    // failed) is one failure, not two: it is logged, and only the child counts.
    const workflows: Record<string, Record<string, number>> = {};
    const all = await listWorkflows(fc, `TaskQueue = '${cfg.temporal.taskQueue}'`);
    for (const w of all) {
      const by = (workflows[w.type] ??= {});
      by[w.status] = (by[w.status] ?? 0) + 1;
      if (!['COMPLETED', 'CONTINUED_AS_NEW', 'RUNNING'].includes(w.status)) {
        const err = await fc.client.workflow
          .getHandle(w.workflowId, w.runId)
          .result()
          .then(
            () => null,
            (e: Error) => e,
          );
        const line = `workflow ${w.workflowId} (${w.type}) ${w.status}: ${describeFailure(err)}`;
        if (err?.cause instanceof ChildWorkflowFailure) log(`${line} (counted with its child)`);
        else problems.push(line);
      }
      const tookMs = (w.closeTime ?? Date.now()) - w.startTime;
      if (
        w.type !== 'ingestWorkflow' &&
        w.type !== 'backfillWorkflow' &&
        w.type !== 'scheduledMaintenanceWorkflow' &&
        tookMs > 3 * 60_000
      ) {
        log(`slow: ${w.workflowId} took ${formatElapsed(tookMs)}${w.closeTime ? '' : ' (still running)'}: ${await slowestActivity(fc, w)}`);
      }
    }
    for (const k of ['compact', 'expire'] as const) {
      const d = await fc.client.schedule
        .getHandle(maintenanceScheduleId(k, table))
        .describe()
        .catch(() => null);
      if (d)
        log(
          `schedule ${k}: ${d.info.numActionsTaken} runs started, ${d.info.numActionsSkippedOverlap} skipped because the previous run was still going`,
        );
    }
    log(`workflows: ${JSON.stringify(workflows)}; orphan sweeps ${JSON.stringify(orphanSweeps)}`);

    // ---- the independent check ----
    const topicContents = await readTopic(cfg.kafka.brokers, topic);
    const mainMeta = await catalogMetadataLocation(stackEnv().postgres.url, CATALOG_NAME, table);
    const dlMeta = await catalogMetadataLocation(stackEnv().postgres.url, CATALOG_NAME, t.deadLetterTable);
    const report = await engineCheck(mainMeta, dlMeta, topicContents);
    const cutoff = (tbl: string) => cutoffs[tbl] ?? Date.now() - o.orphanGraceMs;
    const audits = {
      main: auditFiles(report.files.main, await listLocation(report.files.main.location), cutoff(table), stillRunning.length > 0),
      deadLetters: auditFiles(
        report.files.deadLetters,
        await listLocation(report.files.deadLetters.location),
        cutoff(t.deadLetterTable),
        stillRunning.length > 0,
      ),
    };
    return finish({
      stillRunning: stillRunning.map((w) => `${w.workflowId} (${w.type})`),
      o,
      name,
      table,
      t00,
      pool,
      restarts,
      produced,
      topicContents,
      report,
      audits,
      workflows,
      problems,
      drained,
      backfillDone,
      log,
    });
  } finally {
    await cleanup();
  }
}

interface ListedWorkflow {
  workflowId: string;
  runId: string;
  type: string;
  status: string;
  startTime: number;
  closeTime?: number;
}

export async function listWorkflows(fc: FloeClient, query: string): Promise<ListedWorkflow[]> {
  const out: ListedWorkflow[] = [];
  for await (const w of fc.client.workflow.list({ query })) {
    out.push({
      workflowId: w.workflowId,
      runId: w.runId,
      type: w.type,
      status: w.status.name,
      startTime: w.startTime.getTime(),
      closeTime: w.closeTime?.getTime(),
    });
  }
  return out;
}

/** `child <id> -> activity <type> -> <ApplicationFailure type>: <message>` down the failure chain. */
export function describeFailure(e: unknown): string {
  const parts: string[] = [];
  for (
    let cur = e as (Error & { cause?: unknown }) | null;
    cur;
    cur = cur.cause instanceof Error ? (cur.cause as Error & { cause?: unknown }) : null
  ) {
    if (cur instanceof ChildWorkflowFailure) parts.push(`child ${cur.execution.workflowId}`);
    else if (cur instanceof ActivityFailure) parts.push(`activity ${cur.activityType}`);
    else if (cur instanceof ApplicationFailure) {
      parts.push(`${cur.type ?? 'Error'}: ${cur.message}`);
      break;
    } else if (!(cur instanceof WorkflowFailedError)) {
      parts.push(`${cur.name}: ${cur.message}`);
      break;
    }
  }
  return parts.join(' -> ') || String(e);
}

/** For a slow workflow: the activity that waited longest between being scheduled and completing, from its history. */
export async function slowestActivity(fc: FloeClient, w: ListedWorkflow): Promise<string> {
  try {
    const history = await fc.client.workflow.getHandle(w.workflowId, w.runId).fetchHistory();
    const scheduled = new Map<string, { type: string; at: number }>();
    let worst = { type: '', ms: 0, attempt: 0 };
    const ms = (t: unknown) =>
      Number((t as { seconds?: unknown })?.seconds ?? 0) * 1000 + Math.floor(Number((t as { nanos?: number })?.nanos ?? 0) / 1e6);
    for (const [i, ev] of (history.events ?? []).entries()) {
      const s = ev.activityTaskScheduledEventAttributes;
      if (s) scheduled.set(String(ev.eventId ?? i + 1), { type: s.activityType?.name ?? '?', at: ms(ev.eventTime) });
      const done =
        ev.activityTaskCompletedEventAttributes ?? ev.activityTaskFailedEventAttributes ?? ev.activityTaskTimedOutEventAttributes;
      if (done) {
        const sch = scheduled.get(String(done.scheduledEventId));
        const started = (history.events ?? []).find(
          (x) => String(x.eventId) === String(done.startedEventId),
        )?.activityTaskStartedEventAttributes;
        if (sch && ms(ev.eventTime) - sch.at > worst.ms)
          worst = { type: sch.type, ms: ms(ev.eventTime) - sch.at, attempt: started?.attempt ?? 0 };
      }
    }
    return worst.type
      ? `activity ${worst.type} took ${formatElapsed(worst.ms)} from scheduled to done (finished on attempt ${worst.attempt})`
      : 'no activity finished';
  } catch (e) {
    return `history unavailable (${(e as Error).message})`;
  }
}

function finish(x: {
  stillRunning: string[];
  o: ChaosOptions;
  name: string;
  table: string;
  t00: number;
  pool: ChaosWorkerPool;
  restarts: Record<ChaosService, number>;
  produced: { good: number; bad: number };
  topicContents: TopicContents;
  report: EngineReport;
  audits: { main: FileAudit; deadLetters: FileAudit };
  workflows: Record<string, Record<string, number>>;
  problems: string[];
  drained: boolean;
  backfillDone: boolean;
  log: (m: string) => void;
}): ChaosResult {
  const { report, audits, topicContents: tc, problems } = x;
  const py = report.pyiceberg,
    dk = report.duckdb;
  const good = tc.good.length,
    bad = tc.bad.length;
  // A message the producer re-sent after a broker restart is in the topic twice (two offsets),
  // with the same event id: expected twice in the table, and the event id counted once.
  if (tc.foreign > 0) problems.push(`${tc.foreign} messages in the topic without chaos headers`);
  if (tc.distinctSeqs !== x.produced.good + x.produced.bad) {
    problems.push(
      `the producer sent ${x.produced.good + x.produced.bad} distinct messages, the topic holds ${tc.distinctSeqs} (Kafka lost some)`,
    );
  }
  // Invariant violations, kept apart from the run's other failures (failed workflows, a drain or
  // backfill that did not finish, a service that did not come back).
  const violations: string[] = [];
  for (const [engine, r] of [
    ['pyiceberg', py],
    ['duckdb', dk],
  ] as const) {
    const m = r.main,
      d = r.deadLetters;
    if (m.rows !== good) violations.push(`${engine}: ${m.rows} rows, expected ${good} good messages`);
    if (m.rows !== m.distinctKeys)
      violations.push(
        `${engine}: ${m.rows - m.distinctKeys} duplicate rows, e.g. (partition, offset, copies) ${JSON.stringify(m.duplicateSample.slice(0, 5))}`,
      );
    if (m.lost > 0)
      violations.push(`${engine}: ${m.lost} good messages missing, e.g. (partition, offset) ${JSON.stringify(m.lostSample.slice(0, 10))}`);
    if (m.unexpected > 0)
      violations.push(
        `${engine}: ${m.unexpected} rows that are not good messages, e.g. ${JSON.stringify(m.unexpectedSample.slice(0, 10))}`,
      );
    if (m.distinctEventIds !== undefined && m.distinctEventIds !== good - tc.resentGood) {
      violations.push(`${engine}: ${m.distinctEventIds} distinct event ids, expected ${good - tc.resentGood}`);
    }
    if (d.rows !== bad) violations.push(`${engine}: ${d.rows} dead letters, expected ${bad} bad messages`);
    if (d.rows !== d.distinctKeys)
      violations.push(
        `${engine}: ${d.rows - d.distinctKeys} duplicate dead letters, e.g. ${JSON.stringify(d.duplicateSample.slice(0, 5))}`,
      );
    if (d.lost > 0)
      violations.push(`${engine}: ${d.lost} bad messages not dead-lettered, e.g. ${JSON.stringify(d.lostSample.slice(0, 10))}`);
    if (d.unexpected > 0)
      violations.push(
        `${engine}: ${d.unexpected} dead letters that are not bad messages, e.g. ${JSON.stringify(d.unexpectedSample.slice(0, 10))}`,
      );
  }
  for (const [which, a] of Object.entries(audits)) {
    if (a.missing.length > 0)
      violations.push(
        `${which}: ${a.missing.length} files referenced by the current metadata are missing, e.g. ${a.missing.slice(0, 5).join(', ')}`,
      );
    if (a.orphans.length > 0)
      violations.push(
        `${which}: ${a.orphans.length} unreferenced files older than the grace remain, e.g. ${a.orphans
          .slice(0, 5)
          .map((f) => `${f.location} (${new Date(f.lastModified).toISOString()})`)
          .join(', ')}`,
      );
    if (a.missingMetadataLog.length + a.missingDeletedEntries.length > 0) {
      x.log(
        `${which}: history only, not needed by readers: ${a.missingMetadataLog.length} metadata-log entries absent, ${a.missingDeletedEntries.length} files of DELETED manifest entries absent`,
      );
    }
    if (a.inFlight.length > 0)
      x.log(`${which}: ${a.inFlight.length} unreferenced files kept by pending markers of maintenance still running`);
    if (a.pendingMarkers.length > 0)
      x.log(`${which}: ${a.pendingMarkers.length} pending markers left: ${a.pendingMarkers.slice(0, 5).join(', ')}`);
  }
  if (!x.drained && !problems.some((p) => p.startsWith('drain'))) problems.push('the ingest did not drain');
  if (!x.backfillDone && !problems.some((p) => p.startsWith('backfill'))) problems.push('the backfill did not finish');

  const rows = py.main.rows;
  const duplicates = Math.max(py.main.rows - py.main.distinctKeys, dk.main.rows - dk.main.distinctKeys);
  const lost = Math.max(py.main.lost, dk.main.lost);
  const missingFiles = audits.main.missing.length + audits.deadLetters.missing.length;
  const orphans = audits.main.orphans.length + audits.deadLetters.orphans.length;
  // failures: failed workflows of the run plus every other problem that is not an invariant above
  const failures = problems.length;
  const durationMs = Date.now() - x.t00;
  const r = x.restarts;
  const summary =
    `chaos: duration=${formatElapsed(durationMs)} kills=${x.pool.kills} restarts=kafka:${r.kafka},temporal:${r.temporal},s3:${r.s3},postgres:${r.postgres} ` +
    `rows=${rows} duplicates=${duplicates} lost=${lost} dead_letters=${py.deadLetters.rows}/${bad} missing_files=${missingFiles} orphans=${orphans} failures=${failures}`;
  return {
    name: x.name,
    table: x.table,
    durationMs,
    kills: x.pool.kills,
    workerSelfExits: x.pool.selfExits,
    restarts: r,
    produced: x.produced,
    topic: { good, bad, resent: tc.resent, foreign: tc.foreign },
    rows,
    duplicates,
    lost,
    unexpected: Math.max(py.main.unexpected, dk.main.unexpected),
    deadLetters: py.deadLetters.rows,
    badMessages: bad,
    missingFiles,
    orphans,
    failures,
    problems: [...violations, ...problems],
    workflows: x.workflows,
    stillRunning: x.stillRunning,
    report,
    audits,
    summary,
    ok: violations.length === 0 && problems.length === 0,
  };
}

// ---------- CLI ----------

function parseArgs(argv: string[]): Partial<ChaosOptions> {
  const o: Partial<ChaosOptions> = {};
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i]!,
      v = () => {
        const x = argv[++i];
        if (x === undefined) throw new Error(`${k}: expected a value`);
        return x;
      };
    /** A duration (config/units: 500ms, 8s, 20m, 1h, or plain millis), errors naming the option. */
    const ms = (s: string): number => {
      try {
        return parseDuration(s);
      } catch (e) {
        throw new Error(`${k}: ${(e as Error).message}`);
      }
    };
    const duration = () => ms(v());
    const range = (): [number, number] => {
      const [a, b] = v().split(/-|\.\./);
      return [ms(a!), ms(b ?? a!)];
    };
    switch (k) {
      case '--duration':
        o.durationMs = duration();
        break;
      case '--workers':
        o.workers = Number(v());
        break;
      case '--rate':
        o.ratePerS = Number(v());
        break;
      case '--kill-every':
        o.killEveryMs = duration();
        break;
      case '--restart-delay':
        o.restartDelayMs = range();
        break;
      case '--service-down':
        o.serviceDownMs = range();
        break;
      case '--restarts': {
        const s = v();
        o.restarts = /^\d+$/.test(s)
          ? { kafka: Number(s), temporal: Number(s), s3: Number(s), postgres: Number(s) }
          : {
              ...DEFAULTS.restarts,
              ...Object.fromEntries(
                s.split(',').map((kv) => {
                  const [a, b] = kv.split(':');
                  return [a, Number(b)];
                }),
              ),
            };
        break;
      }
      case '--partitions':
        o.partitions = Number(v());
        break;
      case '--malformed-every':
        o.malformedEvery = Number(v());
        break;
      case '--commit-interval':
        o.commitInterval = v();
        break;
      case '--backfill-block':
        o.backfillBlockS = duration() / 1000;
        break;
      case '--backfill-at':
        o.backfillAtFrac = Number(v());
        break;
      case '--compact-cron':
        o.compactCron = v();
        break;
      case '--expire-cron':
        o.expireCron = v();
        break;
      case '--expire-older-than':
        o.expireOlderThan = v();
        break;
      case '--retain-last':
        o.retainLast = Number(v());
        break;
      case '--orphans-every':
        o.orphansEveryMs = duration();
        break;
      case '--orphan-grace':
        o.orphanGraceMs = duration();
        break;
      case '--drain-timeout':
        o.drainTimeoutMs = duration();
        break;
      case '--quiesce-timeout':
        o.quiesceTimeoutMs = duration();
        break;
      case '--seed':
        o.seed = Number(v());
        break;
      case '--name':
        o.name = v();
        break;
      default:
        throw new Error(`unknown option ${k}; see the header of bench/chaos.ts`);
    }
  }
  for (const [k, val] of Object.entries(o)) {
    if (typeof val === 'number' && !Number.isFinite(val)) throw new Error(`--${k}: expected a number`);
  }
  return o;
}

if (require.main === module) {
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      console.error(`chaos: ${sig}: stopping workers, deleting this run's schedules and workflows`);
      void Promise.race([interrupted?.(), sleep(30_000)]).finally(() => process.exit(130));
    });
  }
  main(parseArgs(process.argv.slice(2))).then(
    (r) => {
      for (const p of r.problems) console.log(`chaos: FAILED ${p}`);
      console.log(r.summary);
      process.exit(r.ok ? 0 : 1);
    },
    (e: Error) => {
      console.error(`chaos: error: ${e.stack ?? e.message}`);
      process.exit(2);
    },
  );
}
