export type { Catalog } from './catalog';
export { identToString, parseIdentifier } from './catalog';
export { MemoryCatalog } from './memory';
export {
  SqlCatalog,
  namespaceToString,
  newMetadataLocation,
  withPreviousMetadata,
  METADATA_PREVIOUS_VERSIONS_MAX,
  METADATA_DELETE_AFTER_COMMIT,
  WRITE_METADATA_PATH,
} from './sql';
export type { SqlCatalogOptions } from './sql';
export type { SqlDialect } from './sql-dialect';
export { CREATE_TABLES_DDL, CREATE_NAMESPACE_PROPERTIES_DDL } from './sql-dialect';
export { SqliteDialect } from './sql-sqlite';
export type { SqliteOptions } from './sql-sqlite';
export { PostgresDialect } from './sql-postgres';
export type { PostgresOptions } from './sql-postgres';
export { RestCatalog, encodeNamespace } from './rest';
export type { RestCatalogOptions, TableStorageConfig } from './rest';
export { catalogFromConfig, validateCatalogConfig, sqlitePathFromUri } from './config';
export type { CatalogConfig, SqlCatalogConfig, RestCatalogConfig } from './config';
export { DEFAULT_PREVIOUS_VERSIONS_MAX, previousVersionsMax, deleteRemovedMetadataFiles } from './metadata-files';
export { stageTable, writeStagedMetadata, discardStagedMetadata, cleanUpAfterCommit } from './stage';
export type { StagedTable, CurrentTable, StageOptions } from './stage';
export { redactSecrets, redactError, configSecrets, uriPassword } from './redact';
export { listAllNamespaces, listAllTables, tableLocations, overlappingTables, locationContains, normalizeLocation } from './locations';
export type { TableLocation, Overlap } from './locations';
