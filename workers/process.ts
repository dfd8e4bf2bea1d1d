/**
 * A floe worker as a separate OS process, so demos and chaos tests can SIGKILL it for real.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

const REPO = resolve(__dirname, '..');
// Compiled (dist/), the worker is dist/cli/main.js run by plain node; in a checkout, the sources through tsx.
const WORKER_ENTRY = __filename.endsWith('.js') ? [resolve(REPO, 'cli/main.js')] : ['--import', 'tsx', resolve(REPO, 'cli/main.ts')];

export interface WorkerProcess {
  pid: number;
  proc: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

export function spawnWorker(configPath: string, logFile: string, env: Record<string, string> = {}): WorkerProcess {
  mkdirSync(dirname(logFile), { recursive: true });
  const log = createWriteStream(logFile, { flags: 'a' });
  const proc = spawn(process.execPath, [...WORKER_ENTRY, '-c', configPath, 'worker'], {
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
