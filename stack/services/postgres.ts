import {
  chmodSync,
  chownSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  appendFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { Client } from 'pg';
import { PG_DEFAULTS, PORTS, stackEnv } from '../env';
import { stackPaths } from '../paths';
import { isAlive, isRoot, runCommand, tcpOpen } from '../proc';
import { StackError, type Health, type Service } from '../service';
import { POSTGRES_MAJOR } from '../versions';

// Debian's PostgreSQL binaries run against a cluster in $FLOE_HOME/data/pg on 127.0.0.1:5433
// (5433 so a system PostgreSQL on 5432 is left alone). PostgreSQL refuses to run as root, so
// when the stack runs as root every pg command runs as the `postgres` system user.
// The opt-in `debezium` profile runs a second cluster from the same binaries (postgres-cdc, below).

const p = () => stackPaths();
const bin = (name: string) => join(process.env.FLOE_PG_BIN ?? `/usr/lib/postgresql/${POSTGRES_MAJOR}/bin`, name);
const runAs = () => (isRoot() ? 'postgres' : undefined);

/** Gives the postgres user a file or directory it must write (log, data dir). */
function ownForPostgres(path: string): void {
  if (!isRoot()) return;
  const { uid, gid } = postgresIds();
  chownSync(path, uid, gid);
}

let ids: { uid: number; gid: number } | undefined;
function postgresIds(): { uid: number; gid: number } {
  if (ids) return ids;
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  const f = line?.split(':');
  if (!f)
    throw new StackError(
      'postgres',
      'install',
      "running as root needs the `postgres` system user (created by Debian's postgresql package), found none",
    );
  ids = { uid: Number(f[2]), gid: Number(f[3]) };
  return ids;
}

/**
 * The postgres user must be able to reach $FLOE_HOME/data/pg; under /root (mode 700) it cannot.
 * Grant search (x) permission only — not read — on the ancestors that lack it, so names inside
 * stay unlisted, and say so in the log.
 */
function ensureTraversable(dir: string, log: (m: string) => void): void {
  if (!isRoot()) return;
  for (let d = dirname(dir); d !== dirname(d); d = dirname(d)) {
    const mode = statSync(d).mode;
    if ((mode & 0o001) === 0) {
      chmodSync(d, mode | 0o001);
      log(`postgres: granted o+x on ${d} so the postgres user can reach ${dir}`);
    }
  }
}

async function ensureBinaries(log: (m: string) => void): Promise<void> {
  if (existsSync(bin('initdb'))) return;
  if (!isRoot()) {
    throw new StackError(
      'postgres',
      'install',
      `expected ${bin('initdb')}; install Debian's postgresql-${POSTGRES_MAJOR} (or set FLOE_PG_BIN)`,
    );
  }
  log(`postgres: apt-get install postgresql-${POSTGRES_MAJOR}`);
  await runCommand('apt-get', ['update', '-q'], { timeoutMs: 10 * 60_000 });
  await runCommand('apt-get', ['install', '-y', '-q', `postgresql-${POSTGRES_MAJOR}`], {
    timeoutMs: 20 * 60_000,
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
}

function postmasterPid(dataDir: string): number | undefined {
  const file = join(dataDir, 'postmaster.pid');
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
  return Number.isSafeInteger(pid) && pid > 0 && isAlive(pid) ? pid : undefined;
}

/** Where a cluster listens and whom it lets in (the shared one's can be overridden by FLOE_PG_URL). */
interface PgEndpoint {
  url: string;
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
  external: boolean;
}

async function query<T>(e: PgEndpoint, database: string, fn: (c: Client) => Promise<T>): Promise<T> {
  const client = new Client({ host: e.host, port: e.port, user: e.user, password: e.password, database, connectionTimeoutMillis: 3000 });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

interface ClusterSpec {
  name: 'postgres' | 'postgres-cdc';
  /** Its directory under $FLOE_HOME/data. */
  dir: string;
  /** The port this stack starts it on. */
  port: number;
  endpoint: () => PgEndpoint;
  /** postgresql.conf lines beyond the common ones. */
  conf: readonly string[];
}

/** initdb of a new cluster in `dir`, superuser floe, and the stack's postgresql.conf lines. */
async function initCluster(spec: ClusterSpec, dir: string, log: (m: string) => void): Promise<void> {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  ownForPostgres(dir);
  ensureTraversable(dir, log);
  const pwFile = join(dirname(dir), '.pg-initdb-pw');
  writeFileSync(pwFile, `${PG_DEFAULTS.password}\n`, { mode: 0o600 });
  ownForPostgres(pwFile);
  try {
    await runCommand(
      bin('initdb'),
      ['-D', dir, '-U', PG_DEFAULTS.user, `--pwfile=${pwFile}`, '--auth=scram-sha-256', '-E', 'UTF8', '--no-locale'],
      { asUser: runAs(), timeoutMs: 120_000 },
    );
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw new StackError(spec.name, 'initdb', (e as Error).message);
  } finally {
    rmSync(pwFile, { force: true });
  }
  appendFileSync(
    join(dir, 'postgresql.conf'),
    [
      '',
      '# floe local stack (stack/services/postgres.ts)',
      "listen_addresses = '127.0.0.1'",
      `port = ${spec.port}`,
      "unix_socket_directories = '/tmp'",
      ...spec.conf,
      '',
    ].join('\n'),
  );
}

function postgresCluster(spec: ClusterSpec): Service {
  const dataDir = () => join(p().data, spec.dir);
  return {
    name: spec.name,
    needs: [],
    get logFile() {
      return join(p().logs, `${spec.name}.log`);
    },
    endpoint: () => spec.endpoint().url.replace(/:[^:@/]*@/, ':***@'),
    external: () => spec.endpoint().external,
    installed: () => existsSync(join(dataDir(), 'PG_VERSION')) && existsSync(bin('pg_ctl')),
    pid: () => postmasterPid(dataDir()),

    async install(log: (m: string) => void = () => {}) {
      await ensureBinaries(log);
      const dir = dataDir();
      const versionFile = join(dir, 'PG_VERSION');
      if (existsSync(versionFile)) {
        const found = readFileSync(versionFile, 'utf8').trim();
        if (found !== POSTGRES_MAJOR) {
          throw new StackError(
            spec.name,
            'install',
            `cluster in ${dir} is PostgreSQL ${found}, expected ${POSTGRES_MAJOR}; remove it to re-create`,
          );
        }
        return;
      }
      await initCluster(spec, dir, log);
    },

    async health(): Promise<Health> {
      const e = spec.endpoint();
      if (!(await tcpOpen(e.host, e.port))) return { ok: false, detail: `nothing listens on ${e.host}:${e.port}` };
      try {
        const v = await query(
          e,
          e.database,
          async (c) => (await c.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]?.v,
        );
        return { ok: true, detail: `PostgreSQL ${v} accepts ${e.user}@${e.host}:${e.port}/${e.database}` };
      } catch (err) {
        return { ok: false, detail: `${e.host}:${e.port} open but login as ${e.user} to ${e.database} failed: ${(err as Error).message}` };
      }
    },

    async start() {
      if ((await this.health()).ok) return;
      if (postmasterPid(dataDir()) === undefined) {
        if (await tcpOpen('127.0.0.1', spec.port)) {
          throw new StackError(spec.name, `port ${spec.port}`, 'the port is taken by a process this stack did not start', this.logFile);
        }
        mkdirSync(dirname(this.logFile), { recursive: true });
        closeSync(openSync(this.logFile, 'a'));
        ownForPostgres(this.logFile);
        try {
          await runCommand(bin('pg_ctl'), ['start', '-D', dataDir(), '-l', this.logFile, '-w', '-t', '60'], {
            asUser: runAs(),
            timeoutMs: 90_000,
          });
        } catch (e) {
          throw new StackError(spec.name, `pg_ctl start on 127.0.0.1:${spec.port}`, (e as Error).message, this.logFile);
        }
      }
      // initdb made the superuser; the application database is created once, on first start.
      try {
        await query(spec.endpoint(), 'postgres', async (c) => {
          const exists = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [PG_DEFAULTS.database]);
          if (exists.rowCount === 0) await c.query(`CREATE DATABASE ${PG_DEFAULTS.database}`);
        });
      } catch (e) {
        throw new StackError(spec.name, `create database ${PG_DEFAULTS.database}`, (e as Error).message, this.logFile);
      }
      const h = await this.health();
      if (!h.ok) throw new StackError(spec.name, `login on 127.0.0.1:${spec.port}`, h.detail, this.logFile);
    },

    async stop() {
      if (postmasterPid(dataDir()) === undefined) return;
      await runCommand(bin('pg_ctl'), ['stop', '-D', dataDir(), '-m', 'fast', '-w', '-t', '60'], { asUser: runAs(), timeoutMs: 90_000 });
    },
  };
}

/** The shared cluster: floe's SQL catalog tests, the demo's catalog. */
export const postgres: Service = postgresCluster({
  name: 'postgres',
  dir: 'pg',
  port: PORTS.postgres,
  endpoint: () => stackEnv().postgres,
  conf: ['max_connections = 200'],
});

/**
 * The `debezium` profile's cluster: a database Debezium reads through logical decoding (pgoutput).
 * A cluster of its own, not the shared one with wal_level=logical: the shared cluster would need a
 * restart under the tests using it, and a replication slot a killed test leaves behind retains WAL
 * until it is dropped, which must not grow the catalog's cluster.
 */
export const postgresCdc: Service = postgresCluster({
  name: 'postgres-cdc',
  dir: 'pg-cdc',
  port: PORTS.postgresCdc,
  endpoint: cdcPostgresEndpoint,
  conf: [
    'max_connections = 50',
    'shared_buffers = 32MB',
    'wal_level = logical',
    // One slot and one WAL sender per connector; a few connectors at once.
    'max_replication_slots = 10',
    'max_wal_senders = 10',
    // A slot left behind by a killed test retains at most this much WAL.
    'max_slot_wal_keep_size = 1GB',
  ],
});

/** The `debezium` profile's PostgreSQL: user floe (a superuser, so it may replicate and publish). */
export function cdcPostgresEndpoint(): PgEndpoint {
  const { user, password, database } = PG_DEFAULTS;
  const host = '127.0.0.1',
    port = PORTS.postgresCdc;
  return { url: `postgresql://${user}:${password}@${host}:${port}/${database}`, host, port, user, password, database, external: false };
}
