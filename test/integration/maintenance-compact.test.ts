/**
 * Compaction against the real stack (Temporal dev server, SeaweedFS S3, SQLite catalog):
 * many small files become about one per partition, the rows stay exactly the same through
 * floe, PyIceberg and DuckDB, and compaction runs beside a live ingest without losing or
 * duplicating anything.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ensureStack } from '../../stack/stack';
import { loadConfig } from '../../config';
import { openTables } from '../../table/tables';
import { connectClient } from '../../client';
import { compactTable, tableFiles } from '../../client/maintenance';
import { currentMetadataLocation, engineReads, maintenanceTestConfig, seedSmallFiles, withWorker } from './maintenance-oracles';
import type { CompactResult } from '../../maintenance/types';

/** Data files in the table's current snapshot (0 before the first commit, or before the table exists). */
async function dataFilesOf(cfg: ReturnType<typeof loadConfig>, table: string): Promise<number> {
  const tables = await openTables(cfg);
  try {
    const { metadata } = await tables.load(table);
    const head = metadata.snapshots.find((s) => s['snapshot-id'] === metadata['current-snapshot-id']);
    return Number(head?.summary['total-data-files'] ?? 0);
  } catch {
    return 0;
  } finally {
    await tables.close();
  }
}

const quiet = (m: string) => {
  if (process.env.FLOE_TEST_VERBOSE) console.log(m);
};
const uniq = (p: string) => `${p}_${Date.now().toString(36)}`;

describe('compaction (real stack)', { timeout: 20 * 60_000 }, () => {
  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3']);
  });

  it('turns many small files into one per partition; floe, PyIceberg and DuckDB read the same rows', async () => {
    const name = uniq('it_compact');
    const { table, cfg } = maintenanceTestConfig(name);
    const seeded = await seedSmallFiles(cfg, table, 12, 50);
    const beforeLoc = await currentMetadataLocation(cfg, table);
    const before = await engineReads(beforeLoc);
    const filesBefore = await tableFiles(cfg, table);
    assert.equal(filesBefore.overall.files, seeded);
    assert.ok(filesBefore.partitions.length >= 2, `expected several partitions, found ${filesBefore.partitions.length}`);

    const fc = await connectClient(cfg);
    let r: CompactResult;
    const phases = new Set<string>();
    try {
      r = await withWorker(cfg, () => compactTable(fc, table, { minInputFiles: 2 }, { onProgress: (p) => phases.add(p.phase) }));
    } finally {
      await fc.close();
    }
    const filesAfter = await tableFiles(cfg, table);
    assert.equal(r.rewritten_data_files_count, seeded);
    assert.equal(r.added_data_files_count, filesAfter.partitions.length, 'one output file per partition');
    assert.equal(filesAfter.overall.files, filesBefore.partitions.length);
    assert.deepEqual(r.failed_data_file_groups, []);
    assert.equal(r.before.files, seeded);
    assert.equal(r.after.files, filesAfter.overall.files);
    assert.ok(r.after.avgFileSizeBytes > r.before.avgFileSizeBytes);
    assert.equal(r.commits, 1);
    assert.ok(phases.size >= 1, 'the progress query answered');

    const after = await engineReads(await currentMetadataLocation(cfg, table));
    assert.deepEqual(after.pyiceberg, { ...before.pyiceberg, files: filesAfter.overall.files });
    assert.deepEqual(after.duckdb, { ...before.duckdb, files: filesAfter.overall.files });
    assert.equal(before.pyiceberg.rows, 12 * 50);
    assert.equal(before.duckdb.distinctEventIds, 12 * 50);
    const tables = await openTables(cfg);
    try {
      const { metadata } = await tables.load(table);
      const head = metadata.snapshots.find((s) => s['snapshot-id'] === metadata['current-snapshot-id'])!;
      assert.equal(head.summary.operation, 'replace');
      assert.equal(head.summary['floe.ingest-id'], undefined, 'a compaction commit carries no ingest cursor');
    } finally {
      await tables.close();
    }

    // A second run finds nothing to do (idempotent) and changes nothing.
    const fc2 = await connectClient(cfg);
    try {
      const again = await withWorker(cfg, () => compactTable(fc2, table, { minInputFiles: 2 }));
      assert.equal(again.commits, 0);
      assert.equal(again.rewritten_data_files_count, 0);
    } finally {
      await fc2.close();
    }
  });

  it('compacts beside a live ingest at 20 events/s: rows == messages, no duplicates, ~one file per partition', async () => {
    const { runScenario, scenarioConfig } = await import('../../demo/scenario');
    const { verifyTable } = await import('../../demo/verify');
    const name = uniq('it_compact_live');
    const bg: { midStream?: Promise<CompactResult>; close?: () => Promise<void> } = {};
    const r = await runScenario({
      name,
      ratePerS: 20,
      durationS: 50,
      partitions: 2,
      commitInterval: '2s',
      kills: [],
      log: quiet,
      onTick: async (elapsed) => {
        if (elapsed < 10 || bg.midStream) return;
        // Mid-stream means small files to rewrite: wait (on a slow machine) until there are some.
        if ((await dataFilesOf(loadConfig(scenarioConfig(name, 2, '2s').path), `demo.${name}`)) < 4) return;
        // Mid-stream: the scenario's worker process runs it, while it keeps committing ingest cycles.
        const fc = await connectClient(loadConfig(scenarioConfig(name, 2, '2s').path));
        bg.close = () => fc.close();
        bg.midStream = compactTable(fc, `demo.${name}`, { minInputFiles: 2 });
      },
    });
    assert.ok(bg.midStream, 'compaction started mid-stream');
    const mid = await bg.midStream;
    await bg.close!();
    assert.deepEqual(r.problems, [], r.problems.join('; '));
    assert.equal(r.rows + r.deadLetters, r.messagesInTopic);
    assert.equal(r.distinctEventIds, r.rows);
    assert.ok(mid.rewritten_data_files_count >= 2, `mid-stream compaction rewrote ${mid.rewritten_data_files_count} files`);
    assert.deepEqual(mid.failed_data_file_groups, [], 'concurrent ingest appends never fail a rewrite');

    const cfg = loadConfig(r.configPath);
    const beforeReads = await engineReads(r.metadataLocation);
    const fc = await connectClient(cfg);
    try {
      const post = await withWorker(cfg, () => compactTable(fc, r.table, { minInputFiles: 2 }));
      assert.deepEqual(post.failed_data_file_groups, []);
    } finally {
      await fc.close();
    }
    const files = await tableFiles(cfg, r.table);
    assert.ok(
      files.overall.files <= files.partitions.length + 1,
      `about one file per partition: ${files.overall.files} files in ${files.partitions.length} partitions`,
    );
    const v = await verifyTable(cfg, r.table, r.topic);
    assert.deepEqual(v.problems, []);
    assert.equal(v.rows, r.rows);
    assert.equal(v.distinctEventIds, r.rows);
    const afterReads = await engineReads(v.metadataLocation);
    assert.equal(afterReads.pyiceberg.rows, beforeReads.pyiceberg.rows);
    assert.equal(afterReads.pyiceberg.amountSum, beforeReads.pyiceberg.amountSum);
    assert.equal(afterReads.duckdb.rows, r.rows);
    assert.equal(afterReads.duckdb.distinctEventIds, r.rows);
    assert.equal(afterReads.pyiceberg.distinctEventIds, r.rows);
  });
});
