/**
 * Core Iceberg types, shaped exactly like the spec's JSON serialization (table metadata,
 * REST protocol) so that reading/writing metadata.json is a lossless-JSON parse/stringify.
 *
 * 64-bit values (snapshot ids, sequence numbers, timestamps-ms) are `bigint` in memory and are
 * written as JSON numbers without loss (lossless-json). They never pass through `number`.
 */

// ---------- types & schemas (spec: "Schemas and Data Types") ----------
export type PrimitiveType =
  | 'boolean'
  | 'int'
  | 'long'
  | 'float'
  | 'double'
  | 'date'
  | 'time'
  | 'timestamp'
  | 'timestamptz'
  | 'timestamp_ns'
  | 'timestamptz_ns'
  | 'string'
  | 'uuid'
  | 'binary'
  | `decimal(${number}, ${number})`
  | `fixed[${number}]`;

export interface NestedField {
  id: number;
  name: string;
  required: boolean;
  type: IcebergType;
  doc?: string;
}
export interface StructType {
  type: 'struct';
  fields: NestedField[];
}
export interface ListType {
  type: 'list';
  'element-id': number;
  element: IcebergType;
  'element-required': boolean;
}
export interface MapType {
  type: 'map';
  'key-id': number;
  key: IcebergType;
  'value-id': number;
  value: IcebergType;
  'value-required': boolean;
}
export type IcebergType = PrimitiveType | StructType | ListType | MapType;

export interface Schema extends StructType {
  'schema-id': number;
  'identifier-field-ids'?: number[];
}

// ---------- partitioning ----------
/** 'identity' | 'bucket[N]' | 'truncate[W]' | 'year' | 'month' | 'day' | 'hour' | 'void' */
export type Transform = string;
export interface PartitionField {
  'source-id': number;
  'field-id': number;
  name: string;
  transform: Transform;
}
export interface PartitionSpec {
  'spec-id': number;
  fields: PartitionField[];
}

export interface SortField {
  transform: Transform;
  'source-id': number;
  direction: 'asc' | 'desc';
  'null-order': 'nulls-first' | 'nulls-last';
}
export interface SortOrder {
  'order-id': number;
  fields: SortField[];
}

/**
 * An in-memory partition value, after the transform:
 * int/date/year/month/day/hour/bucket/time-less ints -> number; long/timestamp* -> bigint;
 * string -> string; boolean -> boolean; binary/fixed/decimal(unscaled bytes)/uuid(16 bytes) -> Uint8Array;
 * float/double -> number; null -> null.
 */
export type PartitionValue = number | bigint | string | boolean | Uint8Array | null;
/** Keyed by partition field name, in spec order. */
export type PartitionRecord = Record<string, PartitionValue>;

// ---------- files & manifests ----------
export const enum DataFileContent {
  Data = 0,
  PositionDeletes = 1,
  EqualityDeletes = 2,
}
/** PUFFIN: deletion vectors (v3), one blob of a Puffin file per DataFile (contentOffset/contentSizeInBytes). */
export type FileFormat = 'PARQUET' | 'AVRO' | 'ORC' | 'PUFFIN';

/**
 * A data file as recorded in a manifest entry (spec field ids 100-146 under data_file, id 2).
 * Counts/sizes are JS numbers (checked <= 2^53-1); they are not ids. Maps are keyed by field id.
 * Use `dataFileToWire`/`dataFileFromWire` (spec/data-file.ts) to pass one through Temporal history.
 */
export interface DataFile {
  content: DataFileContent;
  filePath: string;
  fileFormat: FileFormat;
  specId: number;
  partition: PartitionRecord;
  recordCount: number;
  fileSizeInBytes: number;
  columnSizes?: Map<number, number>;
  valueCounts?: Map<number, number>;
  nullValueCounts?: Map<number, number>;
  nanValueCounts?: Map<number, number>;
  /** spec Appendix D single-value binary encoding */
  lowerBounds?: Map<number, Uint8Array>;
  upperBounds?: Map<number, Uint8Array>;
  splitOffsets?: number[];
  equalityIds?: number[];
  sortOrderId?: number;
  /** v3 (field 142): the `_row_id` of the file's first row; null/absent = inherited from the manifest's first_row_id */
  firstRowId?: bigint;
  /** field 143: the one data file all its deletes name (required for deletion vectors) */
  referencedDataFile?: string;
  /** v3 (field 144): where a deletion vector's blob starts in its Puffin file */
  contentOffset?: number;
  /** v3 (field 145): the length of that blob */
  contentSizeInBytes?: number;
}

