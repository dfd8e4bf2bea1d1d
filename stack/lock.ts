import { mkdirSync, openSync, readFileSync, rmSync, writeSync, closeSync } from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { isAlive } from './proc';

// Two `stack up`s at once (npm test while a developer runs the CLI) would both run pip, maven
// and initdb into the same directories. A pid lock file serialises them; a lock whose owner
// died is stale and taken over.

export async function withLock<T>(file: string, timeoutMs: number, fn: () => Promise<T>): Promise<T> {
  mkdirSync(dirname(file), { recursive: true });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      let text = '';
      try {
        text = readFileSync(file, 'utf8');
      } catch {
        continue; /* released between calls */
      }
      const owner = Number(text);
      // Empty: the owner created the file and has not written its pid yet.
      if (text !== '' && (!Number.isSafeInteger(owner) || owner <= 0 || !isAlive(owner))) {
        rmSync(file, { force: true });
        continue;
      }
      if (Date.now() > deadline) {
        throw new Error(`stack: lock ${file} still held by pid ${owner} after ${timeoutMs / 1000} s (another stack up running?)`);
      }
      await sleep(500);
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(file, { force: true });
  }
}
