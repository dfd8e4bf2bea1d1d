import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PORTS, stackEnv } from '../env';
import { stackPaths } from '../paths';
import { pidRuns, readPid, removeFile, runCommand, spawnDaemon, stopProcessGroup, tcpOpen, waitFor } from '../proc';
import { StackError, markerMatches, writeMarker, type Health, type Service } from '../service';
import { DEBEZIUM } from '../versions';
import { java } from './kafka';

// The opt-in `debezium` profile's Kafka Connect worker: Apache Kafka's connect-runtime (the stack
// broker's version) in distributed mode against the stack's Kafka, with Debezium's PostgreSQL
// connector on its plugin.path, both jar sets from Maven Central (stack/debezium/pom.xml).
//
// Distributed, not standalone: connectors registered through the REST API are kept in Kafka
// (config, offset and status topics) and survive a restart of the worker, as on every production
// Connect cluster; a standalone worker forgets REST-created connectors when it stops. The cost is
// one consumer-group join (a few seconds) at start.

const p = () => stackPaths();
const home = () => join(p().home, 'debezium');
const markerFile = () => join(home(), '.floe-installed.json');
const pidFile = () => join(p().run, 'kafka-connect.pid');
const MAIN = 'org.apache.kafka.connect.cli.ConnectDistributed';
/** The connector class Debezium's plugin must provide (the health check looks for it). */
const POSTGRES_CONNECTOR = 'io.debezium.connector.postgresql.PostgresConnector';

/** Where the profile's jars live: the worker's classpath and its plugin.path. */
function kafkaConnectPaths() {
  return { home: home(), libs: join(home(), 'connect-libs'), plugins: join(home(), 'plugins') };
}

/** The worker's REST API. */
export const kafkaConnectUrl = (): string => `http://127.0.0.1:${PORTS.kafkaConnect}`;

function workerProperties(): string {
  return [
    '# Written by stack/services/kafka-connect.ts on every start; edits are overwritten.',
    `bootstrap.servers=${stackEnv().kafka.brokers.join(',')}`,
    'group.id=floe-connect',
    // Debezium's events as the JSON converter writes them by default: {"schema": …, "payload": …}.
    'key.converter=org.apache.kafka.connect.json.JsonConverter',
    'value.converter=org.apache.kafka.connect.json.JsonConverter',
    'key.converter.schemas.enable=true',
    'value.converter.schemas.enable=true',
    // The worker's state in Kafka; one partition each and replication factor 1 on the one-node broker.
    'config.storage.topic=floe-connect-configs',
    'offset.storage.topic=floe-connect-offsets',
    'status.storage.topic=floe-connect-status',
    'config.storage.replication.factor=1',
    'offset.storage.replication.factor=1',
    'status.storage.replication.factor=1',
    'offset.storage.partitions=1',
    'status.storage.partitions=1',
    // Source offsets (Debezium's LSN) flushed every second: a restarted connector re-sends little.
    'offset.flush.interval.ms=1000',
    `listeners=http://127.0.0.1:${PORTS.kafkaConnect}`,
    'rest.advertised.host.name=127.0.0.1',
    `rest.advertised.port=${PORTS.kafkaConnect}`,
    `plugin.path=${kafkaConnectPaths().plugins}`,
    // Every plugin here (Connect's own and Debezium's) has ServiceLoader manifests: no reflective scan.
    'plugin.discovery=service_load',
    '',
  ].join('\n');
}

async function mavenCopy(profile: 'connect' | 'plugin', out: string): Promise<void> {
  await runCommand(
    'mvn',
    [
      '-B',
      '-q',
      '-f',
      join(p().stackDir, 'debezium', 'pom.xml'),
      `-Dmaven.repo.local=${p().m2}`,
      `-P${profile}`,
      ...Object.entries(DEBEZIUM).map(([k, v]) => `-D${k}=${v}`),
      'dependency:copy-dependencies',
      `-DoutputDirectory=${out}`,
      '-DincludeScope=runtime',
    ],
    { timeoutMs: 30 * 60_000 },
  );
}

