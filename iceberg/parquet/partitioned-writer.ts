/**
 * Rows -> data files of a table: split by the default partition spec, one rolling Parquet writer
 * per partition where the table's location provider puts it (spec/location-provider.ts:
 * `<write.data.path or location/data>/[hash/]<partition path>/`), with the table's write properties.
 * `writePartitionedRows` takes the rows at once; `PartitionedRowWriter` takes them one by one
 * while the caller is still producing them (an ingest poll) and encodes behind it.
 */
import type { FileIO } from '../io/file-io';
import { currentSchema, defaultSpec } from '../spec/metadata';
import { locationProvider, type LocationProvider } from '../spec/location-provider';
import { partitionKey, partitionPath, partitioner, samePartition } from '../spec/partition';
import type { DataFile, PartitionRecord, PartitionSpec, Schema, TableMetadata } from '../spec/types';
import type { Row } from './columns';
import type { FileEncoderFactory } from './encoder-pool';
import { RollingParquetWriter, writeDataFile } from './rolling-writer';
import { parquetWriteOptionsFromProperties } from './writer';
import { IcebergError } from '../errors';
import { mapConcurrent } from '../scan/parallel';

export interface PartitionedWriteOptions {
  /** File name (no directory) of the n-th file written by this call. */
  fileName: (n: number) => string;
  targetFileSizeBytes?: number;
}

export async function writePartitionedRows(
  io: FileIO,
  metadata: TableMetadata,
  rows: readonly Row[],
  opts: PartitionedWriteOptions,
): Promise<DataFile[]> {
  const schema = currentSchema(metadata);
  const spec = defaultSpec(metadata);
  const groups = new Map<string, { partition: PartitionRecord; rows: Row[] }>();
  const partitionOf = rows.length > 0 ? partitioner(spec, schema) : undefined;
  for (const row of rows) {
    const partition = partitionOf!(row);
    const key = partitionKey(partition);
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { partition, rows: [] }));
    g.rows.push(row);
  }
  const options = parquetWriteOptionsFromProperties(schema, metadata.properties);
  const locations = locationProvider(metadata);
  const out: DataFile[] = [];
  let n = 0;
  for (const { partition, rows: part } of groups.values()) {
    const path = spec.fields.length ? partitionPath(spec, schema, partition) : '';
    const files = await writeDataFile(io, {
      ...options,
      schema,
      rows: part,
      ...(opts.targetFileSizeBytes === undefined ? {} : { targetFileSizeBytes: opts.targetFileSizeBytes }),
      location: () => locations.newDataLocation(opts.fileName(n++), path),
    });
    for (const f of files) out.push({ ...f, specId: spec['spec-id'], partition });
  }
  return out;
}

/**
 * Rows a partition buffers as row objects before its writer turns them into Arrow. Small, so that
 * rows die young: with 8192, ~1 KiB JSON rows outlived the young generation and the reading thread
 * paid for copying and promoting them; 2048 read 7% faster at 1 and at 4 partitions in three
 * paired bench/cycle-phases.ts runs each (the encoder thread, mostly idle, takes the extra batches).
 */
const PARTITIONED_BATCH_ROWS = 2048;

export interface PartitionedRowWriterOptions extends PartitionedWriteOptions {
  /** Where files are encoded (default: this thread); EncoderPool.open encodes on worker threads. */
  encoder?: FileEncoderFactory;
  /** Parquet bytes per Arrow byte from earlier files of the table (skips a trial encode). */
  compressionRatioHint?: number;
  /** Runs once, before the first file is written (e.g. marking the files pending). */
  beforeFirstFile?: () => Promise<void>;
  /** Rows handed to a partition's writer at a time (default PARTITIONED_BATCH_ROWS). */
  batchRows?: number;
  /** Told the compression ratio the files showed, on a successful close (hint for the next writer). */
  learnedRatio?: (ratio: number) => void;
}

const CLOSE_CONCURRENCY = 4;

interface PartitionStream {
  partition: PartitionRecord;
  rows: Row[];
  writer: RollingParquetWriter;
  /** the writer's calls, in order: each batch waits for the one before */
  chain: Promise<void>;
}

/**
 * Rows -> data files while the rows are still arriving: `add` is synchronous and cheap (the row
 * joins its partition's buffer); every `batchRows` rows the partition's writer takes the batch in
 * the background (Arrow conversion here, encoding where `encoder` runs it), so a caller reading
 * Kafka keeps reading while earlier rows are encoded. A failed batch makes the next `add` and
 * `close` throw. Files are written as they fill up and at `close`; a writer that is not closed
 * must be `abort`ed (files already written stay, unreferenced: orphans until swept).
 */
