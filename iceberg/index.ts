/**
 * floe's Iceberg library: public API. One section per folder; add new exports to your own
 * folder's section (or a new section) so parallel edits do not collide.
 */

// ---- errors ----
export { IcebergError, isIcebergError } from './errors';
export type { IcebergErrorKind } from './errors';

// ---- spec: types, table metadata, partitioning, manifests, data files ----
export * from './spec';

// ---- transaction: REST updates/requirements, apply, snapshot producers, expiry ----
export * from './transaction';

// ---- scan: planning and metadata tables ----
export * from './scan';

// ---- io ----
export * from './io';

// ---- catalog ----
export * from './catalog';

// ---- parquet ----
export * from './parquet';

// ---- puffin: Puffin files, v3 deletion vectors ----
export * from './puffin';
