/**
 * One Parquet data file encoded incrementally: Arrow batches go into parquet-rs's ArrowWriter
 * (parquet-wasm `transformParquetStream`) as they arrive, so neither JS nor wasm ever holds the
 * whole file as Arrow data — only the batches not yet handed over (`coalesceRows`, default 64Ki
 * rows) and the encoded bytes (the in-progress row group in wasm, finished row groups in JS).
 * Compaction feeds thousands of 100-row batches; each wasm hand-over is one IPC stream of many
 * small batches, so per-call overhead is paid once per ~64Ki rows, not once per input file.
 *
 * A flat schema (flat-encoder.ts) skips all of that: each batch is encoded into pages as it is
 * added, from its Arrow buffers, and only compressed pages are kept until `finish()`.
 *
 * Metrics are collected from each batch as it is added, footer facts are read back from the
 * finished bytes, exactly as for the one-shot `encodeParquet`.
 *
 * Concurrency: one writer per file; await each call. Call `abort()` on a writer that will not be
 * finished, or the wasm stream and its memory stay alive.
 */
import * as arrow from 'apache-arrow';
import { IcebergError } from '../errors';
import type { Schema } from '../spec/types';
import { FlatParquetEncoder, flatEncodable } from './flat-encoder';
import { MetricsCollector, metricsConfigFromProperties } from './metrics';
import { parquetWasm } from './wasm';
import {
  arrowByteLength,
  highCardinalityColumns,
  readFooterFacts,
  writtenParquet,
  writerProperties,
  type ParquetWriteOptions,
  type WrittenParquet,
} from './writer';

export interface StreamWriterOptions extends ParquetWriteOptions {
  /** Rows buffered in JS before they cross into wasm (default 65536). */
  coalesceRows?: number;
}

type WasmRecordBatch = import('parquet-wasm').RecordBatch;

export class ParquetStreamWriter {
  private readonly metrics: MetricsCollector;
  private readonly coalesceRows: number;
  private pending: arrow.RecordBatch[] = [];
  private pendingRows = 0;
  private recordCount = 0;
  private arrowBytesIn = 0;
  private controller: ReadableStreamDefaultController<WasmRecordBatch> | undefined;
  private pulled: (() => void) | undefined;
  private reading: Promise<void> | undefined;
  private readonly chunks: Uint8Array[] = [];
  private done = false;
  /** Flat schemas: encoded here from the Arrow buffers, no wasm stream (flat-encoder.ts). */
  private flat: FlatParquetEncoder | undefined;
  private readonly flatSchema: boolean;

  constructor(
    private readonly schema: Schema,
    private readonly arrowSchema: arrow.Schema,
    private readonly options: StreamWriterOptions = {},
  ) {
    this.metrics = new MetricsCollector(schema, options.metrics ?? metricsConfigFromProperties(schema));
    this.coalesceRows = options.coalesceRows ?? 65536;
    this.flatSchema = flatEncodable(schema, options.codec);
  }

  private flatWrite(batch: arrow.RecordBatch): Promise<void> {
    this.flat ??= new FlatParquetEncoder(this.schema, { ...this.options, plainColumns: highCardinalityColumns(batch) });
    return this.flat.write(batch);
  }

  get numRows(): number {
    return this.recordCount;
  }
  /** Arrow bytes added so far (what compression works on). */
  get arrowBytes(): number {
    return this.arrowBytesIn;
  }

  /** Adds a batch already conformed to `arrowSchema`. */
  async write(batch: arrow.RecordBatch, arrowBytes = arrowByteLength(batch.data)): Promise<void> {
    if (this.done) throw new IcebergError('Unexpected', 'ParquetStreamWriter used after finish()/abort()');
    if (batch.numRows === 0) return;
    this.metrics.add(batch);
    this.recordCount += batch.numRows;
    this.arrowBytesIn += arrowBytes;
    if (this.flatSchema) return this.flatWrite(batch);
    this.pending.push(batch);
    this.pendingRows += batch.numRows;
    if (this.pendingRows >= this.coalesceRows) await this.flush();
  }

