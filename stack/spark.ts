import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { stackPaths } from './paths';
import { runCommand } from './proc';
import { StackError, markerMatches, writeMarker } from './service';
import { SPARK } from './versions';

// The opt-in `spark` profile: PySpark (which ships Spark's own jars) in a venv of its own, and
// Iceberg's Spark runtime plus the catalog JDBC drivers from Maven Central. Nothing runs as a
// service: a test or a user starts a local Spark session with stack/py/floe_spark.py, which passes
// these jars with `spark.jars`, so Spark resolves nothing at run time.

const home = () => join(stackPaths().home, 'spark');
const markerFile = () => join(home(), '.floe-installed.json');
const basePython = () => process.env.FLOE_PYTHON ?? 'python3';

/** Where the profile lives: its venv's python and the jar folder. */
export function sparkPaths() {
  return { home: home(), venv: join(home(), 'venv'), python: join(home(), 'venv', 'bin', 'python'), jars: join(home(), 'jars') };
}

/** Installed with the current pins (a pin changed in stack/versions.ts makes this false). */
export function sparkInstalled(): boolean {
  const p = sparkPaths();
  return markerMatches(markerFile(), SPARK) && existsSync(p.python) && existsSync(p.jars);
}

/** The jars Spark must load (absolute paths), for `spark.jars`. */
export function sparkJars(): string[] {
  const dir = sparkPaths().jars;
  return readdirSync(dir)
    .filter((f) => f.endsWith('.jar'))
    .sort()
    .map((f) => join(dir, f));
}

/** Installs the profile; a no-op when the marker matches the pins. */
export async function installSpark(log: (msg: string) => void = () => {}): Promise<void> {
  if (sparkInstalled()) return;
  const p = sparkPaths();
  const started = Date.now();
  log(`spark: installing pyspark ${SPARK.pyspark} into ${p.venv} and Iceberg ${SPARK['iceberg.version']}'s Spark runtime into ${p.jars}`);
  mkdirSync(p.home, { recursive: true });
  const tmp = `${p.jars}.tmp`;
  rmSync(tmp, { recursive: true, force: true });
  const { pyspark: _pyspark, ...maven } = SPARK;
  try {
    await Promise.all([
      (async () => {
        if (!existsSync(p.python)) await runCommand(basePython(), ['-m', 'venv', p.venv]);
        await runCommand(
          p.python,
          ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '-q', `pyspark==${SPARK.pyspark}`],
          {
            timeoutMs: 30 * 60_000,
          },
        );
      })(),
      runCommand(
        'mvn',
        [
          '-B',
          '-q',
          '-f',
          join(stackPaths().stackDir, 'spark', 'pom.xml'),
          `-Dmaven.repo.local=${stackPaths().m2}`,
          ...Object.entries(maven).map(([k, v]) => `-D${k}=${v}`),
          'dependency:copy-dependencies',
          `-DoutputDirectory=${tmp}`,
          '-DexcludeTransitive=true',
        ],
        { timeoutMs: 30 * 60_000 },
      ),
    ]);
  } catch (e) {
    throw new StackError('spark', 'install (pip pyspark, maven dependency:copy-dependencies)', (e as Error).message);
  }
  const runtime = join(tmp, `iceberg-spark-runtime-3.5_2.12-${SPARK['iceberg.version']}.jar`);
  if (!existsSync(runtime)) throw new StackError('spark', 'install', `expected ${runtime} after maven, found nothing`);
  rmSync(p.jars, { recursive: true, force: true });
  renameSync(tmp, p.jars);
  writeMarker(markerFile(), SPARK);
  log(`spark: installed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}
