/**
 * The status numbers and screens (workflows/ingest-state.ts windowRowsPerSecond, client/ingest-status.ts
 * withWindowRate, cli/format.ts): rows/s is an average over the last minute, not the last cycle;
 * ages, sizes and the `floe status` screen read as documented. Pure, no services.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { initialStatus, recordCommit, windowRowsPerSecond, RECENT_COMMITS, type MergedCycle } from '../../workflows/ingest-state';
import { withWindowRate } from '../../client/ingest-status';
import { formatAge, formatBytes, ingestStatusLines, statusScreen, totalLag } from '../../cli/format';
import { tableLines } from '../../cli/common';
import type { Overview } from '../../client/overview';

const cycle = (records: number): MergedCycle => ({
  endOffsets: { '0': '1' },
  highWatermarks: { '0': '1' },
  files: [],
  deadLetterFiles: [],
  records,
  deadLetters: 0,
  advanced: true,
});

test('windowRowsPerSecond: rows committed after the newest sample at the window start, over the time since it', () => {
  // 20 rows/s in 5 s commits for two minutes.
  const samples: [number, number][] = [];
  for (let i = 0; i <= 24; i++) samples.push([i * 5000, i * 100]);
  assert.equal(windowRowsPerSecond(samples, 120_000), 20);
  // A small drain cycle at the end does not drag the average down to its own rate.
  samples.push([121_000, 2401]);
  assert.equal(windowRowsPerSecond(samples, 121_000), 20);
  // Stalled: no commit for 30 s, the rate decays; a minute without commits reads 0.
  assert.equal(windowRowsPerSecond(samples, 151_000), 9.9); // (2401 - 1800) rows / 61 s
  assert.equal(windowRowsPerSecond(samples, 200_000), 0);
  // Younger than the window: averaged since the oldest sample. One sample is no window.
  assert.equal(
    windowRowsPerSecond(
      [
        [0, 10],
        [4000, 30],
      ],
      4000,
    ),
    5,
  );
  assert.equal(windowRowsPerSecond([[0, 10]], 4000), null);
  // Slow rates keep a decimal.
  assert.equal(
    windowRowsPerSecond(
      [
        [0, 0],
        [60_000, 30],
      ],
      60_000,
    ),
    0.5,
  );
});

test('recordCommit keeps the last commits (bounded) and reports the windowed rate, not the last cycle', () => {
  const s = initialStatus({ table: 'db.t', ingestId: 'main' });
  let t = 1_000_000;
  recordCommit(s, cycle(100), 'c0', { snapshotId: '1', committedAtMs: t } as never, 5000);
  assert.equal(s.rowsPerSecond, 20, 'one commit: its own cycle');
  for (let i = 1; i < 50; i++) recordCommit(s, cycle(100), `c${i}`, { snapshotId: String(i), committedAtMs: (t += 5000) } as never, 5000);
  assert.equal(s.recentCommits!.length, RECENT_COMMITS);
  assert.equal(s.rowsPerSecond, 20);
  // The drain's last cycle: 3 rows in 5 s. The last cycle's rate would be 0.6 rows/s.
  recordCommit(s, cycle(3), 'last', { snapshotId: 'x', committedAtMs: (t += 5000) } as never, 5000);
  assert.equal(s.rowsPerSecond, 18, '(11 * 100 + 3) rows over the last 60 s');
  // Carried statuses from before the window existed still work.
  const old = { ...initialStatus({ table: 'db.t', ingestId: 'main' }), rowsPerSecond: 7 };
  delete old.recentCommits;
  assert.equal(withWindowRate(old, Date.now()).rowsPerSecond, 7);
});

test('withWindowRate: running ingests as of now, finished ones as of their last commit', () => {
  const base = {
    ...initialStatus({ table: 'db.t', ingestId: 'main' }),
    recentCommits: [
      [0, 0],
      [60_000, 600],
    ] as [number, number][],
    lastCommitTimeMs: 60_000,
  };
  assert.equal(withWindowRate({ ...base, state: 'stopped' }, 10_000_000).rowsPerSecond, 10);
  assert.equal(withWindowRate({ ...base, state: 'running' }, 90_000).rowsPerSecond, Math.round((600 / 90) * 10) / 10);
});

test('formatAge, formatBytes, totalLag', () => {
  assert.equal(formatAge(850), '850ms');
  assert.equal(formatAge(42_000), '42s');
  assert.equal(formatAge(185_000), '3m05s');
  assert.equal(formatAge(2 * 3600_000 + 7 * 60_000), '2h07m');
  assert.equal(formatAge(4 * 86400_000 + 3 * 3600_000), '4d03h');
  assert.equal(formatBytes(512), '512 B');
  assert.equal(formatBytes(3.4 * 1024 * 1024), '3.4 MiB');
  assert.equal(totalLag({ '0': '5', '1': '12345678901234567890' }), 12345678901234567895n);
});

test('ingestStatusLines: state, last commit age, windowed rows/s, total lag, the error of a failed ingest', () => {
  const s = {
    ...initialStatus({ table: 'db.t', ingestId: 'main' }),
    state: 'failed' as const,
    cursor: { '1': '7', '0': '9' },
    lag: { '0': '1', '1': '2' },
    lastCommitTimeMs: 1000,
    rowsPerSecond: 12,
    error: 'TableDrift: table db.t: column "x" is long in the table but int in the config',
  };
  const { lines, partitions } = ingestStatusLines(s, 61_000);
  assert.match(lines[0]!, /^ingest db\.t\/main: failed;/);
  assert.match(lines[1]!, /\(1m00s ago\)$/);
  assert.match(lines[2]!, /^12 rows\/s \(last minute\); lag 3 records/);
  assert.equal(lines[3], `error: ${s.error}`);
  assert.deepEqual(
    partitions.map((p) => p.partition),
    ['0', '1'],
  );
});

test('ingestStatusLines of a stalled ingest: since when, attempts and the error; an isolation in progress', () => {
  const s = {
    ...initialStatus({ table: 'db.t', ingestId: 'main' }),
    state: 'stalled' as const,
    failing: { error: 'ServiceUnavailable: connect ECONNREFUSED 127.0.0.1:9092', attempts: 12, sinceMs: 1000 },
    isolation: { ranges: [{ partition: '0', from: '5', to: '9' }], reason: 'Error: boom', sinceMs: 0, deadLettered: 2, inARow: 1 },
  };
  const { lines } = ingestStatusLines(s, 181_000);
  assert.match(lines[0]!, /^ingest db\.t\/main: stalled;/);
  assert.equal(
    lines[3],
    'stalled since 1970-01-01T00:00:01.000Z (3m00s), 12 attempts: ServiceUnavailable: connect ECONNREFUSED 127.0.0.1:9092',
  );
  assert.match(
    lines[4]!,
    /^isolating the records of a cycle that failed on every attempt \(Error: boom\): 1 ranges to check, 2 records dead-lettered/,
  );
});

test('ingestStatusLines of a route: one row per table with its own cursor; none for a plain table', () => {
  const s = {
    ...initialStatus({ table: 'shop.events', ingestId: 'main' }),
    cursor: { '0': '4', '1': '9' },
    tables: {
      'shop.orders': { cursor: { '1': '9', '0': '12' }, rows: 7, commits: 2, lastSnapshotId: '42' },
      'shop.events': { cursor: { '0': '12', '1': '9' }, rows: 0, commits: 2, lastSnapshotId: '41' },
      'shop.events_shipment': { cursor: { '0': '4', '1': '9' }, rows: 3, commits: 0, lastSnapshotId: null },
    },
  };
  assert.deepEqual(ingestStatusLines(s, 0).tables, [
    { table: 'shop.events', rows: '0', commits: '2', cursor: '0:12 1:9', last_snapshot: '41' },
    { table: 'shop.events_shipment', rows: '3', commits: '0', cursor: '0:4 1:9', last_snapshot: '-' },
    { table: 'shop.orders', rows: '7', commits: '2', cursor: '0:12 1:9', last_snapshot: '42' },
  ]);
  assert.deepEqual(ingestStatusLines(initialStatus({ table: 'db.t', ingestId: 'main' }), 0).tables, []);
});

test('statusScreen: one row per table, the latest and the next maintenance run, failures listed', () => {
  const now = Date.parse('2026-07-01T12:00:00Z');
  const o: Overview = {
    generatedAtMs: now,
    elapsedMs: 120,
    tables: [
      {
        table: 'db.a',
        topic: 'a',
        ingest: {
          state: 'running',
          lag: 12,
          lastCommitTimeMs: now - 3000,
          lastCommitAgeMs: 3000,
          rowsPerSecond: 20,
          commits: 5,
          totalRows: 100,
        },
        files: { snapshotId: '1', dataFiles: 40, bytes: 5 * 1024 * 1024, smallFiles: 38, smallFileBytes: 1 },
        maintenance: [
          {
            kind: 'compact',
            scheduleId: 's1',
            paused: false,
            lastRunAtMs: now - 300_000,
            lastRunWorkflowId: 'w',
            lastRunStatus: 'COMPLETED',
            nextRunAtMs: now + 3300_000,
          },
          {
            kind: 'expire',
            scheduleId: 's2',
            paused: false,
            lastRunAtMs: now - 900_000,
            lastRunWorkflowId: 'w',
            lastRunStatus: 'COMPLETED',
            nextRunAtMs: now + 60_000,
          },
        ],
        failures: [],
      },
      {
        table: 'db.b',
        topic: 'b',
        ingest: {
          state: 'failed',
          lag: null,
          lastCommitTimeMs: null,
          lastCommitAgeMs: null,
          rowsPerSecond: null,
          commits: null,
          totalRows: null,
          error: 'TableDrift: x',
        },
        files: { error: 'NotFound: y' },
        maintenance: [],
        failures: ['ingest failed: TableDrift: x', 'files: NotFound: y'],
      },
    ],
  };
  const s = statusScreen(o);
  assert.match(s.header, /2 table\(s\), 1 with failures/);
  assert.deepEqual(s.rows[0], {
    table: 'db.a',
    ingest: 'running',
    lag: '12',
    last_commit: '3s ago',
    'rows/s': '20',
    files: '40',
    small: '38',
    size: '5.0 MiB',
    last_maintenance: 'compact 5m00s ago ok',
    next_maintenance: 'expire in 1m00s',
  });
  assert.equal(s.rows[1]!.ingest, 'failed');
  assert.equal(s.rows[1]!.last_maintenance, 'no schedules');
  assert.deepEqual(s.failures, ['db.b: ingest failed: TableDrift: x', 'db.b: files: NotFound: y']);
  const lines = tableLines(s.rows, s.columns);
  assert.equal(lines.length, 4);
  assert.ok(lines.every((l) => l === l.trimEnd()));
});
