/**
 * The REST updates/requirements live with the catalog (iceberg/catalog/updates.ts), which applies
 * them without the transaction layer; re-exported here for existing importers.
 */
export type { TableRequirement, TableUpdate } from '../catalog/updates';
