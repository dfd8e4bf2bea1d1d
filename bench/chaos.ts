#!/usr/bin/env -S npx tsx
/**
 * Chaos proof: exactly-once ingest and safe maintenance while everything dies.
 *
 *   npx tsx bench/chaos.ts [--duration 20m] [--workers 3] [--rate 50] [--kill-every 8s]
 *       [--restart-delay 1s-5s] [--restarts 3 | --restarts kafka:3,temporal:3,s3:3,postgres:3]
 *       [--partitions 4] [--malformed-every 50] [--commit-interval 5s] [--backfill-block 60s]
 *       [--orphans-every 2m] [--orphan-grace 60s] [--expire-older-than 1m] [--retain-last 5]
 *       [--compact-cron <cron>] [--expire-cron <cron>] [--drain-timeout 15m] [--quiesce-timeout 12m]
 *       [--multi-topic on|off] [--route on|off] [--registry on|off] [--mix-rate 10] [--mix-partitions 2]
 *       [--route-values 6] [--schema-change-at 0.5] [--seed N] [--name chaos_x]
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
 * - The mix (bench/support/chaos-mix.ts; each part on by default, its own topics and tables on the
 *   same catalog and workers, --mix-rate msg/s into each topic, every --malformed-every-th message
 *   malformed): an entry reading two topics (--multi-topic); a route by a field into tables created
 *   on the fly, --route-values of them appearing over the run (--route); Avro through the stack's
 *   Schema Registry whose schema gains an optional field at --schema-change-at of the run, so the
 *   table evolves mid-stream (--registry). Their ingests are drained with the orders one.
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
 * run's task queue failed. The mix's tables the same (no orphan audit: they get no sweeps), by
 * (topic, partition, offset), and every row where its value says: the route's table of its value,
 * the entry's table with its topic, the registry table's new column null before the change and
 * the message's value after. Prints one summary line and exits 1 if anything fails.
 */
import { join, resolve } from 'node:path';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { ScheduleNotFoundError, WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure, ChildWorkflowFailure } from '@temporalio/common';
import { ensureStack, stackDown } from '../stack/stack';
import { stackEnv } from '../stack/env';
import { floeHome } from '../stack/paths';
import type { ServiceName } from '../stack/service';

/** The services chaos restarts (the stack's other services are left alone). */
type ChaosService = Extract<ServiceName, 'kafka' | 'temporal' | 's3' | 'postgres'>;
import { findTable, loadConfig, parseDuration, type FloeConfig, type TableConfig } from '../config';
import { connectClient, runBackfill, signalIngest, startIngest, waitForIngest, ingestStatus, type FloeClient } from '../client';
import { applySchedules, maintenanceScheduleId, removeOrphans, setSchedulesPaused, SCHEDULE_KINDS } from '../client/maintenance';
import { createDeps } from '../activities';
import { resetCursor, resolveResetTarget } from '../ingest/reset';
import { orderEvents, eventKey } from '../demo/generator';
import { ChaosWorkerPool } from '../test/support/chaos-workers';
import {
  auditFiles,
  catalogMetadataLocation,
  engineCheck,
  listLocation,
  readTopic,
  type EngineReport,
  type FileAudit,
  type TopicContents,
} from '../test/support/chaos-check';
import { benchArgs } from './support/args';
import { prng } from './support/prng';
import { ChaosFeed, openTopic, retrying, type Log, type MakeMessage } from './support/chaos-feed';
import { Mix, mixEntries, mixSummary, type MixEntry, type MixOptions, type MixResult } from './support/chaos-mix';
import { ensureIngestTables } from '../ingest/tables';

const SERVICES: ChaosService[] = ['kafka', 'temporal', 's3', 'postgres'];
/** The running main's cleanup, for the CLI's SIGINT/SIGTERM handler. */
let interrupted: (() => Promise<void>) | null = null;
const CATALOG_NAME = 'floe_chaos';

export interface ChaosOptions extends MixOptions {
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
  multiTopic: true,
  route: true,
  registry: true,
  mixRatePerS: 10,
  mixPartitions: 2,
  routeValues: 6,
  schemaChangeAtFrac: 0.5,
};

