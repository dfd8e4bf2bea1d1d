/**
 * Entries of several topics on the real stack (Kafka, Temporal, SeaweedFS S3, SQLite catalog):
 * one ingest workflow per topic (ingest id `main@<topic>`) under the entry's workflow, which finds
 * topics that appear later.
 *
 * 1. `topicPattern`, routed by topic into a table per topic (created from the template): the worker
 *    is SIGKILLed right after a catalog commit, a third topic matching the pattern is created
 *    mid-run and found, and values that are not JSON are dead letters.
 * 2. `topics` (a list, one of them created only later), routed by a field into a static table and
 *    tables from the template that both topics share: the worker is SIGKILLed between two
 *    tables' commits; a table the first topic created is written by the second from its own start.
 * Then every table holds exactly the messages routed to it (DuckDB), once each; every topic's
 * cursor is at its topic's end in every table it wrote; dead letters are recorded once each.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureStack } from '../../stack/stack';
import { floeHome } from '../../stack/paths';
import { runPythonJson } from '../../stack/python';
import { scenarioConfig } from '../../demo/scenario';
import { loadConfig, type FloeConfig } from '../../config';
import { connectClient, ingestStatus, signalIngest, startIngest, waitForIngest } from '../../client';
import { ingestStatusLines } from '../../cli/format';
import { openTables } from '../../table/tables';
import { effectiveCursor, readRouteCursor } from '../../ingest/route';
import { allCursors, readDeadLetterCursor } from '../../table/cursor';
import { topicWatermarks } from '../../ingest/kafka';
import { connectKafka } from '../../ingest/kafka-security';
import type { Admin } from 'kafkajs';
import { spawnWorker, type WorkerProcess } from '../../workers/process';
import { ingestWorkflowId, topicIngestWorkflowId } from '../../workflows';
import { produceMessages, type TestMessage } from '../support/produce';

const READ = `
import json, sys
from floe_duckdb import connect
out = {}
for loc in sys.argv[1:]:
    rows = connect().sql(f"SELECT event_id FROM iceberg_scan('{loc}')").fetchall()
    out[loc] = [r[0] for r in rows]
print(json.dumps(out))
`;

const COLUMNS = [
  { name: 'event_id', type: 'string', required: true },
  { name: 'n', type: 'long', required: true },
  { name: 'src', type: 'string', source: 'topic', required: true },
  { name: 'kafka_offset', type: 'long', source: 'offset', required: true },
];

interface Event {
  message: TestMessage;
  /** The table it lands in, or null: a dead letter. */
  table: string | null;
  id: string;
}

