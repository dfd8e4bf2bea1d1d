/**
 * Heartbeats every 2 s while `fn` runs, so an activity scheduled with a short heartbeat timeout
 * never times out while its worker lives, and is retried within that timeout when the worker dies
 * (a SIGKILLed worker sends nothing; without a heartbeat timeout the retry waits for the whole
 * start-to-close timeout).
 */
import { Context } from '@temporalio/activity';

const HEARTBEAT_EVERY_MS = 2000;

export async function heartbeating<T>(fn: () => Promise<T>): Promise<T> {
  const ctx = Context.current();
  ctx.heartbeat();
  const beat = setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
  try {
    return await fn();
  } finally {
    clearInterval(beat);
  }
}
