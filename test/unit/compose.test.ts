/**
 * docker-compose.yml, the Dockerfile and the stack's pinned files agree with the code: every
 * service, port, image tag and FLOE_* variable the code expects is there, and no version is
 * pinned anywhere but stack/versions.ts. Nothing here needs Docker.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { OPTIONAL_ENV_VARS, PG_DEFAULTS, PORTS, S3_DEFAULTS, WORKER_ENV_VARS } from '../../stack/env';
import { s3Identities } from '../../stack/services';
import { IMAGES, MAVEN, PYTHON, pythonRequirements } from '../../stack/versions';

const root = join(__dirname, '..', '..');
const read = (rel: string) => readFileSync(join(root, rel), 'utf8');

interface ComposeService {
  image?: string;
  build?: unknown;
  command?: string[] | string;
  environment?: Record<string, string> | string[];
  ports?: string[];
  volumes?: string[];
  depends_on?: Record<string, unknown> | string[];
}
const compose = parse(read('docker-compose.yml')) as { services: Record<string, ComposeService> };
const services = compose.services;

function service(name: string): ComposeService {
  const s = services[name];
  assert.ok(s, `docker-compose.yml: expected service ${name}, found ${Object.keys(services).join(', ')}`);
  return s;
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
  for (const d of ['activities', 'cli', 'client', 'config', 'demo', 'iceberg', 'workers', 'workflows'])
    if (existsSync(join(root, d))) walk(join(root, d));
  return new Set([...found].filter((v) => !v.startsWith('FLOE_TEST_')));
}

describe('docker-compose.yml', () => {
  it('has every service, with the image tags pinned in stack/versions.ts', () => {
    const expected: Record<string, string> = {
      kafka: IMAGES.kafka,
      temporal: IMAGES.temporal,
      'temporal-ui': IMAGES['temporal-ui'],
      seaweedfs: IMAGES.seaweedfs,
      postgres: IMAGES.postgres,
    };
    for (const [name, image] of Object.entries(expected)) assert.equal(service(name).image, image, `${name} image`);
    assert.ok(service('floe-worker').build, 'floe-worker is built from the Dockerfile');
    assert.equal(IMAGES.kafka, `apache/kafka:${MAVEN['kafka.version']}`, 'compose runs the Kafka version the local stack runs');
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
  it('builds from the pinned node image and runs the worker', () => {
    assert.match(dockerfile, new RegExp(`^FROM ${IMAGES.node.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'));
    assert.match(dockerfile, /^CMD \["npx", "tsx", "cli\/main\.ts", "worker"\]$/m);
    assert.match(dockerfile, /RUN npm ci\b/);
  });
  it('copies only paths that exist, including everything cli/main.ts needs', () => {
    const sources = [...dockerfile.matchAll(/^COPY (.+) \S+$/gm)].flatMap((m) => m[1]!.split(/\s+/));
    for (const src of sources) assert.ok(existsSync(join(root, src)), `Dockerfile COPY ${src}: no such path`);
    for (const dir of ['cli', 'workers', 'workflows', 'activities', 'iceberg', 'config'])
      assert.ok(sources.includes(dir), `Dockerfile copies ${dir}`);
    // A top-level folder imported by runtime code but not copied would crash the worker at start.
    const imported = new Set<string>();
    for (const dir of sources.filter((s) => existsSync(join(root, s)) && statSync(join(root, s)).isDirectory())) {
      const walk = (d: string) => {
        for (const e of readdirSync(d)) {
          const path = join(d, e);
          if (statSync(path).isDirectory()) walk(path);
          else if (path.endsWith('.ts')) {
            for (const m of readFileSync(path, 'utf8').matchAll(/from '((?:\.\.\/)+)([a-z-]+)/g)) {
              const depth = m[1]!.length / 3;
              const rel = path.slice(root.length + 1).split('/');
              if (depth === rel.length - 1) imported.add(m[2]!);
            }
          }
        }
      };
      walk(join(root, dir));
    }
    for (const dir of imported) assert.ok(sources.includes(dir), `runtime code imports ${dir}/ but the Dockerfile does not copy it`);
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

  it("pip requirements pin every package exactly, with duckdb extensions at duckdb's version", () => {
    const reqs = pythonRequirements();
    assert.equal(reqs.length, Object.keys(PYTHON).length);
    for (const r of reqs) assert.match(r, /^[a-z0-9-]+(\[[a-z0-9,-]+\])?==[0-9][0-9.]*$/, r);
    for (const [name, v] of Object.entries(PYTHON)) {
      if (name.startsWith('duckdb-extension-')) assert.equal(v, PYTHON.duckdb, `${name} must equal duckdb's version`);
    }
  });
});
