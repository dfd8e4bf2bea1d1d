/**
 * The body of one Parquet encoder thread (encoder-pool.ts starts it): holds the files being
 * encoded on this thread, each a ParquetStreamWriter fed Arrow IPC streams by the owning process.
 * Messages for one file are handled strictly in order; files interleave freely.
 */
import { parentPort } from 'node:worker_threads';
import * as arrow from 'apache-arrow';
import { IcebergError } from '../errors';
import { icebergToArrowSchema } from './schema';
import { ParquetStreamWriter } from './stream-writer';
import { fromWire } from './wire';
import type { EncoderReply, EncoderRequest, WireOptions } from './encoder-pool';
import type { MetricsMode } from './metrics';

const port = parentPort;
if (!port) throw new Error('encoder-thread.ts runs only as a worker thread (encoder-pool.ts)');

const files = new Map<number, { writer: ParquetStreamWriter; arrowSchema: arrow.Schema; chain: Promise<void> }>();

function open(file: number, m: Extract<EncoderRequest, { op: 'open' }>): void {
  const { metrics, ...options } = m.options as WireOptions;
  const modes = new Map<number, MetricsMode>(metrics);
  const arrowSchema = icebergToArrowSchema(m.schema);
  const writer = new ParquetStreamWriter(m.schema, arrowSchema, {
    ...options,
    metrics: (id) => modes.get(id) ?? { kind: 'none' },
  });
  files.set(file, { writer, arrowSchema, chain: Promise.resolve() });
}

async function handle(m: EncoderRequest): Promise<EncoderReply> {
  const f = files.get(m.file);
  switch (m.op) {
    case 'open':
      return { seq: m.seq, ok: true };
    case 'write': {
      if (!f) throw new IcebergError('Unexpected', `encoder thread: write to unknown file ${m.file}`);
      const batches = arrow.tableFromIPC(m.ipc).batches;
      await f.writer.writeIpc(m.ipc, batches, m.arrowBytes);
      return { seq: m.seq, ok: true };
    }
    case 'writeColumns': {
      if (!f) throw new IcebergError('Unexpected', `encoder thread: write to unknown file ${m.file}`);
      for (const w of m.batches) await f.writer.write(fromWire(f.arrowSchema, w));
      return { seq: m.seq, ok: true };
    }
    case 'finish': {
      if (!f) throw new IcebergError('Unexpected', `encoder thread: finish of unknown file ${m.file}`);
      files.delete(m.file);
      const written = await f.writer.finish();
      return { seq: m.seq, ok: true, written };
    }
    case 'abort':
      files.delete(m.file);
      f?.writer.abort();
      return { seq: m.seq, ok: true };
  }
}

function errorReply(seq: number, e: unknown): EncoderReply {
  const err = e instanceof Error ? e : new Error(String(e));
  return {
    seq,
    ok: false,
    error: {
      name: err.name,
      message: err.message,
      ...(err instanceof IcebergError ? { kind: err.kind, retryable: err.retryable } : {}),
    },
    ...(err.name === 'RuntimeError' ? { fatal: true } : {}), // a wasm trap
  };
}

port.on('message', (m: EncoderRequest) => {
  if (m.op === 'open') {
    try {
      open(m.file, m);
    } catch (e) {
      port.postMessage(errorReply(m.seq, e));
      return;
    }
  }
  const f = files.get(m.file);
  const run = async () => {
    let reply: EncoderReply;
    try {
      reply = await handle(m);
    } catch (e) {
      reply = errorReply(m.seq, e);
    }
    if (reply.ok && reply.written) port.postMessage(reply, [reply.written.bytes.buffer as ArrayBuffer]);
    else port.postMessage(reply);
  };
  if (f) f.chain = f.chain.then(run);
  else void run();
});