export class PartitionedRowWriter {
  private readonly schema: Schema;
  private readonly spec: PartitionSpec;
  private readonly locations: LocationProvider;
  private readonly options: ReturnType<typeof parquetWriteOptionsFromProperties>;
  private readonly streams = new Map<string, PartitionStream>();
  private readonly batchRows: number;
  private failure: unknown;
  private fileCount = 0;
  private gate: Promise<void> | undefined;
  private ratio: number | undefined;
  private done = false;
  /** The row partition function, compiled on the first row. */
  private partitionOf: ((row: Row) => PartitionRecord) | undefined;
  /** The stream of the last row added. */
  private last: PartitionStream | undefined;
  rows = 0;

  constructor(
    private readonly io: Pick<FileIO, 'write'>,
    private readonly metadata: TableMetadata,
    private readonly opts: PartitionedRowWriterOptions,
  ) {
    this.schema = currentSchema(metadata);
    this.spec = defaultSpec(metadata);
    this.locations = locationProvider(metadata);
    this.options = parquetWriteOptionsFromProperties(this.schema, metadata.properties);
    this.batchRows = opts.batchRows ?? PARTITIONED_BATCH_ROWS;
    this.ratio = opts.compressionRatioHint;
  }

  /** Parquet bytes per Arrow byte of the files written (a hint for the table's next writer). */
  get compressionRatio(): number | undefined {
    for (const s of this.streams.values()) if (s.writer.compressionRatio !== undefined) return s.writer.compressionRatio;
    return this.ratio;
  }

  add(row: Row): void {
    if (this.failure !== undefined) throw this.failure;
    if (this.done) throw new IcebergError('Unexpected', 'PartitionedRowWriter used after close()/abort()');
    const partition = (this.partitionOf ??= partitioner(this.spec, this.schema))(row);
    // Rows mostly come in runs of one partition (time-ordered events, one hour after another):
    // the last row's stream is taken without building and looking up the partition's key.
    let s = this.last;
    if (s === undefined || !samePartition(s.partition, partition)) {
      const key = partitionKey(partition);
      s = this.streams.get(key);
      if (!s) this.streams.set(key, (s = this.open(partition)));
      this.last = s;
    }
    s.rows.push(row);
    this.rows++;
    if (s.rows.length >= this.batchRows) this.hand(s);
  }

  /** Writes what is buffered and returns every data file written, in partition order. */
  async close(): Promise<DataFile[]> {
    if (this.done) throw new IcebergError('Unexpected', 'PartitionedRowWriter closed twice');
    this.done = true;
    try {
      // A few partitions at a time: a wide spec has thousands, each an encoder with its own buffers.
      const files = await mapConcurrent([...this.streams.values()], CLOSE_CONCURRENCY, async (s) => {
        this.hand(s);
        await s.chain;
        return (await s.writer.close()).map((f): DataFile => ({ ...f, specId: this.spec['spec-id'], partition: s.partition }));
      });
      const ratio = this.compressionRatio;
      if (ratio !== undefined) this.opts.learnedRatio?.(ratio);
      return files.flat();
    } catch (e) {
      this.abort();
      throw e;
    }
  }

  /** Drops what is not written yet (frees the encoders). Safe to call more than once. */
  abort(): void {
    this.done = true;
    for (const s of this.streams.values()) {
      s.rows = [];
      s.writer.abort();
    }
  }

  private open(partition: PartitionRecord): PartitionStream {
    const path = this.spec.fields.length ? partitionPath(this.spec, this.schema, partition) : '';
    const io = { write: (location: string, data: Uint8Array) => this.write(location, data) };
    const writer = new RollingParquetWriter({
      ...this.options,
      schema: this.schema,
      io,
      batchRows: this.batchRows,
      ...(this.opts.targetFileSizeBytes === undefined ? {} : { targetFileSizeBytes: this.opts.targetFileSizeBytes }),
      ...(this.ratio === undefined ? {} : { compressionRatioHint: this.ratio }),
      ...(this.opts.encoder ? { encoder: this.opts.encoder } : {}),
      location: () => this.locations.newDataLocation(this.opts.fileName(this.fileCount++), path),
    });
    return { partition, rows: [], writer, chain: Promise.resolve() };
  }

  private hand(s: PartitionStream): void {
    if (s.rows.length === 0) return;
    const rows = s.rows;
    s.rows = [];
    s.chain = s.chain.then(() => s.writer.writeRows(rows));
    s.chain.catch((e: unknown) => {
      this.failure ??= e;
    });
  }

  private async write(location: string, data: Uint8Array): Promise<void> {
    if (this.opts.beforeFirstFile) await (this.gate ??= this.opts.beforeFirstFile());
    await this.io.write(location, data);
  }
}
