import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { EachBatchPayload } from 'kafkajs';
import { PollSink } from '../../ingest/kafka';
import type { KafkaRecord } from '../../ingest/decode';

/** A kafkajs eachBatch payload of `offsets` on partition 0, recording every resolveOffset call. */
function payload(offsets: number[], resolved: string[]): EachBatchPayload {
  const messages = offsets.map((o) => ({ offset: String(o), timestamp: '0', key: null, value: Buffer.from('{}'), headers: {} }));
  return {
    batch: {
      topic: 't',
      partition: 0,
      fetchedOffset: String(offsets[0]),
      messages,
      lastOffset: () => String(offsets[offsets.length - 1]),
    },
    resolveOffset: (o: string) => void resolved.push(o),
    heartbeat: async () => undefined,
    isRunning: () => true,
    isStale: () => false,
  } as unknown as EachBatchPayload;
}

const bounds = { maxWaitMs: 1000, maxRecords: 1000, maxBytes: 1 << 30 };

test('poll sink: the last record handled is resolved once per batch, and before any wait', async () => {
  const resolved: string[] = [];
  const seen: string[] = [];
  let resolvedWhenWaiting: string | undefined;
  const sink = new PollSink('t', [0], { '0': '10' }, bounds, (r: KafkaRecord) => {
    seen.push(r.offset);
    // offset 13 needs something first (a schema fetch): what came before it is resolved by then
    if (r.offset === '13') return Promise.resolve().then(() => void (resolvedWhenWaiting = resolved[resolved.length - 1]));
  });
  // 8 and 9 were fetched before the poll's seek took effect: skipped, never resolved
  await sink.batch(payload([8, 9, 10, 11, 12, 13, 14, 15], resolved));
  assert.deepEqual(seen, ['10', '11', '12', '13', '14', '15']);
  assert.equal(resolvedWhenWaiting, '12');
  assert.deepEqual(resolved, ['12', '15']);
  assert.deepEqual(sink.next, { '0': '16' });
  assert.equal(sink.outcome.records, 6);
});

test('poll sink: a poll stopped mid-batch resolves exactly the records it handled', async () => {
  const resolved: string[] = [];
  const sink = new PollSink('t', [0], { '0': '0' }, { ...bounds, maxRecords: 3 }, () => undefined);
  await sink.batch(payload([0, 1, 2, 3, 4], resolved));
  assert.deepEqual(resolved, ['2']);
  assert.deepEqual(sink.next, { '0': '3' });
  assert.equal(sink.done, true);

  // a record that fails: the ones before it are resolved, it is not
  const resolved2: string[] = [];
  const failing = new PollSink('t', [0], { '0': '5' }, bounds, (r) => {
    if (r.offset === '7') throw new Error('boom');
  });
  await failing.batch(payload([5, 6, 7, 8], resolved2));
  assert.deepEqual(resolved2, ['6']);
  assert.deepEqual(failing.next, { '0': '7' });
  assert.equal(failing.failure?.message, 'boom');

  // a batch wholly below the position resolves nothing
  const resolved3: string[] = [];
  const behind = new PollSink('t', [0], { '0': '20' }, bounds, () => assert.fail('no record below the position is handled'));
  await behind.batch(payload([18, 19], resolved3));
  assert.deepEqual(resolved3, []);
});
