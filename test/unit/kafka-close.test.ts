import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { closeWithin } from '../../ingest/kafka';

void test('a finished poll waits for its reader to close only briefly; the close goes on, and its failure is swallowed', async () => {
  let closed = false;
  const slow = { close: async () => void (await sleep(400), (closed = true)) };
  const t0 = performance.now();
  await closeWithin(slow, 50);
  const waited = performance.now() - t0;
  assert.ok(waited >= 45 && waited < 300, `waited ${waited.toFixed(0)} ms`);
  assert.equal(closed, false, 'still closing');
  await sleep(500);
  assert.equal(closed, true, 'and it did close');
  const quick = { close: async () => undefined };
  const t1 = performance.now();
  await closeWithin(quick, 5_000);
  assert.ok(performance.now() - t1 < 100, 'a quick close is not padded to the limit');
  await closeWithin({ close: () => Promise.reject(new Error('broker gone')) }, 50);
});
