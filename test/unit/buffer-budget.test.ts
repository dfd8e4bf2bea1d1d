import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BufferBudget, bufferBudgetFromEnv } from '../../ingest/buffer-budget';
import { StepCancelled } from '../../contract';

describe('worker buffer budget', () => {
  it('concurrent polls never hold more than the budget: the next waits until bytes are released', async () => {
    const b = new BufferBudget(100);
    const a = await b.acquire(60);
    let secondGranted = false;
    const second = b.acquire(60).then((l) => {
      secondGranted = true;
      return l;
    });
    await new Promise((r) => setImmediate(r));
    assert.equal(secondGranted, false, 'would exceed the budget');
    assert.equal(b.inUse, 60);
    a.release();
    const s = await second;
    assert.equal(b.inUse, 60);
    s.release();
    assert.equal(b.inUse, 0);
  });
  it('a bound above the budget is clamped so one poll can always run', async () => {
    const b = new BufferBudget(100);
    const l = await b.acquire(1_000);
    assert.equal(l.granted, 100);
    l.release();
    l.release(); // idempotent
    assert.equal(b.inUse, 0);
  });
  it('waiters are served in order (a large poll is not starved by small ones)', async () => {
    const b = new BufferBudget(100);
    const first = await b.acquire(90);
    const order: string[] = [];
    const big = b.acquire(80).then((l) => {
      order.push('big');
      return l;
    });
    const small = b.acquire(10).then((l) => {
      order.push('small');
      return l;
    });
    first.release();
    (await big).release();
    (await small).release();
    assert.deepEqual(order, ['big', 'small']);
  });
  it('a bad FLOE_WORKER_BUFFER_BYTES fails naming the variable', () => {
    assert.throws(() => bufferBudgetFromEnv({ FLOE_WORKER_BUFFER_BYTES: '64MB' }), /FLOE_WORKER_BUFFER_BYTES: expected a positive integer/);
    assert.equal(bufferBudgetFromEnv({}).totalBytes, 256 * 1024 * 1024);
  });
  it('a cancelled wait leaves the queue and rejects StepCancelled; the waiters behind it go on', async () => {
    const b = new BufferBudget(100);
    const first = await b.acquire(90);
    const ac = new AbortController();
    const cancelled = b.acquire(80, undefined, ac.signal);
    let smallGranted = false;
    const small = b.acquire(10).then((l) => {
      smallGranted = true;
      return l;
    });
    await new Promise((r) => setImmediate(r));
    assert.equal(smallGranted, false, 'FIFO: behind the big waiter');
    ac.abort();
    await assert.rejects(cancelled, (e: Error) => e instanceof StepCancelled);
    // The head left: the small one fits beside the first lease without waiting for its release.
    (await small).release();
    assert.equal(b.inUse, 90);
    first.release();
    assert.equal(b.inUse, 0);
    // Already cancelled: refused at once, nothing reserved.
    await assert.rejects(b.acquire(10, undefined, ac.signal), (e: Error) => e instanceof StepCancelled);
    assert.equal(b.inUse, 0);
  });
});
