import { spawn, type SpawnOptions } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

// Process plumbing shared by the services: daemons run detached in their own process group with
// stdout/stderr appended to a log file (never a pipe, so a parent exiting cannot SIGPIPE them and
// CI is not held open by inherited fds), and a pid file under $FLOE_HOME/run.

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

interface RunOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
  /** Run as this system user (root only), e.g. postgres, which refuses to run as root. */
  asUser?: string;
  /** Resolve with a non-zero exit code instead of rejecting. */
  allowFailure?: boolean;
}

/** Wraps a command for `asUser` via runuser(1), keeping the environment. */
function withUser(cmd: string, args: string[], asUser?: string): [string, string[]] {
  return asUser ? ['runuser', ['-u', asUser, '--', cmd, ...args]] : [cmd, args];
}

/** Runs a command to completion; a failure names the command and shows its output's tail. */
export function runCommand(cmd0: string, args0: string[], opts: RunOptions = {}): Promise<CommandResult> {
  const [cmd, args] = withUser(cmd0, args0, opts.asUser);
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    // Decoded as a stream: a pipe delivers chunks at arbitrary byte boundaries, and a chunk decoded
    // on its own turns a character split across two of them into U+FFFD (the fuzzer's long
    // multi-byte strings, read back through PyIceberg's JSON on stdout, found it).
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.on('data', (d: string) => {
      stderr += d;
    });
    const timer = opts.timeoutMs
      ? setTimeout(() => {
          child.kill('SIGKILL');
          stderr += `\n[killed after ${opts.timeoutMs} ms]`;
        }, opts.timeoutMs)
      : undefined;
    child.on('error', (e) => {
      if (timer) clearTimeout(timer);
      reject(new Error(`cannot run ${cmd}: ${e.message}`));
    });
    child.on('close', (code, signal) => {
      if (timer) clearTimeout(timer);
      const result = { code: code ?? (signal ? 128 : 1), stdout, stderr };
      if (result.code === 0 || opts.allowFailure) return resolve(result);
      reject(new Error(`command failed (exit ${code ?? signal}): ${[cmd, ...args].join(' ')}\n${tailText(stderr || stdout, 30)}`));
    });
  });
}

interface DaemonSpec {
  cmd: string;
  args: string[];
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  logFile: string;
  pidFile: string;
}

/** Starts a detached daemon (own process group), appending its output to logFile. */
export function spawnDaemon(spec: DaemonSpec): number {
  mkdirSync(dirname(spec.logFile), { recursive: true });
  mkdirSync(dirname(spec.pidFile), { recursive: true });
  const fd = openSync(spec.logFile, 'a');
  try {
    writeSync(fd, `\n=== ${new Date().toISOString()} start: ${[spec.cmd, ...spec.args].join(' ')}\n`);
    const options: SpawnOptions = { cwd: spec.cwd, env: spec.env ?? process.env, detached: true, stdio: ['ignore', fd, fd] };
    const child = spawn(spec.cmd, spec.args, options);
    if (child.pid === undefined) throw new Error(`cannot spawn ${spec.cmd}`);
    child.unref();
    writeFileSync(spec.pidFile, `${child.pid}\n`);
    return child.pid;
  } finally {
    closeSync(fd);
  }
}

export function readPid(pidFile: string): number | undefined {
  if (!existsSync(pidFile)) return undefined;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
  // A zombie still answers signal 0; it is not running.
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

/** True if pid is alive and its command line contains `needle` (guards against pid reuse). */
export function pidRuns(pid: number | undefined, needle: string): pid is number {
  if (pid === undefined || !isAlive(pid)) return false;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').includes(needle);
  } catch {
    return true; // no /proc: trust the pid file
  }
}

/** SIGTERM the daemon's process group, SIGKILL it after graceMs. Returns true if it had to kill. */
export async function stopProcessGroup(pid: number, graceMs: number): Promise<boolean> {
  const signal = (sig: NodeJS.Signals) => {
    try {
      process.kill(-pid, sig);
    } catch {
      try {
        process.kill(pid, sig);
      } catch {
        /* gone */
      }
    }
  };
  signal('SIGTERM');
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!isAlive(pid)) return false;
    await sleep(200);
  }
  signal('SIGKILL');
  for (let i = 0; i < 25 && isAlive(pid); i++) await sleep(200);
  return true;
}

export function removeFile(path: string): void {
  rmSync(path, { force: true });
}

/** Whether something accepts TCP connections on host:port. */
export function tcpOpen(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/**
 * Polls `check` until it returns true. Stops early (returning false) when `abort` returns a
 * reason, e.g. the daemon exited, so a crash is reported at once instead of after the timeout.
 */
export async function waitFor(
  check: () => Promise<boolean>,
  opts: { timeoutMs: number; intervalMs?: number; abort?: () => string | undefined },
): Promise<{ ok: true } | { ok: false; reason: string }> {
  const deadline = Date.now() + opts.timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return { ok: true };
    const reason = opts.abort?.();
    if (reason) return { ok: false, reason };
    if (Date.now() >= deadline) return { ok: false, reason: `not ready after ${opts.timeoutMs / 1000} s` };
    await sleep(opts.intervalMs ?? 500);
  }
}

function tailText(text: string, lines: number): string {
  const all = text.replace(/\n+$/, '').split('\n');
  return all.slice(-lines).join('\n');
}

/** Last `lines` lines of a log, reading at most its last 256 KiB. */
export function tailFile(path: string, lines = 30): string {
  if (!existsSync(path)) return `(no log file at ${path})`;
  const size = statSync(path).size;
  const len = Math.min(size, 256 * 1024);
  const buf = Buffer.alloc(len);
  const fd = openSync(path, 'r');
  try {
    readSync(fd, buf, 0, len, size - len);
  } finally {
    closeSync(fd);
  }
  return tailText(buf.toString('utf8'), lines);
}

/** True when running as root (postgres must then be run as another user). */
export const isRoot = (): boolean => typeof process.getuid === 'function' && process.getuid() === 0;
