/**
 * No value may stall a table, and no input is silently changed, against the real stack (Temporal
 * dev server, Kafka, SeaweedFS S3, SQLite catalog): a topic holding good messages mixed with every
 * kind of bad value lands in a day(ts) + bucket(customer_id) partitioned table with decimal, fixed
 * and time columns. Every good message becomes a row, every bad one a dead letter whose reason
 * names its column, and the drained ingest finishes instead of retrying a batch forever.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { ensureStack } from '../../stack/stack';
import { scenarioConfig } from '../../demo/scenario';
import { verifyTable } from '../../demo/verify';
import { loadConfig, findTable, type FloeConfig } from '../../config';
import { connectClient, ingestStatus, signalIngest, startIngest, waitForIngest, type FloeClient } from '../../client';
import { readColumnValues } from '../../client/tables';
import { openTables } from '../../table/tables';
import { floeHome } from '../../stack/paths';
import { spawnWorker, type WorkerProcess } from '../../workers/process';
import { createTopicsReady } from '../../demo/topics';

const columns = [
  { name: 'event_id', type: 'string', required: true },
  { name: 'ts', type: 'timestamptz', required: true },
  { name: 'customer_id', type: 'long', required: true },
  { name: 'day', type: 'date' },
  { name: 'amount', type: 'decimal(10, 2)' },
  { name: 'hash', type: 'fixed[4]' },
  { name: 'at', type: 'time' },
  { name: 'note', type: 'string' },
  { name: 'payload', type: 'binary' },
  { name: 'k', type: 'string', source: 'key' },
];
const partitionBy = [
  { column: 'ts', transform: 'day' },
  { column: 'customer_id', transform: 'bucket[4]' },
];

const good = (i: number): Record<string, unknown> => ({
  event_id: `good-${i}`,
  ts: `2026-07-01T${String(i % 24).padStart(2, '0')}:00:00.25Z`,
  customer_id: 1000 + i,
  day: '2026-07-01',
  amount: i % 2 ? `${i}.05` : i + 0.5,
  hash: Buffer.from([i, 0, 0, 255]).toString('base64'),
  at: `12:${String(i % 60).padStart(2, '0')}:00.000001`,
  note: `note ${i} ✓`,
  payload: Buffer.from(`p${i}`).toString('base64'),
});

/** One message per kind of bad value, with the column its dead letter must name ('value' for the message itself). */
const badValues: Array<{ kind: string; column: string; value: Buffer; key?: Buffer }> = [
  {
    kind: 'timestamp of 1e16 ms (beyond int64 micros)',
    column: 'ts',
    value: raw('{"event_id": "b1", "ts": 10000000000000000, "customer_id": 1}'),
  },
  { kind: 'timestamp past the day transform', column: 'ts', value: raw('{"event_id": "b2", "ts": 8640000086400000, "customer_id": 1}') },
  { kind: 'impossible timestamp date', column: 'ts', value: json({ event_id: 'b3', ts: '2026-02-31T00:00:00Z', customer_id: 1 }) },
  { kind: 'T24:00', column: 'ts', value: json({ event_id: 'b4', ts: '2026-07-01T24:00:00Z', customer_id: 1 }) },
  { kind: 'impossible date', column: 'day', value: json({ ...good(90), day: '2026-02-31' }) },
  { kind: 'long overflow', column: 'customer_id', value: raw('{"event_id": "b6", "ts": 0, "customer_id": 9223372036854775808}') },
  { kind: 'decimal beyond its scale', column: 'amount', value: json({ ...good(91), amount: 1.005 }) },
  { kind: 'decimal beyond its precision', column: 'amount', value: json({ ...good(92), amount: '123456789.5' }) },
  { kind: 'fixed of the wrong length', column: 'hash', value: json({ ...good(93), hash: 'AAEC' }) },
  { kind: 'time 24:00', column: 'at', value: json({ ...good(94), at: '24:00:00' }) },
  { kind: 'malformed base64', column: 'payload', value: json({ ...good(95), payload: 'not base64!' }) },
  {
    kind: 'unpaired surrogate escape',
    column: 'note',
    value: raw(JSON.stringify({ ...good(96), note: 'x' }).replace('"note":"x"', '"note":"\\ud800"')),
  },
  {
    kind: 'invalid UTF-8 in the message',
    column: 'value',
    value: Buffer.concat([Buffer.from('{"event_id": "caf'), Buffer.from([0xe9]), Buffer.from('", "ts": 0, "customer_id": 1}')]),
  },
  { kind: 'invalid UTF-8 in the key', column: 'k', value: json(good(97)), key: Buffer.from([0xff, 0xfe]) },
  { kind: 'sub-microsecond digits', column: 'ts', value: json({ ...good(98), ts: '2026-07-01T00:00:00.123456789Z' }) },
];

function raw(s: string): Buffer {
  return Buffer.from(s);
}
function json(v: unknown): Buffer {
  return Buffer.from(JSON.stringify(v));
}

