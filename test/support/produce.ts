/**
 * Test producer: demo order events [from, from + count) of the deterministic generator (so event ids
 * are unique across calls with disjoint ranges) into a 1-partition topic, created if missing; and
 * any messages into a topic (produceMessages).
 */
import { Kafka, logLevel, type IHeaders } from 'kafkajs';
import type { FloeConfig } from '../../config';
import { eventKey, orderEvents } from '../../demo/generator';
import { createTopicsReady } from '../../demo/topics';

export async function produceOrderEvents(cfg: FloeConfig, topic: string, from: number, count: number): Promise<void> {
  let n = 0;
  const messages: TestMessage[] = [];
  for (const e of orderEvents()) {
    if (n >= from + count) break;
    if (n++ >= from) messages.push({ key: eventKey(e), value: JSON.stringify(e) });
  }
  await produceMessages(cfg, topic, messages);
}

/** One Kafka message as the tests write it (no partition: the producer's partitioner picks). */
export interface TestMessage {
  key?: string | Buffer | null;
  value: string | Buffer | null;
  headers?: IHeaders;
  partition?: number;
}

/** Creates `topic` (`partitions`, if missing) and sends `messages` with an idempotent producer. */
export async function produceMessages(cfg: FloeConfig, topic: string, messages: TestMessage[], partitions = 1): Promise<void> {
  const kafka = new Kafka({ clientId: 'floe-test', brokers: cfg.kafka.brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await createTopicsReady(admin, [{ topic, numPartitions: partitions, replicationFactor: 1 }]);
  await admin.disconnect();
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  try {
    await producer.send({ topic, messages });
  } finally {
    await producer.disconnect();
  }
}
