/**
 * The chaos run's producers (bench/chaos.ts): one feed per topic, every message numbered and
 * labelled in its headers (test/support/chaos-check.ts reads them back), sent at least once
 * into Kafka through restarts of the broker.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { CompressionTypes, Kafka, logLevel, type Message, type Producer } from 'kafkajs';
import { WorkflowFailedError } from '@temporalio/client';
import { KIND_HEADER, LABEL_HEADER, SEQ_HEADER } from '../../test/support/chaos-check';
import { createTopicsReady } from '../../demo/topics';

export type Log = (m: string) => void;

/** A workflow that ended failed: retrying the call cannot help (client/ rootCause wraps it as the cause). */
const workflowFailed = (e: unknown): boolean =>
  e instanceof WorkflowFailedError || (e as { cause?: unknown })?.cause instanceof WorkflowFailedError;

/**
 * Retries `fn` until it succeeds or `deadline`; every failure is logged (servers restart under
 * us). A failed workflow is not retried.
 */
export async function retrying<T>(what: string, fn: () => Promise<T>, log: Log, deadline: number, pauseMs = 2000): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (e) {
      if (workflowFailed(e)) throw e;
      if (Date.now() + pauseMs > deadline) throw new Error(`${what}: still failing after ${attempt} attempts: ${(e as Error).message}`);
      log(`${what}: attempt ${attempt} failed (${(e as Error).message.split('\n')[0]}); retrying`);
      await sleep(pauseMs);
    }
  }
}

/**
 * Message n of a feed; `bad`: it must be malformed (a dead letter). `label` goes into the
 * chaos-label header of a good message: what the check expects in the row (a route value, a
 * column's value), absent when nothing beyond the row's presence is checked.
 */
export type MakeMessage = (n: number, bad: boolean) => { key?: string | Buffer; value: string | Buffer; label?: string };

/** One topic's messages: n -> (key, value, headers), every `malformedEvery`-th one malformed; sent at least once. */
export class ChaosFeed {
  readonly produced = { good: 0, bad: 0 };
  /** sends that failed and were retried */
  errors = 0;
  private nextSeq = 0;

  constructor(
    readonly producer: Producer,
    readonly topic: string,
    private readonly malformedEvery: number,
    private readonly log: Log,
    private readonly make: MakeMessage,
  ) {}

  batch(count: number): Message[] {
    const out: Message[] = [];
    for (let i = 0; i < count; i++) {
      const n = this.nextSeq++;
      const bad = this.malformedEvery > 0 && (n + 1) % this.malformedEvery === 0;
      const m = this.make(n, bad);
      out.push({
        key: m.key,
        value: m.value,
        headers: {
          [SEQ_HEADER]: String(n),
          [KIND_HEADER]: bad ? 'bad' : 'good',
          ...(m.label !== undefined && !bad ? { [LABEL_HEADER]: m.label } : {}),
        },
      });
    }
    return out;
  }

  async send(messages: Message[], deadline: number): Promise<void> {
    // At-least-once into Kafka: a send that failed after the broker stored it is sent again; the
    // checker sees the copy as a repeated chaos-seq, not as a floe duplicate.
    await retrying(
      `produce ${messages.length} messages to ${this.topic}`,
      () => this.producer.send({ topic: this.topic, messages, compression: CompressionTypes.None }),
      (m) => {
        this.errors++;
        this.log(m);
      },
      deadline,
      1000,
    );
    for (const m of messages) this.produced[m.headers![KIND_HEADER] === 'bad' ? 'bad' : 'good']++;
  }

  /** A steady `ratePerS` from `t0` until `tEnd`, catching up after a broker restart. */
  async produceSteadily(ratePerS: number, t0: number, tEnd: number): Promise<void> {
    let sent = 0;
    while (Date.now() < tEnd) {
      const due = Math.floor(((Date.now() - t0) / 1000) * ratePerS);
      if (due > sent) {
        const n = Math.min(2000, due - sent);
        await this.send(this.batch(n), tEnd + 10 * 60_000);
        sent += n;
      } else {
        await sleep(100);
      }
    }
  }
}

/** The topic, created, and an idempotent producer into it. */
export async function openTopic(brokers: string[], topic: string, partitions: number): Promise<Producer> {
  const kafka = new Kafka({ clientId: 'floe-chaos', brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await createTopicsReady(admin, [{ topic, numPartitions: partitions, replicationFactor: 1 }]);
  await admin.disconnect();
  const producer: Producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, retry: { retries: 10, maxRetryTime: 5000 } });
  await producer.connect();
  return producer;
}