export interface ChaosResult {
  name: string;
  table: string;
  durationMs: number;
  kills: number;
  /** of `kills`, those of a worker that was polling its task queue (the rest were still starting) */
  killsOfPolling: number;
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
  /** the mix's entries (multi-topic, route, registry), each checked like the orders table */
  mix: MixResult[];
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

/** The demo orders table on the Postgres catalog, with maintenance crons for the chaos run, and the mix's entries. */
function writeConfig(name: string, o: ChaosOptions, mix: MixEntry[]): { path: string; table: string; topic: string } {
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
  base.tables.push(...mix.map((e) => e.config));
  if (mix.some((e) => e.kind === 'registry')) base.schemaRegistry = { url: stackEnv().schemaRegistry.url };
  const dir = join(floeHome(), 'runs');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.yaml`);
  writeFileSync(path, stringifyYaml(base));
  return { path, table, topic: name };
}

type Between = (range: [number, number]) => number;
type BlockRange = { from: Record<string, string>; to: Record<string, string> };
type OrphanSweeps = { runs: number; deleted: number; errors: number };

/** The demo orders as chaos messages: every malformed one broken in one of three ways (not JSON, a required field missing, a wrong type). */
function orderMessages(): MakeMessage {
  const events = orderEvents();
  return (n, bad) => {
    const e = events.next().value!;
    const good = JSON.stringify(e);
    return { key: eventKey(e), value: bad ? malformed(n, good) : good };
  };
}

/**
 * The backfill's block: --backfill-block seconds' worth of messages, then the live ingest's cursor
 * reset past it (`floe ingest reset --to latest`), so only the backfill loads the block.
 */
async function produceBackfillBlock(
  o: ChaosOptions,
  cfg: FloeConfig,
  t: TableConfig,
  topic: string,
  feed: ChaosFeed,
  log: Log,
): Promise<BlockRange> {
  const blockSize = Math.round(o.backfillBlockS * o.ratePerS);
  for (let sent = 0; sent < blockSize;) {
    const n = Math.min(1000, blockSize - sent);
    await feed.send(feed.batch(n), Date.now() + 5 * 60_000);
    sent += n;
  }
  const deps = await createDeps(cfg);
  try {
    await ensureIngestTables(deps.tables, t, deps.cfg.schemaRegistry);
    const low = await resolveResetTarget(deps.admin, topic, { kind: 'earliest' });
    const high = await resolveResetTarget(deps.admin, topic, { kind: 'latest' });
    const r = await resetCursor(deps.tables, t, t.ingestId, high); // floe ingest reset --to latest
    log(
      `produced a block of ${blockSize} messages for the backfill (offsets ${JSON.stringify(low)}..${JSON.stringify(high)}); live cursor reset to the block's end (snapshot ${r.snapshotId})`,
    );
    return { from: low, to: high };
  } finally {
    await deps.close();
  }
}

/** One chaos run once its topic and backfill block exist: the workers, the chaos, the drain and the check. */
class ChaosRun {
  readonly restarts: Record<ChaosService, number> = { kafka: 0, temporal: 0, s3: 0, postgres: 0 };
  readonly problems: string[] = [];
  readonly orphanSweeps: OrphanSweeps = { runs: 0, deleted: 0, errors: 0 };
  readonly pool: ChaosWorkerPool;
  private readonly table: string;
  private stopChaos = false;
  private backfillDone = false;
  private drained = false;
  private cleaned: Promise<void> | null = null;

  constructor(
    private readonly o: ChaosOptions,
    private readonly x: {
      name: string;
      configPath: string;
      cfg: FloeConfig;
      t: TableConfig;
      topic: string;
      fc: FloeClient;
      feed: ChaosFeed;
      mix: Mix;
      rnd: () => number;
      t00: number;
      log: Log;
    },
  ) {
    this.table = x.t.table;
    this.pool = new ChaosWorkerPool({
      configPath: x.configPath,
      count: o.workers,
      logDir: join(floeHome(), 'logs'),
      name: x.name,
      log: x.log,
      random: x.rnd,
    });
  }

  private readonly log: Log = (m) => this.x.log(m);
  private readonly between: Between = ([a, b]) => a + this.x.rnd() * (b - a);

  /** Sleeps `ms`, or less once the chaos stops. */
  private async chaosSleep(ms: number): Promise<void> {
    const until = Date.now() + ms;
    while (!this.stopChaos && Date.now() < until) await sleep(Math.min(250, until - Date.now()));
  }

