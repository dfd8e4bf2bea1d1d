/**
 * Compaction of a table of 6,000 small files against the real stack (Temporal dev server,
 * SeaweedFS S3, SQLite catalog): the plan (~100 bytes of history per input file inline, over the
 * 256 KiB inline budget here and ~3 MB at 30,000 files, over Temporal's 2 MB payload limit) is
 * staged in the object store and history carries group summaries only; rewrites and the commit read their group's files from the stage. The
 * table reads the same rows through PyIceberg and DuckDB afterwards.
 *
 * Seeding is fast without Kafka: a few distinct Parquet files per partition are encoded, then
 * each is stored under many names (PUTs only) and appended 5,000 files a commit. Rows repeat
 * across copies, which is fine for compaction: the expected totals are known exactly.
 * Budget: ~35 s on a 2-core machine. The 30,000-file run (~170 s) is the long version, outside the
 * suite: `FLOE_COMPACT_LARGE_FILES=30000 npx tsx --test test/integration/maintenance-compact-large.test.ts`.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { temporal } from '@temporalio/proto';
import { ensureStack } from '../../stack/stack';
import { findTable, type FloeConfig } from '../../config';
import { openTables } from '../../table/tables';
import type { Row } from '../../ingest/decode';
import { relPath } from '../../maintenance/reachable';
import { mapConcurrent, writePartitionedRows, type DataFile } from '../../iceberg';
import { connectClient } from '../../client';
import { compactWorkflow } from '../../workflows';
import { INLINE_FILE_LIST_BUDGET_BYTES, STAGED_DIR } from '../../table/staged-files';
import { engineReads, maintenanceTestConfig, withWorker } from './maintenance-oracles';
import { ensureIngestTables } from '../../ingest/tables';

const FILES = Number(process.env.FLOE_COMPACT_LARGE_FILES ?? 6_000);
const DAYS = 15;
const TYPES = ['placed', 'paid'] as const;
const PARTITIONS = DAYS * TYPES.length;
/** Distinct files encoded per partition; every one is stored COPIES times. */
const TEMPLATES = 10;
const COPIES = Math.ceil(FILES / (PARTITIONS * TEMPLATES));
const ROWS_PER_FILE = 3;
const MiB = 1024 * 1024;

interface Seeded {
  files: number;
  rows: number;
  distinctEventIds: number;
  amountSum: number;
  seconds: number;
  /** What the plan's file lists take in history inline (GroupFile JSON, paths relative to the table). */
  inlinePlanBytes: number;
}

/** PARTITIONS x TEMPLATES distinct files, each stored COPIES times, appended 5,000 files a commit. */
async function seedCopies(cfg: FloeConfig, table: string): Promise<Seeded> {
  const started = Date.now();
  const t = findTable(cfg, table);
  const tables = await openTables(cfg);
  try {
    await ensureIngestTables(tables, t, cfg.schemaRegistry);
    const { metadata } = await tables.load(table);
    let n = 0,
      amountQuarters = 0;
    const templates: Array<{ file: DataFile; bytes: Uint8Array }> = [];
    for (let d = 0; d < DAYS; d++) {
      for (const type of TYPES) {
        for (let k = 0; k < TEMPLATES; k++) {
          const rows: Row[] = Array.from({ length: ROWS_PER_FILE }, () => {
            const i = n++;
            amountQuarters += (i % 400) * COPIES;
            return {
              event_id: `evt-${i}`,
              order_id: BigInt(1_000_000 + i),
              event_type: type,
              event_time: BigInt(Date.UTC(2026, 6, 1 + d, 12)) * 1000n + BigInt(i),
              customer_id: BigInt(i % 97),
              amount: (i % 400) / 4,
              currency: 'EUR',
              kafka_partition: 0,
              kafka_offset: BigInt(i),
            };
          });
          const [file] = await writePartitionedRows(tables.io, metadata, rows, { fileName: () => `seed-d${d}-${type}-t${k}.parquet` });
          templates.push({ file: file!, bytes: await tables.io.read(file!.filePath) });
        }
      }
    }
    // The template itself is copy 0.
    const copies = templates.flatMap((tpl, ti) => Array.from({ length: COPIES }, (_, c) => ({ tpl, ti, c })));
    const files = await mapConcurrent(copies, 16, async ({ tpl, ti, c }): Promise<DataFile> => {
      if (c === 0) return tpl.file;
      const filePath = tpl.file.filePath.replace(/\.parquet$/, `-c${c}.parquet`);
      await tables.io.write(filePath, tpl.bytes);
      if ((ti * COPIES + c) % 5000 === 0 && process.env.FLOE_TEST_VERBOSE) console.log(`seeded ${ti * COPIES + c} files`);
      return { ...tpl.file, filePath };
    });
    for (let i = 0; i < files.length; i += 5000) {
      await tables.appendOnce(table, {
        files: files.slice(i, i + 5000),
        summary: { 'floe.commit-id': `seed-${table}-${i}` },
        validate: () => undefined,
      });
    }
    return {
      files: files.length,
      rows: files.length * ROWS_PER_FILE,
      distinctEventIds: n,
      amountSum: amountQuarters / 4,
      seconds: (Date.now() - started) / 1000,
      inlinePlanBytes: Buffer.byteLength(
        JSON.stringify(
          files.map((f) => ({ path: relPath(metadata.location, f.filePath), size: f.fileSizeInBytes, records: f.recordCount })),
        ),
      ),
    };
  } finally {
    await tables.close();
  }
}

