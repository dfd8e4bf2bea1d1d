/** Compaction memory: the process-wide budget of concurrent group rewrites, and file stats from snapshot summaries. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { RewriteMemoryBudget, rewriteMemoryEstimate, summaryFileStats, REWRITE_READ_AHEAD_BYTES } from '../../maintenance/compact';
import type { TableMetadata } from '../../iceberg';

const MB = 1024 * 1024;

describe('RewriteMemoryBudget', () => {
  it('runs rewrites that fit together and makes the others wait for a release', async () => {
    const budget = new RewriteMemoryBudget(100 * MB);
    const a = await budget.acquire(40 * MB);
    const b = await budget.acquire(50 * MB);
    assert.equal(budget.usedBytes, 90 * MB);
    let cGot = false;
    const c = budget.acquire(30 * MB).then((r) => {
      cGot = true;
      return r;
    });
    await sleep(20);
    assert.equal(cGot, false, 'waits while 90 + 30 > 100');
    a();
    a(); // releasing twice changes nothing
    const releaseC = await c;
    assert.equal(budget.usedBytes, 80 * MB);
    b();
    releaseC();
    assert.equal(budget.usedBytes, 0);
  });

  it('always lets one rewrite run, however large its estimate', async () => {
    const budget = new RewriteMemoryBudget(100 * MB);
    const big = await budget.acquire(1000 * MB);
    assert.equal(budget.usedBytes, 100 * MB);
    big();
    assert.equal(budget.usedBytes, 0);
  });

  it('heartbeats while waiting and stops waiting when the step is cancelled', async () => {
    const budget = new RewriteMemoryBudget(100 * MB);
    const held = await budget.acquire(80 * MB);
    const ctl = new AbortController();
    const beats: unknown[] = [];
    const waiting = budget.acquire(
      80 * MB,
      { attempt: 1, heartbeat: (d) => beats.push(d), warn: () => undefined, signal: ctl.signal },
      { files: 3 },
    );
    await sleep(20);
    ctl.abort();
    await assert.rejects(waiting, /cancelled/);
    assert.deepEqual(beats[0], { files: 3 });
    assert.equal(budget.usedBytes, 80 * MB);
    held();
  });

  it('estimates a group by its data up to the target file size, plus the read-ahead', () => {
    assert.equal(rewriteMemoryEstimate(10 * MB, 128 * MB), REWRITE_READ_AHEAD_BYTES + 30 * MB);
    assert.equal(rewriteMemoryEstimate(10_000 * MB, 128 * MB), REWRITE_READ_AHEAD_BYTES + 384 * MB);
  });
});

describe('summaryFileStats', () => {
  const meta = (summary: Record<string, string> | null): TableMetadata =>
    ({
      'current-snapshot-id': summary ? 1 : null,
      snapshots: summary
        ? [
            {
              'snapshot-id': 1,
              'sequence-number': 1,
              'timestamp-ms': 0,
              'manifest-list': 'x',
              summary: { operation: 'append', ...summary },
            },
          ]
        : [],
      refs: summary ? { main: { 'snapshot-id': 1, type: 'branch' } } : {},
    }) as unknown as TableMetadata;

  it('reads the totals of the current snapshot', () => {
    assert.deepEqual(summaryFileStats(meta({ 'total-data-files': '4', 'total-files-size': '1000', 'total-delete-files': '0' })), {
      files: 4,
      bytes: 1000,
      avgFileSizeBytes: 250,
    });
    assert.deepEqual(summaryFileStats(meta(null)), { files: 0, bytes: 0, avgFileSizeBytes: 0 });
  });

  it('gives up (the caller reads the manifests) when a total is missing or delete files exist', () => {
    assert.equal(summaryFileStats(meta({ 'total-data-files': '4', 'total-files-size': '1000' })), null);
    assert.equal(summaryFileStats(meta({ 'total-data-files': '4', 'total-files-size': '1000', 'total-delete-files': '2' })), null);
    assert.equal(summaryFileStats(meta({ 'total-data-files': 'x', 'total-files-size': '1000', 'total-delete-files': '0' })), null);
  });
});
