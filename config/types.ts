/**
 * floe configuration: one file (YAML or JSON) describing where things live and which topics
 * land in which tables. Parsed and validated by `loadConfig` (config/load.ts); every error names
 * the offending key path, e.g. `config tables[0].commitInterval: expected a duration like 500ms, …,
 * found "soon"`; unknown keys anywhere are refused with the nearest valid key.
 */
import type { PrimitiveType } from '../iceberg/spec/types';

/**
 * `commitInterval` must be below this (10 minutes). A poll activity runs for up to one commit
 * interval before it returns its files, so an interval at or above the poll activity's
 * start-to-close timeout would time out every poll and never commit. Workflows derive their poll
 * timeout from it (import it from `config/types`, which has no Node imports and is safe in workflow
 * code): anything comfortably above, e.g. this plus a few minutes for writing the files.
 */
export const COMMIT_INTERVAL_LIMIT_MS = 10 * 60_000;

/** A location URI floe can read and write (the schemes of iceberg/io). */
export const LOCATION_URI = /^(s3a?|file|memory):\/\//;

/**
 * Where a new table `ns.name` goes: `<base>/ns/name` under `catalog.location`, else under the
 * warehouse when that is a location. Undefined: a REST catalog whose warehouse is a name places the
 * table itself (from its namespace's or warehouse's location).
 */
export function tableLocationBase(c: Pick<CatalogConfig, 'warehouse' | 'location'>): string | undefined {
  const base = c.location ?? (LOCATION_URI.test(c.warehouse) ? c.warehouse : undefined);
  return base?.replace(/\/+$/, '');
}

export interface CatalogConfig {
  type: 'sql' | 'rest';
  /** sql: `sqlite:///abs/path.db` or `postgresql://user:pw@host:port/db`; rest: `http://host:port` */
  uri: string;
  /**
   * sql: where new tables are placed, `s3://bucket/prefix` or `file:///abs/dir`. rest: the
   * warehouse sent to GET /v1/config; a location URI, or a name the server knows (Polaris' catalog
   * name, Glue's catalog id).
   */
  warehouse: string;
  /** Base location of new tables when it is not the warehouse (default: the warehouse if it is a URI). */
  location?: string;
  name: string;
  token?: string;
  /** rest: OAuth2 client credentials `client_id:client_secret`, by reference (`credentialEnv` / `credentialFile`). */
  credential?: SecretRef;
  /** rest: a bearer token by reference (`tokenEnv` / `tokenFile`) rather than `token`. */
  tokenRef?: SecretRef;
  /**
   * rest: Iceberg catalog properties as PyIceberg and Java take them: `oauth2-server-uri`, `scope`,
   * `rest.sigv4-enabled`, `rest.signing-region`, `rest.signing-name`, `header.<Name>`, `s3.*`.
   */
  properties?: Record<string, string>;
}

/**
 * Object storage. No `s3` section in the config file means the local stack (its endpoint and
 * keys, from FLOE_S3_ENDPOINT, FLOE_S3_ACCESS_KEY, ... or `floe stack up`'s defaults): `credentials.source` is 'local-stack'. An
 * `s3` section is taken as written: no endpoint is AWS S3, keys only by reference, and without
 * them the AWS SDK's default chain ('chain').
 */
export interface S3Config {
  /** undefined: AWS S3's endpoint for the region. */
  endpoint?: string;
  /** undefined: AWS_REGION, the profile's region, else us-east-1. */
  region?: string;
  forcePathStyle: boolean;
  credentials: S3CredentialsConfig;
}

export type S3CredentialsConfig =
  /** The local stack's keys: FLOE_S3_ACCESS_KEY / FLOE_S3_SECRET_KEY, else the stack's defaults. */
  | { source: 'local-stack' }
  /** Keys read by the process from env vars or files named in the config (never written in it). */
  | { source: 'keys'; accessKeyId: SecretRef; secretAccessKey: SecretRef; sessionToken?: SecretRef }
  /** The AWS SDK's default provider chain (env, SSO, shared files for `profile`, process, web identity, container, IMDS). */
  | { source: 'chain'; profile?: string };

/** The type of a `source: headers` column: every header, by name, as text or as bytes. */
export type HeadersMapType = 'map<string, string>' | 'map<string, binary>';

/**
 * A column's type as configured: an Iceberg primitive, or a struct, list or map of them at any
 * depth. No field ids: the table assigns them (ingest/tables.ts columnType), so the same config
 * describes a new table and an existing one. The config's string form (`list<string>`,
 * `struct<id: long not null, tags: list<string>>`) is parsed into these objects at load.
 */
export type ColumnType = PrimitiveType | NestedTypeConfig;
export type NestedTypeConfig = StructTypeConfig | ListTypeConfig | MapTypeConfig;

