/**
 * Accepts rows / columns / Arrow batches incrementally and rolls Parquet data files at a target
 * size (Iceberg `write.target-file-size-bytes`), writing each finished file through a FileIO.
 *
 * The size of a file is only known once encoded, so the writer estimates it as buffered Arrow
 * bytes x compression ratio. The ratio starts from a trial encode of the first batch (or the
 * caller's hint) and is re-learned from every finished file; a batch that would overshoot the
 * target is split so a file ends close to it. Rows are turned into Arrow every `batchRows`
 * rows, so no per-row objects are held for long.
 *
 * Memory is bounded by a row group, not by a file: each file is encoded incrementally
 * (ParquetStreamWriter), so at most `coalesceRows` rows of Arrow data wait in JS while the
 * encoder holds the in-progress row group, and the file's encoded bytes collect until it is
 * written. (Holding a whole file as Arrow — thousands of tiny batches when compacting small
 * files — cost 1.1 GB RSS for a 48 MB compaction.)
 *
 * Concurrency: one writer per task; calls must not overlap (await each). Files are written
 * before they are reported; a failed writer may leave written files behind, which are orphans
 * until a commit references them (orphan removal deletes them).
 */
import type * as arrow from 'apache-arrow';
import { IcebergError } from '../errors';
import type { FileIO } from '../io/file-io';
import { DEFAULT_TARGET_FILE_SIZE_BYTES } from '../spec/table-properties';
import type { DataFile, Schema } from '../spec/types';
import { columnsToRecordBatch, rowsToRecordBatch, type Columns, type Row } from './columns';
import { conformBatch } from './conform';
import { inProcessEncoder, type FileEncoder, type FileEncoderFactory } from './encoder-pool';
import { arrowByteLength, encodeParquet, type ParquetWriteOptions } from './writer';
import { icebergToArrowSchema } from './schema';

/** Iceberg's `write.target-file-size-bytes` default (spec/table-properties.ts). */
export { DEFAULT_TARGET_FILE_SIZE_BYTES };

/** A data file as written; the caller adds `specId` and `partition`. */
export type WrittenDataFile = Omit<DataFile, 'specId' | 'partition'>;

export interface RollingWriterOptions extends ParquetWriteOptions {
  schema: Schema;
  /** Where finished files go (only `write` is used). */
  io: Pick<FileIO, 'write'>;
  /** Location of the next file; called once per file, right before it is written. */
  location: (fileIndex: number) => string;
  targetFileSizeBytes?: number;
  /** Rows buffered as JS objects before they become an Arrow batch (default 8192). */
  batchRows?: number;
  /** Parquet bytes per Arrow byte, when known from earlier files (skips the trial encode). */
  compressionRatioHint?: number;
  /** Rows of Arrow data buffered in JS before they are handed to the encoder (default 65536). */
  coalesceRows?: number;
  /** Where files are encoded (default: on this thread); an EncoderPool's `open` encodes on worker threads. */
  encoder?: FileEncoderFactory;
}

export class RollingParquetWriter {
  private readonly arrowSchema: arrow.Schema;
  private readonly target: number;
  private readonly batchRows: number;
  private ratio: number | undefined;
  private pendingRows: Row[] = [];
  private file: FileEncoder | undefined;
  private readonly encoder: FileEncoderFactory;
  private bufferedArrowBytes = 0;
  private readonly files: WrittenDataFile[] = [];
  private closed = false;

  constructor(private readonly opts: RollingWriterOptions) {
    this.arrowSchema = icebergToArrowSchema(opts.schema);
    this.target = opts.targetFileSizeBytes ?? DEFAULT_TARGET_FILE_SIZE_BYTES;
    if (!(this.target > 0)) throw IcebergError.mismatch('DataInvalid', 'targetFileSizeBytes', '> 0', this.target);
    this.batchRows = opts.batchRows ?? 8192;
    this.ratio = opts.compressionRatioHint;
    this.encoder = opts.encoder ?? inProcessEncoder;
  }

  /** Parquet bytes per Arrow byte learned so far (pass to the next writer as a hint). */
  get compressionRatio(): number | undefined {
    return this.ratio;
  }

  async writeRows(rows: readonly Row[]): Promise<void> {
    this.assertOpen();
    for (const r of rows) {
      this.pendingRows.push(r);
      if (this.pendingRows.length >= this.batchRows) await this.flushPendingRows();
    }
  }

  async writeColumns(columns: Columns, numRows: number): Promise<void> {
    this.assertOpen();
    await this.flushPendingRows();
    await this.addBatch(columnsToRecordBatch(this.opts.schema, columns, numRows, this.arrowSchema), true);
  }

  /** Arrow input in any layout conformBatch accepts (e.g. batches read back for compaction). */
  async writeBatch(batch: arrow.RecordBatch): Promise<void> {
    this.assertOpen();
    await this.flushPendingRows();
    await this.addBatch(batch.schema === this.arrowSchema ? batch : conformBatch(this.opts.schema, batch, this.arrowSchema));
  }

