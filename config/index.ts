export * from './types';
export * from './load';
export * from './units';
export * from './topics';