/** The largest payload of a history (where it sits and its size) and the bytes of all of them. */
function payloads(events: temporal.api.history.v1.IHistoryEvent[]): { largest: { where: string; bytes: number }; total: number } {
  let largest = { where: '', bytes: 0 };
  let total = 0;
  const walk = (o: unknown, path: string): void => {
    if (!o || typeof o !== 'object' || o instanceof Uint8Array) return;
    const p = o as { data?: unknown; metadata?: unknown };
    if (p.data instanceof Uint8Array && p.metadata && typeof p.metadata === 'object') {
      total += p.data.length;
      if (p.data.length > largest.bytes) largest = { where: path, bytes: p.data.length };
      return;
    }
    for (const [k, v] of Object.entries(o)) walk(v, `${path}.${k}`);
  };
  for (const e of events) walk(e, String(e.eventType));
  return { largest, total };
}

describe('compaction of thousands of small files (real stack)', { timeout: 5 * 60_000 }, () => {
  before(async () => {
    await ensureStack(['temporal', 's3']);
  });

  it(`compacts ${FILES} small files in ${PARTITIONS} partitions; PyIceberg and DuckDB read the same rows; history stays small`, async (t) => {
    const { table, cfg } = maintenanceTestConfig(`it_compact_large_${Date.now().toString(36)}`);
    const seeded = await seedCopies(cfg, table);
    assert.equal(seeded.files, PARTITIONS * TEMPLATES * COPIES);
    assert.ok(seeded.files >= FILES);

    const fc = await connectClient(cfg);
    const workflowId = `it-compact-large-${table}`;
    let compactSeconds = 0;
    try {
      const r = await withWorker(cfg, async () => {
        const started = Date.now();
        const handle = await fc.client.workflow.start(compactWorkflow, {
          taskQueue: cfg.temporal.taskQueue,
          workflowId,
          args: [{ table, options: { maxConcurrentFileGroupRewrites: 2 } }],
        });
        const res = await handle.result();
        compactSeconds = (Date.now() - started) / 1000;
        return res;
      });
      assert.deepEqual(r.failed_data_file_groups, []);
      assert.equal(r.rewritten_data_files_count, seeded.files);
      assert.equal(r.added_data_files_count, PARTITIONS, 'one output per partition');
      assert.equal(r.commits, 1);
      assert.equal(r.before.files, seeded.files);
      assert.equal(r.after.files, PARTITIONS);

      const history = await fc.client.workflow.getHandle(workflowId).fetchHistory();
      const { largest, total } = payloads(history.events ?? []);
      t.diagnostic(
        `${seeded.files} files (${seeded.rows} rows) seeded in ${seeded.seconds.toFixed(1)} s; compaction workflow ${compactSeconds.toFixed(1)} s; ` +
          `${history.events?.length} history events, payloads ${total} bytes in all (${(total / seeded.files).toFixed(2)} per input file), largest ${largest.bytes} bytes (${largest.where}); ` +
          `inline the plan's file lists alone would be ${seeded.inlinePlanBytes} bytes (${(seeded.inlinePlanBytes / seeded.files).toFixed(0)} per file), in the plan result and again in rewrite and commit inputs`,
      );
      assert.ok(largest.bytes < 1 * MiB, `largest payload ${largest.bytes} bytes at ${largest.where}`);
      assert.ok(
        largest.bytes < 64 * 1024,
        `the plan travels as group summaries: largest payload ${largest.bytes} bytes at ${largest.where}`,
      );
      assert.ok(
        seeded.inlinePlanBytes > INLINE_FILE_LIST_BUDGET_BYTES,
        'inline, this plan would be over the inline budget: the stage is used',
      );
      if (FILES >= 30_000) assert.ok(seeded.inlinePlanBytes > 2 * MiB, 'inline, this plan would have exceeded the 2 MB payload limit');
    } finally {
      await fc.close();
    }

    const tables = await openTables(cfg);
    try {
      const loaded = await tables.load(table);
      const reads = await engineReads(loaded.metadataLocation);
      const expected = { rows: seeded.rows, distinctEventIds: seeded.distinctEventIds, amountSum: seeded.amountSum, files: PARTITIONS };
      assert.deepEqual(reads.pyiceberg, expected);
      assert.deepEqual(reads.duckdb, expected);
      // The committed groups' staged lists are gone; the run's marker too.
      const left: string[] = [];
      for await (const f of tables.io.list(`${loaded.metadata.location}/${STAGED_DIR}/`)) left.push(f.location);
      assert.deepEqual(left, []);
    } finally {
      await tables.close();
    }
  });
});
