import type { LoadedTable, TableIdentifier, TableMetadata } from '../spec/types';
import type { TableRequirement, TableUpdate } from './updates';

/**
 * The catalog interface, shaped after the REST protocol so a REST client slots in beside the
 * SQL one: `commitTable` takes `{requirements, updates}` exactly like POST /tables/{t}.
 *
 * Concurrency: `commitTable` is a compare-and-swap. SQL catalogs apply the updates to the metadata
 * they load, write a new metadata.json and swap `metadata_location` only if it still equals the
 * one they loaded; a lost race or a failed requirement throws IcebergError('CommitConflict',
 * retryable). A transport failure after the swap may have happened throws 'CommitStateUnknown'.
 */
export interface Catalog {
  readonly name: string;
  listNamespaces(parent?: string[]): Promise<string[][]>;
  createNamespace(namespace: string[], properties?: Record<string, string>): Promise<void>;
  namespaceExists(namespace: string[]): Promise<boolean>;
  dropNamespace(namespace: string[]): Promise<void>;

  listTables(namespace: string[]): Promise<TableIdentifier[]>;
  tableExists(id: TableIdentifier): Promise<boolean>;
  /** Creates a table from fully-built initial metadata; writes its first metadata.json. */
  createTable(id: TableIdentifier, metadata: TableMetadata): Promise<LoadedTable>;
  loadTable(id: TableIdentifier): Promise<LoadedTable>;
  dropTable(id: TableIdentifier, opts?: { purge?: boolean }): Promise<void>;
  commitTable(id: TableIdentifier, requirements: TableRequirement[], updates: TableUpdate[]): Promise<LoadedTable>;
  close(): Promise<void>;
}

export const identToString = (id: TableIdentifier): string => [...id.namespace, id.name].join('.');
export const parseIdentifier = (s: string): TableIdentifier => {
  const parts = s.split('.');
  if (parts.length < 2 || parts.some((p) => p.length === 0)) {
    throw new Error(`table identifier must be "namespace.table", got "${s}"`);
  }
  return { namespace: parts.slice(0, -1), name: parts[parts.length - 1]! };
};
