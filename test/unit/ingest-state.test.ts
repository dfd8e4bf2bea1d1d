/**
 * The ingest loop's pure state (workflows/ingest-state.ts): group polls, cycle merging, lag and
 * the status after a commit, without a Temporal server.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { CyclePlan, PollResult } from '../../ingest/types';
import {
  initialStatus,
  lagOf,
  mergeCycle,
  pollInputs,
  rangeDone,
  recordCommit,
  recordShares,
  catchingUp,
  leftBehind,
  reportedState,
} from '../../workflows/ingest-state';

const plan = (over: Partial<CyclePlan> = {}): CyclePlan => ({
  baseSnapshotId: '7',
  startOffsets: { 0: '10', 1: '20', 2: '0' },
  highWatermarks: { 0: '15', 1: '20', 2: '9' },
  deadLetterFloor: { 0: '12' },
  deadLetterBaseCommitId: 'c0',
  groups: [[0, 2], [1]],
  commitIntervalMs: 2000,
  maxRecordsPerCycle: 1001,
  maxBytesPerCycle: 10,
  cyclesPerRun: 100,
  ...over,
});
const poll = (
  groupIndex: number,
  end: Record<string, string>,
  high: Record<string, string>,
  records: number,
  deadLetters = 0,
): PollResult => ({
  groupIndex,
  files: [{ f: `g${groupIndex}` }],
  deadLetterFiles: deadLetters ? [{ d: `g${groupIndex}` }] : [],
  endOffsets: end,
  highWatermarks: high,
  records,
  deadLetters,
  bytes: records * 10,
});

void test('each group polls its own partitions from the cursor, with its share of the cycle bounds', () => {
  const input = { table: 't', ingestId: 'main' };
  const [a, b] = pollInputs(input, plan(), 'cid', false);
  assert.deepEqual(a!.startOffsets, { 0: '10', 2: '0' });
  assert.deepEqual(b!.startOffsets, { 1: '20' });
  // records: its 14 waiting + half the room left ((1001 - 14) / 2 = 493); bytes evenly
  assert.deepEqual([a!.maxRecords, b!.maxRecords, a!.maxBytes, a!.maxWaitMs, a!.untilCaughtUp], [507, 493, 5, 2000, false]);
  assert.equal(a!.commitId, 'cid');
  assert.deepEqual(a!.deadLetterFloor, { 0: '12' });
  assert.equal('stopAt' in a!, false, 'a live ingest has no stop');
  // draining: at least 5 s of waiting, until caught up; a backfill stops at its range end
  const range = { from: { 0: '0' }, to: { 0: '15' } };
  const [d] = pollInputs({ ...input, range }, plan({ groups: [[0]], maxBytesPerCycle: 0 }), 'cid', true);
  assert.deepEqual([d!.maxWaitMs, d!.untilCaughtUp, d!.stopAt, d!.limit, d!.maxBytes], [5000, true, range.to, range.to, 1]);
});

void test('a cycle merges its groups: offsets of every partition, summed counts, concatenated file lists', () => {
  const c = mergeCycle(plan(), [poll(0, { 0: '15', 2: '0' }, { 0: '15', 2: '9' }, 5, 1), poll(1, { 1: '20' }, { 1: '21' }, 0)]);
  assert.deepEqual(c.endOffsets, { 0: '15', 1: '20', 2: '0' });
  assert.deepEqual(c.highWatermarks, { 0: '15', 1: '21', 2: '9' });
  assert.deepEqual([c.records, c.deadLetters, c.advanced], [5, 1, true]);
  assert.deepEqual(c.files, [{ f: 'g0' }, { f: 'g1' }]);
  assert.deepEqual(c.deadLetterFiles, [{ d: 'g0' }]);
  const idle = mergeCycle(plan(), [poll(0, { 0: '10', 2: '0' }, { 0: '15', 2: '9' }, 0), poll(1, { 1: '20' }, { 1: '20' }, 0)]);
  assert.equal(idle.advanced, false, 'nothing moved: nothing to commit');
});

void test('lag is high watermark minus cursor, never negative, exact past 2^53', () => {
  assert.deepEqual(lagOf({ 0: '5', 1: '30' }, { 0: '15', 1: '20', 2: '3' }), { 0: '10', 1: '0', 2: '3' });
  assert.deepEqual(lagOf({ 0: '9007199254740993' }, { 0: '9007199254740995' }), { 0: '2' });
  assert.equal(rangeDone({ 0: '15', 1: '4' }, { from: {}, to: { 0: '15', 1: '4' } }), true);
  assert.equal(rangeDone({ 0: '15' }, { from: {}, to: { 0: '15', 1: '4' } }), false, 'a partition without a cursor is not done');
});

void test('a landed commit moves the cursor and the counters; status carries across continue-as-new', () => {
  const s = initialStatus({ table: 't', ingestId: 'main' });
  assert.equal(s.state, 'running');
  const c = mergeCycle(plan(), [poll(0, { 0: '15', 2: '0' }, { 0: '15', 2: '9' }, 5, 2)]);
  recordCommit(s, c, 'cid', { snapshotId: '42', alreadyCommitted: false, committedAtMs: 1000, totalRecords: '5' }, 500);
  assert.deepEqual(
    [s.commits, s.lastCommitId, s.lastSnapshotId, s.lastCommitTimeMs, s.totalRows, s.totalDeadLetters, s.filesPerCommit, s.rowsPerSecond],
    [1, 'cid', '42', 1000, 5, 2, 1, 10],
  );
  assert.deepEqual(s.cursor, { 0: '15', 1: '20', 2: '0' });
  assert.equal(initialStatus({ table: 't', ingestId: 'main', carry: s }), s);
  assert.equal(reportedState(s, true, false), 'paused');
  assert.equal(reportedState(s, true, true), 'draining', 'a drain overrides a pause');
  assert.equal(reportedState(s, false, false), 'running');
});

void test('a backlog of a full cycle or more is shared by backlog, so skewed groups end together; live cycles split evenly', () => {
  const skewed = plan({
    groups: [[0], [1]],
    startOffsets: { 0: '0', 1: '0' },
    highWatermarks: { 0: '60000', 1: '40000' },
    maxRecordsPerCycle: 50_000,
  });
  assert.deepEqual(recordShares(skewed), [30_000, 20_000]);
  const live = plan({
    groups: [[0], [1]],
    startOffsets: { 0: '0', 1: '0' },
    highWatermarks: { 0: '30', 1: '10' },
    maxRecordsPerCycle: 50_000,
  });
  assert.deepEqual(recordShares(live), [25_010, 24_990], 'less than a cycle waiting: all of it, plus an even part of the room left');
  const caughtUpGroup = plan({
    groups: [[0], [1]],
    startOffsets: { 0: '0', 1: '10' },
    highWatermarks: { 0: '90000', 1: '10' },
    maxRecordsPerCycle: 50_000,
  });
  assert.deepEqual(recordShares(caughtUpGroup), [50_000, 1], 'a group with no backlog still polls (new records may arrive)');
  assert.deepEqual(recordShares(plan({ groups: [[0, 1, 2]] })), [1001]);
  // 200,000 records unevenly keyed over 4 partitions, 100,000 per cycle: two cycles take them all
  // (shares rounded down left 4 records for a third cycle that waited out the interval).
  const uneven = { 0: 50_001, 1: 49_999, 2: 50_003, 3: 49_997 };
  let start: Record<string, string> = { 0: '0', 1: '0', 2: '0', 3: '0' };
  for (let cycle = 0; cycle < 2; cycle++) {
    const shares = recordShares(
      plan({
        groups: [[0], [1], [2], [3]],
        startOffsets: start,
        highWatermarks: Object.fromEntries(Object.entries(uneven).map(([p, n]) => [p, String(n)])),
        maxRecordsPerCycle: 100_000,
      }),
    );
    assert.ok(shares.reduce((a, b) => a + b, 0) <= 100_000 + 4, `cycle ${cycle}: at most one record per group over the bound`);
    start = Object.fromEntries(Object.entries(uneven).map(([p, n], i) => [p, String(Math.min(n, Number(start[p]) + shares[i]!))]));
  }
  assert.deepEqual(start, { 0: '50001', 1: '49999', 2: '50003', 3: '49997' });
});

void test('a cycle that finds a quarter of its bound or more waiting polls until caught up; a live one waits out the interval', () => {
  const at = (high: Record<string, string>) =>
    plan({ groups: [[0], [1]], startOffsets: { 0: '0', 1: '0' }, highWatermarks: high, maxRecordsPerCycle: 1000 });
  assert.equal(catchingUp(at({ 0: '0', 1: '0' })), false, 'nothing waiting');
  assert.equal(catchingUp(at({ 0: '100', 1: '149' })), false, 'a live stream: less than a quarter of a cycle');
  assert.equal(catchingUp(at({ 0: '100', 1: '150' })), true);
  const [a, b] = pollInputs({ table: 't', ingestId: 'main' }, at({ 0: '900', 1: '0' }), 'cid', false);
  assert.deepEqual(
    [a!.untilCaughtUp, b!.untilCaughtUp, a!.maxWaitMs],
    [true, true, 2000],
    'every group of the cycle, the interval unchanged',
  );
  assert.equal(pollInputs({ table: 't', ingestId: 'main' }, at({ 0: '10', 1: '0' }), 'cid', false)[0]!.untilCaughtUp, false);
});

void test('leftBehind: the cycle ended before records that were there when its polls started', () => {
  assert.equal(leftBehind({ endOffsets: { 0: '10', 1: '5' }, highWatermarks: { 0: '10', 1: '5' } }), false);
  assert.equal(
    leftBehind({ endOffsets: { 0: '12', 1: '5' }, highWatermarks: { 0: '10', 1: '5' } }),
    false,
    'read past the start watermark (live)',
  );
  assert.equal(leftBehind({ endOffsets: { 0: '10', 1: '4' }, highWatermarks: { 0: '10', 1: '5' } }), true);
});