export const enum ManifestEntryStatus {
  Existing = 0,
  Added = 1,
  Deleted = 2,
}
export interface ManifestEntry {
  status: ManifestEntryStatus;
  snapshotId: bigint | null; // null = inherit from manifest list
  sequenceNumber: bigint | null; // null = inherit
  fileSequenceNumber: bigint | null; // null = inherit
  dataFile: DataFile;
}

export const enum ManifestContent {
  Data = 0,
  Deletes = 1,
}
export interface FieldSummary {
  containsNull: boolean;
  containsNan?: boolean;
  lowerBound?: Uint8Array;
  upperBound?: Uint8Array;
}
/** A manifest list entry (manifest_file struct, spec field ids 500-519). */
export interface ManifestFile {
  manifestPath: string;
  manifestLength: number;
  partitionSpecId: number;
  content: ManifestContent;
  sequenceNumber: bigint;
  minSequenceNumber: bigint;
  addedSnapshotId: bigint;
  addedFilesCount: number;
  existingFilesCount: number;
  deletedFilesCount: number;
  addedRowsCount: number;
  existingRowsCount: number;
  deletedRowsCount: number;
  partitions?: FieldSummary[];
  keyMetadata?: Uint8Array;
  /** v3 (field 520): the first `_row_id` of the manifest's data files without one; assigned by the manifest list writer */
  firstRowId?: bigint;
}

// ---------- snapshots & table metadata (JSON shape, spec "Table Metadata Fields") ----------
export type SnapshotOperation = 'append' | 'replace' | 'overwrite' | 'delete';
export interface Snapshot {
  'snapshot-id': bigint;
  'parent-snapshot-id'?: bigint;
  'sequence-number': bigint;
  'timestamp-ms': bigint;
  'manifest-list': string;
  /** `operation` plus free-form string properties (floe.ingest-id, floe.offsets, floe.commit-id, ...) */
  summary: { operation: SnapshotOperation } & Record<string, string>;
  'schema-id'?: number;
  /** v3: the table's next-row-id when this snapshot was committed (row lineage) */
  'first-row-id'?: bigint;
  /** v3: the row ids this snapshot assigned (the table's next-row-id grew by this) */
  'added-rows'?: bigint;
}
export interface SnapshotRef {
  'snapshot-id': bigint;
  type: 'branch' | 'tag';
  'min-snapshots-to-keep'?: number;
  'max-snapshot-age-ms'?: bigint;
  'max-ref-age-ms'?: bigint;
}
export interface SnapshotLogEntry {
  'timestamp-ms': bigint;
  'snapshot-id': bigint;
}
export interface MetadataLogEntry {
  'timestamp-ms': bigint;
  'metadata-file': string;
}

export interface TableMetadata {
  /** 1 is read-only here (parsed for scans); commits require 2 or 3 (`upgrade-format-version`). */
  'format-version': 1 | 2 | 3;
  'table-uuid': string;
  location: string;
  'last-sequence-number': bigint;
  'last-updated-ms': bigint;
  'last-column-id': number;
  schemas: Schema[];
  'current-schema-id': number;
  'partition-specs': PartitionSpec[];
  'default-spec-id': number;
  'last-partition-id': number;
  properties: Record<string, string>;
  'current-snapshot-id'?: bigint | null;
  snapshots: Snapshot[];
  'snapshot-log': SnapshotLogEntry[];
  'metadata-log': MetadataLogEntry[];
  'sort-orders': SortOrder[];
  'default-sort-order-id': number;
  refs: Record<string, SnapshotRef>;
  statistics?: unknown[];
  'partition-statistics'?: unknown[];
  /** v3 (required there): higher than every assigned row id; the next snapshot's first-row-id */
  'next-row-id'?: bigint;
}

/** A table as the catalog hands it out: its identifier, current metadata and where that lives. */
export interface TableIdentifier {
  namespace: string[];
  name: string;
}
export interface LoadedTable {
  identifier: TableIdentifier;
  metadataLocation: string;
  metadata: TableMetadata;
}
