/**
 * Parquet file in a FileIO -> Arrow record batches, one row group at a time, so compaction and
 * oracles can stream files larger than memory. parquet-wasm's ParquetFile reads the footer and
 * then only the byte ranges of the row group (and columns) asked for, through a Blob-like shim
 * over `FileIO.readRange`. Any Parquet with a standard Arrow mapping reads (pyarrow, PyIceberg,
 * DuckDB, Spark); the batches come back in the file's own Arrow types — pass them through
 * `conformBatch` (or a RollingParquetWriter) to get the table's layout.
 */
import * as arrow from 'apache-arrow';
import { IcebergError } from '../errors';
import type { FileIO } from '../io/file-io';
import { parquetWasm, using, type BlobLike } from './wasm';

export interface ReadParquetOptions {
  /** Top-level column names to read (default all). */
  columns?: string[];
  /** Row groups to read (default all, in order). */
  rowGroups?: number[];
  /** Rows per emitted batch inside a row group (parquet-rs default 1024; we use 65536). */
  batchSize?: number;
  /** Known file length (skips a `stat`). */
  fileSize?: number;
  /**
   * Files up to this many bytes are fetched in one read instead of many ranged reads
   * (fewer object-store requests for small files). Default 8 MiB.
   */
  wholeFileBelowBytes?: number;
}

/**
 * A Blob over a FileIO location. Remembers the file's tail: parquet-rs asks for the 8-byte
 * footer length and then the metadata, and one 64 KiB tail read answers both.
 */
class FileIOBlob implements BlobLike {
  private tail: { offset: number; bytes: Uint8Array } | undefined;
  constructor(
    private readonly io: FileIO,
    private readonly location: string,
    readonly size: number,
    private readonly start = 0,
    private readonly whole?: Uint8Array,
  ) {}

  slice(start = 0, end = this.size): { arrayBuffer(): Promise<ArrayBuffer> } {
    const from = this.start + Math.max(0, start),
      to = this.start + Math.min(this.size, end);
    return { arrayBuffer: async () => toArrayBuffer(await this.read(from, to)) };
  }

  private async read(from: number, to: number): Promise<Uint8Array> {
    if (to <= from) return new Uint8Array(0);
    if (this.whole) return this.whole.subarray(from, to);
    const tailLen = Math.min(this.size, 64 * 1024);
    if (to === this.size && to - from <= tailLen) {
      if (!this.tail) {
        const offset = this.size - tailLen;
        this.tail = { offset, bytes: await this.io.readRange(this.location, offset, tailLen) };
      }
      if (from >= this.tail.offset) return this.tail.bytes.subarray(from - this.tail.offset, to - this.tail.offset);
    }
    const bytes = await this.io.readRange(this.location, from, to - from);
    if (bytes.length !== to - from) {
      throw IcebergError.mismatch('Io', `bytes read from ${this.location} at ${from}`, to - from, bytes.length, true);
    }
    return bytes;
  }
}

function toArrayBuffer(b: Uint8Array): ArrayBuffer {
  return (b.byteOffset === 0 && b.byteLength === b.buffer.byteLength ? b.buffer : b.slice().buffer) as ArrayBuffer;
}

export interface ParquetFileInfo {
  numRows: number;
  numRowGroups: number;
  rowGroupRows: number[];
  createdBy: string | undefined;
  /** Arrow schema (with `PARQUET:field_id` field metadata when the file has field ids) */
  schema: arrow.Schema;
}

async function open(io: FileIO, location: string, opts: ReadParquetOptions): Promise<import('parquet-wasm').ParquetFile> {
  const size = opts.fileSize ?? (await io.stat(location)).size;
  const whole = size <= (opts.wholeFileBelowBytes ?? 8 * 1024 * 1024) ? await io.read(location) : undefined;
  try {
    return await parquetWasm.ParquetFile.fromFile(new FileIOBlob(io, location, size, 0, whole) as unknown as Blob);
  } catch (e) {
    throw new IcebergError('DataInvalid', `${location}: not a readable Parquet file (${String(e)})`, { cause: e, context: { location } });
  }
}

/** Footer facts and the Arrow schema of a Parquet file, without reading data pages. */
export async function readParquetInfo(io: FileIO, location: string, opts: ReadParquetOptions = {}): Promise<ParquetFileInfo> {
  const file = await open(io, location, opts);
  try {
    // intoIPCStream consumes the wasm object
    const schema = arrow.tableFromIPC(file.schema().intoIPCStream()).schema;
    return using(file.metadata(), (meta) => {
      const rowGroupRows = meta.rowGroups().map((rg) => using(rg, () => rg.numRows()));
      return using(meta.fileMetadata(), (fm) => ({
        numRows: fm.numRows(),
        numRowGroups: rowGroupRows.length,
        rowGroupRows,
        createdBy: fm.createdBy(),
        schema,
      }));
    });
  } finally {
    file.free();
  }
}

/**
 * Arrow record batches of a Parquet file, row group by row group: at most one row group's data
 * is decoded (in wasm and JS) at a time. Break out of the loop early to stop reading.
 */
export async function* readParquetBatches(io: FileIO, location: string, opts: ReadParquetOptions = {}): AsyncGenerator<arrow.RecordBatch> {
  const file = await open(io, location, opts);
  try {
    const numRowGroups = using(file.metadata(), (m) => m.numRowGroups());
    const groups = opts.rowGroups ?? Array.from({ length: numRowGroups }, (_, i) => i);
    for (const rg of groups) {
      if (rg < 0 || rg >= numRowGroups) throw IcebergError.mismatch('DataInvalid', `${location} row group`, `0..${numRowGroups - 1}`, rg);
      const wasmTable = await file.read({ rowGroups: [rg], columns: opts.columns, batchSize: opts.batchSize ?? 65536 });
      const table = arrow.tableFromIPC(wasmTable.intoIPCStream());
      for (const b of table.batches) yield b;
    }
  } finally {
    file.free();
  }
}

/** Whole file as one Arrow table (tests and small files only: no memory bound). */
export async function readParquetTable(io: FileIO, location: string, opts: ReadParquetOptions = {}): Promise<arrow.Table> {
  const batches: arrow.RecordBatch[] = [];
  for await (const b of readParquetBatches(io, location, opts)) batches.push(b);
  if (batches.length > 0) return new arrow.Table(batches);
  const info = await readParquetInfo(io, location, opts);
  return new arrow.Table(info.schema);
}
