/**
 * The installable `floe` (issue 12 item 5), as a user gets it: `npm pack` (which builds dist/
 * through "prepack") and `npm install <tgz>` into an empty directory (the local npm cache; the
 * registry for anything missing), then, from that directory:
 * - the package holds compiled code only (no TypeScript) and the prebuilt workflow bundle;
 * - `npx floe --help`, `--version` and `stack status --json` run;
 * - config discovery (-c, then $FLOE_CONFIG, then ./floe.yaml) and the documented exit codes;
 * - an ingest end to end on the real stack with the packed worker, with tsx deleted from the
 *   install and an empty $FLOE_HOME for the worker: rows == messages through `floe ingest status
 *   --json` and `floe table commits --json`, `floe workers` sees it poll, and the worker made no
 *   workflow bundle of its own.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureStack } from '../../stack/stack';
import { floeHome } from '../../stack/paths';
import { loadConfig } from '../../config';
import { scenarioConfig } from '../../demo/config';
import { produceOrderEvents } from '../support/produce';

const REPO = resolve(__dirname, '../..');
const VERSION = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string }).version;

let work = '';
let app = '';

/** The environment a user's shell has: the app's node_modules/.bin first (npx does the same). */
function userEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.FLOE_CONFIG; // the test runner's own config must not leak into "no config" cases
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  env.PATH = [join(app, 'node_modules', '.bin'), join(REPO, 'node_modules', '.bin'), process.env.PATH].join(':');
  return env;
}

