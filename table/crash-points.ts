/**
 * Crash points for chaos tests. When FLOE_TEST_KILL_AT names a point, the worker SIGKILLs itself
 * the first time it gets there (a marker file makes it once per test, across restarts), so tests
 * can place a kill exactly: during poll, after files are written, after the catalog CAS, between
 * the commits of a route's tables (before the last one), and after a compaction's or an expiry's
 * commit landed but before its activity reported it.
 * FLOE_TEST_KILL_SKIP=n lets the first n hits in a process pass. Without the variable this is a no-op.
 */
import { existsSync, writeFileSync } from 'node:fs';

type CrashPoint =
  | 'poll'
  | 'after-write'
  | 'after-delete-write'
  | 'after-cas'
  | 'after-evolve'
  | 'between-table-commits'
  | 'compact-rewrite'
  | 'compact-before-commit'
  | 'compact-after-commit'
  | 'expire-after-commit'
  | 'expire-delete';

/** Hits of the armed point so far in this process (FLOE_TEST_KILL_SKIP lets the first ones pass). */
let hits = 0;

export function crashPoint(point: CrashPoint): void {
  if (process.env.FLOE_TEST_KILL_AT !== point) return;
  const marker = process.env.FLOE_TEST_KILL_MARKER;
  if (!marker || existsSync(marker)) return;
  // A kill after the first few cycles (FLOE_TEST_KILL_SKIP=n: the n+1-th hit), when a test needs state before it.
  if (++hits <= Number(process.env.FLOE_TEST_KILL_SKIP ?? '0')) return;
  writeFileSync(marker, `${point} ${process.pid}\n`);
  process.kill(process.pid, 'SIGKILL');
}

/**
 * A deterministic failure no classifier knows, for tests of isolation (workflows/isolation.ts):
 * when FLOE_TEST_FAIL_RECORD is set, writing a record whose value contains that text throws a plain
 * Error, on every attempt, as a bug in floe or a dependency would. Without the variable a no-op.
 */
export function failPoint(value: Uint8Array | null): void {
  const text = process.env.FLOE_TEST_FAIL_RECORD;
  if (!text || !value) return;
  if (Buffer.from(value.buffer, value.byteOffset, value.byteLength).includes(text)) {
    throw new Error(`injected failure: the record contains ${JSON.stringify(text)} (FLOE_TEST_FAIL_RECORD)`);
  }
}