async function getJson(path: string): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${kafkaConnectUrl()}${path}`, { signal: AbortSignal.timeout(5000) });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: res.status, body };
}

export const kafkaConnect: Service = {
  name: 'kafka-connect',
  needs: [],
  get logFile() {
    return join(p().logs, 'kafka-connect.log');
  },
  endpoint: kafkaConnectUrl,
  external: () => false,
  installed() {
    const d = kafkaConnectPaths();
    return markerMatches(markerFile(), DEBEZIUM) && existsSync(d.libs) && existsSync(d.plugins);
  },
  pid() {
    const pid = readPid(pidFile());
    return pidRuns(pid, MAIN) ? pid : undefined;
  },

  async install(log: (m: string) => void = () => {}) {
    if (this.installed()) return;
    const d = kafkaConnectPaths();
    const v = DEBEZIUM['debezium.version'];
    log(`kafka-connect: Kafka Connect ${DEBEZIUM['kafka.version']} into ${d.libs}, Debezium ${v}'s PostgreSQL connector into ${d.plugins}`);
    mkdirSync(d.home, { recursive: true });
    const libsTmp = `${d.libs}.tmp`,
      pluginsTmp = `${d.plugins}.tmp`;
    // Connect loads each plugin from its own folder under plugin.path.
    const pluginDir = join(pluginsTmp, 'debezium-connector-postgres');
    rmSync(libsTmp, { recursive: true, force: true });
    rmSync(pluginsTmp, { recursive: true, force: true });
    try {
      // One after the other: two Maven runs on one local repository can trip over each other's downloads.
      await mavenCopy('connect', libsTmp);
      await mavenCopy('plugin', pluginDir);
    } catch (e) {
      throw new StackError('kafka-connect', 'maven dependency:copy-dependencies', (e as Error).message);
    }
    for (const jar of [
      join(libsTmp, `connect-runtime-${DEBEZIUM['kafka.version']}.jar`),
      join(pluginDir, `debezium-connector-postgres-${v}.jar`),
    ]) {
      if (!existsSync(jar)) throw new StackError('kafka-connect', 'install', `expected ${jar} after maven, found nothing`);
    }
    // Swap whole directories so an old version's jars never mix in.
    rmSync(d.libs, { recursive: true, force: true });
    rmSync(d.plugins, { recursive: true, force: true });
    renameSync(libsTmp, d.libs);
    renameSync(pluginsTmp, d.plugins);
    writeMarker(markerFile(), DEBEZIUM);
  },

  async health(): Promise<Health> {
    if (!(await tcpOpen('127.0.0.1', PORTS.kafkaConnect)))
      return { ok: false, detail: `nothing listens on 127.0.0.1:${PORTS.kafkaConnect}` };
    try {
      // /connectors answers once the worker has joined its group and read the config topic.
      const connectors = await getJson('/connectors');
      if (connectors.status !== 200)
        return { ok: false, detail: `GET /connectors: HTTP ${connectors.status} ${JSON.stringify(connectors.body)}` };
      const plugins = await getJson('/connector-plugins');
      const found = Array.isArray(plugins.body) && plugins.body.some((x: { class?: string }) => x.class === POSTGRES_CONNECTOR);
      if (!found) return { ok: false, detail: `the worker answers but has no ${POSTGRES_CONNECTOR} on its plugin.path` };
      const root = (await getJson('/')).body as { version?: string };
      return {
        ok: true,
        detail: `Kafka Connect ${root.version ?? '?'} with Debezium's PostgresConnector (${(connectors.body as unknown[]).length} connectors)`,
      };
    } catch (e) {
      return { ok: false, detail: `127.0.0.1:${PORTS.kafkaConnect} open but the REST API does not answer: ${(e as Error).message}` };
    }
  },

  async start() {
    if ((await this.health()).ok) return;
    if (this.pid() === undefined) {
      if (await tcpOpen('127.0.0.1', PORTS.kafkaConnect)) {
        throw new StackError(
          'kafka-connect',
          `port ${PORTS.kafkaConnect}`,
          'the port is taken by a process this stack did not start',
          this.logFile,
        );
      }
      const brokers = stackEnv().kafka.brokers[0] ?? '';
      const i = brokers.lastIndexOf(':');
      if (!(await tcpOpen(brokers.slice(0, i), Number(brokers.slice(i + 1))))) {
        throw new StackError('kafka-connect', 'start', `the stack's Kafka (${brokers}) is not running: start it first (stack up kafka)`);
      }
      const d = kafkaConnectPaths();
      if (readdirSync(d.plugins).length === 0) throw new StackError('kafka-connect', 'start', `${d.plugins} is empty: reinstall`);
      const props = join(d.home, 'connect-distributed.properties');
      writeFileSync(props, workerProperties());
      spawnDaemon({
        cmd: java(),
        args: [
          '-Xms128m',
          '-Xmx512m',
          '-XX:+UseSerialGC',
          '-Djava.awt.headless=true',
          `-Dlog4j2.configurationFile=${join(p().stackDir, 'debezium', 'log4j2.properties')}`,
          '-cp',
          `${d.libs}/*`,
          MAIN,
          props,
        ],
        cwd: d.home,
        logFile: this.logFile,
        pidFile: pidFile(),
      });
    }
    const ready = await waitFor(async () => (await this.health()).ok, {
      timeoutMs: 180_000,
      intervalMs: 1000,
      abort: () => (this.pid() === undefined ? 'the worker process exited' : undefined),
    });
    if (!ready.ok) throw new StackError('kafka-connect', `start on 127.0.0.1:${PORTS.kafkaConnect}`, ready.reason, this.logFile);
  },

  async stop() {
    const pid = this.pid();
    // SIGTERM: the worker leaves its group and stops its tasks, flushing their offsets.
    if (pid !== undefined) await stopProcessGroup(pid, 30_000);
    removeFile(pidFile());
  },
};
