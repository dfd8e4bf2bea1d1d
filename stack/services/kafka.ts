import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { PORTS, stackEnv } from '../env';
import { stackPaths } from '../paths';
import { pidRuns, readPid, removeFile, runCommand, spawnDaemon, stopProcessGroup, tcpOpen, waitFor } from '../proc';
import { StackError, markerMatches, writeMarker, type Health, type Service } from '../service';
import { MAVEN, mavenProperties } from '../versions';
import {
  createScramUsers,
  ensureKafkaPasswords,
  ensureKafkaTls,
  markScramUsers,
  scramFormatArgs,
  scramUsersCurrent,
  secureListeners,
  securityProperties,
} from '../kafka/security';

// Apache Kafka 4 in KRaft mode (one process is broker and controller), jars from Maven Central.
// Beside the PLAINTEXT listener everything else uses, a SASL_SSL and a mutual-TLS listener with test
// credentials (stack/kafka/security.ts) for the Kafka security tests.

const p = () => stackPaths();
const pidFile = () => join(p().run, 'kafka.pid');
const markerFile = () => join(p().kafka, '.floe-installed.json');
const dataDir = () => join(p().data, 'kafka');
export const java = (): string => process.env.FLOE_JAVA ?? 'java';

function serverProperties(): string {
  const plain = [`PLAINTEXT://127.0.0.1:${PORTS.kafka}`, ...secureListeners(), `CONTROLLER://127.0.0.1:${PORTS.kafkaController}`].join(',');
  return [
    '# Written by stack/services/kafka.ts on every start; edits are overwritten.',
    'process.roles=broker,controller',
    'node.id=1',
    `controller.quorum.bootstrap.servers=127.0.0.1:${PORTS.kafkaController}`,
    `listeners=${plain}`,
    `advertised.listeners=${plain}`,
    'controller.listener.names=CONTROLLER',
    'inter.broker.listener.name=PLAINTEXT',
    'listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL',
    ...securityProperties(),
    `log.dirs=${dataDir()}`,
    'num.partitions=1',
    'auto.create.topics.enable=true',
    ...SINGLE_NODE_PROPERTIES,
    '',
  ].join('\n');
}

/** What a one-node KRaft cluster needs (the stack's broker and the tests' scratch brokers). */
export const SINGLE_NODE_PROPERTIES: readonly string[] = [
  // Single node: every internal topic must accept a replication factor (and ISR) of 1.
  'offsets.topic.replication.factor=1',
  'transaction.state.log.replication.factor=1',
  'transaction.state.log.min.isr=1',
  'share.coordinator.state.topic.replication.factor=1',
  'share.coordinator.state.topic.min.isr=1',
  // group.initial.rebalance.delay.ms stays at the broker's default (3 s before a new group's first
  // assignment), as on every production broker: floe's polls must not depend on it (issue 29 item 2).
];

/** A new Kafka Uuid in its text form: 16 random bytes, base64url without padding, not starting with '-'. */
export function newClusterId(): string {
  let id: string;
  do id = randomBytes(16).toString('base64url');
  while (id.startsWith('-'));
  return id;
}

/** The stack broker's cluster id, made once and kept beside its jars. */
function clusterId(): string {
  const file = join(p().kafka, 'cluster-id');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const id = newClusterId();
  writeFileSync(file, `${id}\n`);
  return id;
}

export function javaArgs(mainClass: string, extra: string[]): string[] {
  return [
    '-Xms256m',
    '-Xmx1g',
    '-XX:+UseG1GC',
    '-Djava.awt.headless=true',
    `-Dlog4j2.configurationFile=${join(p().stackDir, 'kafka', 'log4j2.properties')}`,
    '-cp',
    `${p().kafkaLibs}/*`,
    mainClass,
    ...extra,
  ];
}

