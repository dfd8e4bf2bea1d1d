/** Parquet encoding on worker threads (iceberg/parquet/encoder-pool.ts) against the same writer on this thread. */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import {
  MemoryFileIO,
  EncoderPool,
  icebergToArrowSchema,
  readParquetBatches,
  RollingParquetWriter,
  writeDataFile,
  IcebergError,
  type FileEncoder,
  type Schema,
} from '../../iceberg';

const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'payload', required: false, type: 'string' },
    { id: 3, name: 'amount', required: false, type: 'double' },
  ],
};

const rowsFrom = (start: number, n: number) =>
  Array.from({ length: n }, (_, k) => {
    const i = start + k;
    return { id: BigInt(i), payload: i % 7 === 0 ? null : `p-${(i * 2654435761) >>> 0}`, amount: i % 11 === 0 ? NaN : i / 4 };
  });

describe('Parquet encoder pool (worker threads)', () => {
  const pool = new EncoderPool(2);
  after(() => pool.close());

  it('writes the same rows, metrics and files as encoding on this thread', async () => {
    const input = rowsFrom(0, 50_000);
    const write = (encoder?: EncoderPool['open']) =>
      writeDataFile(new MemoryFileIO(), {
        schema,
        rows: input,
        targetFileSizeBytes: 200 * 1024,
        coalesceRows: 10_000,
        location: (i) => `memory://t/f-${i}.parquet`,
        ...(encoder ? { encoder } : {}),
      });
    const local = await write();
    const remote = await write(pool.open);
    assert.ok(local.length >= 2, `several files (${local.length})`);
    assert.equal(remote.length, local.length);
    for (let i = 0; i < local.length; i++) {
      const [a, b] = [local[i]!, remote[i]!];
      assert.equal(b.recordCount, a.recordCount);
      assert.deepEqual(b.valueCounts, a.valueCounts);
      assert.deepEqual(b.nullValueCounts, a.nullValueCounts);
      assert.deepEqual(b.nanValueCounts, a.nanValueCounts);
      assert.deepEqual(b.lowerBounds, a.lowerBounds);
      assert.deepEqual(b.upperBounds, a.upperBounds);
      assert.deepEqual(b.columnSizes, a.columnSizes);
      assert.deepEqual(b.splitOffsets, a.splitOffsets);
      assert.equal(b.fileSizeInBytes, a.fileSizeInBytes);
    }
  });

  it('files encode concurrently on both threads and read back whole', async () => {
    const io = new MemoryFileIO();
    const writers = [0, 1, 2, 3].map(
      (w) =>
        new RollingParquetWriter({ schema, io, encoder: pool.open, coalesceRows: 4096, location: (i) => `memory://t/w${w}-${i}.parquet` }),
    );
    for (let start = 0; start < 20_000; start += 2000)
      await Promise.all(writers.map((w, k) => w.writeRows(rowsFrom(k * 1_000_000 + start, 2000))));
    const files = (await Promise.all(writers.map((w) => w.close()))).flat();
    assert.equal(files.length, 4);
    for (const [k, f] of files.entries()) {
      let rows = 0,
        first: bigint | undefined;
      for await (const b of readParquetBatches(io, f.filePath)) {
        first ??= b.getChild('id')!.get(0) as bigint;
        rows += b.numRows;
      }
      assert.equal(rows, 20_000);
      assert.equal(f.recordCount, 20_000);
      assert.equal(first, BigInt(k * 1_000_000));
    }
  });

  it('an error on a thread comes back as an error; a wasm trap retires the thread and the next file gets a fresh one', async () => {
    const io = new MemoryFileIO();
    // on this thread, before anything crosses: a required column given a null
    const bad = new RollingParquetWriter({ schema, io, encoder: pool.open, location: () => 'memory://t/bad.parquet' });
    await assert.rejects(
      (async () => {
        await bad.writeRows([{ id: null as unknown as bigint, payload: 'x', amount: 1 }]);
        await bad.close();
      })(),
      (e: Error) => e instanceof IcebergError && /column id: required, found null/.test(e.message),
    );
    // on the encoder thread: parquet-rs (snappy: not the flat encoder) traps (wasm `unreachable`)
    // on a row-group size of 0
    const trap = new RollingParquetWriter({
      schema,
      io,
      encoder: pool.open,
      rowGroupRows: 0,
      codec: 'snappy',
      location: () => 'memory://t/trap.parquet',
    });
    await assert.rejects(
      (async () => {
        await trap.writeRows(rowsFrom(0, 10));
        await trap.close();
      })(),
      (e: Error) => e.name === 'RuntimeError',
    );
    for (let k = 0; k < 3; k++) {
      const files = await writeDataFile(io, {
        schema,
        rows: rowsFrom(0, 100),
        encoder: pool.open,
        location: () => `memory://t/ok-${k}.parquet`,
      });
      assert.equal(files[0]!.recordCount, 100);
    }
    const aborted = pool.open(schema, icebergToArrowSchema(schema), {});
    aborted.abort();
    aborted.abort();
    await assert.rejects(aborted.finish(), /finished twice/);
  });

  it('a file under coalesceRows still crosses to its thread every few MiB, not all at finish', async () => {
    // An ingest group's file (25k rows of ~1 KiB) stayed whole in the caller until finish: all of a
    // cycle's encoding then ran after the polls ended, on one thread.
    const small = new EncoderPool(1, 256 * 1024);
    try {
      const opened: FileEncoder[] = [];
      const w = new RollingParquetWriter({
        schema,
        io: new MemoryFileIO(),
        batchRows: 500,
        encoder: (s, a, o) => {
          const e = small.open(s, a, o);
          opened.push(e);
          return e;
        },
        location: (i) => `memory://t/bytes-${i}.parquet`,
      });
      const buffered = () => (opened[0] as unknown as { bufferedBytes: number }).bufferedBytes;
      const wide = (start: number, n: number) => rowsFrom(start, n).map((r) => ({ ...r, payload: `${r.id}`.padEnd(1024, 'x') }));
      await w.writeRows(wide(0, 2000)); // ~2 MiB of Arrow, far under 64Ki rows
      assert.equal(opened.length, 1);
      assert.ok(buffered() < 256 * 1024 + 600 * 1024, `at most the threshold plus one batch buffered, found ${buffered()}`);
      const files = await w.close();
      assert.equal(files.length, 1);
      assert.equal(files[0]!.recordCount, 2000);
    } finally {
      await small.close();
    }
  });

  it('warm() starts every thread before the first file, and a closed pool starts none', async () => {
    const pool = new EncoderPool(2);
    const threads = (p: EncoderPool) => (p as unknown as { threads: unknown[] }).threads.filter(Boolean).length;
    assert.equal(threads(pool), 0, 'threads start on first use by default');
    assert.equal(pool.warm(), pool);
    assert.equal(threads(pool), 2);
    pool.warm();
    assert.equal(threads(pool), 2, 'warm() twice starts no more');
    await pool.close();
    const closed = new EncoderPool(1);
    await closed.close();
    closed.warm();
    assert.equal(threads(closed), 0);
  });

  it('refuses a pool of no threads', () => {
    assert.throws(() => new EncoderPool(0), /encoder threads: expected an integer >= 1, found 0/);
  });
});

describe('FLOE_PARQUET_THREADS', () => {
  it('defaults to one thread per core beyond the first, at least 1, at most 4; 0 encodes on the reading thread', async () => {
    const { encoderThreadsFromEnv } = await import('../../ingest/deps');
    assert.equal(encoderThreadsFromEnv({}, 2), 1);
    assert.equal(encoderThreadsFromEnv({}, 1), 1);
    assert.equal(encoderThreadsFromEnv({}, 16), 4);
    assert.equal(encoderThreadsFromEnv({ FLOE_PARQUET_THREADS: '0' }, 8), 0);
    assert.equal(encoderThreadsFromEnv({ FLOE_PARQUET_THREADS: ' 3 ' }, 2), 3);
    assert.throws(
      () => encoderThreadsFromEnv({ FLOE_PARQUET_THREADS: 'two' }, 2),
      /FLOE_PARQUET_THREADS: expected a whole number of threads \(0 encodes on the reading thread\), found "two"/,
    );
  });
});
