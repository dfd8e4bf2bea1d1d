/**
 * Issue 29 item 13: another engine's row-level deletes (Iceberg Java's RowDelta with a position
 * delete file, as Spark's merge-on-read DELETE writes them) on a floe table, against the real
 * stack. Compaction applies position deletes (issue 31): the outputs hold no deleted row and a
 * delete file that names only replaced files is removed with them. Deletes that land while the
 * groups are being rewritten would be lost on the rewritten rows: that group is not committed (its
 * outputs are deleted) and the next run applies them. Rows are read through PyIceberg and DuckDB,
 * which apply the deletes.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { ensureStack } from '../../stack/stack';
import { stackEnv } from '../../stack/env';
import { stackPaths } from '../../stack/paths';
import { findTable, loadConfig, type FloeConfig } from '../../config';
import { openTables } from '../../table/tables';
import { commitRewrite, planCompaction, rewriteFileGroup } from '../../maintenance';
import { absPath, liveDataFiles } from '../../maintenance/reachable';
import { currentMetadataLocation, engineReads, maintenanceTestConfig, seedSmallFiles } from './maintenance-oracles';

const libs = join(stackPaths().home, 'iceberg-rest', 'libs');
const classes = mkdtempSync(join(tmpdir(), 'floe-java-deletes-'));

/** A fresh table `demo.<name>` in a SQLite catalog of its own (Java's JdbcCatalog opens it too). */
async function seededTable(prefix: string): Promise<{ cfg: FloeConfig; table: string; db: string; warehouse: string }> {
  const name = `${prefix}_${Date.now().toString(36)}`;
  const { path, table } = maintenanceTestConfig(name);
  const db = join(mkdtempSync(join(tmpdir(), 'floe-deletes-')), 'catalog.db');
  const warehouse = `s3://floe/${name}`;
  const raw = parseYaml(readFileSync(path, 'utf8')) as any;
  raw.catalog = { ...raw.catalog, type: 'sql', uri: `sqlite:///${db}`, warehouse };
  writeFileSync(path, stringifyYaml(raw));
  const cfg = loadConfig(path);
  await seedSmallFiles(cfg, table, 4, 30);
  return { cfg, table, db, warehouse };
}

/** Iceberg Java deletes rows at `positions` of `dataFile` (position delete file + RowDelta commit). */
function javaDelete(t: { db: string; warehouse: string; table: string }, dataFile: string, positions: number[]): string {
  const s3 = stackEnv().s3;
  const out = execFileSync(
    'java',
    ['-cp', `${libs}/*:${classes}`, 'WriteDeletes', t.db, t.warehouse, t.table, dataFile, positions.join(',')],
    {
      env: { ...process.env, FLOE_S3_ENDPOINT: s3.endpoint, FLOE_S3_ACCESS_KEY: s3.accessKeyId, FLOE_S3_SECRET_KEY: s3.secretAccessKey },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 180_000,
    },
  ).toString();
  return (JSON.parse(out.trim().split('\n').pop()!) as { deleteFile: string }).deleteFile;
}

const reads = async (cfg: FloeConfig, table: string) => {
  const r = await engineReads(await currentMetadataLocation(cfg, table));
  return { pyiceberg: r.pyiceberg.rows, duckdb: r.duckdb.rows, duckdbDistinct: r.duckdb.distinctEventIds };
};

/** Plans, rewrites every group and commits one compaction run; returns the commit's result and the outputs. */
async function compactOnce(
  tables: Awaited<ReturnType<typeof openTables>>,
  t: { cfg: FloeConfig; table: string },
  between?: (plan: { location: string; groups: Array<{ files: Array<{ path: string }> }> }) => void,
) {
  const plan = await planCompaction(tables, findTable(t.cfg, t.table), { table: t.table, options: { minInputFiles: 2 } });
  assert.ok(plan.groups.length > 0);
  const runId = randomUUID();
  const groups: Parameters<typeof commitRewrite>[1]['groups'] = [];
  for (const group of plan.groups) {
    const result = await rewriteFileGroup(tables, {
      table: t.table,
      location: plan.location,
      runId,
      group,
      targetFileSizeBytes: plan.options.targetFileSizeBytes,
    });
    groups.push({ group, result });
  }
  between?.(plan);
  const res = await commitRewrite(tables, { table: t.table, location: plan.location, commitId: randomUUID(), groups });
  const outputsOf = (index: number) =>
    groups.filter((g) => g.group.index === index).flatMap((g) => g.result.outputs.map((o) => String(o.filePath)));
  return { res, outputsOf, inputsOf: (index: number) => plan.groups[index]!.files.map((f) => absPath(plan.location, f.path)) };
}

