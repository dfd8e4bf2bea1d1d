/**
 * Requirement checks and update application live with the catalog (iceberg/catalog/apply.ts),
 * which stages commits without the transaction layer; re-exported here for existing importers.
 */
export { applyUpdates, checkRequirements } from '../catalog/apply';
