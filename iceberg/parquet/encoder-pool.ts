/**
 * Parquet encoding on worker threads, so one process uses more than one core: the caller's
 * thread builds Arrow batches (and goes on reading Kafka), encoder threads compute the Iceberg
 * metrics, run parquet-rs (wasm) and read the footer back.
 *
 * A file is encoded on one thread from open to finish (the encoder is stateful); a new file goes
 * to the thread with the fewest open files. Files sharing a thread interleave message by message
 * (no file waits for another's finish). Batches cross as one Arrow IPC stream per `coalesceRows`
 * rows or `DEFAULT_COALESCE_BYTES`, whichever comes first, transferred, not copied; the finished
 * file's bytes come back the same way. Flat schemas (flat-encoder.ts) skip the IPC stream: their
 * columns' buffers are copied to their exact rows and transferred (wire.ts).
 * Each thread holds its own wasm memory, so encoding memory leaves the caller's heap too.
 *
 * A thread that dies (it should not: errors inside it are replies) fails the files it held with
 * an `Unexpected` IcebergError and is replaced for the next file. Threads are unref'd: an idle
 * pool never keeps a process alive.
 *
 * Why hand-rolled: the protocol is four messages over Node's own `worker_threads`, and a generic
 * pool (piscina and the like) would add a dependency without the per-file thread affinity the
 * stateful streaming encoder needs.
 */
import { Worker } from 'node:worker_threads';
import * as arrow from 'apache-arrow';
import { IcebergError, type IcebergErrorKind } from '../errors';
import type { Schema } from '../spec/types';
import { metricsConfigFromProperties, type MetricsMode } from './metrics';
import { leafColumns } from './schema';
import { flatEncodable } from './flat-encoder';
import { ParquetStreamWriter, type StreamWriterOptions } from './stream-writer';
import { toWire, type WireBatch } from './wire';
import { arrowByteLength, type ParquetWriteOptions, type WrittenParquet } from './writer';

/** What the rolling writer needs from the encoder of one file. */
export interface FileEncoder {
  /**
   * `owned`: the caller hands `batch` over (nothing else holds its buffers and it is not used
   * again), so a thread encoder may move its buffers to the thread instead of copying them.
   */
  write(batch: arrow.RecordBatch, arrowBytes?: number, owned?: boolean): Promise<void>;
  finish(): Promise<WrittenParquet>;
  abort(): void;
}

export type FileEncoderFactory = (schema: Schema, arrowSchema: arrow.Schema, options: StreamWriterOptions) => FileEncoder;

/** Encodes on the caller's thread. */
export const inProcessEncoder: FileEncoderFactory = (schema, arrowSchema, options) => new ParquetStreamWriter(schema, arrowSchema, options);

/** Writer options as they cross to a thread: the metrics rule becomes a mode per leaf field id. */
export type WireOptions = Omit<ParquetWriteOptions, 'metrics'> & { metrics: [number, MetricsMode][] };

export type EncoderRequest =
  | { op: 'open'; seq: number; file: number; schema: Schema; options: WireOptions }
  | { op: 'write'; seq: number; file: number; ipc: Uint8Array; arrowBytes: number }
  | { op: 'writeColumns'; seq: number; file: number; batches: WireBatch[] }
  | { op: 'finish'; seq: number; file: number }
  | { op: 'abort'; seq: number; file: number };

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

export type EncoderReply =
  | { seq: number; ok: true; written?: WrittenParquet }
  | { seq: number; ok: false; error: { name: string; message: string; kind?: IcebergErrorKind; retryable?: boolean }; fatal?: boolean };

const THREAD_BODY = require.resolve('./encoder-thread');
// In a checkout the thread runs TypeScript like the rest of floe: tsx's CommonJS hook first, then
// the body. The compiled build (dist/, .js) needs no hook and production installs need no tsx.
const BOOTSTRAP = THREAD_BODY.endsWith('.ts')
  ? `require(${JSON.stringify(require.resolve('tsx/cjs'))}); require(${JSON.stringify(THREAD_BODY)});`
  : `require(${JSON.stringify(THREAD_BODY)});`;

class EncoderThread {
  private readonly worker: Worker;
  private readonly waiting = new Map<number, { resolve: (r: EncoderReply) => void; reject: (e: Error) => void }>();
  private seq = 0;
  openFiles = 0;
  dead: Error | undefined;

