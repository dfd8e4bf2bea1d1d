export * from './types';
export * from './load';
export * from './units';
export * from './topics';
export { ConfigError, nearestKey, type ConfigProblem } from './problems';
export { parseColumnType } from './column-type';
export { configJsonSchema } from './schema';
export { COMMIT_INTERVAL_LIMIT_MS, ROUTE_VALUE_PLACEHOLDER } from './table-entry';
