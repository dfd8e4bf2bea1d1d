import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { stackEnv } from '../env';
import { stackPaths } from '../paths';
import { pidRuns, readPid, removeFile, runCommand, spawnDaemon, stopProcessGroup, tcpOpen, waitFor } from '../proc';
import { StackError, markerMatches, writeMarker, type Health, type Service } from '../service';
import { ICEBERG_REST_MAVEN } from '../versions';

// Apache Iceberg's reference REST catalog server (org.apache.iceberg.rest.RESTCatalogServer, the
// server of the apache/iceberg-rest-fixture image), jars from Maven Central (stack/iceberg-rest/pom.xml).
// Its backend is a JdbcCatalog on a SQLite file; table files live in the stack's SeaweedFS through
// Iceberg's S3FileIO. With `include-credentials` it vends its S3 keys in every LoadTableResult's
// `config`, so clients must build each table's FileIO from the catalog (as with Polaris).

const p = () => stackPaths();
const home = () => join(p().home, 'iceberg-rest');
const libs = () => join(home(), 'libs');
const pidFile = () => join(p().run, 'iceberg-rest.pid');
const markerFile = () => join(home(), '.floe-installed.json');
const dataDir = () => join(p().data, 'iceberg-rest');
const java = () => process.env.FLOE_JAVA ?? 'java';
const MAIN_CLASS = 'org.apache.iceberg.rest.RESTCatalogServer';

/** Beside SeaweedFS's own Iceberg REST catalog on 8181. */
const ICEBERG_REST_PORT = 8182;
export const icebergRestUri = (): string => `http://127.0.0.1:${ICEBERG_REST_PORT}`;

/** Where the fixture server keeps tables: its own prefix in the stack's bucket. */
export const icebergRestWarehouse = (): string => `s3://${stackEnv().s3.bucket}/iceberg-rest`;

/** The server's configuration as RCKUtils reads it: CATALOG_<key with _ for . and __ for ->. */
function serverEnv(): NodeJS.ProcessEnv {
  const s3 = stackEnv().s3;
  return {
    ...process.env,
    CATALOG_REST_PORT: String(ICEBERG_REST_PORT),
    CATALOG_WAREHOUSE: icebergRestWarehouse(),
    // WAL, so a reader never blocks a writer: in the default rollback journal a pooled connection
    // still reading held the file's lock past the driver's 3 s busy timeout, and concurrent
    // createTable calls failed with HTTP 500 "SQLITE_BUSY" (seen as a hung ingest on a slow CI box).
    // sqlite-jdbc reads pragmas from the URI's query.
    CATALOG_URI: `jdbc:sqlite:${join(dataDir(), 'catalog.db')}?journal_mode=WAL&busy_timeout=30000`,
    // One JDBC connection. With the default pool of two, a connection left inside a read
    // transaction (a statement Iceberg's JdbcUtil does not close) pins an old snapshot of the
    // file. Its writes then fail with SQLITE_BUSY_SNAPSHOT, which no busy timeout retries, and
    // the pool hands that same connection back first every time (LIFO), so every commit of a
    // table failed with HTTP 500 "UncheckedSQLException: Unknown failure" until the server was
    // restarted (reproduced: 2 runs of 3 of catalog-iceberg-rest.test.ts). Its reads are stale
    // too. A single connection is the only writer, so its snapshot is always the newest.
    CATALOG_CLIENTS: '1',
    CATALOG_IO__IMPL: 'org.apache.iceberg.aws.s3.S3FileIO',
    CATALOG_S3_ENDPOINT: s3.endpoint,
    CATALOG_S3_PATH__STYLE__ACCESS: 'true',
    CATALOG_S3_ACCESS__KEY__ID: s3.accessKeyId,
    CATALOG_S3_SECRET__ACCESS__KEY: s3.secretAccessKey,
    CATALOG_CLIENT_REGION: s3.region,
    CATALOG_INCLUDE__CREDENTIALS: 'true',
  };
}

export const icebergRest: Service = {
  name: 'iceberg-rest',
  needs: [],
  get logFile() {
    return join(p().logs, 'iceberg-rest.log');
  },
  endpoint: () => icebergRestUri(),
  external: () => false,
  installed: () => markerMatches(markerFile(), ICEBERG_REST_MAVEN) && existsSync(libs()),
  pid() {
    const pid = readPid(pidFile());
    return pidRuns(pid, MAIN_CLASS) ? pid : undefined;
  },

  async install() {
    if (this.installed()) return;
    const tmp = `${libs()}.tmp`;
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(home(), { recursive: true });
    try {
      await runCommand(
        'mvn',
        [
          '-B',
          '-q',
          '-f',
          join(p().stackDir, 'iceberg-rest', 'pom.xml'),
          `-Dmaven.repo.local=${p().m2}`,
          ...Object.entries(ICEBERG_REST_MAVEN).map(([k, v]) => `-D${k}=${v}`),
          'dependency:copy-dependencies',
          `-DoutputDirectory=${tmp}`,
          '-DincludeScope=runtime',
        ],
        { timeoutMs: 30 * 60_000 },
      );
    } catch (e) {
      throw new StackError('iceberg-rest', 'maven dependency:copy-dependencies', (e as Error).message);
    }
    const jar = join(tmp, `iceberg-open-api-${ICEBERG_REST_MAVEN['iceberg.version']}-test-fixtures.jar`);
    if (!existsSync(jar)) throw new StackError('iceberg-rest', 'install', `expected ${jar} after maven, found nothing`);
    rmSync(libs(), { recursive: true, force: true });
    renameSync(tmp, libs());
    writeMarker(markerFile(), ICEBERG_REST_MAVEN);
  },

  async health(): Promise<Health> {
    const uri = this.endpoint();
    try {
      const res = await fetch(`${uri}/v1/config`, { signal: AbortSignal.timeout(3000) });
      if (!res.ok) return { ok: false, detail: `GET ${uri}/v1/config answered HTTP ${res.status}` };
      return { ok: true, detail: `Iceberg REST fixture at ${uri} answers /v1/config` };
    } catch (e) {
      return { ok: false, detail: `nothing answers at ${uri}: ${(e as Error).message}` };
    }
  },

  async start() {
    if ((await this.health()).ok) return;
    if (this.pid() === undefined) {
      if (await tcpOpen('127.0.0.1', ICEBERG_REST_PORT)) {
        throw new StackError(
          'iceberg-rest',
          `port ${ICEBERG_REST_PORT}`,
          'the port is taken by a process this stack did not start',
          this.logFile,
        );
      }
      mkdirSync(dataDir(), { recursive: true });
      spawnDaemon({
        cmd: java(),
        args: ['-Xms64m', '-Xmx512m', '-XX:+UseSerialGC', '-Djava.awt.headless=true', '-cp', `${libs()}/*`, MAIN_CLASS],
        cwd: dataDir(),
        env: serverEnv(),
        logFile: this.logFile,
        pidFile: pidFile(),
      });
    }
    const ready = await waitFor(async () => (await this.health()).ok, {
      timeoutMs: 120_000,
      intervalMs: 1000,
      abort: () => (this.pid() === undefined ? 'the server process exited' : undefined),
    });
    if (!ready.ok) throw new StackError('iceberg-rest', `start on 127.0.0.1:${ICEBERG_REST_PORT}`, ready.reason, this.logFile);
  },

  async stop() {
    const pid = this.pid();
    if (pid !== undefined) await stopProcessGroup(pid, 15_000);
    removeFile(pidFile());
  },
};
