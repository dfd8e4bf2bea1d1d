/**
 * Issue 29 item 13: another engine's row-level deletes (Iceberg Java's RowDelta with a position
 * delete file, as Spark's merge-on-read DELETE writes them) on a floe table, against the real
 * stack. Compaction rewrites data files without applying deletes, so it must never commit over
 * them (the outputs would carry a new sequence number and paths no position delete names: the
 * deleted rows would come back). A table with delete files is refused at planning; deletes that land
 * while the groups are being rewritten make the commit refuse, naming the table and why, and delete
 * the outputs (before, the library's RewriteFiles refused with a terse "delete manifests: expected 0,
 * found 1" and the outputs stayed behind as orphans). Rows are read through PyIceberg and DuckDB,
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
import { absPath } from '../../maintenance/reachable';
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

describe('compaction of a table with another engine’s delete files (real stack)', { timeout: 10 * 60_000 }, () => {
  before(async () => {
    await ensureStack(['s3']);
    execFileSync('javac', ['-d', classes, '-cp', `${libs}/*`, join(__dirname, '..', 'fixtures', 'java', 'WriteDeletes.java')], {
      stdio: 'pipe',
    });
  });

  it('a table with position deletes is refused at planning, naming them; the deleted rows stay deleted', async () => {
    const t = await seededTable('it_fdel_plan');
    const tables = await openTables(t.cfg);
    try {
      const plan = await planCompaction(tables, findTable(t.cfg, t.table), { table: t.table, options: { minInputFiles: 2 } });
      javaDelete(t, absPath(plan.location, plan.groups[0]!.files[0]!.path), [0, 1]);
      assert.deepEqual(await reads(t.cfg, t.table), { pyiceberg: 118, duckdb: 118, duckdbDistinct: 118 });
      await assert.rejects(
        planCompaction(tables, findTable(t.cfg, t.table), { table: t.table, options: { minInputFiles: 2 } }),
        (e: Error & { type?: string }) =>
          e.type === 'FeatureUnsupported' &&
          /compaction of tables with delete files is not supported \(found 1 delete manifests in snapshot \d+\); rewriting their data files would bring deleted rows back/.test(
            e.message,
          ),
      );
    } finally {
      await tables.close();
    }
    assert.deepEqual(await reads(t.cfg, t.table), { pyiceberg: 118, duckdb: 118, duckdbDistinct: 118 });
  });

  it('deletes that land while the groups are rewritten: the commit refuses instead of bringing the deleted rows back', async () => {
    const t = await seededTable('it_fdel_race');
    const tables = await openTables(t.cfg);
    try {
      const plan = await planCompaction(tables, findTable(t.cfg, t.table), { table: t.table, options: { minInputFiles: 2 } });
      assert.ok(plan.groups.length > 0);
      const runId = randomUUID();
      const groups = [];
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
      // Another engine deletes two rows of a file the compaction has just rewritten.
      javaDelete(t, absPath(plan.location, plan.groups[0]!.files[0]!.path), [0, 1]);
      assert.deepEqual(await reads(t.cfg, t.table), { pyiceberg: 118, duckdb: 118, duckdbDistinct: 118 });

      await assert.rejects(
        commitRewrite(tables, { table: t.table, location: plan.location, commitId: randomUUID(), groups }),
        (e: Error & { type?: string }) => e.type === 'FeatureUnsupported' && /delete files is not supported/.test(e.message),
      );
      const outputs = groups.flatMap((g) => g.result.outputs.map((o) => String(o.filePath)));
      for (const o of outputs) assert.equal(await tables.io.exists(o), false, `the uncommitted output ${o} was removed`);
      const { metadata } = await tables.load(t.table);
      assert.deepEqual(
        metadata.snapshots.map((s) => s.summary.operation),
        ['append', 'append', 'append', 'append', 'delete'],
        'no replace snapshot: nothing was committed over the deletes',
      );
    } finally {
      await tables.close();
    }
    assert.deepEqual(await reads(t.cfg, t.table), { pyiceberg: 118, duckdb: 118, duckdbDistinct: 118 });
  });
});
