import { join } from 'node:path';
import { CCOMPAT_PATH, PG_DEFAULTS, PORTS, S3_DEFAULTS } from '../config/local-stack';
import { stackPaths } from './paths';

// Endpoints of the local stack. Each can be overridden by the environment variable the rest of
// floe reads (config/schema.ts), so tests and the worker can point at an external stack; a service
// whose endpoint is overridden is treated as external: ensureStack() only health-checks it.

// The defaults themselves live in config/local-stack.ts: the worker's config reads them too, and
// production code never imports stack/.
export { CCOMPAT_PATH, PG_DEFAULTS, PORTS, S3_DEFAULTS };

/**
 * Variables the floe worker reads; docker-compose.yml must set every one of them for
 * `floe-worker` (test/unit/compose.test.ts checks it, and that config/schema.ts reads no FLOE_*
 * variable missing from WORKER_ENV_VARS ∪ OPTIONAL_ENV_VARS).
 */
export const WORKER_ENV_VARS = [
  'FLOE_TEMPORAL_ADDRESS',
  'FLOE_KAFKA_BROKERS',
  'FLOE_S3_ENDPOINT',
  'FLOE_S3_ACCESS_KEY',
  'FLOE_S3_SECRET_KEY',
  'FLOE_S3_BUCKET',
  'FLOE_S3_REGION',
  'FLOE_CATALOG_URI',
  'FLOE_WAREHOUSE',
] as const;

/** Variables with a sensible default that compose may leave unset. */
export const OPTIONAL_ENV_VARS = [
  'FLOE_CONFIG',
  'FLOE_HOME',
  'FLOE_PG_URL',
  'FLOE_TEMPORAL_NAMESPACE',
  'FLOE_TASK_QUEUE',
  'FLOE_VERBOSE',
  'FLOE_WORKER_BUFFER_BYTES',
  'FLOE_ACTIVITY_SLOTS',
  'FLOE_PARQUET_THREADS',
  // observability/metrics-server.ts: the worker's Prometheus /metrics port (unset or 0 = off)
  'FLOE_METRICS_PORT',
  // observability/log.ts: json|text (default text on a terminal), and the level (default info)
  'FLOE_LOG_FORMAT',
  'FLOE_LOG_LEVEL',
] as const;

/**
 * The local broker's secured listeners and their test credentials (stack/kafka/security.ts makes
 * them). Only files are named: passwords live in files under $FLOE_HOME/kafka/secrets.
 */
export interface KafkaSecureEnv {
  /** SASL_SSL bootstrap servers. */
  saslSsl: string[];
  /** SSL bootstrap servers that require a client certificate. */
  mtls: string[];
  /** PEM of the CA that signed the broker's (and the test client's) certificate. */
  caFile: string;
  clientCertFile: string;
  clientKeyFile: string;
  users: Record<'plain' | 'scram256' | 'scram512', { username: string; passwordFile: string }>;
}

export interface StackEnv {
  floeHome: string;
  temporal: { address: string; namespace: string; uiUrl: string; external: boolean };
  kafka: { brokers: string[]; external: boolean; secure: KafkaSecureEnv };
  s3: {
    endpoint: string;
    region: string;
    accessKeyId: string;
    secretAccessKey: string;
    bucket: string;
    forcePathStyle: true;
    external: boolean;
  };
  /** SeaweedFS's Iceberg REST catalog (served by `weed mini` next to S3). */
  icebergRest: { uri: string };
  postgres: { url: string; host: string; port: number; user: string; password: string; database: string; external: boolean };
  /** A Confluent-compatible Schema Registry: `url` is what a Confluent client's `schema.registry.url` takes. */
  schemaRegistry: { url: string; external: boolean };
  python: { venv: string; python: string; bin: string; pyPath: string };
}