  private get runningQuery(): string {
    return `TaskQueue = '${this.x.cfg.temporal.taskQueue}' AND ExecutionStatus = 'Running'`;
  }

  /**
   * Runs once, at the end or on SIGINT/SIGTERM (the CLI): workers stopped, Schedules deleted and
   * nothing of this run left running on the server (its task queue has no worker any more).
   */
  cleanup(): Promise<void> {
    return (this.cleaned ??= (async () => {
      const { fc } = this.x;
      this.stopChaos = true;
      await this.pool.stopAll().catch(() => undefined);
      await this.x.feed.producer.disconnect().catch(() => undefined);
      await this.x.mix.close();
      for (const k of SCHEDULE_KINDS) {
        await fc.client.schedule
          .getHandle(maintenanceScheduleId(k, this.table))
          .delete()
          .catch((e) => {
            if (!(e instanceof ScheduleNotFoundError)) this.log(`deleting schedule ${k}: ${(e as Error).message}`);
          });
      }
      const left = await listWorkflows(fc, this.runningQuery).catch(() => []);
      for (const w of left) {
        await fc.client.workflow
          .getHandle(w.workflowId, w.runId)
          .terminate('chaos run ended')
          .catch((e) => {
            if (!(e instanceof WorkflowNotFoundError)) this.log(`terminate ${w.workflowId}: ${(e as Error).message}`);
          });
      }
      await fc.close().catch(() => undefined);
    })());
  }

  /** The whole run, top-down; cleans up whatever happens. */
  async run(blockRange: BlockRange): Promise<ChaosResult> {
    try {
      this.pool.startAll();
      await startIngest(this.x.fc, this.table);
      for (const e of this.x.mix.entries) await startIngest(this.x.fc, e.table);
      const applied = await applySchedules(this.x.fc, [this.table]);
      this.log(`schedules: ${applied.map((s) => `${s.kind} "${s.cron}"${s.paused ? ' (paused)' : ''}`).join(', ')}`);
      const { backfilling } = await this.chaos(blockRange);
      await this.drain(backfilling);
      const stillRunning = await this.quiesce();
      const cutoffs = await this.finalSweep();
      await this.pool.stopAll();
      const workflows = await this.workflowReport();
      return await this.check(stillRunning, cutoffs, workflows);
    } finally {
      await this.cleanup();
    }
  }

  /**
   * --duration of chaos: the producer at its rate, worker kills, service restarts, orphan sweeps,
   * progress lines and the backfill, side by side; then everything brought back up. Returns the
   * backfill, which may still be running (wrapped: an async function would await it).
   */
  private async chaos(blockRange: BlockRange): Promise<{ backfilling: Promise<void> }> {
    const t0 = Date.now();
    const tEnd = t0 + this.o.durationMs;
    this.x.mix.started(t0);
    const producing = Promise.all([
      this.x.feed.produceSteadily(this.o.ratePerS, t0, tEnd),
      ...this.x.mix.feeds.map((f) => f.produceSteadily(this.o.mixRatePerS, t0, tEnd)),
      this.x.mix.changeSchemaAt(t0 + this.o.durationMs * this.o.schemaChangeAtFrac, this.log, tEnd).catch((e: Error) => {
        this.problems.push(`registry schema change: ${e.message}`);
      }),
    ]);
    // the order these start in is the order they draw from the seeded random source
    const killing = this.killWorkers();
    const restarting = this.restartServices(t0);
    const sweeping = this.sweepPeriodically();
    const backfilling = this.backfill(blockRange, t0, tEnd);
    backfilling.catch(() => undefined); // awaited by drain
    const reporting = this.reportProgress(tEnd);

    await producing;
    const { produced } = this.x.feed;
    const mixed = this.x.mix.produced;
    this.log(
      `produced ${produced.good + produced.bad} messages (${produced.bad} malformed, incl. the block) with ${this.x.feed.errors} failed sends` +
        (this.x.mix.feeds.length
          ? `, and ${mixed.good + mixed.bad} (${mixed.bad} malformed) into the mix's ${this.x.mix.feeds.length} topics`
          : '') +
        '; stopping chaos',
    );
    this.stopChaos = true;
    await Promise.all([killing, restarting, sweeping, reporting]);
    await retrying('stack up', () => ensureStack(SERVICES, { log: () => undefined }), this.log, Date.now() + 5 * 60_000, 3000);
    this.pool.ensureAllRunning();
    await this.x.mix.tail(Date.now() + 5 * 60_000, this.log, Math.max(20, 3 * this.o.routeValues));
    return { backfilling };
  }