export const kafka: Service = {
  name: 'kafka',
  needs: [],
  get logFile() {
    return join(p().logs, 'kafka.log');
  },
  endpoint: () => stackEnv().kafka.brokers.join(','),
  external: () => stackEnv().kafka.external,
  installed: () => markerMatches(markerFile(), MAVEN) && existsSync(p().kafkaLibs),
  pid() {
    const pid = readPid(pidFile());
    return pidRuns(pid, 'kafka.Kafka') ? pid : undefined;
  },

  async install() {
    if (this.installed()) return;
    const tmp = `${p().kafkaLibs}.tmp`;
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(p().kafka, { recursive: true });
    try {
      await runCommand(
        'mvn',
        [
          '-B',
          '-q',
          '-f',
          join(p().stackDir, 'kafka', 'pom.xml'),
          `-Dmaven.repo.local=${p().m2}`,
          ...mavenProperties(),
          'dependency:copy-dependencies',
          `-DoutputDirectory=${tmp}`,
          '-DincludeScope=runtime',
        ],
        { timeoutMs: 30 * 60_000 },
      );
    } catch (e) {
      throw new StackError('kafka', 'maven dependency:copy-dependencies', (e as Error).message);
    }
    const jar = join(tmp, `kafka_2.13-${MAVEN['kafka.version']}.jar`);
    if (!existsSync(jar)) throw new StackError('kafka', 'install', `expected ${jar} after maven, found nothing`);
    // Swap the whole directory so an old version's jars never mix into the classpath.
    rmSync(p().kafkaLibs, { recursive: true, force: true });
    renameSync(tmp, p().kafkaLibs);
    writeMarker(markerFile(), MAVEN);
  },

  async health(): Promise<Health> {
    const brokers = stackEnv().kafka.brokers;
    const first = brokers[0] ?? '';
    const i = first.lastIndexOf(':');
    if (!(await tcpOpen(first.slice(0, i), Number(first.slice(i + 1))))) return { ok: false, detail: `nothing listens on ${first}` };
    const admin = new Kafka({
      clientId: 'floe-stack-health',
      brokers,
      logLevel: logLevel.NOTHING,
      connectionTimeout: 2000,
      requestTimeout: 5000,
      retry: { retries: 0 },
    }).admin();
    try {
      await admin.connect();
      const topics = await admin.listTopics();
      // A broker this stack runs must also have its secured listeners (one started by an older
      // stack has not: start() restarts it).
      if (!this.external()) {
        for (const port of [PORTS.kafkaSaslSsl, PORTS.kafkaMtls]) {
          if (!(await tcpOpen('127.0.0.1', port)))
            return { ok: false, detail: `broker ${first} answers but nothing listens on its secured port ${port}` };
        }
      }
      return { ok: true, detail: `broker ${brokers.join(',')} answers (${topics.length} topics; SASL_SSL on ${PORTS.kafkaSaslSsl})` };
    } catch (e) {
      return { ok: false, detail: `broker ${first} open but not ready: ${(e as Error).message}` };
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  },

  async start() {
    const health = await this.health();
    if (health.ok) return;
    // Ours, answering, but without the secured listeners: started with an older server.properties.
    if (this.pid() !== undefined && /secured port/.test(health.detail)) await this.stop();
    if (this.pid() === undefined) {
      for (const port of [PORTS.kafka, PORTS.kafkaController, PORTS.kafkaSaslSsl, PORTS.kafkaMtls]) {
        if (await tcpOpen('127.0.0.1', port)) {
          throw new StackError('kafka', `port ${port}`, 'the port is taken by a process this stack did not start', this.logFile);
        }
      }
      const props = join(p().kafka, 'server.properties');
      mkdirSync(dataDir(), { recursive: true });
      try {
        await ensureKafkaTls();
      } catch (e) {
        throw new StackError('kafka', 'making the test CA and certificates with openssl', (e as Error).message);
      }
      ensureKafkaPasswords();
      // It holds the PLAIN users' passwords.
      writeFileSync(props, serverProperties(), { mode: 0o600 });
      chmodSync(props, 0o600); // a file written by an older stack kept its mode
      if (!existsSync(join(dataDir(), 'meta.properties'))) {
        // KRaft needs its log dir formatted once; --standalone makes this node the sole voter. The
        // SCRAM users are created with the metadata log.
        try {
          const scram = scramFormatArgs();
          await runCommand(
            java(),
            javaArgs('kafka.tools.StorageTool', ['format', '-t', clusterId(), '-c', props, '--standalone', ...scram]),
            {
              timeoutMs: 120_000,
            },
          ).catch((e: Error) => {
            throw new Error(e.message.replace(/password=[^\]]*/g, 'password=***'));
          });
          markScramUsers();
        } catch (e) {
          throw new StackError('kafka', 'storage format', (e as Error).message, this.logFile);
        }
      }
      spawnDaemon({ cmd: java(), args: javaArgs('kafka.Kafka', [props]), cwd: p().kafka, logFile: this.logFile, pidFile: pidFile() });
    }
    const ready = await waitFor(async () => (await this.health()).ok, {
      timeoutMs: 120_000,
      intervalMs: 1000,
      abort: () => (this.pid() === undefined ? 'the broker process exited' : undefined),
    });
    if (!ready.ok) throw new StackError('kafka', `start on 127.0.0.1:${PORTS.kafka}`, ready.reason, this.logFile);
    // A log dir formatted before the SCRAM users existed (or with other passwords) gets them now.
    if (!scramUsersCurrent()) {
      try {
        await createScramUsers(async (mainClass, args) => {
          await runCommand(java(), javaArgs(mainClass, args), { timeoutMs: 120_000 });
        });
      } catch (e) {
        throw new StackError('kafka', 'SCRAM users', (e as Error).message, this.logFile);
      }
    }
  },

  async stop() {
    const pid = this.pid();
    // SIGTERM runs a controlled shutdown that flushes logs; a clean stop avoids log recovery on start.
    if (pid !== undefined) await stopProcessGroup(pid, 30_000);
    removeFile(pidFile());
  },
};
