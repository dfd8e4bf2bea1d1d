/**
 * Test producer: demo order events [from, from + count) of the deterministic generator (so event ids
 * are unique across calls with disjoint ranges) into a 1-partition topic, created if missing.
 */
import { Kafka, logLevel } from 'kafkajs';
import type { FloeConfig } from '../../config';
import { eventKey, orderEvents } from '../../demo/generator';

export async function produceOrderEvents(cfg: FloeConfig, topic: string, from: number, count: number): Promise<void> {
  const kafka = new Kafka({ clientId: 'floe-test', brokers: cfg.kafka.brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 1 }], waitForLeaders: true });
  await admin.disconnect();
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  let n = 0;
  const messages = [];
  for (const e of orderEvents()) {
    if (n >= from + count) break;
    if (n++ >= from) messages.push({ key: eventKey(e), value: JSON.stringify(e) });
  }
  await producer.send({ topic, messages });
  await producer.disconnect();
}
