/**
 * Snapshot expiry against the real stack: after a real ingest and a compaction, expiry deletes
 * exactly the files that only expired snapshots reached (checked by listing S3 before and after),
 * keeps the ingest's cursor snapshot, and the ingest resumes from the right offsets afterwards.
 */
import { produceOrderEvents } from '../support/produce';
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ensureStack } from '../../stack/stack';
import { connectClient, signalIngest, startIngest, waitForIngest, type FloeClient } from '../../client';
import { compactTable, expireTable } from '../../client/maintenance';
import { openTables } from '../../table/tables';
import { readCursor } from '../../table/cursor';
import { liveDataFiles, reachableFiles } from '../../maintenance/index';
import type { FloeConfig } from '../../config';
import { engineReads, maintenanceTestConfig, withWorker } from './maintenance-oracles';
import { setTimeout as sleep } from 'node:timers/promises';

const uniq = (p: string) => `${p}_${Date.now().toString(36)}`;

const produce = produceOrderEvents;

/** Ingests in `bursts` (several commits), then drains and stops. */
async function ingest(
  fc: FloeClient,
  cfg: FloeConfig,
  table: string,
  topic: string,
  from: number,
  bursts: number,
  perBurst: number,
): Promise<void> {
  await startIngest(fc, table);
  for (let b = 0; b < bursts; b++) {
    await produce(cfg, topic, from + b * perBurst, perBurst);
    // One commit per burst, whatever the machine's speed: wait until this burst is in the table.
    const want = from + (b + 1) * perBurst;
    for (let waited = 0; ; waited += 250) {
      const loaded = await loadTableOf(cfg, table).catch(() => undefined); // not created yet
      const cursor = loaded ? readCursor(loaded.metadata, 'main') : { offsets: {} as Record<string, string> };
      if (BigInt(cursor.offsets['0'] ?? '0') >= BigInt(want)) break;
      if (waited > 120_000) throw new Error(`burst ${b + 1} (up to offset ${want}) not committed within 120 s`);
      await sleep(250);
    }
  }
  await signalIngest(fc, table, 'stop');
  await waitForIngest(fc, table);
}

async function loadTableOf(cfg: FloeConfig, table: string) {
  const tables = await openTables(cfg);
  try {
    return await tables.load(table);
  } finally {
    await tables.close();
  }
}

async function listing(cfg: FloeConfig, table: string): Promise<Set<string>> {
  const tables = await openTables(cfg);
  try {
    const { metadata } = await tables.load(table);
    const out = new Set<string>();
    for await (const f of tables.io.list(`${metadata.location}/`)) out.add(f.location);
    return out;
  } finally {
    await tables.close();
  }
}

describe('snapshot expiry (real stack)', { timeout: 20 * 60_000 }, () => {
  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3']);
  });

  it('deletes exactly the unreachable files; the cursor survives expiry of every snapshot that carried it and ingest resumes at it', async () => {
    const name = uniq('it_expire');
    const { table, cfg } = maintenanceTestConfig(name);
    const topic = name;
    const fc = await connectClient(cfg);
    const tables = await openTables(cfg);
    try {
      await withWorker(cfg, async () => {
        await ingest(fc, cfg, table, topic, 0, 3, 60);
        const c = await compactTable(fc, table, { minInputFiles: 2 });
        assert.ok(c.commits === 1, `compaction committed once, found ${c.commits}`);

        const before = await tables.load(table);
        const cursorBefore = readCursor(before.metadata, 'main');
        assert.equal(cursorBefore.offsets['0'], '180');
        const reachBefore = await reachableFiles(tables.io, before.metadata, before.metadataLocation);
        const listBefore = await listing(cfg, table);
        assert.ok(before.metadata.snapshots.length >= 4, `several snapshots to expire, found ${before.metadata.snapshots.length}`);

        // olderThan 0: everything but the newest snapshot is old enough; retain-last 1.
        const r = await expireTable(fc, table, { olderThanMs: 0, retainLast: 1 });
        const after = await tables.load(table);
        const listAfter = await listing(cfg, table);
        const reachAfter = await reachableFiles(tables.io, after.metadata, after.metadataLocation);

        // Only the head (compaction's replace) remains; the cursor lives in a table property.
        assert.equal(after.metadata.snapshots.length, 1, 'only the head remains');
        assert.equal(r.expiredSnapshots, before.metadata.snapshots.length - 1);
        assert.deepEqual(r.carriedCursors, [], 'cursors written by this version are already properties');
        assert.deepEqual(readCursor(after.metadata, 'main').offsets, cursorBefore.offsets);
        assert.equal(readCursor(after.metadata, 'main').snapshotId, cursorBefore.snapshotId);

        // Exactly the files only expired snapshots reached are gone; every reachable file is still there.
        const isReach = (x: Awaited<ReturnType<typeof reachableFiles>>, l: string) =>
          x.dataFiles.has(l) || x.manifests.has(l) || x.manifestLists.has(l) || x.metadataFiles.has(l) || x.other.has(l);
        // A data file the retained snapshots list only as DELETED (the inputs compaction replaced)
        // is gone too, as in Java's ReachableFileCleanup: only live entries keep a data file.
        const liveAfter = new Set((await liveDataFiles(tables.io, after.metadata)).map((f) => f.dataFile.filePath));
        const keptAfter = (l: string) => isReach(reachAfter, l) && (!reachAfter.dataFiles.has(l) || liveAfter.has(l));
        const deleted = [...listBefore].filter((l) => !listAfter.has(l)).sort();
        const expected = [...listBefore].filter((l) => isReach(reachBefore, l) && !keptAfter(l)).sort();
        assert.deepEqual(deleted, expected);
        assert.ok(deleted.length > 0);
        assert.equal(r.deleted.manifestLists + r.deleted.manifests + r.deleted.dataFiles + r.deleted.metadataFiles, deleted.length);
        assert.equal(r.deleted.manifestLists, r.expiredSnapshots);
        for (const l of [...liveAfter, ...reachAfter.manifests, ...reachAfter.manifestLists])
          assert.ok(listAfter.has(l), `reachable ${l} still exists`);

        const reads = await engineReads(after.metadataLocation);
        assert.equal(reads.pyiceberg.rows, 180);
        assert.equal(reads.duckdb.distinctEventIds, 180);

        // Ingest resumes from the kept cursor: the next 120 messages land once.
        await ingest(fc, cfg, table, topic, 180, 2, 60);
        const resumed = await tables.load(table);
        assert.equal(readCursor(resumed.metadata, 'main').offsets['0'], '300');
        const reads2 = await engineReads(resumed.metadataLocation);
        assert.equal(reads2.pyiceberg.rows, 300);
        assert.equal(reads2.pyiceberg.distinctEventIds, 300);
        assert.equal(reads2.duckdb.rows, 300);
        assert.equal(reads2.duckdb.distinctEventIds, 300);

        // Re-running expiry right away with the configured (5 d) cutoff expires nothing.
        const again = await expireTable(fc, table, {}, { window: new Date(Date.now() + 1000).toISOString().replace(/\.\d+Z$/, 'Z') });
        assert.equal(again.expiredSnapshots, 0);
      });
    } finally {
      await tables.close();
      await fc.close();
    }
  });
});
