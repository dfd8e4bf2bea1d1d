import { createHash } from 'node:crypto';
import { createReadStream, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { PORTS, stackEnv } from '../env';
import { stackPaths } from '../paths';
import { pidRuns, readPid, removeFile, runCommand, spawnDaemon, stopProcessGroup, tcpOpen, waitFor } from '../proc';
import { StackError, markerMatches, writeMarker, type Health, type Service } from '../service';
import { MAVEN, SCHEMA_REGISTRY } from '../versions';

// A Confluent-compatible Schema Registry: Apicurio Registry 2.6 (a Quarkus app from Maven Central)
// with in-memory storage, serving the Confluent API (ccompat v7) on 127.0.0.1:8081. Its ids are
// content ids, as Confluent's are: one id per distinct schema, shared by every subject holding it.
// Nothing survives a stop, so tests register the subjects they read (under topics of their own).

const p = () => stackPaths();
const home = () => join(p().home, 'schema-registry');
const appDir = () => join(home(), 'app');
const markerFile = () => join(home(), '.floe-installed.json');
const pidFile = () => join(p().run, 'schema-registry.pid');
const java = () => process.env.FLOE_JAVA ?? 'java';
const PROCESS_NEEDLE = 'apicurio-registry-app';

/** The Maven Central artifact of one Apicurio version and the names inside it. */
export function apicurioArtifact(version: string) {
  const file = `apicurio-registry-app-${version}-all.zip`;
  return {
    coordinates: `io.apicurio:apicurio-registry-app:${version}:zip:all`,
    /** Path of the zip in a Maven repository (local or Central); Central's .sha1 sits beside it. */
    repositoryPath: `io/apicurio/apicurio-registry-app/${version}/${file}`,
    runnerJar: `apicurio-registry-app-${version}-runner.jar`,
  };
}

/** Throws unless `file`'s SHA-1 equals the hex digest in `sha1File` (Maven's `<file>.sha1`). */
export async function verifySha1(file: string, sha1File: string): Promise<void> {
  if (!existsSync(sha1File)) throw new Error(`no checksum beside ${file}: expected ${sha1File}`);
  // Some repositories append the file name after the digest.
  const expected = readFileSync(sha1File, 'utf8').trim().split(/\s+/)[0]!.toLowerCase();
  const hash = createHash('sha1');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  const found = hash.digest('hex');
  if (found !== expected) throw new Error(`SHA-1 of ${file} is ${found}, Maven Central's ${sha1File} says ${expected}`);
}

export const schemaRegistry: Service = {
  name: 'schema-registry',
  needs: [],
  get logFile() {
    return join(p().logs, 'schema-registry.log');
  },
  endpoint: () => stackEnv().schemaRegistry.url,
  external: () => stackEnv().schemaRegistry.external,
  installed: () =>
    markerMatches(markerFile(), SCHEMA_REGISTRY) &&
    existsSync(join(appDir(), apicurioArtifact(SCHEMA_REGISTRY['apicurio-registry']).runnerJar)),
  pid() {
    const pid = readPid(pidFile());
    return pidRuns(pid, PROCESS_NEEDLE) ? pid : undefined;
  },

  async install(log = () => {}) {
    if (this.installed()) return;
    const artifact = apicurioArtifact(SCHEMA_REGISTRY['apicurio-registry']);
    const zip = join(p().m2, artifact.repositoryPath);
    log(`schema-registry: resolving ${artifact.coordinates} (142 MB) from Maven Central`);
    try {
      // dependency:get fetches into the stack's Maven repository with the .sha1 Central serves;
      // -C fails the download on a checksum mismatch, verifySha1 re-checks a zip cached earlier.
      await runCommand(
        'mvn',
        [
          '-B',
          '-q',
          '-C',
          `-Dmaven.repo.local=${p().m2}`,
          `org.apache.maven.plugins:maven-dependency-plugin:${MAVEN['maven.dependency.plugin.version']}:get`,
          `-Dartifact=${artifact.coordinates}`,
          '-Dtransitive=false',
        ],
        { timeoutMs: 30 * 60_000 },
      );
    } catch (e) {
      throw new StackError('schema-registry', 'maven dependency:get', (e as Error).message);
    }
    try {
      await verifySha1(zip, `${zip}.sha1`);
    } catch (e) {
      throw new StackError('schema-registry', 'checksum', (e as Error).message);
    }
    // Unpack beside the app and swap whole directories, so an old version's lib/ never mixes in.
    const tmp = `${appDir()}.tmp`;
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(home(), { recursive: true });
    try {
      await runCommand('unzip', ['-q', zip, '-d', tmp], { timeoutMs: 10 * 60_000 });
    } catch (e) {
      throw new StackError('schema-registry', `unzip ${zip}`, (e as Error).message);
    }
    if (!existsSync(join(tmp, artifact.runnerJar)))
      throw new StackError('schema-registry', 'install', `expected ${artifact.runnerJar} in ${zip}, found nothing`);
    rmSync(appDir(), { recursive: true, force: true });
    renameSync(tmp, appDir());
    writeMarker(markerFile(), SCHEMA_REGISTRY);
  },

  async health(): Promise<Health> {
    const url = this.endpoint();
    try {
      const res = await fetch(`${url}/subjects`, { signal: AbortSignal.timeout(3000) });
      if (!res.ok) return { ok: false, detail: `GET ${url}/subjects answered HTTP ${res.status}` };
      const subjects = (await res.json()) as unknown;
      if (!Array.isArray(subjects)) return { ok: false, detail: `GET ${url}/subjects answered ${JSON.stringify(subjects)}, not a list` };
      return { ok: true, detail: `Schema Registry API at ${url} lists ${subjects.length} subject(s)` };
    } catch (e) {
      return { ok: false, detail: `nothing answers at ${url}: ${(e as Error).message}` };
    }
  },

  async start() {
    if ((await this.health()).ok) return;
    const port = PORTS.schemaRegistry;
    if (this.pid() === undefined) {
      if (await tcpOpen('127.0.0.1', port)) {
        throw new StackError('schema-registry', `port ${port}`, 'the port is taken by a process this stack did not start', this.logFile);
      }
      mkdirSync(home(), { recursive: true });
      spawnDaemon({
        cmd: java(),
        args: [
          // ~170 MB resident with an empty registry; the tests' few schemas add little.
          '-Xms32m',
          '-Xmx256m',
          '-XX:+UseSerialGC',
          '-XX:TieredStopAtLevel=1',
          '-Djava.awt.headless=true',
          '-Dquarkus.http.host=127.0.0.1',
          `-Dquarkus.http.port=${port}`,
          '-Dregistry.ccompat.legacy-id-mode.enabled=false',
          '-jar',
          join(appDir(), apicurioArtifact(SCHEMA_REGISTRY['apicurio-registry']).runnerJar),
        ],
        cwd: home(),
        logFile: this.logFile,
        pidFile: pidFile(),
      });
    }
    const ready = await waitFor(async () => (await this.health()).ok, {
      timeoutMs: 120_000,
      intervalMs: 250,
      abort: () => (this.pid() === undefined ? 'the registry process exited' : undefined),
    });
    if (!ready.ok) throw new StackError('schema-registry', `start on 127.0.0.1:${port}`, ready.reason, this.logFile);
  },

  async stop() {
    const pid = this.pid();
    if (pid !== undefined) await stopProcessGroup(pid, 15_000);
    removeFile(pidFile());
  },
};
