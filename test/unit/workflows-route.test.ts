/**
 * The ingest workflow of a route over mocked activities (test/support/workflow-env.ts fakeRoute,
 * whose decisions are floe's own functions: the poll's start, the records a table holds, the fence):
 * one poll from the minimum of the tables' cursors, one fenced commit per table with the cycle's
 * commit id; a worker dying between two tables' commits, cursors apart at the start, and a table's
 * refused commit all end with every table holding each of its records once. The activities
 * against the real stack: test/integration/routing.test.ts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ApplicationFailure, type Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createWorkflowEnv, drainFromStart, fakeRoute, testWorkflowBundle, uniqueId, withWorker } from '../support/workflow-env';

const TABLES = ['shop.events', 'shop.a', 'shop.b', 'shop.c'];
const HIGH = { 0: '12', 1: '9' };

/** Offsets "p:o" of the fake topic that go to `table` (offset o goes to table 1 + o % 3). */
function routedTo(table: string): string[] {
  const out: string[] = [];
  for (const [p, high] of Object.entries(HIGH))
    for (let o = 0; o < Number(high); o++) if (TABLES[1 + (o % 3)] === table) out.push(`${p}:${o}`);
  return out;
}

describe('ingestWorkflow of a route, with mocked activities', () => {
  let env: TestWorkflowEnvironment;
  let client: Client;
  before(async () => {
    env = await createWorkflowEnv();
    client = env.client;
    await testWorkflowBundle();
  });
  after(async () => {
    await env?.teardown();
  });

  const assertEveryTableOnce = (state: ReturnType<typeof fakeRoute>['state']) => {
    for (const t of TABLES) {
      assert.deepEqual([...state.written[t]!].sort(), routedTo(t).sort(), `${t}: each of its records once`);
      assert.deepEqual(state.cursors[t], HIGH, `${t}: cursor at the topic's end`);
    }
  };

  it('a worker dying between two tables commits: the retried commit lands the last table, each table once', async () => {
    const fake = fakeRoute({
      tables: TABLES,
      high: HIGH,
      beforeCommit: (input) => {
        // the worker dies running the last table's commit: its first attempt never reports
        if (
          input.routeIndex === input.routeCount! - 1 &&
          fake.calls.commit.filter((c) => c.input.routeTable === input.routeTable).length === 1
        )
          throw ApplicationFailure.retryable('worker lost', 'WorkerLost');
      },
    });
    const table = uniqueId('shop.events');
    const status = await withWorker(env, fake.activities, async (tq) =>
      (await drainFromStart(client, tq, { table, ingestId: 'main' })).result(),
    );

    assert.equal(status.state, 'stopped');
    assert.equal(fake.calls.pollAndWrite.length, 2, 'one poll feeds every table (then the empty drain cycle)');
    const first = fake.calls.commit.filter((c) => c.input.commitId === fake.calls.commit[0]!.input.commitId);
    assert.deepEqual(
      first.map((c) => [c.input.routeTable, c.input.routeIndex, c.attempt]),
      [
        ['shop.a', 0, 1],
        ['shop.b', 1, 1],
        ['shop.c', 2, 1],
        ['shop.events', 3, 1],
        ['shop.events', 3, 2],
      ],
      'the tables with rows, then the base table last (with the route cursor); the retry commits only what had not landed',
    );
    assert.deepEqual(
      first.map((c) => c.input.endOffsets),
      first.map(() => HIGH),
      'every table commits the same end offsets',
    );
    assertEveryTableOnce(fake.state);
    assert.deepEqual(
      Object.fromEntries(Object.entries(status.tables ?? {}).map(([t, s]) => [t, [s.rows, s.cursor]])),
      Object.fromEntries(TABLES.map((t) => [t, [routedTo(t).length, HIGH]])),
    );
  });

  it('cursors apart (a crash between commits ended the last run): one poll from the minimum, tables skip what they hold', async () => {
    // shop.a and the base table committed the whole topic, shop.b partly, shop.c nothing
    const fake = fakeRoute({
      tables: TABLES,
      high: HIGH,
      cursors: { 'shop.events': HIGH, 'shop.a': HIGH, 'shop.b': { 0: '6', 1: '3' } },
    });
    fake.state.written['shop.a'] = routedTo('shop.a');
    fake.state.written['shop.b'] = routedTo('shop.b').filter((x) => Number(x.split(':')[1]) < (x.startsWith('0:') ? 6 : 3));
    const table = uniqueId('shop.events');
    await withWorker(env, fake.activities, async (tq) => (await drainFromStart(client, tq, { table, ingestId: 'main' })).result());

    const poll = fake.calls.pollAndWrite[0]!.input;
    assert.deepEqual(poll.startOffsets, { 0: '0', 1: '0' }, 'the poll starts at the minimum (shop.c has no cursor)');
    assert.deepEqual(poll.route!.tables['shop.b'], { 0: '6', 1: '3' });
    // The tables at the end already have nothing to commit; the others commit with their own fencing token.
    assert.deepEqual(
      fake.calls.commit.map((c) => [c.input.routeTable, c.input.baseSnapshotId, c.input.startOffsets]),
      [
        ['shop.b', '0', { 0: '6', 1: '3' }],
        ['shop.c', null, { 0: '0', 1: '0' }],
        ['shop.events', '0', HIGH],
      ],
      'shop.a gets no rows: no snapshot; the base table always commits last (it carries the route cursor)',
    );
    assertEveryTableOnce(fake.state);
  });

  it('a refused commit of one table stops the cycle there; the next cycle polls from the tables and commits the rest once', async () => {
    let refused = false;
    const fake = fakeRoute({
      tables: TABLES,
      high: HIGH,
      beforeCommit: (input) => {
        if (input.routeTable === 'shop.b' && !refused) {
          refused = true;
          throw ApplicationFailure.nonRetryable('files swept', 'FilesMissing');
        }
      },
    });
    const table = uniqueId('shop.events');
    const status = await withWorker(env, fake.activities, async (tq) =>
      (await drainFromStart(client, tq, { table, ingestId: 'main' })).result(),
    );

    assert.equal(status.fencedCommits, 1);
    const cycles = [...new Set(fake.calls.commit.map((c) => c.input.commitId))];
    assert.deepEqual(
      cycles.map((id) => fake.calls.commit.filter((c) => c.input.commitId === id).map((c) => c.input.routeTable)),
      [
        ['shop.a', 'shop.b', 'shop.c'],
        ['shop.b', 'shop.events'],
      ],
      'the base table is not committed after the refusal; the next cycle commits only the table behind, then the base table',
    );
    assertEveryTableOnce(fake.state);
  });
});
