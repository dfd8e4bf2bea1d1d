/**
 * Kafka's topic ids (KIP-516): a UUID the cluster gives a topic when it is created, new when a topic
 * is deleted and created again under the same name. A cursor records the id of the topic its
 * offsets belong to, so a recreated topic, whose offsets start again at 0 and may already have
 * passed the old cursor, is never read as the old one (table/cursor.ts, ingest/plan-cycle.ts).
 *
 * kafkajs speaks Metadata up to v6, which has no topic ids (they arrived in v10). This asks
 * @platformatic/kafka's admin client (Metadata v12), built from the same config as every kafkajs
 * client of floe: the brokers, TLS and SASL of `kafka.*`, secrets read here, in the worker or CLI
 * process (kafka-security.ts). It is used for this one question; kafkajs still does the rest.
 */
import { Admin, type SASLOptions } from '@platformatic/kafka';
import type { SASLOptions as KafkajsSasl } from 'kafkajs';
import type { KafkaConfig } from '../config';
import { kafkaSaslOptions, kafkaTlsOptions } from './kafka-security';

export interface TopicIds {
  /**
   * The topic's id as the cluster reports it now, or null when the cluster has no topic ids (a
   * broker older than Kafka 2.8, or ZooKeeper mode before it assigned one). A topic that does not
   * exist is an error.
   */
  of(topic: string): Promise<string | null>;
  close(): Promise<void>;
}

/** The null id (no topic id assigned: ZooKeeper-mode topics of a cluster before 2.8). */
const ZERO_ID = /^(0{8}-0{4}-0{4}-0{4}-0{12}|A{22})$/;

/** What a cluster reported as a topic's id, as floe records it (null: none). */
export function reportedTopicId(topic: string, id: string | undefined): string | null {
  // @platformatic/kafka puts the name in the id field when the broker answers Metadata v8 or older.
  if (id === undefined || id === '' || id === topic || ZERO_ID.test(id)) return null;
  return id;
}

/** @platformatic/kafka SASL options from kafkajs' (the same secrets and token providers). */
function saslOf(s: KafkajsSasl): SASLOptions {
  switch (s.mechanism) {
    case 'plain':
      return { mechanism: 'PLAIN', username: s.username, password: s.password };
    case 'scram-sha-256':
      return { mechanism: 'SCRAM-SHA-256', username: s.username, password: s.password };
    case 'scram-sha-512':
      return { mechanism: 'SCRAM-SHA-512', username: s.username, password: s.password };
    case 'oauthbearer': {
      const provider = s.oauthBearerProvider;
      return { mechanism: 'OAUTHBEARER', token: async () => (await provider()).value };
    }
    default:
      throw new Error(`kafka.sasl: mechanism ${s.mechanism} has no topic-id client`);
  }
}

/** A worker's (or CLI's) topic-id client for `k`; connects on first use. */
export function createTopicIds(k: KafkaConfig, env: NodeJS.ProcessEnv = process.env): TopicIds {
  const admin = new Admin({
    clientId: `${k.clientId}-topic-ids`,
    bootstrapBrokers: k.brokers,
    // Few retries, short timeouts: the activity that asks retries with backoff (as with kafkajs, deps.ts).
    retries: 2,
    retryDelay: 500,
    connectTimeout: 10_000,
    requestTimeout: 30_000,
    ...(k.ssl ? { tls: kafkaTlsOptions(k.ssl, env) } : {}),
    ...(k.sasl ? { sasl: saslOf(kafkaSaslOptions(k.sasl, env)) } : {}),
  });
  return {
    async of(topic: string): Promise<string | null> {
      const md = await admin.metadata({ topics: [topic], forceUpdate: true });
      const t = md.topics.get(topic);
      if (!t) throw new Error(`topic ${topic}: the cluster's metadata does not list it`);
      return reportedTopicId(topic, t.id);
    },
    async close(): Promise<void> {
      if (!admin.closed) await admin.close().catch(() => undefined);
    },
  };
}
