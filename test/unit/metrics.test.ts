/**
 * The worker's metrics as pure logic: FLOE_METRICS_PORT parsing, what each step result adds (lag
 * from cursor and high watermarks, a retried commit counting nothing, staged file lists), and the
 * text format round trip through observability/prom-text.ts.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { record, registry, FLOE_METRIC_NAMES } from '../../observability/metrics';
import { metricsPort } from '../../observability/metrics-server';
import { parsePromText, sumOf } from '../../observability/prom-text';

const samples = async () => parsePromText(await registry.metrics());

describe('FLOE_METRICS_PORT', () => {
  it('is off when unset, empty or 0, a port otherwise, and a bad value names the key', () => {
    assert.equal(metricsPort(undefined), 0);
    assert.equal(metricsPort(''), 0);
    assert.equal(metricsPort('0'), 0);
    assert.equal(metricsPort('9464'), 9464);
    for (const bad of ['abc', '-1', '70000', '94.5']) assert.throws(() => metricsPort(bad), /FLOE_METRICS_PORT: expected a port 0-65535/);
  });
});

describe('recorded metrics', () => {
  const ref = { table: 'db.t', ingestId: 'main' };

  it('lag is high watermark - table cursor per partition, and reaches 0 when a commit catches up', async () => {
    record.loadCursor(ref, { startOffsets: { '0': '10', '1': '0' }, highWatermarks: { '0': '50', '1': '5' } }, Date.now());
    let s = await samples();
    assert.equal(sumOf(s, 'floe_consumer_lag_records', { table: 'db.t', partition: '0' }), 40);
    assert.equal(sumOf(s, 'floe_consumer_lag_records', { table: 'db.t', partition: '1' }), 5);
    record.pollAndWrite({ ...ref, startOffsets: { '0': '10' } }, { records: 60, bytes: 6000, highWatermarks: { '0': '70' } });
    s = await samples();
    assert.equal(sumOf(s, 'floe_consumer_lag_records', { table: 'db.t', partition: '0' }), 60, 'a newer high watermark');
    record.commit(
      {
        ...ref,
        records: 65,
        deadLetters: 1,
        endOffsets: { '0': '70', '1': '5' },
        files: [
          { filePath: 's3://b/a.parquet', recordCount: 65, fileSizeInBytes: 1000 },
          { stagedFiles: 's3://b/x.avro', count: 3, bytes: 9 },
        ],
      },
      { alreadyCommitted: false, committedAtMs: Date.now() },
      Date.now() - 250,
    );
    s = await samples();
    assert.deepEqual(
      s.filter((x) => x.name === 'floe_consumer_lag_records').map((x) => x.value),
      [0, 0],
    );
    assert.equal(sumOf(s, 'floe_rows_committed_total', { table: 'db.t' }), 65);
    assert.equal(sumOf(s, 'floe_dead_letters_total', { table: 'db.t' }), 1);
    assert.equal(sumOf(s, 'floe_commit_files_sum', { table: 'db.t' }), 4, 'an inline file + a staged list of 3');
    assert.equal(sumOf(s, 'floe_commit_bytes_sum', { table: 'db.t' }), 1000);
    assert.equal(sumOf(s, 'floe_commit_duration_seconds_count', { table: 'db.t' }), 1);
    assert.equal(sumOf(s, 'floe_cycle_duration_seconds_count', { table: 'db.t' }), 1);
    const age = sumOf(s, 'floe_cursor_age_seconds', { table: 'db.t' });
    assert.ok(age >= 0 && age < 5);
  });

  it('the topics of an entry of several topics keep their partitions apart: topic/partition', async () => {
    const at = Date.now();
    record.loadCursor({ table: 'db.m', ingestId: 'main@a', topic: 'a' }, { startOffsets: { '0': '1' }, highWatermarks: { '0': '10' } }, at);
    record.loadCursor({ table: 'db.m', ingestId: 'main@b', topic: 'b' }, { startOffsets: { '0': '4' }, highWatermarks: { '0': '7' } }, at);
    const s = await samples();
    assert.equal(sumOf(s, 'floe_consumer_lag_records', { table: 'db.m', partition: 'a/0' }), 9);
    assert.equal(sumOf(s, 'floe_consumer_lag_records', { table: 'db.m', partition: 'b/0' }), 3);
    assert.equal(sumOf(s, 'floe_consumer_lag_records', { table: 'db.m' }), 12);
  });

  it('a retried commit that finds itself committed counts nothing; backfills stay out of lag', async () => {
    record.commit(
      { ...ref, records: 65, deadLetters: 0, endOffsets: { '0': '70' }, files: [] },
      { alreadyCommitted: true, committedAtMs: Date.now() },
      Date.now(),
    );
    record.loadCursor(
      { table: 'db.b', ingestId: 'bf', range: {} },
      { startOffsets: { '0': '0' }, highWatermarks: { '0': '9' } },
      Date.now(),
    );
    const s = await samples();
    assert.equal(sumOf(s, 'floe_rows_committed_total', { table: 'db.t' }), 65);
    assert.equal(sumOf(s, 'floe_commit_duration_seconds_count', { table: 'db.t' }), 1);
    assert.ok(!s.some((x) => x.name === 'floe_consumer_lag_records' && x.labels.table === 'db.b'));
  });

  it('failures count by activity and failure type', async () => {
    record.failure('commit', 'db.t', Object.assign(new Error('fenced'), { type: 'StaleCursor' }));
    record.failure('pollAndWrite', 'db.t', new TypeError('x'));
    const s = await samples();
    assert.equal(sumOf(s, 'floe_activity_failures_total', { table: 'db.t', activity: 'commit', type: 'StaleCursor' }), 1);
    assert.equal(sumOf(s, 'floe_activity_failures_total', { table: 'db.t', activity: 'pollAndWrite', type: 'TypeError' }), 1);
  });

  it('FLOE_METRIC_NAMES lists every floe_ family the registry exports', async () => {
    const exported = new Set((await registry.getMetricsAsJSON()).map((m) => m.name).filter((n) => n.startsWith('floe_')));
    for (const n of exported) assert.ok(FLOE_METRIC_NAMES.includes(n), n);
  });
});
