/**
 * Crash points for chaos tests. When FLOE_TEST_KILL_AT names a point, the worker SIGKILLs itself
 * the first time it gets there (a marker file makes it once per test, across restarts), so tests
 * can place a kill exactly: during poll, after files are written, after the catalog CAS, between
 * the commits of a route's tables (before the last one).
 * Without the variable this is a no-op.
 */
import { existsSync, writeFileSync } from 'node:fs';

type CrashPoint =
  | 'poll'
  | 'after-write'
  | 'after-cas'
  | 'after-evolve'
  | 'between-table-commits'
  | 'compact-rewrite'
  | 'compact-before-commit'
  | 'expire-delete';

export function crashPoint(point: CrashPoint): void {
  if (process.env.FLOE_TEST_KILL_AT !== point) return;
  const marker = process.env.FLOE_TEST_KILL_MARKER;
  if (!marker || existsSync(marker)) return;
  writeFileSync(marker, `${point} ${process.pid}\n`);
  process.kill(process.pid, 'SIGKILL');
}
