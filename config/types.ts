/**
 * The parsed config's types, inferred from its one schema (config/schema.ts): what a key accepts,
 * its default and the type a consumer reads are declared once, there. The names are the pieces
 * consumers pass around (a table entry, its columns, the Kafka section). A column's type is the one
 * hand-written family (config/column-type.ts: it is recursive).
 */
import type { z } from 'zod';
import type { configSchema } from './schema';

export type FloeConfig = z.output<typeof configSchema>;

export type CatalogConfig = FloeConfig['catalog'];
/**
 * Object storage. No `s3` section in the config file means the local stack (`credentials.source`
 * 'local-stack'); an `s3` section is taken as written: keys by reference ('keys'), else the AWS
 * SDK's default chain ('chain').
 */
export type S3Config = FloeConfig['s3'];
export type S3CredentialsConfig = S3Config['credentials'];
export type KafkaConfig = FloeConfig['kafka'];
export type KafkaSslConfig = NonNullable<KafkaConfig['ssl']>;
export type KafkaSaslConfig = NonNullable<KafkaConfig['sasl']>;
export type KafkaSaslMechanism = KafkaSaslConfig['mechanism'];
export type TemporalConfig = FloeConfig['temporal'];
export type SchemaRegistryConfig = NonNullable<FloeConfig['schemaRegistry']>;

export type TableConfig = FloeConfig['tables'][number];
export type ColumnConfig = TableConfig['columns'][number];
export type PartitionFieldConfig = TableConfig['partitionBy'][number];
/** The topics of an entry that reads several (`topics` or `topicPattern`), each with a cursor of its own (config/topics.ts). */
export type TopicSetConfig = NonNullable<TableConfig['topics']>;
export type RouteConfig = NonNullable<TableConfig['route']>;
/** Where an unmatched record of a route goes: the dead-letter table, nowhere (covered, not written), or the base table. */
export type RouteUnmatched = RouteConfig['unmatched'];
export type ValueFormatConfig = TableConfig['value'];
export type ValueFormat = ValueFormatConfig['format'];
export type KeyFormatConfig = NonNullable<TableConfig['key']>;
export type MaintenanceConfig = TableConfig['maintenance'];

export type { SecretRef } from './values';
export type {
  ColumnType,
  HeadersMapType,
  ListTypeConfig,
  MapTypeConfig,
  NestedTypeConfig,
  StructFieldConfig,
  StructTypeConfig,
} from './column-type';
export { columnTypeString, isMapKeyType, MAP_KEY_TYPES } from './column-type';