describe('entries of several topics: one ingest per topic, each with its own cursors (real stack)', { timeout: 9 * 60_000 }, () => {
  const workers: WorkerProcess[] = [];
  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3']);
  });
  after(async () => {
    for (const w of workers) await w.kill('SIGKILL').catch(() => undefined);
  });

  it('topicPattern routed by topic: a SIGKILL after a commit, a topic created mid-run: every table exactly once', async () => {
    const run = `it_tp_${Date.now().toString(36)}`;
    const table = `demo.${run}`;
    const topics = ['a', 'b', 'c'].map((x) => `${run}_${x}`);
    const tableOf = (topic: string) => `demo.${topic}`;
    const c = scenarioConfig(run, 2, '1s', {
      topic: undefined,
      topicPattern: `${run}_[a-z]`,
      topicRefresh: '1s',
      columns: COLUMNS,
      partitionBy: [{ column: 'n', transform: 'bucket[4]' }],
      route: { by: 'topic', dynamic: 'demo.{value}' },
    });
    const cfg = loadConfig(c.path);
    assert.deepEqual(cfg.tables[0]!.topics, { pattern: `${run}_[a-z]`, refreshMs: 1000 });
    // Event i of a topic: JSON, but every 25th (from 11) is not JSON (a dead letter).
    const events = (topic: string, from: number, count: number): Event[] =>
      Array.from({ length: count }, (_, k) => {
        const i = from + k;
        const id = `${topic}-${i}`;
        if (i % 25 === 11) return { message: { value: `not json ${id}`, partition: i % 2 }, table: null, id };
        return { message: { value: JSON.stringify({ event_id: id, n: i }), partition: i % 2 }, table: tableOf(topic), id };
      });
    const all: Event[] = [];
    const produce = async (topic: string, from: number, count: number) => {
      const e = events(topic, from, count);
      all.push(...e);
      await produceMessages(
        cfg,
        topic,
        e.map((x) => x.message),
        2,
      );
    };
    await produce(topics[0]!, 0, 60);
    await produce(topics[1]!, 0, 50);
    // A topic the pattern does not take (a letter, then more): never read.
    await produceMessages(cfg, `${run}_zz`, [{ value: JSON.stringify({ event_id: 'no', n: 0 }) }], 1);

    const log = (name: string) => join(floeHome(), 'logs', `${run}-${name}.log`);
    const dir = mkdtempSync(join(tmpdir(), 'floe-topics-'));
    const marker = join(dir, 'killed');
    const doomed = spawnWorker(c.path, log('w1'), { FLOE_TEST_KILL_AT: 'after-cas', FLOE_TEST_KILL_MARKER: marker });
    workers.push(doomed);
    const fc = await connectClient(cfg);
    try {
      await startIngest(fc, table);
      assert.equal((await doomed.exited).signal, 'SIGKILL', 'the worker killed itself right after a catalog commit');
      assert.match(readFileSync(marker, 'utf8'), /^after-cas /);
      workers.push(spawnWorker(c.path, log('w2')));

      // A topic created mid-run is found at the next refresh; more records arrive on the first.
      await produce(topics[2]!, 0, 40);
      await produce(topics[0]!, 60, 30);
      await waitFor(
        'the new topic ingested',
        async () => (await ingestStatus(fc, table))?.topics?.[topics[2]!]?.totalRows === routed(all, topics[2]!),
      );
      const view = (await ingestStatus(fc, table))!;
      assert.deepEqual(Object.keys(view.topics ?? {}).sort(), topics);
      assert.ok(
        ingestStatusLines(view, Date.now()).partitions.some((r) => r.partition === `${topics[2]}/1`),
        'status rows are per topic and partition',
      );

      await signalIngest(fc, table, 'stop');
      const final = await waitForIngest(fc, table);
      assert.equal(final.state, 'stopped');
    } finally {
      await fc.close();
    }

    await assertTables(cfg, all, [table, ...topics.map(tableOf)]);
    // Each topic's cursor at its end, in its own table and in the base table (which every topic's
    // ingest commits, its records having gone elsewhere); a topic's table holds no other topic's cursor.
    const ends = await topicEnds(cfg, topics);
    const cursors = await tableCursors(cfg, [table, ...topics.map(tableOf)]);
    assert.deepEqual(cursors[table], Object.fromEntries(topics.map((t) => [`main@${t}`, ends[t]])));
    for (const t of topics) assert.deepEqual(cursors[tableOf(t)], { [`main@${t}`]: ends[t] }, `${tableOf(t)}: only its topic's cursor`);
    await assertDeadLetters(cfg, cfg.tables[0]!.deadLetterTable, all, topics);
  });

  it('topics routed by a field: a listed topic created late, a SIGKILL between two tables commits, shared tables exactly once', async () => {
    const run = `it_tl_${Date.now().toString(36)}`;
    const table = `demo.${run}`;
    const [x, y] = [`${run}_x`, `${run}_y`];
    const orders = `${table}_orders`;
    const dyn = (type: string) => `${table}_t_${type}`;
    const c = scenarioConfig(run, 2, '1s', {
      topic: undefined,
      topics: [x, y],
      topicRefresh: '1s',
      columns: COLUMNS,
      partitionBy: [{ column: 'n', transform: 'bucket[4]' }],
      route: { field: 'type', tables: { order: orders }, dynamic: `${table}_t_{value}` },
    });
    const cfg = loadConfig(c.path);
    const all: Event[] = [];
    // Event i of a topic: a type from `types` in turn; every 20th (from 7) has none: a dead letter.
    const produce = async (topic: string, types: string[], from: number, count: number) => {
      const e: Event[] = Array.from({ length: count }, (_, k) => {
        const i = from + k;
        const id = `${topic}-${i}`;
        const type = i % 20 === 7 ? null : types[i % types.length]!;
        const value = JSON.stringify({ event_id: id, n: i, ...(type ? { type } : {}) });
        return { message: { value, partition: i % 2 }, table: type === null ? null : type === 'order' ? orders : dyn(type), id };
      });
      all.push(...e);
      await produceMessages(
        cfg,
        topic,
        e.map((m) => m.message),
        2,
      );
    };
    await produce(x, ['order', 'refund'], 0, 80);

    const log = (name: string) => join(floeHome(), 'logs', `${run}-${name}.log`);
    const dir = mkdtempSync(join(tmpdir(), 'floe-topics-'));
    const doomed = (name: string) => {
      const w = spawnWorker(c.path, log(name), { FLOE_TEST_KILL_AT: 'between-table-commits', FLOE_TEST_KILL_MARKER: join(dir, name) });
      workers.push(w);
      return w;
    };
    const caughtUp = (topic: string) => async () => {
      const end = (await topicEnds(cfg, [topic]))[topic];
      return JSON.stringify((await ingestStatus(fc, table))?.topics?.[topic]?.cursor) === JSON.stringify(end);
    };
    const fc = await connectClient(cfg);
    try {
      // 1. The first topic's first cycle: its worker dies between two tables' commits (before the
      //    refund table's, which that cycle created); a new worker retries it in the same run.
      const w1 = doomed('w1');
      await startIngest(fc, table);
      assert.equal((await w1.exited).signal, 'SIGKILL', 'the worker killed itself between two tables commits');
      const w2 = spawnWorker(c.path, log('w2'));
      workers.push(w2);
      // (Asked of the entry's workflow: a worker must be up to answer.)
      await waitFor(
        'the listed topic the cluster lacks reported',
        async () => JSON.stringify((await ingestStatus(fc, table))?.missingTopics) === JSON.stringify([y]),
      );
      await waitFor(`topic ${x} ingested`, caughtUp(x));
      await w2.kill('SIGTERM');
      await w2.exited;

      // 2. The second topic appears and is found at the next refresh. Its first cycle writes the
      //    refund table the first topic created (so it gives the table its own start first) and
      //    dies before the base table's commit (the last: the tables with rows commit first); the
      //    topic's run and the entry's are then lost, so the cursors stay apart: the orders and
      //    refund tables have the cycle, the base table (and its route cursor) not.
      const w3 = doomed('w3');
      await produce(y, ['order', 'refund'], 0, 60);
      assert.equal((await w3.exited).signal, 'SIGKILL');
      await fc.client.workflow.getHandle(topicIngestWorkflowId(table, 'main', y)).terminate('test: lose the run');
      await fc.client.workflow.getHandle(ingestWorkflowId(table, 'main')).terminate('test: lose the run');
      const apart = await tableCursors(cfg, [table, orders, dyn('refund')]);
      const yEnd = (await topicEnds(cfg, [y]))[y];
      assert.equal(apart[table]![`main@${y}`], undefined, 'the base table never got the cycle');
      assert.deepEqual(apart[orders]![`main@${y}`], yEnd);
      assert.deepEqual(apart[dyn('refund')]![`main@${y}`], yEnd);
      assert.deepEqual(await routeStarts(cfg, dyn('refund')), [`main@${x}`, `main@${y}`], 'but it holds the start of each topic');

      // 3. Started again: the entry adopts the first topic's running ingest and starts the second's
      //    anew, which plans from the tables (the refund table from its start) and goes on.
      workers.push(spawnWorker(c.path, log('w4')));
      await startIngest(fc, table);
      await produce(y, ['shipment', 'order', 'refund'], 60, 45);
      await waitFor(`topic ${y} ingested`, caughtUp(y));
      await signalIngest(fc, table, 'stop');
      const final = await waitForIngest(fc, table);
      assert.equal(final.state, 'stopped');
    } finally {
      await fc.close();
    }

    const names = [table, orders, dyn('refund'), dyn('shipment')];
    await assertTables(cfg, all, names);
    const ends = await topicEnds(cfg, [x, y]);
    // Each table's cursor where its next poll starts: its own, raised to the route cursor.
    const cursors = await tableCursors(cfg, names, table);
    const both = { [`main@${x}`]: ends[x], [`main@${y}`]: ends[y] };
    assert.deepEqual(cursors[table], both);
    assert.deepEqual(cursors[orders], both);
    assert.deepEqual(cursors[dyn('refund')], both, 'the table the first topic created holds both cursors');
    assert.deepEqual(cursors[dyn('shipment')], { [`main@${y}`]: ends[y] }, 'never written by the first topic: no cursor of it');
    await assertDeadLetters(cfg, cfg.tables[0]!.deadLetterTable, all, [x, y]);
  });

  it('a deleted topic ends its own ingest (stopped, not retried forever); the other topics go on, exactly once', async () => {
    const run = `it_td_${Date.now().toString(36)}`;
    const table = `demo.${run}`;
    const [a, b] = [`${run}_a`, `${run}_b`];
    const c = scenarioConfig(run, 2, '1s', {
      topic: undefined,
      topicPattern: `${run}_[a-z]`,
      topicRefresh: '1s',
      columns: COLUMNS,
      partitionBy: [],
    });
    const cfg = loadConfig(c.path);
    const all: Event[] = [];
    const produce = async (topic: string, from: number, count: number) => {
      const e: Event[] = Array.from({ length: count }, (_, k) => {
        const i = from + k;
        const id = `${topic}-${i}`;
        return { message: { value: JSON.stringify({ event_id: id, n: i }), partition: i % 2 }, table, id };
      });
      all.push(...e);
      await produceMessages(
        cfg,
        topic,
        e.map((x) => x.message),
        2,
      );
    };
    await produce(a, 0, 30);
    await produce(b, 0, 20);
    workers.push(spawnWorker(c.path, join(floeHome(), 'logs', `${run}-w1.log`)));
    const fc = await connectClient(cfg);
    const admin = await kafkaAdmin(cfg);
    try {
      await startIngest(fc, table);
      await waitFor('both topics ingested', async () => (await ingestStatus(fc, table))?.totalRows === 50);
      await admin.deleteTopics({ topics: [b], timeout: 30_000 });
      await produce(a, 30, 20);
      // The other topic goes on (its watermarks no longer ask about the deleted one), and the
      // deleted topic's ingest ends, stopped, saying why.
      await waitFor('the other topic went on', async () => (await ingestStatus(fc, table))?.topics?.[a]?.totalRows === 50);
      await waitFor('the deleted topic ingest stopped', async () => (await ingestStatus(fc, table))?.topics?.[b]?.state === 'stopped');
      const view = (await ingestStatus(fc, table))!;
      assert.equal(view.state, 'running', 'a deleted topic does not fail the entry');
      assert.deepEqual(view.goneTopics, [b]);
      assert.match(view.topics![b]!.topicGone ?? '', /topic .*_b does not exist/);
      assert.equal(view.totalRows, 70);
      assert.ok(ingestStatusLines(view, Date.now()).lines.some((l) => l.includes(`topics deleted`) && l.includes(b)));

      await signalIngest(fc, table, 'stop');
      assert.equal((await waitForIngest(fc, table)).state, 'stopped');
    } finally {
      await admin.disconnect();
      await fc.close();
    }
    await assertTables(cfg, all, [table]);
    const cursors = await tableCursors(cfg, [table]);
    assert.deepEqual(cursors[table]![`main@${a}`], (await topicEnds(cfg, [a]))[a]);
    assert.deepEqual(
      cursors[table]![`main@${b}`],
      { '0': '10', '1': '10' },
      'the deleted topic: its cursor stays where its last commit left it',
    );
  });

  it('one topic: an ingest started before its topic exists waits for it; the topic deleted later fails it with TopicGone', async () => {
    const run = `it_t1_${Date.now().toString(36)}`;
    const c = scenarioConfig(run, 2, '1s', { columns: COLUMNS, partitionBy: [] });
    const cfg = loadConfig(c.path);
    const all: Event[] = Array.from({ length: 20 }, (_, i) => ({
      message: { value: JSON.stringify({ event_id: `${run}-${i}`, n: i }), partition: i % 2 },
      table: c.table,
      id: `${run}-${i}`,
    }));
    workers.push(spawnWorker(c.path, join(floeHome(), 'logs', `${run}-w1.log`)));
    const fc = await connectClient(cfg);
    const admin = await kafkaAdmin(cfg);
    try {
      const { workflowId } = await startIngest(fc, c.table);
      // Released by what the worker did, not by a fixed sleep (a slow worker may not have run at
      // all by then): its loadCursor looked for the topic and is being retried.
      await waitFor('the ingest looked for its topic', async () => {
        const d = await fc.client.workflow.getHandle(workflowId).describe();
        return (d.raw.pendingActivities ?? []).some((a) => /does not exist \(yet\)/.test(a.lastFailure?.message ?? ''));
      });
      assert.equal((await ingestStatus(fc, c.table))?.state, 'running', 'no topic yet: the ingest waits');
      await produceMessages(
        cfg,
        c.topic,
        all.map((e) => e.message),
        2,
      );
      await waitFor('the topic ingested', async () => (await ingestStatus(fc, c.table))?.totalRows === 20);
      await admin.deleteTopics({ topics: [c.topic], timeout: 30_000 });
      await waitFor('the ingest failed', async () => (await ingestStatus(fc, c.table))?.state === 'failed', 60_000);
      const view = (await ingestStatus(fc, c.table))!;
      assert.match(view.error ?? '', new RegExp(`^TopicGone: topic ${c.topic} does not exist any more`));
    } finally {
      await admin.disconnect();
      await fc.close();
    }
    await assertTables(cfg, all, [c.table]);
  });
});