describe('ingest of bad values (real stack)', { timeout: 10 * 60_000 }, () => {
  let cfg: FloeConfig;
  let table: string;
  let topic: string;
  let fc: FloeClient;
  let worker: WorkerProcess;
  const GOOD = 40;
  /** offset -> expected dead-letter column, for every bad message */
  const expected = new Map<bigint, { kind: string; column: string }>();

  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3']);
    const c = scenarioConfig(`it_bad_values_${Date.now().toString(36)}`, 1, '2s', { columns, partitionBy });
    cfg = loadConfig(c.path);
    ({ table, topic } = c);
    const kafka = new Kafka({ clientId: 'test', brokers: cfg.kafka.brokers, logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await createTopicsReady(admin, [{ topic, numPartitions: 1 }]);
    await admin.disconnect();
    // one partition, bad values interleaved with good ones: offsets say which message is which
    const messages: Array<{ key: Buffer | string; value: Buffer }> = [];
    let g = 0;
    for (const b of badValues) {
      for (let k = 0; k < 2; k++, g++) messages.push({ key: `c${g}`, value: json(good(g)) });
      expected.set(BigInt(messages.length), { kind: b.kind, column: b.column });
      messages.push({ key: b.key ?? 'bad', value: b.value });
    }
    while (g < GOOD) messages.push({ key: `c${g}`, value: json(good(g++)) });
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    await producer.send({ topic, messages: messages.map((m) => ({ ...m, partition: 0 })) });
    await producer.disconnect();
    // a worker process of its own, as in production (and as runScenario runs them)
    worker = spawnWorker(c.path, join(floeHome(), 'logs', `${c.table.replace(/\W/g, '_')}-worker.log`));
    fc = await connectClient(cfg);
  });

  after(async () => {
    await fc?.close();
    await worker?.kill('SIGTERM');
  });

  it('good messages become rows, each bad value a dead letter naming its column, and the ingest does not get stuck', async () => {
    await startIngest(fc, table);
    await signalIngest(fc, table, 'stop');
    // stuck = a batch failing on every retry (or the workflow failing on it): the drain never ends
    let timer: NodeJS.Timeout | undefined;
    const status = await Promise.race([
      waitForIngest(fc, table),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          void ingestStatus(fc, table).then(
            (s) => reject(new Error(`the ingest is stuck: not drained after 180 s; status ${JSON.stringify(s)}`)),
            reject,
          );
        }, 180_000);
      }),
    ]).finally(() => clearTimeout(timer));
    assert.equal(status.totalRows, GOOD);
    assert.equal(status.totalDeadLetters, badValues.length);

    // floe's reader and DuckDB agree: rows + dead letters == messages, no duplicate event ids
    const v = await verifyTable(cfg, table, topic);
    assert.deepEqual(v.problems, []);
    assert.equal(v.rows, GOOD);
    assert.equal(v.deadLetters, badValues.length);

    const tables = await openTables(cfg);
    try {
      const ids = (await readColumnValues(tables, table, 'event_id')) as string[];
      assert.deepEqual(new Set(ids), new Set(Array.from({ length: GOOD }, (_, i) => `good-${i}`)));
      const dlt = findTable(cfg, table).deadLetterTable;
      const offsets = (await readColumnValues(tables, dlt, 'offset')) as bigint[];
      const errors = (await readColumnValues(tables, dlt, 'error')) as string[];
      const byOffset = new Map(offsets.map((o, i) => [o, errors[i]!]));
      for (const [offset, { kind, column }] of expected) {
        const error = byOffset.get(offset);
        assert.ok(error !== undefined, `${kind} (offset ${offset}) is a dead letter`);
        assert.ok(error.startsWith(`${column}: `), `${kind}: the dead letter names column ${column}, found ${JSON.stringify(error)}`);
      }
      // decimal, fixed and time values land exactly (columns come back in the same file order)
      const amounts = (await readColumnValues(tables, table, 'amount')) as Uint32Array[];
      const hashes = (await readColumnValues(tables, table, 'hash')) as Uint8Array[];
      const ats = await readColumnValues(tables, table, 'at');
      const unscaled = (w: Uint32Array) =>
        BigInt.asIntN(128, (BigInt(w[3]!) << 96n) | (BigInt(w[2]!) << 64n) | (BigInt(w[1]!) << 32n) | BigInt(w[0]!));
      for (const i of [1, 2, 37]) {
        const k = ids.indexOf(`good-${i}`);
        assert.equal(unscaled(amounts[k]!), i % 2 ? BigInt(i) * 100n + 5n : BigInt(i) * 100n + 50n, `amount of good-${i}`);
        assert.deepEqual([...hashes[k]!], [i, 0, 0, 255], `hash of good-${i}`);
        assert.equal(Number(ats[k]), (12 * 3600 + i * 60) * 1e6 + 1, `at of good-${i}`);
      }
    } finally {
      await tables.close();
    }
  });
});