  /** SIGKILL a random worker at random moments. */
  private async killWorkers(): Promise<void> {
    while (!this.stopChaos) {
      await this.chaosSleep(this.o.killEveryMs * (0.5 + this.x.rnd()));
      if (this.stopChaos) break;
      const delay = this.between(this.o.restartDelayMs);
      const k = await this.pool.killRandom(delay);
      if (k)
        this.log(
          `kill #${this.pool.kills}: worker w${k.slot} (pid ${k.pid}, ${k.polling ? 'polling' : 'still starting'}) SIGKILLed; back in ${(delay / 1000).toFixed(1)}s`,
        );
    }
  }

  /** Service restarts: spread over the run, in random order, one at a time. */
  private async restartServices(t0: number): Promise<void> {
    const { o, x } = this;
    const plan: ChaosService[] = SERVICES.flatMap((s) => Array.from({ length: o.restarts[s] }, () => s));
    for (let i = plan.length - 1; i > 0; i--) {
      const j = Math.floor(x.rnd() * (i + 1));
      [plan[i], plan[j]] = [plan[j]!, plan[i]!];
    }
    const span = o.durationMs * 0.9;
    for (let i = 0; i < plan.length && !this.stopChaos; i++) {
      const slot = span / (plan.length + 1);
      const at = t0 + slot * (i + 1) + (x.rnd() - 0.5) * slot * 0.5;
      await this.chaosSleep(at - Date.now());
      if (this.stopChaos) break;
      await this.restartService(plan[i]!);
    }
  }

  private async restartService(svc: ChaosService): Promise<void> {
    const t1 = Date.now();
    try {
      await stackDown([svc], { log: () => undefined });
      await sleep(this.between(this.o.serviceDownMs));
      await retrying(`start ${svc}`, () => ensureStack([svc], { log: () => undefined }), this.log, Date.now() + 5 * 60_000, 3000);
      this.restarts[svc]++;
      this.log(`restart: ${svc} stopped and back in ${((Date.now() - t1) / 1000).toFixed(1)}s`);
    } catch (e) {
      this.problems.push(`restart of ${svc} failed: ${(e as Error).message}`);
      this.log(`restart of ${svc} failed: ${(e as Error).message}`);
    }
  }

  /** An orphan sweep with a short grace (force) on both tables; each table's cutoff. */
  private async sweep(): Promise<Array<{ table: string; cutoffMs: number }>> {
    const out: Array<{ table: string; cutoffMs: number }> = [];
    for (const tbl of [this.table, this.x.t.deadLetterTable]) {
      const r = await removeOrphans(this.x.fc, tbl, { olderThanMs: this.o.orphanGraceMs, force: true });
      this.orphanSweeps.runs++;
      this.orphanSweeps.deleted += r.deleted;
      out.push({ table: tbl, cutoffMs: r.cutoffMs });
      this.log(
        `orphan sweep ${tbl}: listed ${r.filesListed}, deleted ${r.deleted}, kept young ${r.keptByGracePeriod}, kept pending ${r.keptByPending}`,
      );
    }
    return out;
  }

  private async sweepPeriodically(): Promise<void> {
    while (!this.stopChaos) {
      await this.chaosSleep(this.o.orphansEveryMs);
      if (this.stopChaos) break;
      try {
        await this.sweep();
      } catch (e) {
        this.orphanSweeps.errors++;
        this.log(`orphan sweep: ${(e as Error).message.split('\n')[0]}`);
      }
    }
  }

  /** The backfill of the block, then once more: the re-run must add nothing. */
  private async backfill(blockRange: BlockRange, t0: number, tEnd: number): Promise<void> {
    const { o, log } = this;
    const fc = this.x.fc;
    const backfillBounds = { from: { offsets: blockRange.from }, to: { offsets: blockRange.to } };
    await sleep(Math.max(0, t0 + o.durationMs * o.backfillAtFrac - Date.now()));
    log(`backfill of ${JSON.stringify(blockRange)} started`);
    const deadline = tEnd + o.drainTimeoutMs;
    const first = await retrying(
      'backfill',
      () => runBackfill(fc, this.table, backfillBounds.from, backfillBounds.to, true),
      log,
      deadline,
      3000,
    );
    log(
      `backfill done: ${first.status.totalRows} rows, ${first.status.totalDeadLetters} dead letters in ${first.status.commits} commits (${first.status.fencedCommits} fenced)`,
    );
    const again = await retrying(
      'backfill re-run',
      () => runBackfill(fc, this.table, backfillBounds.from, backfillBounds.to, true),
      log,
      deadline,
      3000,
    );
    log(`backfill re-run: ${again.status.totalRows} rows`);
    this.backfillDone = true;
  }

