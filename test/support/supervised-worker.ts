/**
 * A worker process restarted a second after it dies, as a deployment's supervisor would: tests
 * with crash points (activities/hooks.ts) use it to kill a worker for real and watch the retry.
 */
import { join } from 'node:path';
import { floeHome } from '../../stack/paths';
import { spawnWorker, type WorkerProcess } from '../../workers/process';

export interface SupervisedWorker {
  /** How many times the worker died and was restarted. */
  readonly exits: number;
  stop(): Promise<void>;
}

export function superviseWorker(configPath: string, name: string, env: Record<string, string> = {}): SupervisedWorker {
  const logDir = join(floeHome(), 'logs');
  let stopping = false;
  let exits = 0;
  let n = 0;
  let worker: WorkerProcess;
  const start = (): WorkerProcess => {
    const w = spawnWorker(configPath, join(logDir, `${name}-worker-${++n}.log`), env);
    void w.exited.then(() => {
      if (stopping) return;
      exits++;
      setTimeout(() => {
        if (!stopping) worker = start();
      }, 1000);
    });
    return w;
  };
  worker = start();
  return {
    get exits() {
      return exits;
    },
    async stop() {
      stopping = true;
      await worker.kill('SIGTERM').catch(() => undefined);
    },
  };
}