export interface StructFieldConfig {
  name: string;
  type: ColumnType;
  required: boolean;
  /** Dotted path inside the struct's JSON object; defaults to the field name. */
  path?: string;
  doc?: string;
}
export interface StructTypeConfig {
  type: 'struct';
  fields: StructFieldConfig[];
}
export interface ListTypeConfig {
  type: 'list';
  element: ColumnType;
  elementRequired: boolean;
}
/** A map from a JSON object: its keys (text) are converted to `key`, which is always required. */
export interface MapTypeConfig {
  type: 'map';
  key: PrimitiveType;
  value: ColumnType;
  valueRequired: boolean;
}

/**
 * The primitive types a map key can have: those whose JSON form is a string, so an object's keys
 * convert exactly (`"42"` to a long, `"2024-05-01"` to a date).
 */
export const MAP_KEY_TYPES = ['string', 'int', 'long', 'uuid', 'date', 'time', 'timestamp', 'timestamptz', 'decimal(P, S)'] as const;

/** Whether `t` is one of MAP_KEY_TYPES. */
export function isMapKeyType(t: PrimitiveType): boolean {
  return /^(string|int|long|uuid|date|time|timestamp|timestamptz|decimal\(\d+,\s*\d+\))$/.test(t);
}

/**
 * A configured type as text in the config's string grammar (config/load.ts parseColumnType):
 * `struct<id: long not null, tags: list<string>>`; a field's path and doc are not shown.
 */
export function columnTypeString(t: ColumnType | HeadersMapType): string {
  if (typeof t === 'string') return t;
  switch (t.type) {
    case 'struct':
      return `struct<${t.fields.map((f) => `${f.name}: ${columnTypeString(f.type)}${f.required ? ' not null' : ''}`).join(', ')}>`;
    case 'list':
      return `list<${columnTypeString(t.element)}${t.elementRequired ? ' not null' : ''}>`;
    case 'map':
      return `map<${t.key}, ${columnTypeString(t.value)}${t.valueRequired ? ' not null' : ''}>`;
  }
}

export interface ColumnConfig {
  name: string;
  /**
   * An Iceberg primitive type, or (`source: value` only) a nested type in its object form; a
   * `source: headers` column is a HeadersMapType.
   */
  type: ColumnType | HeadersMapType;
  required: boolean;
  /** Dotted path into the JSON value; defaults to the column name. */
  path?: string;
  /** Fill from Kafka instead of the value: the record key, one header, or metadata. */
  source?: 'value' | 'key' | 'header' | 'headers' | 'topic' | 'partition' | 'offset' | 'timestamp';
  /** `source: header`: the header's name (a repeated header gives its last value). */
  header?: string;
  doc?: string;
}

export interface PartitionFieldConfig {
  column: string;
  transform: string;
  name?: string;
}

export interface TableConfig {
  /** Iceberg identifier `namespace.table`. */
  table: string;
  /**
   * The topic the entry reads. An entry of several topics (`topics`) has a label here instead
   * (`a,b` or `/regex/`) and reads each through `topicEntry` (config/topics.ts), never this.
   */
  topic: string;
  /** Several topics: a list or a regular expression, each topic ingested with its own cursor. */
  topics?: TopicSetConfig;
  /** Ingest id: one exactly-once cursor per (table, ingest id). */
  ingestId: string;
  columns: ColumnConfig[];
  partitionBy: PartitionFieldConfig[];
  /** Dead-letter table identifier; default `<table>_dead_letters`. */
  deadLetterTable: string;
  commitIntervalMs: number;
  maxRecordsPerCycle: number;
  maxBytesPerCycle: number;
  targetFileSizeBytes: number;
  /** Number of partition groups polled by parallel activities. */
  parallelism: number;
  /** Continue-as-new after this many cycles (history stays bounded). */
  cyclesPerRun: number;
  properties: Record<string, string>;
  maintenance: MaintenanceConfig;
  /** How record values are read; default JSON into the configured columns. */
  value: ValueFormatConfig;
  /** How record keys are read when they are in a schema format (with a schema value format). */
  key?: KeyFormatConfig;
  /**
   * Routing: the entry's records are split over several tables, each with the entry's columns,
   * partitioning and properties (the template) and its own exactly-once cursor. `table` is the
   * route's base table. README, "Routing".
   */
  route?: RouteConfig;
}

/**
 * The topics of an entry that reads several (config `topics` or `topicPattern`): each topic is
 * ingested by a workflow of its own with its own ingest id (`<ingestId>@<topic>`), so each table
 * keeps one exactly-once cursor per topic. README, "Several topics".
 */
export interface TopicSetConfig {
  /** `topics`: these topics. */
  names?: string[];
  /** `topicPattern`: every topic whose whole name matches (like Kafka's `topics.regex`), internal `__` topics excepted. */
  pattern?: string;
  /** How often the cluster is asked for topics that appeared (a new topic matching the pattern, a listed topic created late). */
  refreshMs: number;
}