  /** A progress line a minute. */
  private async reportProgress(tEnd: number): Promise<void> {
    const { produced } = this.x.feed;
    while (Date.now() < tEnd && !this.stopChaos) {
      await this.chaosSleep(60_000);
      const s = await ingestStatus(this.x.fc, this.table).catch(() => null);
      this.log(
        `progress: produced ${produced.good + produced.bad}, kills ${this.pool.kills}, workers up ${this.pool.running()}/${this.o.workers}, restarts ${JSON.stringify(this.restarts)}` +
          (s
            ? `, ingest ${s.state}: ${s.commits} commits (${s.fencedCommits} fenced), ${s.totalRows} rows, lag ${JSON.stringify(s.lag)}`
            : ''),
      );
    }
  }

  /** Drain: the backfill finished, the ingest stopped (floe ingest stop --wait), both within --drain-timeout. */
  private async drain(backfilling: Promise<void>): Promise<void> {
    const { o, log } = this;
    const fc = this.x.fc;
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
      this.problems.push(`backfill: ${(e as Error).message}`);
    }
    // The orders ingest and every entry of the mix: all signalled, then each awaited.
    const tables = [this.table, ...this.x.mix.entries.map((e) => e.table)];
    let drained = 0;
    const signalled = new Set<string>();
    for (const table of tables) {
      try {
        await retrying(`drain signal ${table}`, () => signalIngest(fc, table, 'stop'), log, drainDeadline);
        signalled.add(table);
      } catch (e) {
        this.problems.push(`drain: ${table}: ${(e as Error).message}`);
      }
    }
    log('drain signalled; waiting for the ingests to finish');
    for (const table of tables.filter((t) => signalled.has(t))) {
      try {
        const final = await timeout(
          retrying(`await ingest ${table}`, () => waitForIngest(fc, table), log, drainDeadline),
          `ingest drain of ${table}`,
        );
        drained++;
        log(
          `ingest ${table} drained: ${final.commits} commits (${final.fencedCommits} fenced) in its last run, cursor ${JSON.stringify(final.cursor)}`,
        );
      } catch (e) {
        const s = await ingestStatus(fc, table).catch(() => null);
        this.problems.push(`drain: ${table}: ${(e as Error).message}; status ${JSON.stringify(s)}`);
      }
    }
    this.drained = drained === tables.length;
  }

  /**
   * Maintenance paused and its running workflows awaited. One that outlives --quiesce-timeout is
   * not a failure of an invariant (e.g. an activity without a heartbeat timeout whose worker was
   * SIGKILLed waits out its start-to-close timeout); it is returned and logged with its pending
   * activities, and files its pending markers protect count as in flight instead of orphans.
   */
  private async quiesce(): Promise<ListedWorkflow[]> {
    const { o, log } = this;
    const fc = this.x.fc;
    await retrying(
      'pause schedules',
      () => setSchedulesPaused(fc, this.table, true, undefined, 'chaos run draining'),
      log,
      Date.now() + 2 * 60_000,
    );
    const quiesceDeadline = Date.now() + o.quiesceTimeoutMs;
    for (;;) {
      const running = await listWorkflows(fc, this.runningQuery).catch(() => null);
      if (running && running.length === 0) return [];
      if (Date.now() > quiesceDeadline) {
        const stillRunning = running ?? [];
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
        return stillRunning;
      }
      await sleep(3000);
    }
  }

  /** The last orphan sweep (the next scheduled sweep of a real deployment): each table's cutoff. */
  private async finalSweep(): Promise<Record<string, number>> {
    try {
      return Object.fromEntries(
        (await retrying('final orphan sweep', () => this.sweep(), this.log, Date.now() + 5 * 60_000)).map((c) => [c.table, c.cutoffMs]),
      );
    } catch (e) {
      this.problems.push(`final orphan sweep: ${(e as Error).message}`);
      return {};
    }
  }

  /**
   * The run's workflows by type and status; failed ones are problems, slow maintenance and
   * skipped schedule runs are logged. A workflow that failed because its child failed (a
   * scheduled run whose compaction or expiry failed) is one failure, not two: it is logged, and
   * only the child counts.
   */
  private async workflowReport(): Promise<Record<string, Record<string, number>>> {
    const { log } = this;
    const fc = this.x.fc;
    const workflows: Record<string, Record<string, number>> = {};
    const all = await listWorkflows(fc, `TaskQueue = '${this.x.cfg.temporal.taskQueue}'`);
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
        else this.problems.push(line);
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
        .getHandle(maintenanceScheduleId(k, this.table))
        .describe()
        .catch(() => null);
      if (d)
        log(
          `schedule ${k}: ${d.info.numActionsTaken} runs started, ${d.info.numActionsSkippedOverlap} skipped because the previous run was still going`,
        );
    }
    log(`workflows: ${JSON.stringify(workflows)}; orphan sweeps ${JSON.stringify(this.orphanSweeps)}`);
    return workflows;
  }

  /** The independent check (test/support/chaos-check.ts): the topic, both engines, the files on S3. */
  private async check(
    stillRunning: ListedWorkflow[],
    cutoffs: Record<string, number>,
    workflows: Record<string, Record<string, number>>,
  ): Promise<ChaosResult> {
    const { o, table } = this;
    const { cfg, t } = this.x;
    const topicContents = await readTopic(cfg.kafka.brokers, this.x.topic);
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
    const mix = await this.x.mix.check(cfg, stackEnv().postgres.url, CATALOG_NAME);
    for (const m of mix) this.log(`mix ${mixSummary([m])}`);
    return finish({
      stillRunning: stillRunning.map((w) => `${w.workflowId} (${w.type})`),
      o,
      name: this.x.name,
      table,
      t00: this.x.t00,
      pool: this.pool,
      restarts: this.restarts,
      produced: this.x.feed.produced,
      topicContents,
      report,
      audits,
      mix,
      workflows,
      problems: this.problems,
      drained: this.drained,
      backfillDone: this.backfillDone,
      log: this.log,
    });
  }
}

