/**
 * Memory per key of the upsert key index (ingest/upsert/key-index.ts) held in memory: a million
 * keys of a long identifier column, then a million keys of a 16-character string column, each
 * set into an empty index spread over 20 data files. V8 heap used plus ArrayBuffer memory after a
 * full GC, before and after, divided by the key count (the keys' Latin-1 strings, the Map, the
 * slot arrays).
 * In memory only, a few seconds.
 *
 * Usage: node --expose-gc --import tsx bench/key-index.ts [--keys 1000000]
 */
import { benchArgs, numberArg } from './support/args';
import { MemoryFileIO, newTableMetadata, type Schema } from '../iceberg';
import { buildKeyIndex } from '../ingest/upsert/key-index';

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

async function measure(label: string, type: 'long' | 'string', value: (i: number) => unknown): Promise<void> {
  const schema: Schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'k', required: true, type }] };
  const metadata = newTableMetadata({ location: 'memory://wh/t', schema, tableUuid: '00000000-0000-0000-0000-000000000001' });
  const index = await buildKeyIndex(new MemoryFileIO(), metadata, ['k']);
  const files = Array.from(
    { length: 20 },
    (_, i) => `s3://bucket/warehouse/db/t/data/00000-${i}-0e3c9c8e-5d6a-4bde-9c25-5b8f1f3a1c7d.parquet`,
  );
  const before = heapUsed();
  const chunk = 65_536;
  for (let from = 0; from < KEYS; from += chunk) {
    const rows = Array.from({ length: Math.min(chunk, KEYS - from) }, (_, j) => ({ k: value(from + j) }));
    // keys are built in chunks, as a writer does, so the rows are garbage by the time we measure
    index.keysOf(rows).forEach((key, j) => index.set(key, { file: files[(from + j) % files.length]!, pos: from + j }));
  }
  const after = heapUsed();
  const perKey = (after - before) / index.size;
  console.log(
    `${label}: ${index.size} keys, heap + array buffers +${((after - before) / 1e6).toFixed(1)} MB = ${perKey.toFixed(1)} bytes/key`,
  );
}

async function main(): Promise<void> {
  // spread over the long range, so nothing depends on small values
  await measure('long key', 'long', (i) => BigInt(i) * 2_654_435_761n - 2n ** 62n);
  await measure('16-char string key', 'string', (i) => `order-${String(i).padStart(10, '0')}`);
}

void main();