/** Endpoints of the stack, honouring FLOE_* overrides. Pure: starts nothing. */
export function stackEnv(env: NodeJS.ProcessEnv = process.env): StackEnv {
  const p = stackPaths();
  const pgUrl =
    env.FLOE_PG_URL ?? `postgresql://${PG_DEFAULTS.user}:${PG_DEFAULTS.password}@127.0.0.1:${PORTS.postgres}/${PG_DEFAULTS.database}`;
  const pg = new URL(pgUrl);
  return {
    floeHome: p.home,
    temporal: {
      address: env.FLOE_TEMPORAL_ADDRESS ?? `127.0.0.1:${PORTS.temporal}`,
      namespace: env.FLOE_TEMPORAL_NAMESPACE ?? 'default',
      uiUrl: `http://127.0.0.1:${PORTS.temporalUi}`,
      external: env.FLOE_TEMPORAL_ADDRESS !== undefined,
    },
    kafka: {
      brokers: (env.FLOE_KAFKA_BROKERS ?? `127.0.0.1:${PORTS.kafka}`)
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
      external: env.FLOE_KAFKA_BROKERS !== undefined,
      secure: kafkaSecureEnv(p.kafka),
    },
    s3: {
      endpoint: env.FLOE_S3_ENDPOINT ?? `http://127.0.0.1:${PORTS.s3}`,
      region: env.FLOE_S3_REGION ?? S3_DEFAULTS.region,
      accessKeyId: env.FLOE_S3_ACCESS_KEY ?? S3_DEFAULTS.accessKeyId,
      secretAccessKey: env.FLOE_S3_SECRET_KEY ?? S3_DEFAULTS.secretAccessKey,
      bucket: env.FLOE_S3_BUCKET ?? S3_DEFAULTS.bucket,
      forcePathStyle: true,
      external: env.FLOE_S3_ENDPOINT !== undefined,
    },
    icebergRest: { uri: `http://127.0.0.1:${PORTS.icebergRest}` },
    postgres: {
      url: pgUrl,
      host: pg.hostname,
      port: Number(pg.port || 5432),
      user: decodeURIComponent(pg.username),
      password: decodeURIComponent(pg.password),
      database: pg.pathname.replace(/^\//, ''),
      external: env.FLOE_PG_URL !== undefined,
    },
    schemaRegistry: {
      url: (env.FLOE_SCHEMA_REGISTRY_URL ?? `http://127.0.0.1:${PORTS.schemaRegistry}${CCOMPAT_PATH}`).replace(/\/+$/, ''),
      external: env.FLOE_SCHEMA_REGISTRY_URL !== undefined,
    },
    python: {
      venv: p.venv,
      python: join(p.venv, 'bin', 'python'),
      bin: join(p.venv, 'bin'),
      pyPath: p.pyDir,
    },
  };
}

function kafkaSecureEnv(kafkaDir: string): KafkaSecureEnv {
  const tls = join(kafkaDir, 'tls'),
    secrets = join(kafkaDir, 'secrets');
  const user = (username: string) => ({ username, passwordFile: join(secrets, `${username}.password`) });
  return {
    saslSsl: [`127.0.0.1:${PORTS.kafkaSaslSsl}`],
    mtls: [`127.0.0.1:${PORTS.kafkaMtls}`],
    caFile: join(tls, 'ca.pem'),
    clientCertFile: join(tls, 'client.pem'),
    clientKeyFile: join(tls, 'client.key'),
    users: { plain: user('floe_plain'), scram256: user('floe_scram256'), scram512: user('floe_scram512') },
  };
}

/** The stack's endpoints as FLOE_* variables, for spawning a worker or CLI against it. */
export function stackProcessEnv(e: StackEnv = stackEnv()): Record<string, string> {
  return {
    FLOE_TEMPORAL_ADDRESS: e.temporal.address,
    FLOE_KAFKA_BROKERS: e.kafka.brokers.join(','),
    FLOE_S3_ENDPOINT: e.s3.endpoint,
    FLOE_S3_ACCESS_KEY: e.s3.accessKeyId,
    FLOE_S3_SECRET_KEY: e.s3.secretAccessKey,
    FLOE_S3_BUCKET: e.s3.bucket,
    FLOE_S3_REGION: e.s3.region,
    // FLOE_CATALOG_URI is left to config/schema.ts (SQLite by default); Postgres is FLOE_PG_URL.
    FLOE_WAREHOUSE: `s3://${e.s3.bucket}/warehouse`,
    FLOE_PG_URL: e.postgres.url,
  };
}
