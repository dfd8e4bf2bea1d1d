/**
 * Issue 29 item 7, against the real stack (SeaweedFS S3, SQLite catalog): a compaction commit
 * lands but its response is lost; before the retry, expiry removes that snapshot (and with it the
 * commit id findCommit looks for). The retried commitRewrite must see its outputs live and report
 * the commit as landed. Before, it found no commit, saw its inputs replaced, skipped the group and
 * deleted its outputs: live files, so the table could no longer be read.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ensureStack } from '../../stack/stack';
import { openTables } from '../../table/tables';
import { findTable } from '../../config';
import { commitRewrite, planCompaction, rewriteFileGroup } from '../../maintenance';
import { expireSnapshotsCommit } from '../../maintenance/expire';
import { liveDataFiles } from '../../maintenance/reachable';
import { currentMetadataLocation, engineReads, maintenanceTestConfig, orderRows, seedSmallFiles } from './maintenance-oracles';

describe('a compaction commit whose response was lost, then expired, is found on retry (real stack)', { timeout: 10 * 60_000 }, () => {
  before(async () => {
    await ensureStack(['s3']);
  });

  it('the retried commit reports it landed and deletes none of its live outputs; PyIceberg reads every row', async () => {
    const { table, cfg } = maintenanceTestConfig(`it_lost_resp_${Date.now().toString(36)}`);
    await seedSmallFiles(cfg, table, 6, 20);
    const tables = await openTables(cfg);
    try {
      const plan = await planCompaction(tables, findTable(cfg, table), { table, options: { minInputFiles: 2 } });
      assert.ok(plan.groups.length > 0, 'small files to compact');
      const runId = randomUUID();
      const groups = [];
      for (const group of plan.groups) {
        const result = await rewriteFileGroup(tables, {
          table,
          location: plan.location,
          runId,
          group,
          targetFileSizeBytes: plan.options.targetFileSizeBytes,
        });
        groups.push({ group, result });
      }
      const input = { table, location: plan.location, commitId: randomUUID(), groups };
      // The first attempt lands; the worker dies before reporting it.
      const first = await commitRewrite(tables, input);
      assert.equal(first.alreadyCommitted, false);
      assert.equal(first.committedGroups.length, plan.groups.length);
      // Expiry runs before the retry and removes every snapshot but the newest... after one more
      // commit, so the compaction's own snapshot (with its commit id) is gone too.
      const later = await tables.writeDataFiles(table, orderRows(1000, 5), 'later', 1 << 30);
      await tables.appendOnce(table, { files: later, summary: { 'floe.commit-id': `later-${table}` }, validate: () => undefined });
      const expired = await expireSnapshotsCommit(tables, {
        table,
        expireId: randomUUID(),
        asOfMs: Date.now() + 1000,
        olderThanMs: 0,
        retainLast: 1,
      });
      assert.ok(expired.expiredSnapshotIds.includes(first.snapshotId!), 'the compaction snapshot was expired');

      const retry = await commitRewrite(tables, input);
      assert.equal(retry.alreadyCommitted, true, 'the retry finds its commit through its live outputs');
      assert.deepEqual([...retry.committedGroups].sort(), [...first.committedGroups].sort());
      const outputs = groups.flatMap((g) => g.result.outputs.map((o) => String(o.filePath)));
      for (const o of outputs) assert.ok(await tables.io.exists(o), `output ${o} still exists`);
      const { metadata } = await tables.load(table);
      const live = new Set((await liveDataFiles(tables.io, metadata, { metrics: false })).map((f) => f.dataFile.filePath));
      for (const o of outputs) assert.ok(live.has(o), `output ${o} is live`);
    } finally {
      await tables.close();
    }
    // Another engine reads every row: 6 x 20 seeded + 5.
    const read = await engineReads(await currentMetadataLocation(cfg, table));
    assert.equal(read.pyiceberg.rows, 125);
    assert.equal(read.duckdb.distinctEventIds, 125);
  });
});