function floe(args: string[], extra: Record<string, string | undefined> = {}): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync('npx', ['--no-install', 'floe', ...args], { cwd: app, env: userEnv(extra), encoding: 'utf8', timeout: 120_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function run(cmd: string, args: string[], cwd: string): void {
  const r = spawnSync(cmd, args, { cwd, env: userEnv(), encoding: 'utf8', timeout: 300_000 });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')} in ${cwd}: exit ${r.status}\n${r.stdout}\n${r.stderr}`);
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

describe('npm pack: the installed floe command', { timeout: 10 * 60_000 }, () => {
  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3']);
    work = mkdtempSync(join(tmpdir(), 'floe-pack-'));
    app = join(work, 'app');
    mkdirSync(app);
    run('npm', ['pack', '--pack-destination', work], REPO);
    const tgz = readdirSync(work).find((n) => n.endsWith('.tgz'));
    assert.ok(tgz, `npm pack wrote no .tgz into ${work}`);
    run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', join(work, tgz)], app);
  });
  after(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('installs compiled JavaScript and the prebuilt workflow bundle, no TypeScript', () => {
    const pkg = join(app, 'node_modules', 'floe');
    assert.ok(existsSync(join(pkg, 'dist', 'cli', 'main.js')));
    assert.ok(existsSync(join(pkg, 'dist', 'workflow-bundle.js')), 'the workflow bundle is made at build time');
    assert.ok(existsSync(join(pkg, 'dist', 'stack', 'kafka', 'pom.xml')), 'run-time files of the stack are copied');
    assert.ok(!existsSync(join(pkg, 'cli')), 'sources are not packed');
    assert.deepEqual(
      filesUnder(pkg).filter((f) => f.endsWith('.ts')),
      [],
    );
  });

  it('runs `floe --help`, `--version` and `stack status --json` from an empty directory', () => {
    const help = floe(['--help']);
    assert.equal(help.status, 0, help.stderr);
    assert.match(help.stdout, /Usage: floe/);
    assert.match(help.stdout, /-c\/--config <file>, else \$FLOE_CONFIG, else \.\/floe\.yaml/);
    assert.match(help.stdout, /Exit codes:\n {2}0 {2}success\n {2}1 .*\n {2}2 .*\n {2}3 .*\n {2}4 /);

    const version = floe(['--version']);
    assert.equal(version.status, 0, version.stderr);
    assert.equal(version.stdout.trim(), VERSION);

    const status = floe(['stack', 'status', '--json']);
    const st = JSON.parse(status.stdout) as { floeHome: string; services: { name: string; health: { ok: boolean } }[] };
    assert.equal(st.floeHome, floeHome());
    for (const name of ['temporal', 'kafka', 's3']) {
      const s = st.services.find((x) => x.name === name);
      assert.ok(s?.health.ok, `${name} healthy: ${status.stdout}`);
    }
    assert.equal(status.status, st.services.every((s) => s.health.ok) ? 0 : 4, 'stack status exits 4 when a service is unhealthy');
  });

  it('finds the config by -c, then $FLOE_CONFIG, then ./floe.yaml, and exits with the documented codes', () => {
    const none = floe(['ingest', 'status', 'demo.orders']);
    assert.equal(none.status, 2, none.stderr);
    assert.match(none.stderr, /no config file: pass -c <file>, set FLOE_CONFIG, or create \.\/floe\.yaml/);

    const unknownOption = floe(['ingest', 'status', 'demo.orders', '--bogus']);
    assert.equal(unknownOption.status, 2, unknownOption.stderr);

    const missing = floe(['-c', 'nope.yaml', 'table', 'commits', 'demo.orders', '--json']);
    assert.equal(missing.status, 2, missing.stderr);
    assert.deepEqual(Object.keys(JSON.parse(missing.stderr) as object), ['error', 'exitCode'], 'with --json the error is JSON');

    // A config whose only table is a.one; each source names a different file.
    const cfgText = (table: string) =>
      readFileSync(join(REPO, 'examples', 'orders.yaml'), 'utf8').replace('table: demo.orders', `table: ${table}`);
    writeFileSync(join(app, 'floe.yaml'), cfgText('demo.from_cwd'));
    writeFileSync(join(app, 'env.yaml'), cfgText('demo.from_env'));
    writeFileSync(join(app, 'flag.yaml'), cfgText('demo.from_flag'));
    const known = (r: { stderr: string }) => /known: (\S+)\)/.exec(r.stderr)?.[1];
    try {
      // A table the config does not name: exit 3 (not found), and the message lists what the config knows.
      assert.equal(known(floe(['ingest', 'status', 'x.y'])), 'demo.from_cwd');
      assert.equal(known(floe(['ingest', 'status', 'x.y'], { FLOE_CONFIG: 'env.yaml' })), 'demo.from_env');
      const flag = floe(['-c', 'flag.yaml', 'ingest', 'status', 'x.y'], { FLOE_CONFIG: 'env.yaml' });
      assert.equal(known(flag), 'demo.from_flag');
      assert.equal(flag.status, 3, flag.stderr);

      // Temporal unreachable: exit 4.
      const down = floe(['ingest', 'status', 'demo.from_cwd'], { FLOE_TEMPORAL_ADDRESS: '127.0.0.1:1' });
      assert.equal(down.status, 4, down.stderr);
    } finally {
      for (const f of ['floe.yaml', 'env.yaml', 'flag.yaml']) rmSync(join(app, f), { force: true });
    }
  });

  it('`floe config validate` and `floe config schema` work offline from the packed install', () => {
    writeFileSync(join(app, 'good.yaml'), readFileSync(join(REPO, 'examples', 'orders.yaml'), 'utf8'));
    writeFileSync(
      join(app, 'bad.yaml'),
      readFileSync(join(REPO, 'examples', 'orders.yaml'), 'utf8')
        .replace('commitInterval:', 'comitInterval:')
        .replace('table: demo.orders', 'table: 7'),
    );
    try {
      // Offline: Temporal, Kafka and the catalog are unreachable, and it still answers.
      const offline = { FLOE_TEMPORAL_ADDRESS: '127.0.0.1:1', FLOE_KAFKA_BROKERS: '127.0.0.1:1' };
      const good = floe(['config', 'validate', '-c', 'good.yaml'], offline);
      assert.equal(good.status, 0, good.stderr);
      assert.match(good.stdout, /good\.yaml: OK/);
      const bad = floe(['config', 'validate', '-c', 'bad.yaml'], offline);
      assert.equal(bad.status, 2, bad.stdout + bad.stderr);
      const out = bad.stdout + bad.stderr;
      assert.match(out, /comitInterval: unknown key; did you mean "commitInterval"\?/);
      assert.match(out, /bad\.yaml:\d+: /, 'problems carry their line');
      const schema = floe(['config', 'schema']);
      assert.equal(schema.status, 0, schema.stderr);
      const json = JSON.parse(schema.stdout) as { $schema?: string; properties?: Record<string, unknown> };
      assert.ok(json.$schema?.includes('json-schema.org'), 'a JSON Schema document');
      assert.ok(json.properties && 'tables' in json.properties && 'kafka' in json.properties);
    } finally {
      for (const f of ['good.yaml', 'bad.yaml']) rmSync(join(app, f), { force: true });
    }
  });

  it('ingests end to end with the packed worker (compiled code, no tsx, prebuilt bundle): rows == messages', async () => {
    const name = `pack_${Date.now().toString(36)}`;
    const sc = scenarioConfig(name, 1, '1s');
    copyFileSync(sc.path, join(app, 'floe.yaml'));
    const cfg = loadConfig(sc.path);
    const messages = 300;
    await produceOrderEvents(cfg, sc.topic, 0, messages);

    // Production needs no TypeScript: tsx is a devDependency, so the install has none (asserted),
    // and anything that still loaded it would fail.
    assert.ok(!existsSync(join(app, 'node_modules', 'tsx')), 'npm install of the package brings no tsx');
    // An empty FLOE_HOME (the catalog named explicitly): a worker that bundled its workflows
    // itself would write $FLOE_HOME/bundles.
    const workerHome = join(work, 'worker-home');
    const catalogUri = cfg.catalog.type === 'sql' ? cfg.catalog.uri : undefined;
    assert.ok(catalogUri, 'the scenario config uses the SQL catalog');
    const workerEnv = userEnv({ FLOE_HOME: workerHome, FLOE_CATALOG_URI: catalogUri, FLOE_PARQUET_THREADS: '1' });
    const worker: ChildProcess = spawn(join(app, 'node_modules', '.bin', 'floe'), ['worker'], {
      cwd: app,
      env: workerEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let log = '';
    worker.stdout!.on('data', (d: Buffer) => (log += d.toString()));
    worker.stderr!.on('data', (d: Buffer) => (log += d.toString()));
    const exited = new Promise<number | null>((res) => worker.on('exit', (code) => res(code)));
    try {
      const started = floe(['ingest', 'start', sc.table, '--json']);
      assert.equal(started.status, 0, started.stderr);
      assert.match((JSON.parse(started.stdout) as { workflowId: string }).workflowId, new RegExp(sc.table.replace('.', '\\.')));

      let rows = 0;
      for (const deadline = Date.now() + 120_000; Date.now() < deadline && rows < messages; await sleep(2000)) {
        const st = floe(['ingest', 'status', sc.table, '--json']);
        assert.equal(st.status, 0, `${st.stderr}\nworker log:\n${log}`);
        rows = (JSON.parse(st.stdout) as { totalRows: number }).totalRows;
      }
      assert.equal(rows, messages, `rows committed (status); worker log:\n${log}`);

      // `floe workers` (the compose worker's healthcheck) sees the packed worker polling.
      const workers = floe(['workers', '--json']);
      assert.equal(workers.status, 0, workers.stderr);
      const polled = JSON.parse(workers.stdout) as { taskQueue: string; pollers: { kind: string }[] };
      assert.equal(polled.taskQueue, cfg.temporal.taskQueue);
      assert.ok(polled.pollers.some((p) => p.kind === 'workflow') && polled.pollers.some((p) => p.kind === 'activity'), workers.stdout);

      const commits = floe(['table', 'commits', sc.table, '--json']);
      assert.equal(commits.status, 0, commits.stderr);
      const snapshots = JSON.parse(commits.stdout) as { operation: string; total_rows: number | string }[];
      assert.equal(Number(snapshots.at(-1)!.total_rows), messages, 'the table holds every message once');

      const stop = floe(['ingest', 'stop', sc.table, '--json']);
      assert.equal(stop.status, 0, stop.stderr);
      assert.deepEqual(JSON.parse(stop.stdout), { table: sc.table, signal: 'stop', sent: true });
    } finally {
      worker.kill('SIGTERM');
      await exited;
    }
    assert.ok(log.includes('polling task queue'), `the worker started:\n${log}`);
    assert.ok(!existsSync(join(workerHome, 'bundles')), 'the worker loaded the prebuilt bundle (no webpack at start)');
  });
});