/** The ingest ids a routed table holds a start for (`floe.route.start.<ingest id>`), sorted. */
async function routeStarts(cfg: FloeConfig, name: string): Promise<string[]> {
  const tables = await openTables(cfg);
  try {
    const props = (await tables.load(name)).metadata.properties;
    return Object.keys(props)
      .filter((k) => k.startsWith('floe.route.start.'))
      .map((k) => k.slice('floe.route.start.'.length))
      .sort();
  } finally {
    await tables.close();
  }
}

/** How many of `topic`'s events land in a table. */
const routed = (all: Event[], topic: string): number => all.filter((e) => e.table !== null && e.id.startsWith(`${topic}-`)).length;

async function waitFor(what: string, probe: () => Promise<boolean>, ms = 120_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await probe().catch(() => false)) return;
    await sleep(500);
  }
  assert.fail(`expected ${what} within ${ms / 1000} s`);
}

/** Every table holds exactly the event ids routed to it, each once (read by DuckDB). */
async function assertTables(cfg: FloeConfig, all: Event[], names: string[]): Promise<void> {
  const expected = Object.fromEntries(names.map((n) => [n, [] as string[]]));
  for (const e of all) if (e.table) expected[e.table]!.push(e.id);
  const tables = await openTables(cfg);
  let locations: Record<string, string>;
  try {
    locations = Object.fromEntries(await Promise.all(names.map(async (t) => [t, (await tables.load(t)).metadataLocation] as const)));
  } finally {
    await tables.close();
  }
  const read = await runPythonJson<Record<string, string[]>>(READ, Object.values(locations), { timeoutMs: 120_000 });
  for (const [t, ids] of Object.entries(expected)) {
    const got = read[locations[t]!]!;
    assert.equal(new Set(got).size, got.length, `${t}: no duplicate event id`);
    assert.deepEqual([...got].sort(), [...ids].sort(), `${t}: rows == the messages routed to it`);
  }
}

