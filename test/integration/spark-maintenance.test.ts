/**
 * Another engine's maintenance beside floe's live ingest (issue 29 item 14): Apache Spark 3.5 with
 * Iceberg's JdbcCatalog on floe's own SQL catalog (the `spark` stack profile, offline jars) runs
 * `CALL <catalog>.system.rewrite_data_files(table => ..., options => map('min-input-files','2'))`
 * while floe ingests 20 msg/s with a 3 s commit interval, on SQLite and on Postgres, file://
 * warehouses:
 *  - Spark's replace commits while floe commits around it (floe commits before and after it);
 *  - floe keeps committing on top of Spark's metadata, whose locations are Java's `file:/path`,
 *    and a stopped ingest starts again on it (before: "storage location: expected a URI like
 *    s3://, file:// or memory://, found file:/...");
 *  - rows exactly once: DuckDB and floe count every produced message once, no duplicate;
 *  - floe's orphan sweep does not take Spark's files (`file:/...` under a table floe made at
 *    `file:///...`) for orphans: before, every file Spark wrote was one, deleted after the grace period.
 * Skips, naming the command, when the profile is not installed.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Kafka, logLevel, type Producer } from 'kafkajs';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { connectClient, signalIngest, startIngest, waitForIngest, type FloeClient } from '../../client';
import { loadConfig, type FloeConfig } from '../../config';
import { scenarioConfig } from '../../demo/scenario';
import { eventKey, orderEvents, type OrderEvent } from '../../demo/generator';
import { verifyTable } from '../../demo/verify';
import { ancestors, normalizeLocation, type Snapshot } from '../../iceberg';
import { liveDataFiles, removeOrphanFiles } from '../../maintenance';
import { ensureStack } from '../../stack/stack';
import { floeHome, stackPaths } from '../../stack/paths';
import { sparkInstalled, sparkJars, sparkPaths } from '../../stack/spark';
import { openTables } from '../../table/tables';
import { spawnWorker, type WorkerProcess } from '../../workers/process';
import { createTopicsReady } from '../../demo/topics';

const skip = sparkInstalled() ? false : 'the spark stack profile is not installed (npx tsx cli/main.ts stack up --profile spark)';

interface SparkAnswer {
  ok: boolean;
  error?: string;
  causes?: string[];
  rewritten_data_files_count?: number;
  added_data_files_count?: number;
  seconds: number;
}

/** The Spark driver (test/fixtures/spark/maintain.py): one JSON line out per command line in. */
class SparkDriver {
  private readonly proc: ChildProcess;
  private out = '';
  private err = '';
  private readonly waiters: Array<(line: string) => void> = [];
  private readonly lines: string[] = [];
  readonly exited: Promise<number | null>;

