/**
 * The local stack's defaults: ports, the S3 bucket and keys, the Postgres user. One home for them
 * below both users: stack/ starts services with them, and the worker's config falls back to them
 * (`s3.credentials.source: local-stack`) without importing the dev stack.
 */

export const PORTS = {
  temporal: 7233,
  temporalUi: 8233,
  kafka: 9092,
  kafkaController: 9093,
  /** The broker's SASL_SSL listener (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER over TLS with the stack's test CA). */
  kafkaSaslSsl: 9094,
  /** The broker's SSL listener that requires a client certificate (mutual TLS, no SASL). */
  kafkaMtls: 9095,
  s3: 8333,
  icebergRest: 8181,
  postgres: 5433,
  /** Apicurio Registry (the Schema Registry's conventional port); its Confluent API is under /apis/ccompat/v7. */
  schemaRegistry: 8081,
  /** The opt-in `debezium` profile's PostgreSQL cluster (wal_level=logical), beside the shared one. */
  postgresCdc: 5434,
  /** The opt-in `debezium` profile's Kafka Connect worker (REST API; Connect's conventional port). */
  kafkaConnect: 8083,
} as const;

/** Where Apicurio serves the Confluent Schema Registry API: the base URL Confluent clients take. */
export const CCOMPAT_PATH = '/apis/ccompat/v7';

export const S3_DEFAULTS = {
  accessKeyId: 'floe',
  secretAccessKey: 'floe-secret',
  bucket: 'floe',
  region: 'us-east-1',
} as const;

export const PG_DEFAULTS = { user: 'floe', password: 'floe', database: 'floe' } as const;
