export * from './ingest';
export * from './backfill';
