/**
 * Entries of several topics (config `topics` / `topicPattern`): parsing, which cluster topics an
 * entry takes, the single-topic entry each topic is ingested as, and the combined status.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, matchTopics, parseConfig, topicEntry, type TableConfig } from '../../config';
import { ingestTableConfig } from '../../ingest/deps';
import { combineTopicStatuses, type IngestStatusView } from '../../client/ingest-status';

const base = {
  catalog: { type: 'sql', uri: 'sqlite:///tmp/x.db', warehouse: 'file:///tmp/wh' },
  kafka: { brokers: ['localhost:9092'] },
  temporal: { taskQueue: 'q' },
};
const entry = (t: Record<string, unknown>) => ({
  ...base,
  tables: [{ table: 'db.events', columns: [{ name: 'id', type: 'string' }], ...t }],
});
const parse = (t: Record<string, unknown>): TableConfig => parseConfig(entry(t)).tables[0]!;

describe('config: topic, topics, topicPattern', () => {
  it('a list of topics and a pattern parse, with their refresh', () => {
    assert.deepEqual(parse({ topics: ['orders', 'refunds'] }).topics, { names: ['orders', 'refunds'], refreshMs: 60_000 });
    const p = parse({ topicPattern: 'shop\\.[a-z]+', topicRefresh: '5s' });
    assert.deepEqual(p.topics, { pattern: 'shop\\.[a-z]+', refreshMs: 5000 });
    assert.equal(p.topic, '/shop\\.[a-z]+/', 'the entry topic is only a label');
    assert.equal(parse({ topic: 'orders' }).topics, undefined);
  });

  for (const [name, t, re] of [
    ['none', {}, /tables\[0\]\.topic: give one of topic \(a name\), topics \(a list of names\) or topicPattern/],
    ['two', { topic: 'a', topicPattern: 'b.*' }, /tables\[0\]\.topicPattern: give one of .*, not topic and topicPattern/],
    ['a bad name', { topics: ['ok', 'not ok'] }, /tables\[0\]\.topics\[1\]: expected a Kafka topic name .* found "not ok"/],
    ['a name twice', { topics: ['a', 'a'] }, /tables\[0\]\.topics\[1\]: expected each topic once/],
    ['a bad pattern', { topicPattern: 'a(' }, /tables\[0\]\.topicPattern: expected a regular expression \(Invalid regular expression/],
    ['a refresh with one topic', { topic: 'a', topicRefresh: '5s' }, /tables\[0\]\.topicRefresh: only with topics or topicPattern/],
  ] as const) {
    it(`refuses ${name}, naming the key`, () => {
      assert.throws(
        () => parse(t),
        (e: Error) => e instanceof ConfigError && re.test(e.message),
      );
    });
  }
});

describe('the topics of an entry', () => {
  const cluster = ['shop.orders', 'shop.refunds', 'shop.orders.v2', 'other', '__consumer_offsets'];

  it('a pattern matches whole names, never an internal topic; a list reports what the cluster lacks', () => {
    assert.deepEqual(matchTopics(parse({ topicPattern: 'shop\\.[a-z]+' }), cluster), {
      topics: ['shop.orders', 'shop.refunds'],
      missing: [],
    });
    assert.deepEqual(matchTopics(parse({ topicPattern: '.*' }), cluster).topics, [
      'other',
      'shop.orders',
      'shop.orders.v2',
      'shop.refunds',
    ]);
    assert.deepEqual(matchTopics(parse({ topics: ['other', 'later'] }), cluster), { topics: ['other'], missing: ['later'] });
  });

  it('each topic is ingested as a single-topic entry with its own ingest id; a topic not taken is a config error', () => {
    const t = parse({ topicPattern: 'shop\\..*', ingestId: 'live' });
    const one = topicEntry(t, 'shop.orders');
    assert.equal(one.topic, 'shop.orders');
    assert.equal(one.ingestId, 'live@shop.orders');
    assert.equal(one.topics, undefined);
    assert.throws(() => topicEntry(t, 'other'), /reads the topics matching \/shop\\\.\.\*\/, which does not take topic "other"/);
    const cfg = parseConfig(entry({ topics: ['a', 'b'] }));
    assert.equal(ingestTableConfig(cfg, 'db.events', 'b').ingestId, 'main@b');
    assert.throws(() => ingestTableConfig(cfg, 'db.events'), /reads topics a, b: each topic is ingested on its own/);
    assert.throws(() => ingestTableConfig(cfg, 'db.events', 'c'), /does not take topic "c"/);
  });
});

describe('the status of an entry of several topics', () => {
  const status = (over: Partial<IngestStatusView>): IngestStatusView => ({
    table: 'db.events',
    ingestId: 'main@x',
    state: 'running',
    cursor: {},
    lag: {},
    lastCommitId: null,
    lastSnapshotId: null,
    lastCommitTimeMs: null,
    cycles: 1,
    commits: 1,
    fencedCommits: 0,
    totalRows: 0,
    totalDeadLetters: 0,
    rowsPerSecond: 0,
    filesPerCommit: 2,
    ...over,
  });

  it('sums the topics, keys cursors by topic/partition, names a failed topic, and is draining until every topic stopped', () => {
    const a = status({
      cursor: { 0: '5', 1: '3' },
      lag: { 0: '1' },
      totalRows: 8,
      lastCommitTimeMs: 10,
      lastCommitId: 'c1',
      rowsPerSecond: 1.5,
    });
    const b = status({ cursor: { 0: '9' }, totalRows: 9, lastCommitTimeMs: 20, lastCommitId: 'c2', rowsPerSecond: 2, state: 'stopped' });
    const c = combineTopicStatuses('db.events', 'main', 'running', { a, b });
    assert.deepEqual(c.cursor, { 'a/0': '5', 'a/1': '3', 'b/0': '9' });
    assert.deepEqual(c.lag, { 'a/0': '1' });
    assert.equal(c.totalRows, 17);
    assert.equal(c.commits, 2);
    assert.equal(c.lastCommitId, 'c2');
    assert.equal(c.rowsPerSecond, 3.5);
    assert.equal(c.state, 'running');
    assert.equal(combineTopicStatuses('db.events', 'main', 'stopped', { a, b }).state, 'draining');
    assert.equal(combineTopicStatuses('db.events', 'main', 'stopped', { a: { ...a, state: 'stopped' }, b }).state, 'stopped');
    const failed = combineTopicStatuses('db.events', 'main', 'running', {
      a: { ...a, state: 'failed', error: 'TableDrift: column id' },
      b,
    });
    assert.equal(failed.state, 'failed');
    assert.equal(failed.error, 'topic a: TableDrift: column id');
    // One stalled topic stalls the entry, shown with its error, attempts and since when.
    const stalled = combineTopicStatuses('db.events', 'main', 'running', {
      a: { ...a, state: 'stalled', failing: { error: 'ServiceUnavailable: down', attempts: 7, sinceMs: 5 } },
      b,
    });
    assert.equal(stalled.state, 'stalled');
    assert.deepEqual(stalled.failing, { error: 'topic a: ServiceUnavailable: down', attempts: 7, sinceMs: 5 });
  });
});
