// scratch: memory profile of a compaction-like rewrite, no Temporal/S3
import { MemoryFileIO } from './iceberg/io/memory';
import { readParquetBatches, RollingParquetWriter, writeParquetFile } from './iceberg/parquet';
import { parquetWasm } from './iceberg/parquet/wasm';
import type { Schema } from './iceberg/spec/types';
const schema: Schema = { type: 'struct', 'schema-id': 0, fields: [
  { id: 1, name: 'event_id', required: true, type: 'string' }, { id: 2, name: 'order_id', required: true, type: 'long' },
  { id: 3, name: 'event_type', required: true, type: 'string' }, { id: 4, name: 'event_time', required: true, type: 'timestamptz' },
  { id: 5, name: 'customer_id', required: true, type: 'long' }, { id: 6, name: 'amount', required: false, type: 'double' },
  { id: 7, name: 'currency', required: false, type: 'string' }, { id: 8, name: 'kafka_partition', required: true, type: 'int' },
  { id: 9, name: 'kafka_offset', required: true, type: 'long' } ] };
const N = Number(process.env.N ?? 5000);
const mb = (x: number) => (x / 1048576).toFixed(0);
function report(tag: string) {
  const m = process.memoryUsage();
  console.log(tag, 'rss', mb(m.rss), 'heap', mb(m.heapUsed), 'ext', mb(m.external), 'ab', mb(m.arrayBuffers), 'wasm', mb((parquetWasm.wasmMemory() as any).buffer.byteLength));
}
async function main() {
  const io = new MemoryFileIO();
  let k = 0;
  for (let f = 0; f < N; f++) {
    const rows = Array.from({ length: 100 }, () => { k++; return { event_id: `evt-${k}-${(k * 7919).toString(36)}`, order_id: BigInt(k % 5000), event_type: 'placed', event_time: 1_700_000_000_000_000n + BigInt(k) * 1000n, customer_id: BigInt(k % 977), amount: (k % 1000) / 10, currency: 'EUR', kafka_partition: 0, kafka_offset: BigInt(k) }; });
    const w = await writeParquetFile(schema, { rows });
    await io.write(`memory://t/in-${f}.parquet`, w.bytes);
  }
  global.gc?.();
  report('seeded');
  let peak = 0;
  const t0 = Date.now();
  const writer = new RollingParquetWriter({ schema, io, targetFileSizeBytes: 128 * 1024 * 1024, location: (i) => `memory://t/out-${i}.parquet` });
  for (let f = 0; f < N; f++) {
    for await (const b of readParquetBatches(io, `memory://t/in-${f}.parquet`)) await writer.writeBatch(b);
    peak = Math.max(peak, process.memoryUsage().rss);
    if (f % 1000 === 0) report(`file ${f}`);
  }
  const out = await writer.close();
  report('closed');
  console.log('peak rss', mb(peak), 'secs', (Date.now() - t0) / 1000, 'outputs', out.length, out.map((o) => o.fileSizeInBytes));
}
main();
