/**
 * A compaction worker SIGKILLed mid-rewrite (crash point 'compact-rewrite': outputs written, not
 * reported): the table stays consistent, the retried attempt completes, and the dead attempt's
 * outputs are orphans. Orphan removal then finds exactly those, a dry run deletes nothing, a file
 * younger than the grace period is kept, and a grace period below the safety floor is refused.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureStack } from '../../stack/stack';
import { connectClient } from '../../client';
import { compactTable, removeOrphans } from '../../client/maintenance';
import { openTables } from '../../table/tables';
import { reachableFiles } from '../../maintenance/index';
import { superviseWorker } from '../support/supervised-worker';
import type { FloeConfig } from '../../config';
import { engineReads, maintenanceTestConfig, seedSmallFiles } from './maintenance-oracles';
import { setTimeout as sleep } from 'node:timers/promises';

const uniq = (p: string) => `${p}_${Date.now().toString(36)}`;

async function unreachable(
  cfg: FloeConfig,
  table: string,
): Promise<{ location: string; files: string[]; all: Set<string>; metadataLocation: string }> {
  const tables = await openTables(cfg);
  try {
    const t = await tables.load(table);
    const r = await reachableFiles(tables.io, t.metadata, t.metadataLocation);
    const all = new Set<string>();
    const files: string[] = [];
    for await (const f of tables.io.list(`${t.metadata.location}/`)) {
      all.add(f.location);
      if (![r.dataFiles, r.manifests, r.manifestLists, r.metadataFiles, r.other].some((s) => s.has(f.location))) files.push(f.location);
    }
    return { location: t.metadata.location, files: files.sort(), all, metadataLocation: t.metadataLocation };
  } finally {
    await tables.close();
  }
}

describe('killed compaction and orphan removal (real stack)', { timeout: 20 * 60_000 }, () => {
  before(async () => {
    await ensureStack(['temporal', 's3']);
  });

  it('a worker killed mid-rewrite leaves orphans; the retry completes; orphans removes them and nothing else', async () => {
    const name = uniq('it_orphans');
    const { table, cfg, path } = maintenanceTestConfig(name);
    const seeded = await seedSmallFiles(cfg, table, 8, 40);
    const start = await unreachable(cfg, table);
    assert.deepEqual(start.files, [], 'a freshly seeded table has no orphans');
    const readsBefore = await engineReads(start.metadataLocation);

    const marker = join(mkdtempSync(join(tmpdir(), 'floe-kill-')), 'killed');
    const env = { FLOE_TEST_KILL_AT: 'compact-rewrite', FLOE_TEST_KILL_MARKER: marker };
    const worker = superviseWorker(path, name, env);
    const fc = await connectClient(cfg);
    try {
      const r = await compactTable(fc, table, { minInputFiles: 2, maxConcurrentFileGroupRewrites: 1 });
      assert.ok(existsSync(marker), 'the worker reached crash point compact-rewrite');
      assert.match(readFileSync(marker, 'utf8'), /^compact-rewrite /);
      assert.ok(worker.exits >= 1, 'the killed worker exited and was restarted');
      assert.deepEqual(r.failed_data_file_groups, [], 'the retried attempt completed the group');
      assert.equal(r.rewritten_data_files_count, seeded);

      // The dead attempt's outputs: unreferenced data files named "-a1-" (attempt 1 of its group).
      const left = await unreachable(cfg, table);
      assert.ok(left.files.length >= 1, 'the killed attempt left files behind');
      for (const f of left.files) assert.match(f, /\/data\/.*compact-.*-g\d+-a1-\d+\.parquet$/, `orphan ${f} is a killed attempt's output`);
      const readsAfter = await engineReads(left.metadataLocation);
      assert.equal(readsAfter.pyiceberg.rows, readsBefore.pyiceberg.rows);
      assert.equal(readsAfter.duckdb.distinctEventIds, readsBefore.duckdb.distinctEventIds);
      assert.equal(readsAfter.duckdb.amountSum, readsBefore.duckdb.amountSum);

      // A file an in-flight commit just wrote: unreachable, but younger than the grace period. The
      // grace period of each run is measured from that write (plus a margin), so however slow the
      // machine, the in-flight file stays inside it and the killed attempt's outputs (written at
      // least 30 s earlier) stay outside it.
      await sleep(30_000);
      const tables = await openTables(cfg);
      const inflight = `${left.location}/data/inflight-${Date.now()}.parquet`;
      let writtenAt: number;
      try {
        await tables.io.write(inflight, new TextEncoder().encode('not yet committed'));
        writtenAt = Date.now();
      } finally {
        await tables.close();
      }
      const grace = () => Date.now() - writtenAt + 10_000;

      await assert.rejects(removeOrphans(fc, table, { olderThanMs: 10 * 60_000 }), (e: Error) => {
        const cause = (e as Error & { cause?: Error & { type?: string } }).cause;
        assert.equal(cause?.type, 'UnsafeGracePeriod');
        assert.match(
          cause.message,
          /grace period: expected at least 60 minutes \(files of in-flight commits look like orphans\), found 600 s/,
        );
        return true;
      });

      const dry = await removeOrphans(fc, table, { olderThanMs: grace(), force: true, dryRun: true });
      assert.deepEqual([...dry.sample].sort(), left.files);
      assert.equal(dry.deleted, 0);
      assert.ok(dry.keptByGracePeriod >= 1, 'the in-flight file is inside the grace period');
      const afterDry = await unreachable(cfg, table);
      assert.deepEqual(afterDry.files, [...left.files, inflight].sort(), 'a dry run deletes nothing');

      const real = await removeOrphans(fc, table, { olderThanMs: grace(), force: true });
      assert.equal(real.deleted, left.files.length);
      const end = await unreachable(cfg, table);
      assert.deepEqual(end.files, [inflight], 'only the young in-flight file is left');
      for (const f of left.files) assert.ok(!end.all.has(f), `${f} deleted`);
      const readsEnd = await engineReads(end.metadataLocation);
      assert.deepEqual(readsEnd, readsAfter);
    } finally {
      await worker.stop();
      await fc.close();
    }
  });
});
