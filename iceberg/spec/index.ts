export * from './types';
export {
  LONG_KEYS,
  MAIN_BRANCH,
  PARTITION_FIELD_ID_START,
  parseIcebergJson,
  stringifyIcebergJson,
  parseTableMetadata,
  serializeTableMetadata,
  encodeTableMetadata,
  freezeRecord,
  withFrozenHistory,
  metadataFileLocation,
  parseMetadataVersion,
  assignFreshSchemaIds,
  newTableMetadata,
  currentSchema,
  schemaById,
  defaultSpec,
  specById,
  snapshotById,
  currentSnapshot,
  ancestors,
} from './metadata';
export type { NewTableMetadataArgs } from './metadata';
export { findField, fieldById, typeString } from './schema';
export {
  locationProvider,
  objectStorageHash,
  WRITE_OBJECT_STORAGE_ENABLED,
  WRITE_OBJECT_STORAGE_PARTITIONED_PATHS,
  type LocationProvider,
} from './location-provider';
export {
  parseTransform,
  transformResultType,
  toPartitionValue,
  bucketHash,
  applyTransform,
  partitionType,
  partitionRecord,
  partitioner,
  samePartition,
  partitionKey,
  partitionHumanString,
  partitionPath,
  MAX_PARTITION_SEGMENT_BYTES,
} from './partition';
export type { ParsedTransform } from './partition';
export { murmur3x86_32 } from './murmur3';
export {
  UNASSIGNED_SEQ,
  partitionAvroSchema,
  manifestEntrySchema,
  encodeManifest,
  writeManifest,
  decodeManifest,
  inheritFromManifest,
  firstRowIdInheritance,
  readManifest,
} from './manifest';
export type { ManifestWriteArgs, ManifestReadOptions, DecodedManifest } from './manifest';
export {
  MANIFEST_LIST_SCHEMA,
  assignFirstRowIds,
  assignSequenceNumbers,
  encodeManifestList,
  writeManifestList,
  decodeManifestList,
  readManifestList,
} from './manifest-list';
export type { ManifestListWriteArgs } from './manifest-list';
export { dataFileToWire, dataFileFromWire } from './data-file';
export {
  DELETE_FILE_PATH_FIELD_ID,
  DELETE_FILE_POS_FIELD_ID,
  deleteFileKey,
  isDeletionVector,
  mayReferenceDataFile,
  referencedDataFile,
} from './position-delete';
export {
  LAST_UPDATED_SEQUENCE_NUMBER_FIELD_ID,
  ROW_ID_FIELD_ID,
  ROW_LINEAGE_FIELDS,
  isRowLineageFieldId,
  withRowLineageFields,
} from './row-lineage';
export type { DataFileWire, WirePartitionValue } from './data-file';
export { readAvroFile, writeAvroFile } from './avro';
export type { AvroCodec, AvroFile } from './avro';
export * from './conversions';
export * from './table-properties';
