/**
 * A fixed number of `floe worker` OS processes (workers/process.ts, as the demo and the ingest
 * chaos tests spawn them) that the chaos run SIGKILLs at random and brings back after a short
 * random delay. A worker that exits on its own (a lost Temporal server, a crash point) is
 * restarted after 1 s, as a process supervisor would, and counted separately.
 *
 * Concurrency: every transition runs on the event loop of the chaos process; `stopAll` wins over
 * any pending restart (timers are cleared, exits after it are expected).
 */
import { join } from 'node:path';
import { spawnWorker, type WorkerProcess } from '../../workers/process';

interface Slot {
  index: number;
  worker: WorkerProcess | null;
  /** the exit of `worker` was caused by us (kill or stop) */
  expectedExit: boolean;
  restartTimer: NodeJS.Timeout | null;
  /** `worker` has logged that it polls its task queue (it had finished starting) */
  polling: boolean;
}

/** The line a worker logs once it polls its task queue (cli/ worker start). */
const POLLING = 'polling task queue';

export interface WorkerPoolOptions {
  configPath: string;
  count: number;
  logDir: string;
  name: string;
  env?: Record<string, string>;
  log: (msg: string) => void;
  random: () => number;
}

export class ChaosWorkerPool {
  readonly slots: Slot[];
  kills = 0;
  /**
   * kills of a worker that was polling; the others hit a worker still starting (loading code,
   * bundling workflows: tens of seconds on a loaded machine), which exercises less
   */
  killsOfPolling = 0;
  selfExits = 0;
  starts = 0;
  private stopping = false;

  constructor(private readonly o: WorkerPoolOptions) {
    this.slots = Array.from({ length: o.count }, (_, index) => ({
      index,
      worker: null,
      expectedExit: false,
      restartTimer: null,
      polling: false,
    }));
  }

  startAll(): void {
    for (const s of this.slots) if (!s.worker) this.start(s);
  }

  private start(s: Slot): void {
    if (this.stopping) return;
    if (s.restartTimer) clearTimeout(s.restartTimer);
    s.restartTimer = null;
    this.starts++;
    const w = spawnWorker(this.o.configPath, join(this.o.logDir, `${this.o.name}-w${s.index}.log`), this.o.env ?? {});
    s.worker = w;
    s.expectedExit = false;
    s.polling = false;
    for (const stream of [w.proc.stdout, w.proc.stderr]) {
      let tail = '';
      stream?.on('data', (b: Buffer) => {
        if (s.polling || s.worker !== w) return;
        tail = (tail + b.toString('utf8')).slice(-4096);
        if (tail.includes(POLLING)) s.polling = true;
      });
    }
    void w.exited.then(({ code, signal }) => {
      if (s.worker !== w) return;
      s.worker = null;
      if (this.stopping || s.expectedExit) return;
      this.selfExits++;
      this.o.log(`worker w${s.index} (pid ${w.pid}) exited by itself (code ${code}, signal ${signal}); restarting in 1 s`);
      this.scheduleRestart(s, 1000);
    });
  }

  private scheduleRestart(s: Slot, delayMs: number): void {
    if (this.stopping) return;
    if (s.restartTimer) clearTimeout(s.restartTimer);
    s.restartTimer = setTimeout(() => {
      s.restartTimer = null;
      if (!s.worker) this.start(s);
    }, delayMs);
  }

  running(): number {
    return this.slots.filter((s) => s.worker !== null).length;
  }

  /** SIGKILLs a random running worker and restarts it after `restartDelayMs`; false if none runs. */
  async killRandom(restartDelayMs: number): Promise<{ slot: number; pid: number; polling: boolean } | null> {
    const live = this.slots.filter((s) => s.worker !== null);
    if (live.length === 0 || this.stopping) return null;
    const s = live[Math.floor(this.o.random() * live.length)]!;
    const w = s.worker!;
    const polling = s.polling;
    s.expectedExit = true;
    await w.kill('SIGKILL');
    this.kills++;
    if (polling) this.killsOfPolling++;
    this.scheduleRestart(s, restartDelayMs);
    return { slot: s.index, pid: w.pid, polling };
  }

  /** Starts every worker that is down now (pending restarts happen at once). */
  ensureAllRunning(): void {
    for (const s of this.slots) if (!s.worker) this.start(s);
  }

  /** SIGTERM (graceful), then SIGKILL after `graceMs`. */
  async stopAll(graceMs = 15_000): Promise<void> {
    this.stopping = true;
    await Promise.all(
      this.slots.map(async (s) => {
        if (s.restartTimer) clearTimeout(s.restartTimer);
        s.restartTimer = null;
        const w = s.worker;
        if (!w) return;
        s.expectedExit = true;
        const timer = setTimeout(() => {
          void w.kill('SIGKILL');
        }, graceMs);
        try {
          await w.kill('SIGTERM');
        } finally {
          clearTimeout(timer);
        }
      }),
    );
  }
}
