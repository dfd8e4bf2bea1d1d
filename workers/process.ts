/**
 * A floe worker as a separate OS process, so demos and chaos tests can SIGKILL it for real.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

const REPO = resolve(__dirname, '..');
// Compiled (dist/), the worker is dist/cli/main.js run by plain node; in a checkout, the sources through tsx.
const WORKER_ENTRY = __filename.endsWith('.js') ? [resolve(REPO, 'cli/main.js')] : ['--import', 'tsx', resolve(REPO, 'cli/main.ts')];

/**
 * V8 flags every worker process gets (bin/floe adds the same to `floe worker`; the Dockerfile's
 * CMD too): 8 MB semi-spaces keep the young generation from growing to tens of MB that stay
 * resident (bench/compaction.ts: the worker's peak 571 MB by default, 451 MB with it, as fast).
 */
export const WORKER_V8_FLAGS = ['--max-semi-space-size=8'];

export interface WorkerProcess {
  pid: number;
  proc: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

interface SpawnOptions {
  /** V8/Node flags for the worker, before the entry point (default WORKER_V8_FLAGS). */
  nodeArgs?: string[];
  /** Run the compiled build (dist/cli/main.js, `npm run build`) even from the sources, as production does. */
  compiled?: boolean;
}

export function spawnWorker(configPath: string, logFile: string, env: Record<string, string> = {}, opts: SpawnOptions = {}): WorkerProcess {
  mkdirSync(dirname(logFile), { recursive: true });
  const log = createWriteStream(logFile, { flags: 'a' });
  const entry = opts.compiled ? [resolve(REPO, __filename.endsWith('.js') ? 'cli/main.js' : 'dist/cli/main.js')] : WORKER_ENTRY;
  const proc = spawn(process.execPath, [...(opts.nodeArgs ?? WORKER_V8_FLAGS), ...entry, '-c', configPath, 'worker'], {
    cwd: REPO,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout!.pipe(log, { end: false });
  proc.stderr!.pipe(log, { end: false });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => {
    proc.on('exit', (code, signal) => res({ code, signal }));
  });
  return {
    pid: proc.pid!,
    proc,
    exited,
    async kill(signal: NodeJS.Signals = 'SIGKILL') {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      await exited;
    },
  };
}
