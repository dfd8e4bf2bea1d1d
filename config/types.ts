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
export type KafkaConfig = FloeConfig['kafka'];
export type KafkaSslConfig = NonNullable<KafkaConfig['ssl']>;
export type KafkaSaslConfig = NonNullable<KafkaConfig['sasl']>;
export type TemporalConfig = FloeConfig['temporal'];
export type SchemaRegistryConfig = NonNullable<FloeConfig['schemaRegistry']>;

export type TableConfig = FloeConfig['tables'][number];
export type ColumnConfig = TableConfig['columns'][number];
export type PartitionFieldConfig = TableConfig['partitionBy'][number];
export type ValueFormatConfig = TableConfig['value'];
export type ValueFormat = ValueFormatConfig['format'];
export type KeyFormatConfig = NonNullable<TableConfig['key']>;
export type MaintenanceConfig = TableConfig['maintenance'];

export type { SecretRef } from './values';
export type { ColumnType, ListTypeConfig, MapTypeConfig, NestedTypeConfig, StructTypeConfig } from './column-type';
export { columnTypeString } from './column-type';
