/**
 * parquet-wasm, loaded once. Its package `exports` map sends `require` to the Node build
 * (`node/parquet_wasm.js`, which instantiates the wasm synchronously); the ESM/bundler builds
 * need an async init and would not load under CommonJS. Typings come from the package's ESM
 * declarations, which declare the same classes.
 */
export const parquetWasm = require('parquet-wasm') as typeof import('parquet-wasm');
export type * as ParquetWasm from 'parquet-wasm';

/**
 * What `ParquetFile.fromFile` needs from a Blob: wasm-bindgen calls only `size`, `slice()` and
 * `arrayBuffer()` on it, so a duck-typed object serves byte ranges from any FileIO.
 */
export interface BlobLike {
  readonly size: number;
  slice(start?: number, end?: number): { arrayBuffer(): Promise<ArrayBuffer> };
}

/** Calls `.free()` on wasm handles even when `fn` throws (wasm memory is not GC-managed). */
export function using<T extends { free(): void }, R>(handle: T, fn: (h: T) => R): R {
  try {
    return fn(handle);
  } finally {
    handle.free();
  }
}
