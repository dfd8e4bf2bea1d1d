/**
 * Reader oracles for the interop tests: canonical values shared with iceberg_oracle.py, the
 * PyIceberg/DuckDB runner, and floe-side table helpers. (interop-child.ts is a process entry
 * point, not re-exported.)
 */
export * from './canonical';
export * from './oracle';
export * from './floe-table';
