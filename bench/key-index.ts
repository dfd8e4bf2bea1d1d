/**
 * Memory per key of the upsert key index (ingest/upsert/key-index.ts) held in memory: a million
 * keys of a long identifier column, then a million keys of a 16-character string column, each
 * set into an empty index spread over 20 data files. V8 heap used plus ArrayBuffer memory after a
 * full GC, before and after, divided by the key count (the keys' Latin-1 strings, the Map, the
 * slot arrays).
 * Then the same long keys in an index whose store spilled to disk (keyIndex.maxMemoryKeys 1,000,
 * ingest/upsert/disk-key-store.ts): the process's resident memory growth (SQLite's page cache is
 * native memory, outside the heap; capped at 64 MiB) and the SQLite file's size per key, and the
 * set rate of both stores.
 * A few seconds in memory, about a minute on disk.
 *
 * Usage: node --expose-gc --import tsx bench/key-index.ts [--keys 1000000]
 */
import { benchArgs, numberArg } from './support/args';
import { MemoryFileIO, newTableMetadata, type Schema } from '../iceberg';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { buildKeyIndex } from '../ingest/upsert/key-index';
import { SpillingKeyStore } from '../ingest/upsert/disk-key-store';

const args = benchArgs('node --expose-gc --import tsx bench/key-index.ts [--keys 1000000]', { keys: { type: 'string' } });
const KEYS = numberArg(args.keys, 1_000_000);

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc (see Usage)');

/** V8 heap plus ArrayBuffer backing stores (the slot arrays live outside the heap). */
function heapUsed(): number {
  gc!();
  gc!();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

async function measure(label: string, type: 'long' | 'string', value: (i: number) => unknown, spillDir?: string): Promise<void> {
  const schema: Schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'k', required: true, type }] };
  const metadata = newTableMetadata({ location: 'memory://wh/t', schema, tableUuid: '00000000-0000-0000-0000-000000000001' });
  const store = spillDir ? new SpillingKeyStore(1_000, { dir: spillDir }) : undefined;
  const index = await buildKeyIndex(new MemoryFileIO(), metadata, ['k'], store ? { store } : {});
  const files = Array.from(
    { length: 20 },
    (_, i) => `s3://bucket/warehouse/db/t/data/00000-${i}-0e3c9c8e-5d6a-4bde-9c25-5b8f1f3a1c7d.parquet`,
  );
  const before = heapUsed();
  const rssBefore = process.memoryUsage().rss;
  const started = performance.now();
  const chunk = 65_536;
  for (let from = 0; from < KEYS; from += chunk) {
    const rows = Array.from({ length: Math.min(chunk, KEYS - from) }, (_, j) => ({ k: value(from + j) }));
    // keys are built in chunks, as a writer does, so the rows are garbage by the time we measure
    index.keysOf(rows).forEach((key, j) => index.set(key, { file: files[(from + j) % files.length]!, pos: from + j }));
  }
  const rate = Math.round(index.size / ((performance.now() - started) / 1000));
  const after = heapUsed();
  if (spillDir) {
    const [folder] = fs.readdirSync(spillDir);
    const file = fs.statSync(path.join(spillDir, folder!, 'keys.sqlite')).size;
    const rss = process.memoryUsage().rss - rssBefore;
    console.log(
      `${label}: ${index.size} keys, ${rate} sets/s, resident memory +${(rss / 1e6).toFixed(1)} MB = ` +
        `${(rss / index.size).toFixed(1)} bytes/key, SQLite file ${(file / 1e6).toFixed(1)} MB = ${(file / index.size).toFixed(1)} bytes/key`,
    );
    index.close();
    return;
  }
  const perKey = (after - before) / index.size;
  console.log(
    `${label}: ${index.size} keys, ${rate} sets/s, heap + array buffers +${((after - before) / 1e6).toFixed(1)} MB = ${perKey.toFixed(1)} bytes/key`,
  );
}

async function main(): Promise<void> {
  // spread over the long range, so nothing depends on small values
  await measure('long key', 'long', (i) => BigInt(i) * 2_654_435_761n - 2n ** 62n);
  await measure('16-char string key', 'string', (i) => `order-${String(i).padStart(10, '0')}`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'floe-bench-keyindex-'));
  try {
    // in a scrambled order (a bijection of 0..2^32), as a topic's keys come: not B-tree appends
    await measure('long key in random order, spilled to disk', 'long', (i) => BigInt((i * 2_654_435_761) % 2 ** 32) - 2n ** 40n, dir);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

void main();