  constructor() {
    this.worker = new Worker(BOOTSTRAP, { eval: true });
    this.worker.unref();
    this.worker.on('message', (r: EncoderReply) => {
      const w = this.waiting.get(r.seq);
      this.waiting.delete(r.seq);
      w?.resolve(r);
    });
    const die = (e: Error) => {
      this.dead ??= new IcebergError('Unexpected', `Parquet encoder thread died: ${e.message}`, { cause: e });
      for (const w of this.waiting.values()) w.reject(this.dead);
      this.waiting.clear();
    };
    this.worker.on('error', die);
    this.worker.on('exit', (code) => die(new Error(`exit code ${code}`)));
  }

  async call(req: DistributiveOmit<EncoderRequest, 'seq'>, transfer: ArrayBuffer[] = []): Promise<EncoderReply & { ok: true }> {
    if (this.dead) throw this.dead;
    const seq = ++this.seq;
    const reply = await new Promise<EncoderReply>((resolve, reject) => {
      this.waiting.set(seq, { resolve, reject });
      this.worker.postMessage({ ...req, seq }, transfer);
    });
    if (!reply.ok) {
      const { name, message, kind, retryable } = reply.error;
      // A wasm trap leaves that thread's parquet-rs instance unusable: retire the thread (its
      // other files fail with it) and let the pool start a fresh one for the next file.
      if (reply.fatal) void this.terminate(`Parquet encoder thread retired after a wasm trap: ${message}`);
      if (kind) throw new IcebergError(kind, message, retryable === undefined ? {} : { retryable });
      const e = new Error(message);
      e.name = name;
      throw e;
    }
    return reply;
  }

  terminate(why = 'Parquet encoder pool closed'): Promise<number> {
    this.dead ??= new IcebergError('Unexpected', why);
    return this.worker.terminate();
  }
}

let nextFile = 0;

/**
 * Arrow bytes a file buffers before they cross to its thread, whatever `coalesceRows` says. An
 * ingest poll's file is often smaller than 64Ki rows (a group's share of a 100k-record cycle):
 * coalescing by rows alone sent each file whole at finish, so all of a cycle's encoding ran on
 * one thread after the polls ended (bench/ingest.ts, 4 groups: 0.6-1.7 s per cycle). Crossing
 * every few MiB keeps encoding beside the poll, and bounds the Arrow data a file holds in the
 * caller's heap (64Ki rows of ~1 KiB events were ~64 MiB per file).
 */
const DEFAULT_COALESCE_BYTES = 4 * 1024 * 1024;

const WIRE_KEYS = [
  'codec',
  'rowGroupRows',
  'rowGroupBytes',
  'pageSizeBytes',
  'dictSizeBytes',
] as const satisfies readonly (keyof ParquetWriteOptions)[];

class RemoteFileEncoder implements FileEncoder {
  private readonly file = ++nextFile;
  private readonly opened: Promise<unknown>;
  private pending: Array<{ batch: arrow.RecordBatch; owned: boolean }> = [];
  private pendingRows = 0;
  private pendingBytes = 0;
  private readonly coalesceRows: number;
  private done = false;
  /** Flat schemas cross as copied column buffers (wire.ts), others as Arrow IPC for parquet-wasm. */
  private readonly flat: boolean;

  constructor(
    private readonly thread: EncoderThread,
    schema: Schema,
    private readonly arrowSchema: arrow.Schema,
    options: StreamWriterOptions,
    private readonly coalesceBytes: number,
  ) {
    this.coalesceRows = options.coalesceRows ?? 65536;
    this.flat = flatEncodable(schema, options.codec);
    const rule = options.metrics ?? metricsConfigFromProperties(schema);
    // only the encoder's settings cross (callers pass their whole option bag: io, callbacks, ...)
    const wire: WireOptions = { metrics: leafColumns(schema).map((l) => [l.fieldId, rule(l.fieldId)]) };
    for (const k of WIRE_KEYS) if (options[k] !== undefined) Object.assign(wire, { [k]: options[k] });
    thread.openFiles++;
    this.opened = thread.call({ op: 'open', file: this.file, schema, options: wire });
    this.opened.catch(() => undefined); // surfaced by the next write/finish
  }

