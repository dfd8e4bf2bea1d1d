/**
 * What a data-file list costs in Temporal history inline vs staged (table/staged-files.ts),
 * and what staging costs: for lists of N files of a 9-column table (examples/orders.yaml columns,
 * partitioned bucket[512](order_id) x currency so every file has its own partition), prints the
 * wire-form JSON bytes (inline, in history twice per cycle: poll result and commit input), the
 * staged manifest bytes, and the time to encode + PUT it and to GET + decode it on the local S3.
 * This is the measurement behind INLINE_FILE_LIST_BUDGET_BYTES.
 *
 *   npx tsx bench/staged-files.ts [--sizes 100,300,1000,5000]
 *
 * Needs the local stack's S3 (`floe stack up`).
 */
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { ensureStack } from '../stack/stack';
import { loadConfig } from '../config';
import { openTables } from '../table/tables';
import { schemaOf } from '../ingest/tables';
import { MemoryFileIO, newTableMetadata, writePartitionedRows, dataFileToWire, applyTransform } from '../iceberg';
import type { Row } from '../ingest/decode';
import {
  INLINE_FILE_LIST_BUDGET_BYTES,
  deleteStaged,
  readStagedDataFiles,
  wireListBytes,
  writeStagedDataFiles,
} from '../table/staged-files';
import { benchArgs } from './support/args';

const args = benchArgs('npx tsx bench/staged-files.ts [--sizes 100,300,1000,5000]', {
  sizes: { type: 'string', default: '100,300,1000,5000' },
});
const SIZES = args.sizes.split(',').map(Number);
const CURRENCIES = ['EUR', 'USD', 'GBP', 'JPY', 'CHF', 'SEK', 'NOK', 'DKK', 'PLN', 'CZK'];
const REPEAT = 5;

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  await ensureStack(['s3']);
  const cfg = loadConfig(resolve(__dirname, '../examples/orders.yaml'));
  const tables = await openTables(cfg);
  const columns = cfg.tables[0]!.columns;
  const location = `${cfg.catalog.warehouse.replace(/\/+$/, '')}/bench/staged_${Date.now().toString(36)}`;
  const byName = new Map(schemaOf(columns).fields.map((f) => [f.name, f.id]));
  const metadata = newTableMetadata({
    location,
    schema: schemaOf(columns),
    tableUuid: randomUUID(),
    properties: { 'write.parquet.compression-codec': 'zstd' },
    spec: {
      'spec-id': 0,
      fields: [
        { 'source-id': byName.get('order_id')!, 'field-id': 1000, name: 'order_id_bucket', transform: 'bucket[512]' },
        { 'source-id': byName.get('currency')!, 'field-id': 1001, name: 'currency', transform: 'identity' },
      ],
    },
  });
  // One order id per bucket: N rows in N distinct partitions -> N data files with real stats.
  const idOfBucket = new Map<number, bigint>();
  for (let id = 1_000_000n; idOfBucket.size < 512; id++) {
    const b = applyTransform('bucket[512]', 'long', id) as number;
    if (!idOfBucket.has(b)) idOfBucket.set(b, id);
  }
  const ids = [...idOfBucket.values()];
  const max = Math.max(...SIZES);
  const rows: Row[] = Array.from({ length: Math.min(max, 512 * CURRENCIES.length) }, (_, n) => ({
    event_id: `evt-${n}`,
    order_id: ids[n % 512]!,
    event_type: 'placed',
    event_time: BigInt(Date.UTC(2026, 6, 1) + n) * 1000n,
    customer_id: BigInt(n),
    amount: n / 4,
    currency: CURRENCIES[Math.floor(n / 512) % CURRENCIES.length]!,
    kafka_partition: 0,
    kafka_offset: BigInt(n),
  }));
  const all = await writePartitionedRows(new MemoryFileIO(), metadata, rows, {
    fileName: (k) => `c-g0-a1-${String(k).padStart(5, '0')}.parquet`,
  });

  console.log(`inline budget: ${INLINE_FILE_LIST_BUDGET_BYTES} bytes per commit (shared by its partition groups)\n`);
  console.log('files   inline JSON   per file   staged manifest   per file   encode+PUT ms   GET+decode ms');
  try {
    for (const n of SIZES) {
      const files = Array.from({ length: n }, (_, i) => {
        const f = all[i % all.length]!;
        return i < all.length ? f : { ...f, filePath: f.filePath.replace(/\.parquet$/, `-x${i}.parquet`) };
      });
      const inline = wireListBytes(files.map(dataFileToWire));
      const put: number[] = [];
      const get: number[] = [];
      let bytes = 0;
      for (let r = 0; r < REPEAT; r++) {
        let t0 = performance.now();
        const refs = await writeStagedDataFiles(tables.io, metadata, `${randomUUID()}-g0-a1`, files);
        put.push(performance.now() - t0);
        bytes = refs[0]!.bytes;
        t0 = performance.now();
        const back = await readStagedDataFiles(tables.io, refs[0]!);
        get.push(performance.now() - t0);
        if (back.length !== n) throw new Error(`read back ${back.length} of ${n}`);
        await deleteStaged(
          tables.io,
          refs.map((x) => x.stagedFiles),
        );
      }
      console.log(
        `${String(n).padStart(5)}   ${String(inline).padStart(11)}   ${(inline / n).toFixed(0).padStart(8)}   ${String(bytes).padStart(15)}   ${(bytes / n).toFixed(1).padStart(8)}   ${median(put).toFixed(1).padStart(13)}   ${median(get).toFixed(1).padStart(13)}`,
      );
    }
  } finally {
    await tables.close();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