/** Each table's cursors, by ingest id: the offsets only. */
/** Each table's cursor per ingest id; with `routeBase`, raised to that base table's route cursor (the effective cursor). */
async function tableCursors(
  cfg: FloeConfig,
  names: string[],
  routeBase?: string,
): Promise<Record<string, Record<string, Record<string, string>>>> {
  const tables = await openTables(cfg);
  try {
    const base = routeBase ? (await tables.load(routeBase)).metadata.properties : undefined;
    const out: Record<string, Record<string, Record<string, string>>> = {};
    for (const n of names) {
      const m = (await tables.load(n)).metadata;
      out[n] = Object.fromEntries(
        [...allCursors(m)].map(([id, c]) => [id, base ? effectiveCursor(c.offsets, readRouteCursor(base, id)) : c.offsets]),
      );
    }
    return out;
  } finally {
    await tables.close();
  }
}

/** A connected admin client of the config's cluster (the caller disconnects it). */
async function kafkaAdmin(cfg: FloeConfig): Promise<Admin> {
  const admin = (await connectKafka(cfg.kafka)).admin();
  await admin.connect();
  return admin;
}

async function topicEnds(cfg: FloeConfig, topics: string[]): Promise<Record<string, Record<string, string>>> {
  const admin = await kafkaAdmin(cfg);
  try {
    return Object.fromEntries(await Promise.all(topics.map(async (t) => [t, (await topicWatermarks(admin, t)).high] as const)));
  } finally {
    await admin.disconnect();
  }
}