  async write(batch: arrow.RecordBatch, arrowBytes = arrowByteLength(batch.data), owned = false): Promise<void> {
    if (this.done) throw new IcebergError('Unexpected', 'file encoder used after finish()/abort()');
    if (batch.numRows === 0) return;
    this.pending.push({ batch, owned });
    this.pendingRows += batch.numRows;
    this.pendingBytes += arrowBytes;
    if (this.pendingRows >= this.coalesceRows || this.pendingBytes >= this.coalesceBytes) await this.flush();
  }

  /** Arrow bytes written but not yet handed to the thread. */
  get bufferedBytes(): number {
    return this.pendingBytes;
  }

  async finish(): Promise<WrittenParquet> {
    if (this.done) throw new IcebergError('Unexpected', 'file encoder finished twice');
    try {
      await this.flush();
    } catch (e) {
      this.abort();
      throw e;
    }
    this.done = true;
    this.closedRemote = true; // the thread forgets the file on finish, success or not
    this.release();
    const r = await this.thread.call({ op: 'finish', file: this.file });
    return r.written!;
  }

  /** Drops the file here and on its thread. Safe to call more than once. */
  abort(): void {
    this.pending = [];
    this.done = true;
    this.release();
    if (this.closedRemote) return;
    this.closedRemote = true;
    this.thread.call({ op: 'abort', file: this.file }).catch(() => undefined);
  }

  private closedRemote = false;
  private released = false;
  private release(): void {
    if (this.released) return;
    this.released = true;
    this.thread.openFiles--;
  }

  private async flush(): Promise<void> {
    await this.opened;
    if (this.pending.length === 0) return;
    const batches = this.pending;
    const arrowBytes = this.pendingBytes;
    this.pending = [];
    this.pendingRows = 0;
    this.pendingBytes = 0;
    if (this.flat) {
      const wires = batches.map((b) => toWire(b.batch, b.owned));
      await this.thread.call(
        { op: 'writeColumns', file: this.file, batches: wires.map((w) => w.wire) },
        wires.flatMap((w) => w.transfer),
      );
      return;
    }
    let ipc = arrow.tableToIPC(
      new arrow.Table(
        this.arrowSchema,
        batches.map((b) => b.batch),
      ),
      'stream',
    );
    // Transfer only a buffer the IPC stream owns whole (never one an Arrow batch still uses).
    if (ipc.byteOffset !== 0 || ipc.byteLength !== ipc.buffer.byteLength) ipc = ipc.slice();
    await this.thread.call({ op: 'write', file: this.file, ipc, arrowBytes }, [ipc.buffer as ArrayBuffer]);
  }
}

export class EncoderPool {
  private readonly threads: (EncoderThread | undefined)[];
  private closed = false;

  constructor(
    readonly size: number,
    private readonly coalesceBytes = DEFAULT_COALESCE_BYTES,
  ) {
    if (!(Number.isInteger(size) && size >= 1)) throw IcebergError.mismatch('DataInvalid', 'encoder threads', 'an integer >= 1', size);
    this.threads = new Array<EncoderThread | undefined>(size).fill(undefined);
  }

  /**
   * Starts every thread now (loading the encoder and parquet-wasm takes ~100-200 ms per thread), so
   * a worker's first cycle after a start or a restart does not wait for it. Otherwise threads start
   * on first use.
   */
  warm(): this {
    if (this.closed) return this;
    for (let i = 0; i < this.threads.length; i++) if (!this.threads[i] || this.threads[i]!.dead) this.threads[i] = new EncoderThread();
    return this;
  }

  /** A FileEncoderFactory that encodes on this pool's threads (started on first use, or by warm()). */
  readonly open: FileEncoderFactory = (schema, arrowSchema, options) => {
    if (this.closed) throw new IcebergError('Unexpected', 'Parquet encoder pool closed');
    let best = -1;
    for (let i = 0; i < this.threads.length; i++) {
      const t = this.threads[i];
      if (!t || t.dead) {
        best = i;
        break;
      }
      if (best < 0 || t.openFiles < this.threads[best]!.openFiles) best = i;
    }
    let t = this.threads[best];
    if (!t || t.dead) this.threads[best] = t = new EncoderThread();
    return new RemoteFileEncoder(t, schema, arrowSchema, options, this.coalesceBytes);
  };

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.threads.map((t) => t?.terminate()));
  }
}
