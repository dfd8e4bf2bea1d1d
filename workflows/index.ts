export * from './ingest';
