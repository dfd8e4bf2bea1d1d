/**
 * The demo's progress lines and chart (demo/progress.ts, demo/chart.ts): the kill, the restart,
 * the first commit after it and the catch-up are reported from the samples; the braille chart
 * draws a series to scale with its markers. Pure, no services.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { brailleChart } from '../../demo/chart';
import { ProgressTracker, type ProgressSample } from '../../demo/progress';

const at = (tS: number, produced: number, committed: number, commits: number, workerUp = true): ProgressSample => ({
  tS,
  produced,
  committed,
  commits,
  workerUp,
});

test('the tracker reports the kill, the restart, the first commit after it, then the catch-up', () => {
  const t = new ProgressTracker();
  const out: string[] = [];
  out.push(...t.sample(at(2, 40, 20, 1)));
  out.push(...t.sample(at(4, 80, 60, 2)));
  out.push(t.event({ tS: 5, kind: 'kill', pid: 11 }));
  out.push(...t.sample(at(6, 120, 60, 2, false)));
  out.push(t.event({ tS: 8, kind: 'restart', pid: 12 }));
  out.push(...t.sample(at(8, 160, 60, 2, false)));
  out.push(...t.sample(at(10, 200, 150, 3)));
  out.push(...t.sample(at(12, 240, 225, 4)));
  assert.match(out[0]!, /^t= {2}2s {2}produced {5}40 {2}committed {5}20 {2}lag {4}20 {2}commits {4}1$/);
  assert.match(out[2]!, /worker 11 KILLED/);
  assert.match(out[3]!, /\(worker down\)$/);
  assert.match(out[4]!, /worker 12 started again/);
  assert.match(out[7]!, /^t=10\.0s {2}RECOVERED: first commit 5 s after the kill; catching up on a lag of 50$/);
  assert.match(out[9]!, /^t=12\.0s {2}CAUGHT UP: lag 15 again, 7 s after the kill$/);
  assert.equal(out.filter((l) => /CAUGHT UP/.test(l)).length, 1);
});

test('a first commit after the restart that takes the whole backlog reports recovery and catch-up at once', () => {
  const t = new ProgressTracker();
  t.sample(at(2, 40, 0, 0));
  t.sample(at(4, 80, 70, 1));
  t.event({ tS: 5, kind: 'kill', pid: 1 });
  t.event({ tS: 7, kind: 'restart', pid: 2 });
  const lines = t.sample(at(9, 180, 170, 2));
  assert.match(lines[1]!, /^t=9\.0s {2}RECOVERED and CAUGHT UP: first commit 4 s after the kill took the backlog \(lag 10\)$/);
  assert.deepEqual(t.sample(at(11, 220, 175, 2)).length, 1, 'nothing more to report');
});

test('brailleChart: a rising line fills from the bottom-left to the top-right; markers and the time axis below', () => {
  const lines = brailleChart(
    'rows',
    [
      [0, 0],
      [10, 100],
    ],
    { width: 10, height: 2, endS: 10, markers: [{ atS: 5, char: '✕' }] },
  );
  assert.equal(lines[0], 'rows');
  assert.equal(lines.length, 1 + 2 + 1 + 1);
  assert.ok(lines[1]!.startsWith('    100 ┤'));
  assert.ok(lines[2]!.startsWith('      0 ┤'));
  const top = [...lines[1]!.slice(9)];
  const bottom = [...lines[2]!.slice(9)];
  assert.equal(top.length, 10);
  // Bottom-left dot set (the series starts at 0), top-right dot set (it ends at the maximum).
  assert.notEqual(bottom[0], '\u2800');
  assert.equal(top[0], '\u2800');
  assert.notEqual(top[9], '\u2800');
  // A step line: flat at 0 until the last sample, then up (joined vertically in the last column).
  assert.ok(
    bottom.slice(0, 9).every((c) => c === '\u2840' || c === '\u28c0'),
    bottom.join(''),
  );
  assert.equal(lines[3]!.indexOf('✕') - 9, Math.round(0.5 * 9));
  assert.match(lines[4]!, /0 s +10 s$/);
});

test('the chart of a run: lag and committed rows, both with kill and restart markers', () => {
  const t = new ProgressTracker();
  for (let s = 0; s <= 30; s += 2) t.sample(at(s, s * 20, s < 12 || s > 16 ? Math.min(s * 20, (s - 6) * 25 + 100) : 200, s));
  t.event({ tS: 12, kind: 'kill', pid: 1 });
  t.event({ tS: 15, kind: 'restart', pid: 2 });
  const lines = t.chart(40);
  assert.equal(lines.filter((l) => l.includes('✕') && l.includes('↑')).length, 3, 'two marker lines and the legend');
  assert.ok(lines.some((l) => l.startsWith('lag')));
  assert.ok(lines.some((l) => l.startsWith('committed rows')));
});