  /** Encodes what is left, closes the file and returns its bytes and DataFile facts. */
  async finish(): Promise<WrittenParquet> {
    if (this.done) throw new IcebergError('Unexpected', 'ParquetStreamWriter finished twice');
    let bytes: Uint8Array;
    try {
      await this.flush();
      this.done = true;
      if (this.flatSchema) {
        if (!this.flat) throw new IcebergError('Unexpected', 'ParquetStreamWriter finished without rows');
        bytes = (await this.flat.finish()).bytes;
        this.flat = undefined;
      } else {
        if (!this.controller) throw new IcebergError('Unexpected', 'ParquetStreamWriter finished without rows');
        this.controller.close();
        await this.reading;
        bytes = concat(this.chunks);
        this.chunks.length = 0;
      }
    } catch (e) {
      this.abort();
      throw e;
    }
    const footer = await readFooterFacts(this.schema, bytes);
    if (footer.numRows !== this.recordCount) {
      throw IcebergError.mismatch('Unexpected', 'rows in written Parquet footer', this.recordCount, footer.numRows);
    }
    return writtenParquet(bytes, this.arrowBytesIn, this.recordCount, footer, this.metrics.result());
  }

  /** Drops the file (buffered batches and the wasm stream). Safe to call more than once. */
  abort(): void {
    this.done = true;
    this.pending = [];
    this.chunks.length = 0;
    this.flat = undefined;
    try {
      this.controller?.error(new Error('aborted'));
    } catch {
      // already closed or errored
    }
    this.controller = undefined;
    this.reading?.catch(() => undefined);
  }

  /**
   * Adds batches that arrive already serialized as one Arrow IPC stream (from another thread:
   * encoder-pool.ts): metrics come from the parsed `batches`, the encoder reads the same bytes,
   * so nothing is serialized twice.
   */
  async writeIpc(ipc: Uint8Array, batches: readonly arrow.RecordBatch[], arrowBytes: number): Promise<void> {
    if (this.done) throw new IcebergError('Unexpected', 'ParquetStreamWriter used after finish()/abort()');
    if (batches.length === 0) return;
    await this.flush(); // keep row order with batches added by write()
    for (const b of batches) {
      this.metrics.add(b);
      this.recordCount += b.numRows;
    }
    this.arrowBytesIn += arrowBytes;
    if (this.flatSchema) {
      for (const b of batches) await this.flatWrite(b);
      return;
    }
    await this.enqueue(ipc, batches[0]!);
  }

  /** Hands the buffered batches to wasm as one IPC stream; waits while the encoder is behind. */
  private async flush(): Promise<void> {
    if (this.pending.length === 0) return;
    const batches = this.pending;
    this.pending = [];
    this.pendingRows = 0;
    await this.enqueue(arrow.tableToIPC(new arrow.Table(this.arrowSchema, batches), 'stream'), batches[0]!);
  }

  private async enqueue(ipc: Uint8Array, first: arrow.RecordBatch): Promise<void> {
    const table = parquetWasm.Table.fromIPCStream(ipc);
    let wasmBatches: WasmRecordBatch[];
    try {
      wasmBatches = table.recordBatches();
    } finally {
      table.free();
    }
    if (!this.controller) this.start(first);
    for (const rb of wasmBatches) {
      this.controller!.enqueue(rb);
      // Backpressure: wait until the encoder asked for more (or failed) before adding the next.
      while ((this.controller!.desiredSize ?? 1) <= 0) {
        await Promise.race([
          new Promise<void>((r) => {
            this.pulled = r;
          }),
          this.reading,
        ]);
      }
    }
  }

  private start(first: arrow.RecordBatch): void {
    const plain = highCardinalityColumns(first);
    const source = new ReadableStream<WasmRecordBatch>(
      {
        start: (c) => {
          this.controller = c;
        },
        pull: () => {
          const p = this.pulled;
          this.pulled = undefined;
          p?.();
        },
      },
      { highWaterMark: 1 },
    );
    // transformParquetStream resolves only after it has read the first batch (to learn the
    // schema), so it is awaited inside the reading task, not here. It consumes the properties.
    const out = parquetWasm.transformParquetStream(source, writerProperties(this.options, plain));
    this.reading = (async () => {
      const reader = (await out).getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        this.chunks.push(value as Uint8Array);
      }
    })();
    this.reading.catch(() => undefined); // surfaced by finish() or the backpressure wait
  }
}

function concat(chunks: Uint8Array[]): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(chunks.reduce((a, c) => a + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}