  constructor(catalogs: Record<string, unknown>) {
    this.proc = spawn(sparkPaths().python, [join(__dirname, '..', 'fixtures', 'spark', 'maintain.py'), JSON.stringify(catalogs)], {
      env: {
        ...process.env,
        PYTHONPATH: stackPaths().pyDir,
        PYTHONDONTWRITEBYTECODE: '1',
        // overridable, to run the same scenario with other jars (e.g. Iceberg 1.10.1's runtime, whose
        // commits fail SQLITE_BUSY_SNAPSHOT here: docs/operations.md)
        FLOE_SPARK_JARS: process.env.FLOE_SPARK_JARS ?? sparkJars().join(','),
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.proc.stdout!.on('data', (d: Buffer) => {
      this.out += d.toString();
      for (let i = this.out.indexOf('\n'); i >= 0; i = this.out.indexOf('\n')) {
        const line = this.out.slice(0, i);
        this.out = this.out.slice(i + 1);
        if (!line.startsWith('@')) continue;
        const w = this.waiters.shift();
        if (w) w(line.slice(1));
        else this.lines.push(line.slice(1));
      }
    });
    this.proc.stderr!.on('data', (d: Buffer) => {
      this.err = (this.err + d.toString()).slice(-20_000);
    });
    this.exited = new Promise((res) => this.proc.on('exit', (code) => res(code)));
  }

  /** The next answer line; fails with Spark's stderr if the driver exits first. */
  async next<T>(): Promise<T> {
    const line =
      this.lines.shift() ??
      (await Promise.race([
        new Promise<string>((res) => this.waiters.push(res)),
        this.exited.then((code) => {
          throw new Error(`the Spark driver exited ${code}: ${this.err.slice(-4000)}`);
        }),
      ]));
    return JSON.parse(line) as T;
  }

  rewrite(catalog: string, table: string): Promise<SparkAnswer> {
    this.proc.stdin!.write(`${JSON.stringify({ catalog, table })}\n`);
    return this.next<SparkAnswer>();
  }

  async close(): Promise<void> {
    this.proc.stdin!.end();
    const t = setTimeout(() => this.proc.kill('SIGKILL'), 60_000);
    await this.exited;
    clearTimeout(t);
  }
}

/** Sends `perTick` order events every `tickMs` until stopped: 20 msg/s by default. */
class Stream {
  private readonly events: Generator<OrderEvent>;
  private stopped = false;
  private loop?: Promise<void>;
  sent = 0;

  constructor(
    private readonly producer: Producer,
    private readonly topic: string,
  ) {
    this.events = orderEvents();
  }

  async send(n: number): Promise<void> {
    const messages = [];
    for (let i = 0; i < n; i++) {
      const e = this.events.next().value as OrderEvent;
      messages.push({ key: eventKey(e), value: JSON.stringify(e) });
    }
    await this.producer.send({ topic: this.topic, messages });
    this.sent += n;
  }

  start(perTick = 5, tickMs = 250): void {
    this.stopped = false;
    this.loop = (async () => {
      while (!this.stopped) {
        await this.send(perTick);
        await sleep(tickMs);
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }
}

const isFloeCommit = (s: Snapshot): boolean => s.summary['floe.commit-id'] !== undefined;

describe('Spark maintains floe’s tables while floe ingests', { skip, timeout: 12 * 60_000, concurrency: 2 }, () => {
  const sfx = randomBytes(3).toString('hex');
  const root = mkdtempSync(join(tmpdir(), 'floe-spark-'));
  let spark: SparkDriver;
  let sparkStart: { ready: boolean; startSeconds: number };
  const cleanups: Array<() => Promise<unknown>> = [];

  interface Backend {
    kind: 'sqlite' | 'postgres';
    catalogName: string;
    cfgPath: string;
    cfg: FloeConfig;
    table: string;
    topic: string;
  }
  const backends: Backend[] = [];

  before(async () => {
    const env = await ensureStack(['temporal', 'kafka', 's3', 'postgres']);
    const pg = new URL(env.postgres.url);
    const sparkCatalogs: Record<string, unknown> = {};
    for (const kind of ['sqlite', 'postgres'] as const) {
      const catalogName = `${kind === 'sqlite' ? 'lite' : 'pg'}_${sfx}`;
      const c = scenarioConfig(`it_spark_${kind}_${sfx}`, 2, '3s');
      const doc = parseYaml(readFileSync(c.path, 'utf8')) as { catalog: Record<string, unknown>; tables: Array<Record<string, unknown>> };
      const warehouse = `file://${root}/wh-${kind}`;
      const sqlitePath = join(root, 'catalog.db');
      doc.catalog = {
        type: 'sql',
        name: catalogName,
        uri: kind === 'sqlite' ? `sqlite:///${sqlitePath}` : env.postgres.url,
        warehouse,
      };
      // no scheduled maintenance of floe's own: Spark is the one compacting here
      delete doc.tables[0]!['maintenance'];
      writeFileSync(c.path, stringifyYaml(doc));
      const cfg = loadConfig(c.path);
      // floe makes the catalog (its tables, WAL on SQLite) before Spark opens it, as in the scenario
      const tables = await openTables(cfg);
      await tables.close();
      sparkCatalogs[catalogName] =
        kind === 'sqlite'
          ? // sqlite-jdbc reads pragmas from the URI: wait for floe's write lock instead of failing at 3 s
            { uri: `jdbc:sqlite:${sqlitePath}?busy_timeout=30000`, warehouse }
          : {
              uri: `jdbc:postgresql://${pg.host}${pg.pathname}`,
              warehouse,
              properties: { 'jdbc.user': decodeURIComponent(pg.username), 'jdbc.password': decodeURIComponent(pg.password) },
            };
      backends.push({ kind, catalogName, cfgPath: c.path, cfg, table: c.table, topic: c.topic });
    }
    spark = new SparkDriver(sparkCatalogs);
    cleanups.push(() => spark.close());
    sparkStart = await spark.next();
    assert.ok(sparkStart.ready);
    console.log(`spark: session up in ${sparkStart.startSeconds} s`);
  });

  after(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
    if (backends.some((b) => b.kind === 'postgres')) {
      const { Client } = await import('pg');
      const env = await ensureStack(['postgres']);
      const pgc = new Client({ connectionString: env.postgres.url });
      await pgc.connect();
      const name = backends.find((b) => b.kind === 'postgres')!.catalogName;
      await pgc.query('DELETE FROM iceberg_tables WHERE catalog_name = $1', [name]);
      await pgc.query('DELETE FROM iceberg_namespace_properties WHERE catalog_name = $1', [name]);
      await pgc.end();
    }
    rmSync(root, { recursive: true, force: true });
  });

  for (const kind of ['sqlite', 'postgres'] as const) {
    it(`${kind}: Spark's rewrite commits during the ingest, floe commits on top and restarts on it, rows once`, async () => {
      const b = backends.find((x) => x.kind === kind)!;
      // Retries for minutes: the shared broker may be restarted by another file's test meanwhile (the
      // idempotent producer keeps a retried batch from landing twice; the topic is counted anyway).
      const kafka = new Kafka({
        clientId: 'floe-test',
        brokers: b.cfg.kafka.brokers,
        logLevel: logLevel.NOTHING,
        retry: { retries: 30, maxRetryTime: 5000 },
      });
      const admin = kafka.admin();
      await admin.connect();
      await createTopicsReady(admin, [{ topic: b.topic, numPartitions: 2 }]);
      await admin.disconnect();
      const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
      await producer.connect();
      const worker: WorkerProcess = spawnWorker(b.cfgPath, join(floeHome(), 'logs', `it_spark_${kind}_${sfx}-worker.log`));
      const fc: FloeClient = await connectClient(b.cfg);
      const tables = await openTables(b.cfg);
      const stream = new Stream(producer, b.topic);
      try {
        const snapshots = async (): Promise<Snapshot[]> => [...ancestors((await tables.load(b.table)).metadata)].reverse();
        const waitUntil = async (what: string, ok: (s: Snapshot[]) => boolean): Promise<Snapshot[]> => {
          // a hang guard, not a speed check: the machine is shared
          for (let i = 0; ; i++) {
            const s = await snapshots().catch(() => []);
            if (ok(s)) return s;
            assert.ok(i < 900, `${what}: not within 3 minutes (${s.length} snapshots)`);
            await sleep(200);
          }
        };

        const t0 = Date.now();
        const log = (m: string) => console.log(`${kind} +${((Date.now() - t0) / 1000).toFixed(0)} s: ${m}`);
        stream.start();
        await startIngest(fc, b.table);
        await waitUntil('4 floe commits', (s) => s.filter(isFloeCommit).length >= 4);
        log(`4 floe commits, ${stream.sent} messages sent; Spark's rewrite starts`);

        const answer = await spark.rewrite(b.catalogName, b.table);
        log(`Spark's rewrite answered ${JSON.stringify(answer)}`);
        assert.ok(answer.ok, `Spark's rewrite failed: ${answer.error}\n${(answer.causes ?? []).join('\n')}`);
        assert.ok((answer.rewritten_data_files_count ?? 0) >= 2, `rewrote ${answer.rewritten_data_files_count} files`);
        assert.ok((answer.added_data_files_count ?? 0) >= 1);

        // floe goes on committing on top of Spark's replace
        const chain = await waitUntil('2 floe commits after Spark’s replace', (s) => {
          const r = s.findIndex((x) => x.summary.operation === 'replace' && !isFloeCommit(x));
          return r >= 0 && s.slice(r + 1).filter(isFloeCommit).length >= 2;
        });
        const replaceAt = chain.findIndex((x) => x.summary.operation === 'replace' && !isFloeCommit(x));
        assert.ok(chain.slice(0, replaceAt).filter(isFloeCommit).length >= 4, 'floe committed before Spark’s replace');
        log(`floe committed ${chain.slice(replaceAt + 1).filter(isFloeCommit).length} times on top of Spark's replace; stopping`);
        await stream.stop();
        await signalIngest(fc, b.table, 'stop');
        await waitForIngest(fc, b.table);

        // a stopped ingest starts again on the table Spark rewrote
        const sentBefore = stream.sent;
        stream.start();
        await sleep(1000);
        await stream.stop();
        await startIngest(fc, b.table);
        await signalIngest(fc, b.table, 'stop');
        const status = await waitForIngest(fc, b.table);
        // the run's own rows (the whole table is counted below, by DuckDB)
        assert.equal(status.totalRows, stream.sent - sentBefore, JSON.stringify({ cursor: status.cursor, sent: stream.sent }));

        const v = await verifyTable(b.cfg, b.table, b.topic);
        assert.deepEqual(v.problems, [], v.problems.join('; '));
        assert.equal(v.messagesInTopic, stream.sent);
        assert.ok(!('error' in v.duckdb) && v.duckdb.rows === stream.sent, `DuckDB: ${JSON.stringify(v.duckdb)}`);

        // Spark wrote Java's form: its metadata, manifest list and files are file:/..., floe's table file:///...
        const loaded = await tables.load(b.table);
        const javaForm = /^file:\/[^/]/;
        assert.match(loaded.metadata.location, /^file:\/\/\//, 'floe made the table at file:///');
        assert.match(chain[replaceAt]!['manifest-list'], javaForm, 'Spark’s manifest list is at Java’s file:/path');
        assert.ok(
          loaded.metadata['metadata-log'].some((e) => javaForm.test(e['metadata-file'])),
          'Spark’s metadata.json (file:/path) is in the metadata log',
        );
        const live = await liveDataFiles(tables.io, loaded.metadata);
        const sparkFiles = live.filter((f) => javaForm.test(f.dataFile.filePath));
        assert.ok(
          sparkFiles.length >= 1,
          `Spark's rewritten files are live in Java's form: ${live.map((f) => f.dataFile.filePath).join(', ')}`,
        );
        const orphans = await removeOrphanFiles(tables, { table: b.table, olderThanMs: 0, force: true, dryRun: true, asOfMs: Date.now() });
        const liveForms = new Set(live.map((f) => normalizeLocation(f.dataFile.filePath)));
        const wronglyOrphaned = orphans.sample.filter((o) => liveForms.has(normalizeLocation(o)));
        assert.deepEqual(wronglyOrphaned, [], 'live files the orphan sweep would delete');
        log(
          `${stream.sent} messages, ${chain.filter(isFloeCommit).length} floe commits around Spark's replace, ` +
            `${live.length} live files (${sparkFiles.length} Spark's), ${orphans.orphans} orphans listed`,
        );
      } finally {
        await stream.stop().catch(() => undefined);
        await tables.close().catch(() => undefined);
        await fc.close().catch(() => undefined);
        await worker.kill('SIGTERM');
        await producer.disconnect().catch(() => undefined);
      }
    });
  }
});