describe('compaction of a table with another engine’s delete files (real stack)', { timeout: 10 * 60_000 }, () => {
  before(async () => {
    await ensureStack(['s3']);
    execFileSync('javac', ['-d', classes, '-cp', `${libs}/*`, join(__dirname, '..', 'fixtures', 'java', 'WriteDeletes.java')], {
      stdio: 'pipe',
    });
  });

  it('a table with position deletes is compacted applying them: no deleted row comes back, the delete file goes with its data file', async () => {
    const t = await seededTable('it_fdel_plan');
    const tables = await openTables(t.cfg);
    try {
      const plan = await planCompaction(tables, findTable(t.cfg, t.table), { table: t.table, options: { minInputFiles: 2 } });
      javaDelete(t, absPath(plan.location, plan.groups[0]!.files[0]!.path), [0, 1]);
      assert.deepEqual(await reads(t.cfg, t.table), { pyiceberg: 118, duckdb: 118, duckdbDistinct: 118 });
      const { res } = await compactOnce(tables, t);
      assert.ok(res.committedGroups.length > 0, `committed: ${JSON.stringify(res)}`);
      const { metadata } = await tables.load(t.table);
      const last = metadata.snapshots.at(-1)!;
      assert.equal(last.summary.operation, 'replace');
      assert.equal(last.summary['total-delete-files'], '0', 'the delete file named only a replaced file: removed');
      assert.equal(last.summary['total-records'], '118', 'the outputs hold no deleted row');
    } finally {
      await tables.close();
    }
    assert.deepEqual(await reads(t.cfg, t.table), { pyiceberg: 118, duckdb: 118, duckdbDistinct: 118 });
  });

  it('deletes that land while the groups are rewritten: the group is not committed (its rows would lose them); the next run applies them', async () => {
    const t = await seededTable('it_fdel_race');
    const tables = await openTables(t.cfg);
    try {
      // Another engine deletes two rows of a file the compaction has just rewritten.
      const { res, outputsOf, inputsOf } = await compactOnce(tables, t, (plan) => {
        javaDelete(t, absPath(plan.location, plan.groups[0]!.files[0]!.path), [0, 1]);
      });
      assert.deepEqual(await reads(t.cfg, t.table), { pyiceberg: 118, duckdb: 118, duckdbDistinct: 118 });
      assert.ok(!res.committedGroups.includes(0), `group 0 was not committed: ${JSON.stringify(res)}`);
      assert.match(res.skippedGroups.find((g) => g.index === 0)?.reason ?? '', /position deletes were committed on them since the rewrite/);
      for (const o of outputsOf(0)) assert.equal(await tables.io.exists(o), false, `the uncommitted output ${o} was removed`);
      const live = new Set((await liveDataFiles(tables.io, (await tables.load(t.table)).metadata)).map((f) => f.dataFile.filePath));
      for (const i of inputsOf(0)) assert.ok(live.has(i), `group 0's input ${i} is still live`);
      // The next run reads the inputs with the delete applied.
      const again = await compactOnce(tables, t);
      assert.ok(again.res.committedGroups.length > 0, `committed: ${JSON.stringify(again.res)}`);
      const after = (await tables.load(t.table)).metadata.snapshots.at(-1)!;
      assert.equal(after.summary['total-records'], '118');
      assert.equal(after.summary['total-delete-files'], '0');
    } finally {
      await tables.close();
    }
    assert.deepEqual(await reads(t.cfg, t.table), { pyiceberg: 118, duckdb: 118, duckdbDistinct: 118 });
  });
});