export async function main(opts: Partial<ChaosOptions> = {}): Promise<ChaosResult> {
  const o: ChaosOptions = { ...DEFAULTS, ...opts, restarts: { ...DEFAULTS.restarts, ...(opts.restarts ?? {}) } };
  const t00 = Date.now();
  const log = (m: string) => (o.log ?? ((x: string) => console.log(x)))(`[chaos +${((Date.now() - t00) / 1000).toFixed(1)}s] ${m}`);
  const rnd = prng(o.seed);

  await ensureStack(o.registry ? [...SERVICES, 'schema-registry'] : SERVICES);
  const name =
    o.name ??
    `chaos_${new Date()
      .toISOString()
      .replace(/[-:T.Z]/g, '')
      .slice(0, 14)}_${o.seed}`;
  const entries = mixEntries(name, o, o.commitInterval);
  const { path: configPath, table, topic } = writeConfig(name, o, entries);
  const cfg = loadConfig(configPath);
  const t = findTable(cfg, table);
  log(
    `run ${name} (seed ${o.seed}): table ${table} (catalog ${CATALOG_NAME} on Postgres), topic ${topic}, ${o.workers} workers, ${o.ratePerS} msg/s for ${formatElapsed(o.durationMs)}, kill every ~${o.killEveryMs / 1000}s; config ${configPath}`,
  );
  if (entries.length > 0)
    log(
      `mix: ${entries.map((e) => `${e.kind} ${e.table} <- ${e.topics.join(', ')}`).join('; ')}; ${o.mixRatePerS} msg/s per topic` +
        (o.registry ? `, registry schema change at ${formatElapsed(o.durationMs * o.schemaChangeAtFrac)}` : ''),
    );
  const feed = new ChaosFeed(await openTopic(cfg.kafka.brokers, topic, o.partitions), topic, o.malformedEvery, log, orderMessages());
  const mix = await Mix.open(entries, cfg, o, log);
  const blockRange = await produceBackfillBlock(o, cfg, t, topic, feed, log);
  const fc: FloeClient = await connectClient(cfg);
  const run = new ChaosRun(o, { name, configPath, cfg, t, topic, fc, feed, mix, rnd, t00, log });
  interrupted = () => run.cleanup();
  return run.run(blockRange);
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

/** What either engine read that breaks exactly-once: rows == good messages and dead letters == bad ones, each once. */
function engineViolations(report: EngineReport, tc: TopicContents): string[] {
  const good = tc.good.length,
    bad = tc.bad.length;
  const violations: string[] = [];
  for (const [engine, r] of [
    ['pyiceberg', report.pyiceberg],
    ['duckdb', report.duckdb],
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
  return violations;
}

/** Files the current metadata references but S3 lacks, and orphans older than the grace; history-only gaps are logged. */
function auditViolations(audits: { main: FileAudit; deadLetters: FileAudit }, log: (m: string) => void): string[] {
  const violations: string[] = [];
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
      log(
        `${which}: history only, not needed by readers: ${a.missingMetadataLog.length} metadata-log entries absent, ${a.missingDeletedEntries.length} files of DELETED manifest entries absent`,
      );
    }
    if (a.inFlight.length > 0)
      log(`${which}: ${a.inFlight.length} unreferenced files kept by pending markers of maintenance still running`);
    if (a.pendingMarkers.length > 0)
      log(`${which}: ${a.pendingMarkers.length} pending markers left: ${a.pendingMarkers.slice(0, 5).join(', ')}`);
  }
  return violations;
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
  mix: MixResult[];
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
  const violations = [...engineViolations(report, tc), ...auditViolations(audits, x.log), ...x.mix.flatMap((m) => m.violations)];
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
    `chaos: duration=${formatElapsed(durationMs)} kills=${x.pool.kills} kills_of_polling=${x.pool.killsOfPolling} restarts=kafka:${r.kafka},temporal:${r.temporal},s3:${r.s3},postgres:${r.postgres} ` +
    `rows=${rows} duplicates=${duplicates} lost=${lost} dead_letters=${py.deadLetters.rows}/${bad} missing_files=${missingFiles} orphans=${orphans} failures=${failures}` +
    (x.mix.length ? `; mix ${mixSummary(x.mix)}` : '');
  return {
    name: x.name,
    table: x.table,
    durationMs,
    kills: x.pool.kills,
    killsOfPolling: x.pool.killsOfPolling,
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
    mix: x.mix,
    summary,
    ok: violations.length === 0 && problems.length === 0,
  };
}

// ---------- CLI ----------

const USAGE =
  'npx tsx bench/chaos.ts [--duration 20m] [--workers 3] [--rate 50] [--kill-every 8s] [--restart-delay 1s-5s] ' +
  '[--service-down 1s-6s] [--restarts 3 | --restarts kafka:3,temporal:3,s3:3,postgres:3] [--partitions 4] ' +
  '[--malformed-every 50] [--commit-interval 5s] [--backfill-block 60s] [--backfill-at 0.1] [--orphans-every 2m] ' +
  '[--orphan-grace 60s] [--expire-older-than 1m] [--retain-last 5] [--compact-cron <cron>] [--expire-cron <cron>] ' +
  '[--drain-timeout 15m] [--quiesce-timeout 12m] [--multi-topic on|off] [--route on|off] [--registry on|off] ' +
  '[--mix-rate 10] [--mix-partitions 2] [--route-values 6] [--schema-change-at 0.5] [--seed N] [--name chaos_x] ' +
  '(see the header of bench/chaos.ts)';

const text = { type: 'string' } as const;
const OPTIONS = {
  duration: text,
  workers: text,
  rate: text,
  'kill-every': text,
  'restart-delay': text,
  'service-down': text,
  restarts: text,
  partitions: text,
  'malformed-every': text,
  'commit-interval': text,
  'backfill-block': text,
  'backfill-at': text,
  'compact-cron': text,
  'expire-cron': text,
  'expire-older-than': text,
  'retain-last': text,
  'orphans-every': text,
  'orphan-grace': text,
  'drain-timeout': text,
  'quiesce-timeout': text,
  'multi-topic': text,
  route: text,
  registry: text,
  'mix-rate': text,
  'mix-partitions': text,
  'route-values': text,
  'schema-change-at': text,
  seed: text,
  name: text,
};

/** A duration (config/units: 500ms, 8s, 20m, 1h, or plain millis), errors naming the option. */
function ms(option: string, s: string): number {
  try {
    return parseDuration(s);
  } catch (e) {
    throw new Error(`--${option}: ${(e as Error).message}`);
  }
}

/** `1s-5s` or `1s..5s` (or one duration for both ends). */
function msRange(option: string, s: string): [number, number] {
  const [a, b] = s.split(/-|\.\./);
  return [ms(option, a!), ms(option, b ?? a!)];
}

/** `on` or `off` (also true/false, yes/no, 1/0). */
function onOff(option: string, s: string | undefined): boolean | undefined {
  if (s === undefined) return undefined;
  if (/^(on|true|yes|1)$/i.test(s)) return true;
  if (/^(off|false|no|0)$/i.test(s)) return false;
  throw new Error(`--${option}: expected on or off, found ${JSON.stringify(s)}`);
}

/** `3` (each service) or `kafka:3,temporal:3,...` (the services named; the others keep their default). */
function restartCounts(s: string): Record<ChaosService, number> {
  if (/^\d+$/.test(s)) return { kafka: Number(s), temporal: Number(s), s3: Number(s), postgres: Number(s) };
  return {
    ...DEFAULTS.restarts,
    ...Object.fromEntries(
      s.split(',').map((kv) => {
        const [a, b] = kv.split(':');
        return [a, Number(b)];
      }),
    ),
  };
}

/** The options given on the command line (an unknown option is refused: benchArgs). */
function parseChaosArgs(argv: string[]): Partial<ChaosOptions> {
  const v = benchArgs(USAGE, OPTIONS, argv);
  const o: Partial<ChaosOptions> = {};
  const number = (s: string | undefined) => (s === undefined ? undefined : Number(s));
  const duration = (k: keyof typeof OPTIONS) => (v[k] === undefined ? undefined : ms(k, v[k]));
  const range = (k: keyof typeof OPTIONS) => (v[k] === undefined ? undefined : msRange(k, v[k]));
  const given: Partial<ChaosOptions> = {
    durationMs: duration('duration'),
    workers: number(v.workers),
    ratePerS: number(v.rate),
    killEveryMs: duration('kill-every'),
    restartDelayMs: range('restart-delay'),
    serviceDownMs: range('service-down'),
    restarts: v.restarts === undefined ? undefined : restartCounts(v.restarts),
    partitions: number(v.partitions),
    malformedEvery: number(v['malformed-every']),
    commitInterval: v['commit-interval'],
    backfillBlockS: v['backfill-block'] === undefined ? undefined : ms('backfill-block', v['backfill-block']) / 1000,
    backfillAtFrac: number(v['backfill-at']),
    compactCron: v['compact-cron'],
    expireCron: v['expire-cron'],
    expireOlderThan: v['expire-older-than'],
    retainLast: number(v['retain-last']),
    orphansEveryMs: duration('orphans-every'),
    orphanGraceMs: duration('orphan-grace'),
    drainTimeoutMs: duration('drain-timeout'),
    quiesceTimeoutMs: duration('quiesce-timeout'),
    multiTopic: onOff('multi-topic', v['multi-topic']),
    route: onOff('route', v.route),
    registry: onOff('registry', v.registry),
    mixRatePerS: number(v['mix-rate']),
    mixPartitions: number(v['mix-partitions']),
    routeValues: number(v['route-values']),
    schemaChangeAtFrac: number(v['schema-change-at']),
    seed: number(v.seed),
    name: v.name,
  };
  for (const [k, val] of Object.entries(given)) {
    if (val === undefined) continue;
    if (typeof val === 'number' && !Number.isFinite(val)) throw new Error(`--${k}: expected a number`);
    (o as Record<string, unknown>)[k] = val;
  }
  return o;
}

if (require.main === module) {
  let opts: Partial<ChaosOptions>;
  try {
    opts = parseChaosArgs(process.argv.slice(2));
  } catch (e) {
    console.error(`chaos: ${(e as Error).message}\nusage: ${USAGE}`);
    process.exit(2);
  }
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      console.error(`chaos: ${sig}: stopping workers, deleting this run's schedules and workflows`);
      void Promise.race([interrupted?.(), sleep(30_000)]).finally(() => process.exit(130));
    });
  }
  main(opts).then(
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
