/**
 * What the ingest benchmarks share: the ~1 KiB JSON event, the table config that decodes it, the
 * producer of a pre-made backlog, and the reference (a bare kafkajs consumer parsing each value).
 */
import { CompressionTypes, type Kafka } from 'kafkajs';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify as stringifyYaml } from 'yaml';
import { floeHome } from '../../stack/paths';
import { createTopicsReady } from '../../demo/topics';

const PAD = 'x'.repeat(860);

/** Event `i`: ~1 KiB of JSON, event_time 10 ms apart from 1 July 2026. */
export const benchEvent = (i: number): string =>
  JSON.stringify({
    id: i,
    event_time: new Date(Date.UTC(2026, 6, 1) + i * 10).toISOString(),
    user_id: i % 10_007,
    kind: ['view', 'click', 'buy'][i % 3],
    amount: (i % 1000) / 10,
    payload: PAD,
  });

/** `benchEvent` as an Avro schema (bench/ingest.ts --format avro): the same fields, event_time as timestamp-millis. */
export const BENCH_AVRO_SCHEMA = {
  type: 'record',
  name: 'BenchEvent',
  namespace: 'floe.bench',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'event_time', type: { type: 'long', logicalType: 'timestamp-millis' } },
    { name: 'user_id', type: 'long' },
    { name: 'kind', type: 'string' },
    { name: 'amount', type: 'double' },
    { name: 'payload', type: 'string' },
  ],
};

/** Event `i` as the Avro record of BENCH_AVRO_SCHEMA (longs as numbers: avsc's default long type). */
export const benchAvroRecord = (i: number) => ({
  id: i,
  event_time: Date.UTC(2026, 6, 1) + i * 10,
  user_id: i % 10_007,
  kind: ['view', 'click', 'buy'][i % 3]!,
  amount: (i % 1000) / 10,
  payload: PAD,
});

/** The Kafka metadata columns every bench table has (the value's columns come from the schema in Avro). */
export const BENCH_METADATA_COLUMNS = [
  { name: 'kafka_partition', type: 'int', source: 'partition', required: true },
  { name: 'kafka_offset', type: 'long', source: 'offset', required: true },
  { name: 'produced_at', type: 'timestamptz', source: 'timestamp', required: true },
];

/** Columns that decode `benchEvent`, plus Kafka metadata. */
const BENCH_COLUMNS = [
  { name: 'id', type: 'long', required: true },
  { name: 'event_time', type: 'timestamptz', required: true },
  { name: 'user_id', type: 'long', required: true },
  { name: 'kind', type: 'string', required: true },
  { name: 'amount', type: 'double' },
  { name: 'payload', type: 'string' },
  { name: 'kafka_partition', type: 'int', source: 'partition', required: true },
  { name: 'kafka_offset', type: 'long', source: 'offset', required: true },
  { name: 'produced_at', type: 'timestamptz', source: 'timestamp', required: true },
];

/**
 * Writes `<FLOE_HOME>/runs/<name>.yaml`: table `bench.<name>` on topic `<name>`, task queue
 * `floe-<name>`, hour-partitioned on event_time, with `table` overriding the entry's keys.
 */
export function writeBenchConfig(name: string, table: Record<string, unknown>): string {
  const dir = join(floeHome(), 'runs');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.yaml`);
  writeFileSync(
    path,
    stringifyYaml({
      temporal: { taskQueue: `floe-${name}` },
      tables: [
        {
          table: `bench.${name}`,
          topic: name,
          columns: BENCH_COLUMNS,
          partitionBy: [{ column: 'event_time', transform: 'hour' }],
          ...table,
        },
      ],
    }),
  );
  return path;
}

/** Creates `topic` with `partitions` and produces events [0, n) keyed by index; returns the value bytes. */
export async function produceBenchEvents(
  kafka: Kafka,
  topic: string,
  partitions: number,
  n: number,
  encode: (i: number) => string | Buffer = benchEvent,
): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  await createTopicsReady(admin, [{ topic, numPartitions: partitions }]);
  await admin.disconnect();
  const p = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await p.connect();
  let bytes = 0;
  for (let i = 0; i < n; i += 500) {
    const messages = Array.from({ length: Math.min(500, n - i) }, (_, j) => {
      const v = encode(i + j);
      bytes += v.length;
      return { key: String(i + j), value: v };
    });
    await p.send({ topic, messages, compression: CompressionTypes.None });
  }
  await p.disconnect();
  return bytes;
}

/** Seconds a bare kafkajs consumer (new group, from the beginning) takes to read and decode (JSON.parse) n records. */
export async function bareConsumeSeconds(
  kafka: Kafka,
  topic: string,
  n: number,
  decode: (value: Buffer) => unknown = (v) => JSON.parse(v.toString()),
): Promise<number> {
  const c = kafka.consumer({ groupId: `bench-ref-${Date.now()}` });
  await c.connect();
  await c.subscribe({ topics: [topic], fromBeginning: true });
  let seen = 0;
  const t0 = Date.now();
  await new Promise<void>((resolve) => {
    void c.run({
      eachBatch: async ({ batch }) => {
        for (const m of batch.messages) decode(m.value!);
        seen += batch.messages.length;
        if (seen >= n) resolve();
      },
    });
  });
  const s = (Date.now() - t0) / 1000;
  await c.disconnect();
  return s;
}