/** The dead-letter table: exactly the events no table got, once each, and each topic's dead-letter cursor within its topic. */
async function assertDeadLetters(cfg: FloeConfig, table: string, all: Event[], topics: string[]): Promise<void> {
  const tables = await openTables(cfg);
  try {
    const { metadata, metadataLocation } = await tables.load(table);
    const rows = await runPythonJson<[string, number, number][]>(
      `
import json, sys
from floe_duckdb import connect
print(json.dumps(connect().sql(f"SELECT topic, \\"partition\\", \\"offset\\" FROM iceberg_scan('{sys.argv[1]}')").fetchall()))
`,
      [metadataLocation],
      { timeoutMs: 120_000 },
    );
    const keys = rows.map((r) => r.join('/'));
    assert.equal(new Set(keys).size, keys.length, 'each dead letter once');
    const want = all.filter((e) => e.table === null);
    assert.equal(rows.length, want.length, 'every record no table got is a dead letter');
    for (const t of topics) {
      assert.equal(rows.filter((r) => r[0] === t).length, want.filter((e) => e.id.startsWith(`${t}-`)).length, `${t}: its dead letters`);
      assert.ok(Object.keys(readDeadLetterCursor(metadata, `main@${t}`).offsets).length > 0, `${t}: a dead-letter cursor of its own`);
    }
  } finally {
    await tables.close();
  }
}
