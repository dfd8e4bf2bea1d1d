export * from './ingest';
export * from './backfill';
export * from './compact';
export * from './expire';
export * from './orphans';
export * from './maintain';
export * from './search-attributes';
export * from './ingest-topics';
