/**
 * Text formatting shared by the status commands: ages, rates, byte sizes, the ingest status block.
 * Pure functions (test/unit/cli-format.test.ts).
 */
import type { IngestStatusView } from '../client/ingest-status';
import type { Overview } from '../client/overview';

/** A duration, short: `850ms`, `42s`, `3m05s`, `2h07m`, `4d03h`. */
export function formatAge(ms: number): string {
  if (!Number.isFinite(ms)) return '-';
  const neg = ms < 0 ? '-' : '';
  ms = Math.abs(ms);
  if (ms < 1000) return `${neg}${Math.round(ms)}ms`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${neg}${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${neg}${m}m${String(s % 60).padStart(2, '0')}s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${neg}${h}h${String(m % 60).padStart(2, '0')}m`;
  return `${neg}${Math.floor(h / 24)}d${String(h % 24).padStart(2, '0')}h`;
}

/** Bytes in binary units: `512 B`, `3.4 MiB`. */
export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return i === 0 ? `${n} B` : `${n.toFixed(n >= 100 ? 0 : 1)} ${units[i]}`;
}

/** Total records behind over all partitions (lag values are decimal strings). */
export function totalLag(lag: Record<string, string>): bigint {
  return Object.values(lag).reduce((a, v) => a + BigInt(v), 0n);
}

/** A step failing again and again: `stalled since <time> (<age>), <n> attempts: <error>` (or `failing` below K attempts). */
function stallLine(f: { error: string; attempts: number; sinceMs: number }, stalled: boolean, nowMs: number): string {
  return `${stalled ? 'stalled' : 'failing'} since ${new Date(f.sinceMs).toISOString()} (${formatAge(nowMs - f.sinceMs)}), ${f.attempts} attempts: ${f.error}`;
}

/** `floe ingest status` / `ingest stop --wait` in text: a summary, the last commit, then one row per partition. */
export function ingestStatusLines(
  s: IngestStatusView,
  nowMs: number,
): { lines: string[]; partitions: Record<string, string>[]; tables: Record<string, string>[] } {
  const age = s.lastCommitTimeMs ? ` (${formatAge(nowMs - s.lastCommitTimeMs)} ago)` : '';
  const lines = [
    `ingest ${s.table}/${s.ingestId}: ${s.state}; ${s.commits} commits, ${s.totalRows} rows, ${s.totalDeadLetters} dead letters, ${s.fencedCommits} fenced`,
    `last commit ${s.lastCommitId ?? '-'} snapshot ${s.lastSnapshotId ?? '-'} at ${s.lastCommitTimeMs ? new Date(s.lastCommitTimeMs).toISOString() : '-'}${age}`,
    `${s.rowsPerSecond} rows/s (last minute); lag ${totalLag(s.lag)} records; ${s.filesPerCommit} files/commit`,
  ];
  if (s.error) lines.push(`error: ${s.error}`);
  if (s.failing) lines.push(stallLine(s.failing, s.state === 'stalled', nowMs));
  if (s.skippedRecords)
    lines.push(`${s.skippedRecords} records skipped: Kafka deleted them (retention) before they were read (snapshot summary floe.skipped)`);
  if (s.isolation)
    lines.push(
      `isolating the records of a cycle that failed on every attempt (${s.isolation.reason}): ${s.isolation.ranges.length} ranges to check, ${s.isolation.deadLettered} records dead-lettered so far`,
    );
  if (s.warning) lines.push(`warning: ${s.warning}`);
  if (s.missingTopics?.length) lines.push(`listed topics the cluster does not have (yet): ${s.missingTopics.join(', ')}`);
  if (s.goneTopics?.length) lines.push(`topics deleted (their ingest stopped, rows and cursors kept): ${s.goneTopics.join(', ')}`);
  // Partitions, or for an entry of several topics `<topic>/<partition>`: in numeric order.
  const byPartition = (a: string, b: string) => a.localeCompare(b, 'en', { numeric: true });
  const partitions = Object.keys(s.cursor)
    .sort(byPartition)
    .map((p) => ({ partition: p, next_offset: s.cursor[p]!, lag: s.lag[p] ?? '' }));
  // A route: one row per table, each with its own cursor (the partitions above are their minimum).
  const tables = Object.entries(s.tables ?? {})
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([table, t]) => ({
      table,
      rows: String(t.rows),
      commits: String(t.commits),
      cursor: Object.keys(t.cursor)
        .sort(byPartition)
        .map((p) => `${p}:${t.cursor[p]}`)
        .join(' '),
      last_snapshot: t.lastSnapshotId ?? '-',
    }));
  return { lines, partitions, tables };
}

/** When a maintenance run was or will be, relative to now: `5m ago`, `in 55m`. */
const relative = (atMs: number, nowMs: number): string =>
  atMs <= nowMs ? `${formatAge(nowMs - atMs)} ago` : `in ${formatAge(atMs - nowMs)}`;

const RUN_STATUS: Record<string, string> = {
  COMPLETED: 'ok',
  RUNNING: 'running',
  FAILED: 'FAILED',
  TERMINATED: 'terminated',
  TIMED_OUT: 'timed out',
  CANCELLED: 'cancelled',
};

/** `floe status` in text: one row per table, then the failures (the text form of client/overview.ts). */
export function statusScreen(o: Overview): { header: string; rows: Record<string, string>[]; columns: string[]; failures: string[] } {
  const now = o.generatedAtMs;
  const rows = o.tables.map((t) => {
    const i = t.ingest;
    const f = t.files;
    const runs = 'error' in t.maintenance ? [] : t.maintenance;
    const last = runs.filter((r) => r.lastRunAtMs !== null).sort((a, b) => b.lastRunAtMs! - a.lastRunAtMs!)[0];
    const next = runs.filter((r) => r.nextRunAtMs !== null && !r.paused).sort((a, b) => a.nextRunAtMs! - b.nextRunAtMs!)[0];
    return {
      table: t.table,
      ingest: i.warning ? `${i.state}?` : i.state,
      lag: i.lag === null ? '-' : String(i.lag),
      last_commit: i.lastCommitAgeMs === null ? '-' : `${formatAge(i.lastCommitAgeMs)} ago`,
      'rows/s': i.rowsPerSecond === null ? '-' : String(i.rowsPerSecond),
      files: 'error' in f ? '?' : String(f.dataFiles),
      small: 'error' in f ? '?' : String(f.smallFiles),
      size: 'error' in f ? '?' : formatBytes(f.bytes),
      last_maintenance:
        'error' in t.maintenance
          ? '?'
          : last
            ? `${last.kind} ${relative(last.lastRunAtMs!, now)} ${RUN_STATUS[last.lastRunStatus ?? ''] ?? last.lastRunStatus ?? ''}`.trim()
            : runs.length
              ? 'never'
              : 'no schedules',
      next_maintenance: next ? `${next.kind} ${relative(next.nextRunAtMs!, now)}` : '-',
    };
  });
  const failures = o.tables.flatMap((t) => [
    ...t.failures.map((x) => `${t.table}: ${x}`),
    ...(t.ingest.warning ? [`${t.table}: warning: ${t.ingest.warning}`] : []),
  ]);
  const header = `floe status at ${new Date(now).toISOString()}: ${o.tables.length} table(s), ${o.tables.reduce((n, t) => n + (t.failures.length ? 1 : 0), 0)} with failures (${o.elapsedMs} ms)`;
  return { header, rows, columns: rows.length ? Object.keys(rows[0]!) : [], failures };
}