/** Where an unmatched record of a route goes: the dead-letter table, nowhere (covered, not written), or the base table. */
export type RouteUnmatched = 'dead-letter' | 'skip' | 'base';

export interface RouteConfig {
  /** What picks a record's table: a string field of its JSON value, or its topic. */
  by: 'field' | 'topic';
  /** by field: a dotted path into the JSON value. */
  field?: string;
  /** Static routes: value -> table identifier. */
  tables: Record<string, string>;
  /** Tables for other values, created on first use from this template: `ns.prefix_{value}`. */
  dynamic?: string;
  unmatched: RouteUnmatched;
}

export type ValueFormat = 'json' | 'avro' | 'protobuf' | 'json-schema';

export interface ValueFormatConfig {
  format: ValueFormat;
  /** Confluent wire format through the Schema Registry (every format but json and plain Avro). */
  registry: boolean;
  /** Plain Avro: the writer schema (JSON text) every value is encoded with. */
  schema?: string;
  /** The subject whose latest version shapes a new table; default `<topic>-value`. */
  subject?: string;
  /** A record schema the table cannot take: stop the table (fail) or dead-letter its records. */
  onIncompatibleSchema: 'fail' | 'dead-letter';
  /** Only these top-level fields of the record become columns (by their name in the schema); default all. */
  fields?: string[];
  /** Columns named otherwise than their field: schema field name -> column name. */
  rename?: Record<string, string>;
}

/** The record key in a schema format: one column (`column`, default `key`) of the key schema's type. */
export interface KeyFormatConfig extends ValueFormatConfig {
  column: string;
}

/** A Confluent-compatible Schema Registry (Confluent, Apicurio's ccompat API, Karapace, Redpanda). */
export interface SchemaRegistryConfig {
  url: string;
  /** Basic auth: a user name (in the config or by reference) and a password by reference. */
  basic?: { username: SecretRef | { value: string }; password: SecretRef };
  /** A bearer token by reference. */
  token?: SecretRef;
}

export interface MaintenanceConfig {
  compact: { cron: string; targetFileSizeBytes: number; minInputFiles: number; lookbackPartitions?: number; paused: boolean };
  expire: { cron: string; olderThanMs: number; retainLast: number; paused: boolean };
  orphans: { cron: string; olderThanMs: number; paused: boolean };
}

/**
 * Where a secret or a PEM comes from: a file, or an environment variable holding it. The config
 * only names it; the worker process reads it when it builds its Kafka client (ingest/kafka-security.ts),
 * so the value never enters the parsed config, workflow inputs, history, errors or logs.
 */
export type SecretRef = { file: string } | { env: string };

/** TLS to the brokers. Without `ca`, Node's trusted roots verify the brokers (public CAs: MSK, Confluent Cloud). */
export interface KafkaSslConfig {
  ca?: SecretRef;
  /** Client certificate and key (mutual TLS); both or neither. */
  cert?: SecretRef;
  key?: SecretRef;
  rejectUnauthorized: boolean;
  /** TLS server name (SNI and the name checked on the certificate), when it differs from the broker host. */
  servername?: string;
}

export type KafkaSaslMechanism = 'plain' | 'scram-sha-256' | 'scram-sha-512' | 'oauthbearer' | 'aws';

export interface KafkaSaslConfig {
  mechanism: KafkaSaslMechanism;
  /** plain / scram-*: the user name, given or read from an env var / file like the password. */
  username?: string | SecretRef;
  /** plain / scram-*. */
  password?: SecretRef;
  /** oauthbearer: a command (argv) printing a token, or JSON `{"token"|"value", "expiresAt"?}`, on stdout. */
  tokenCommand?: string[];
  /** aws (MSK IAM over OAUTHBEARER): the cluster's region; default AWS_REGION / AWS_DEFAULT_REGION. */
  region?: string;
}

export interface KafkaConfig {
  brokers: string[];
  clientId: string;
  ssl?: KafkaSslConfig;
  sasl?: KafkaSaslConfig;
}

/**
 * The Temporal connection as the config gives it. Connecting (client/connection.ts) resolves the
 * rest like the `temporal` CLI: `address` / `namespace` here (or FLOE_TEMPORAL_ADDRESS /
 * FLOE_TEMPORAL_NAMESPACE) win, as the CLI's flags do; then TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE
 * and the profile of the CLI's config file; then the local stack's 127.0.0.1:7233 / default. TLS,
 * client certificate and API key come only from that environment and profile.
 */
export interface TemporalConfig {
  address?: string;
  namespace?: string;
  taskQueue: string;
  /** A profile of the Temporal CLI's config file (default: TEMPORAL_PROFILE, then "default"). */
  profile?: string;
}

export interface FloeConfig {
  catalog: CatalogConfig;
  s3: S3Config;
  kafka: KafkaConfig;
  temporal: TemporalConfig;
  schemaRegistry?: SchemaRegistryConfig;
  tables: TableConfig[];
}