  /** Writes what is buffered as a last file and returns every file written, in order. */
  async close(): Promise<WrittenDataFile[]> {
    this.assertOpen();
    try {
      await this.flushPendingRows();
      await this.rollFile();
    } catch (e) {
      this.abort();
      throw e;
    }
    this.closed = true;
    return this.files;
  }

  /** Drops the file being filled (frees its encoder); files already written stay. */
  abort(): void {
    this.closed = true;
    this.pendingRows = [];
    this.file?.abort();
    this.file = undefined;
  }

  private assertOpen(): void {
    if (this.closed) throw new IcebergError('Unexpected', 'RollingParquetWriter used after close()');
  }

  private async flushPendingRows(): Promise<void> {
    if (this.pendingRows.length === 0) return;
    const rows = this.pendingRows;
    this.pendingRows = [];
    await this.addBatch(rowsToRecordBatch(this.opts.schema, rows, this.arrowSchema), true);
  }

  /** `owned`: built here for this call (its buffers are nobody else's), so a whole one may move to the encoder. */
  private async addBatch(batch: arrow.RecordBatch, owned = false): Promise<void> {
    if (batch.numRows === 0) return;
    let rest = batch;
    for (;;) {
      const bytes = arrowByteLength(rest.data);
      // The ratio is only needed once the file could reach the target: Parquet is never larger than
      // its Arrow input by more than a footer, so until then a file needs no trial encode (a wide
      // partition spec writes thousands of small files per cycle).
      if (this.ratio === undefined && this.bufferedArrowBytes + bytes > this.target / 2) this.ratio = await this.trialRatio(rest);
      const budget = this.target / (this.ratio ?? 1) - this.bufferedArrowBytes; // Arrow bytes left in this file
      // a batch never split shares its buffers with nothing: an owned one moves to the encoder
      const whole = owned && rest === batch;
      if (bytes <= budget) {
        await this.append(rest, bytes, bytes, whole);
        if (bytes === budget) await this.rollFile();
        return;
      }
      // split where the estimate reaches the target; always take at least one row so we progress
      const take = Math.max(1, Math.floor((budget / bytes) * rest.numRows));
      if (take < rest.numRows) {
        const head = rest.slice(0, take);
        await this.append(head, budget, arrowByteLength(head.data));
        rest = rest.slice(take);
      } else {
        await this.append(rest, bytes, bytes, whole);
        await this.rollFile();
        return;
      }
      await this.rollFile();
    }
  }

  private async trialRatio(batch: arrow.RecordBatch): Promise<number> {
    const sample = batch.numRows > 8192 ? batch.slice(0, 8192) : batch;
    if (this.opts.encoder) {
      // on the encoder's thread, like the files themselves
      const trial = this.encoder(this.opts.schema, this.arrowSchema, { ...this.opts, metrics: () => ({ kind: 'none' }) });
      await trial.write(sample);
      const w = await trial.finish();
      return w.bytes.length / Math.max(1, w.arrowBytes);
    }
    const w = await encodeParquet(this.opts.schema, this.arrowSchema, [sample], { ...this.opts, metrics: () => ({ kind: 'none' }) });
    return w.bytes.length / Math.max(1, w.arrowBytes);
  }

  /** `accounted`: bytes charged against the file's budget; `exact`: the batch's real Arrow bytes. */
  private async append(batch: arrow.RecordBatch, accounted: number, exact = accounted, owned = false): Promise<void> {
    this.file ??= this.encoder(this.opts.schema, this.arrowSchema, this.opts);
    this.bufferedArrowBytes += accounted;
    await this.file.write(batch, exact, owned);
  }

  private async rollFile(): Promise<void> {
    const file = this.file;
    if (!file) return;
    this.file = undefined;
    this.bufferedArrowBytes = 0;
    const written = await file.finish();
    const filePath = this.opts.location(this.files.length);
    await this.opts.io.write(filePath, written.bytes);
    this.ratio = written.bytes.length / Math.max(1, written.arrowBytes);
    this.files.push({ ...written.stats, filePath });
  }
}

export interface WriteDataFileRequest extends Omit<RollingWriterOptions, 'io' | 'location'> {
  /** Location of the next file (`fileIndex` counts files of this call from 0). */
  location: (fileIndex: number) => string;
  rows?: readonly Row[];
  columns?: { columns: Columns; numRows: number };
  batches?: readonly arrow.RecordBatch[];
}

/**
 * Writes one batch of input as Parquet data file(s) through `io`, rolling at
 * `targetFileSizeBytes`; returns the files (without specId/partition) in order.
 */
export async function writeDataFile(io: FileIO, req: WriteDataFileRequest): Promise<WrittenDataFile[]> {
  const w = new RollingParquetWriter({ ...req, io });
  if (req.rows) await w.writeRows(req.rows);
  if (req.columns) await w.writeColumns(req.columns.columns, req.columns.numRows);
  for (const b of req.batches ?? []) await w.writeBatch(b);
  return w.close();
}
