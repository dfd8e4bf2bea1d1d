import { StepCancelled } from '../contract';

/**
 * A worker-wide bound on the bytes its poll activities buffer at once. Each poll holds its cycle's
 * records in memory until they are written as Parquet; with up to 16 concurrent activities and
 * several tables, per-cycle bounds alone multiply into an out-of-memory crash, and a crash replays
 * the same cycle forever. A poll reserves its byte bound before reading (waiting, FIFO, while others
 * hold the budget) and releases it after writing; a bound larger than the whole budget is clamped
 * to it, so one poll can always run.
 */
export class BufferBudget {
  private used = 0;
  private readonly waiters: Array<{ bytes: number; wake: () => void }> = [];

  constructor(readonly totalBytes: number) {
    if (!Number.isSafeInteger(totalBytes) || totalBytes <= 0)
      throw new Error(`buffer budget: expected a positive byte count, found ${totalBytes}`);
  }

  get inUse(): number {
    return this.used;
  }

  /**
   * Reserves min(bytes, total); resolves to a release function and the bytes actually granted.
   * `signal` (the activity's cancellation) ends a wait: the waiter leaves the queue and the promise
   * rejects with StepCancelled, so a cancelled poll never waits for a budget it will not use.
   */
  async acquire(bytes: number, onWait?: () => void, signal?: AbortSignal): Promise<{ granted: number; release: () => void }> {
    const granted = Math.max(1, Math.min(bytes, this.totalBytes));
    if (signal?.aborted) throw new StepCancelled('cancelled while waiting for the worker buffer budget');
    if (this.waiters.length > 0 || this.used + granted > this.totalBytes) {
      const beat = onWait ? setInterval(onWait, 2000) : undefined;
      let onAbort: (() => void) | undefined;
      try {
        await new Promise<void>((wake, cancel) => {
          const waiter = { bytes: granted, wake };
          this.waiters.push(waiter);
          onAbort = () => {
            const i = this.waiters.indexOf(waiter);
            // Already woken (granted) in the same turn: the caller releases it as usual.
            if (i < 0) return;
            this.waiters.splice(i, 1);
            // The head may have left: the next ones may fit now.
            this.drain();
            cancel(new StepCancelled('cancelled while waiting for the worker buffer budget'));
          };
          signal?.addEventListener('abort', onAbort, { once: true });
        });
      } finally {
        if (beat) clearInterval(beat);
        if (onAbort) signal?.removeEventListener('abort', onAbort);
      }
    } else {
      this.used += granted;
    }
    let released = false;
    return {
      granted,
      release: () => {
        if (released) return;
        released = true;
        this.used -= granted;
        this.drain();
      },
    };
  }

  /** Wakes waiters in order while the head fits (FIFO: a large poll is never starved by small ones). */
  private drain(): void {
    while (this.waiters.length > 0 && this.used + this.waiters[0]!.bytes <= this.totalBytes) {
      const w = this.waiters.shift()!;
      this.used += w.bytes;
      w.wake();
    }
  }
}

/** FLOE_WORKER_BUFFER_BYTES, default 256 MiB of raw message bytes per worker process. */
export function bufferBudgetFromEnv(env: NodeJS.ProcessEnv = process.env): BufferBudget {
  const v = env.FLOE_WORKER_BUFFER_BYTES;
  const n = v === undefined ? 256 * 1024 * 1024 : Number(v);
  if (!Number.isSafeInteger(n) || n <= 0)
    throw new Error(`FLOE_WORKER_BUFFER_BYTES: expected a positive integer (bytes), found ${JSON.stringify(v)}`);
  return new BufferBudget(n);
}
