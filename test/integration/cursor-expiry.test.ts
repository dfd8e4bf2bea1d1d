/**
 * The cursor outlives snapshot history (real stack): expiry may remove every snapshot that carried
 * an ingest id's cursor, and the cursor is still read, exactly as before, from the table property
 * written in the same commit. Before cursors were properties, both sequences below lost the cursor
 * (the ancestry walk stops at the first expired parent) and duplicated rows.
 */
import { produceOrderEvents } from '../support/produce';
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { ensureStack } from '../../stack/stack';
import {
  connectClient,
  ingestStatus,
  parseBackfillBound,
  runBackfill,
  signalIngest,
  startIngest,
  waitForIngest,
  type FloeClient,
} from '../../client';
import { expireTable } from '../../client/maintenance';
import { openTables, type Tables } from '../../table/tables';
import { readCursor } from '../../table/cursor';
import { loadConfig, type FloeConfig } from '../../config';
import { engineReads, maintenanceTestConfig, orderRows, withWorker } from './maintenance-oracles';
import { setTimeout as sleep } from 'node:timers/promises';

const uniq = (p: string) => `${p}_${Date.now().toString(36)}`;

function configWith(name: string, overrides: Record<string, unknown>): { table: string; cfg: FloeConfig } {
  const { path, table } = maintenanceTestConfig(name);
  const doc = parseYaml(readFileSync(path, 'utf8')) as any;
  Object.assign(doc.tables[0], overrides);
  writeFileSync(path, stringifyYaml(doc));
  return { table, cfg: loadConfig(path) };
}

const produce = produceOrderEvents;

async function waitForCursor(tables: Tables, table: string, ingestId: string, offset: bigint): Promise<void> {
  for (let waited = 0; ; waited += 250) {
    const loaded = await tables.load(table).catch(() => undefined);
    const c = loaded ? readCursor(loaded.metadata, ingestId) : undefined;
    if (c && BigInt(c.offsets['0'] ?? '0') >= offset) return;
    if (waited > 120_000) throw new Error(`${table}/${ingestId}: cursor did not reach ${offset} within 120 s`);
    await sleep(250);
  }
}

describe('the cursor survives any expiry (real stack)', { timeout: 20 * 60_000 }, () => {
  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3']);
  });

  it('a finished backfill stays finished after a later backfill and expiry --retain-last 1 cut its history', async () => {
    const name = uniq('it_cur_bf');
    // 20 records per cycle: backfill B2 makes 4 commits, more than expiry retains.
    const { table, cfg } = configWith(name, { maxRecordsPerCycle: 20 });
    await produce(cfg, name, 0, 100);
    const fc = await connectClient(cfg);
    const tables = await openTables(cfg);
    try {
      await withWorker(cfg, async () => {
        const b1 = await runBackfill(fc, table, parseBackfillBound('0', '--from'), parseBackfillBound('20', '--to'));
        const b2 = await runBackfill(fc, table, parseBackfillBound('20', '--from'), parseBackfillBound('100', '--to'));
        assert.ok(b2.status.commits >= 4, `B2 made several commits, found ${b2.status.commits}`);
        const r = await expireTable(fc, table, { olderThanMs: 0, retainLast: 1 });
        assert.ok(r.expiredSnapshots >= 4);
        const after = await tables.load(table);
        assert.equal(after.metadata.snapshots.length, 1, 'only the head remains');
        const c1 = readCursor(after.metadata, b1.prepared.ingestId);
        assert.deepEqual(c1.offsets, { 0: '20' }, 'B1 cursor readable although every snapshot it wrote is expired');
        assert.deepEqual(c1.range?.to, { 0: '20' });

        // Re-running B1 adds nothing; an overlapping backfill is still refused.
        const again = await runBackfill(fc, table, parseBackfillBound('0', '--from'), parseBackfillBound('20', '--to'));
        assert.equal(again.status.commits, 0);
        await assert.rejects(
          runBackfill(fc, table, parseBackfillBound('10', '--from'), parseBackfillBound('30', '--to')),
          (e: Error) => e.name === 'BackfillOverlap' && /overlaps backfill "backfill-/.test(e.message),
        );
        // A second expiry changes nothing about it either.
        await expireTable(fc, table, { olderThanMs: 0, retainLast: 1 });
        const reads = await engineReads((await tables.load(table)).metadataLocation);
        assert.equal(reads.pyiceberg.rows, 100);
        assert.equal(reads.pyiceberg.distinctEventIds, 100);
        assert.equal(reads.duckdb.rows, 100);
      });
    } finally {
      await tables.close();
      await fc.close();
    }
  });

  it('a live ingest paused across an expiry of its cursor snapshot resumes at its cursor with 0 duplicates', async () => {
    const name = uniq('it_cur_pause');
    const { table, cfg } = configWith(name, {});
    const fc: FloeClient = await connectClient(cfg);
    const tables = await openTables(cfg);
    try {
      await withWorker(cfg, async () => {
        await produce(cfg, name, 0, 50);
        await startIngest(fc, table);
        await waitForCursor(tables, table, 'main', 50n);
        await signalIngest(fc, table, 'pause');
        for (let i = 0; i < 50 && (await ingestStatus(fc, table))?.state !== 'paused'; i++) await sleep(200);
        const cursorBefore = readCursor((await tables.load(table)).metadata, 'main');

        // Other writers commit while the ingest is paused (3 appends of rows with other event ids).
        for (let c = 0; c < 3; c++) {
          const files = await tables.writeDataFiles(table, orderRows(10_000 + c * 10, 10), `other-${c}`, 1 << 27);
          await tables.appendOnce(table, { files, summary: { 'floe.commit-id': `other-${name}-${c}` }, validate: () => undefined });
        }
        const r = await expireTable(fc, table, { olderThanMs: 0, retainLast: 1 });
        const after = await tables.load(table);
        assert.ok(
          !after.metadata.snapshots.some((s) => s['snapshot-id'].toString() === cursorBefore.snapshotId),
          'the cursor snapshot itself was expired',
        );
        assert.ok(r.expiredSnapshots >= 3);
        assert.deepEqual(readCursor(after.metadata, 'main'), cursorBefore);

        await produce(cfg, name, 50, 50);
        await signalIngest(fc, table, 'resume');
        await waitForCursor(tables, table, 'main', 100n);
        await signalIngest(fc, table, 'stop');
        await waitForIngest(fc, table);
      });
      const reads = await engineReads((await tables.load(table)).metadataLocation);
      assert.equal(reads.pyiceberg.rows, 130, '100 messages + 30 rows of the other writer');
      assert.equal(reads.pyiceberg.distinctEventIds, 130, '0 duplicates');
      assert.equal(reads.duckdb.distinctEventIds, 130);
    } finally {
      await tables.close();
      await fc.close();
    }
  });
});
