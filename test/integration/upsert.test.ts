// npm test: integration
/**
 * Upsert and CDC tables (issue 31) on the real stack: a customer table's inserts, updates and
 * deletes land so that the Iceberg table equals the source state (computed from the produced
 * stream) as floe, DuckDB and PyIceberg read it, through SIGKILLs after the data write, after the
 * delete write, after the catalog CAS and on a schedule.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureStack } from '../../stack/stack';
import { runScenario } from '../../demo/scenario';
import { loadConfig } from '../../config';
import { openTables } from '../../table/tables';
import { rewritePositionDeletes } from '../../maintenance/rewrite-position-deletes';
import { expireNow } from '../../maintenance/expire';
import { removeOrphanFiles } from '../../maintenance/orphans';
import { verifyUpsertTable } from '../../demo/customers';
import { execFileSync } from 'node:child_process';
import { stackEnv } from '../../stack/env';
import { stackPaths } from '../../stack/paths';
import type { FloeConfig } from '../../config';

const quiet = (m: string) => {
  if (process.env.FLOE_TEST_VERBOSE) console.log(m);
};
const uniq = (p: string) => `${p}_${Date.now().toString(36)}${Math.floor(Math.random() * 1e4)}`;

const libs = join(stackPaths().home, 'iceberg-rest', 'libs');
const classes = mkdtempSync(join(tmpdir(), 'floe-java-upsert-'));

/** (id, version) of every row as Iceberg Java (IcebergGenerics, deletes applied) reads the table, sorted by id. */
function javaRows(cfg: FloeConfig, table: string): Array<[number, number]> {
  const s3 = stackEnv().s3;
  const out = execFileSync(
    'java',
    ['-cp', `${libs}/*:${classes}`, 'ReadTable', cfg.catalog.uri!.replace(/^sqlite:\/\/\//, ''), cfg.catalog.warehouse, table],
    {
      env: { ...process.env, FLOE_S3_ENDPOINT: s3.endpoint, FLOE_S3_ACCESS_KEY: s3.accessKeyId, FLOE_S3_SECRET_KEY: s3.secretAccessKey },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 120_000,
    },
  ).toString();
  const rows = (JSON.parse(out.trim().split('\n').pop()!) as { rows: Array<Array<string | null>> }).rows;
  // columns in schema order: id, name, email, tier, version, updated_at
  return rows.map((r): [number, number] => [Number(r[0]), Number(r[4])]).sort((a, b) => a[0] - b[0]);
}

describe('upsert and CDC tables (real stack)', { timeout: 12 * 60_000 }, () => {
  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3']);
    execFileSync('javac', ['-d', classes, '-cp', `${libs}/*`, join(__dirname, '..', 'fixtures', 'java', 'ReadTable.java')], {
      stdio: 'pipe',
    });
  });

  const cases = [
    // after-delete-write is reached only by a cycle that deletes: its first time is late enough
    // (no scheduled kill beside it: on a loaded machine it could come before any cycle committed a
    // key, and the cycle after it would then delete nothing)
    { mode: 'upsert', point: 'after-delete-write', skip: '0', kills: [], formatVersion: 2 },
    // v3: the polls' deletion vectors are merged with the table's live ones by the commit; killed
    // after the second delete write, so a committed DV exists to merge with
    { mode: 'upsert', point: 'after-delete-write', skip: '1', kills: [], formatVersion: 3 },
    { mode: 'upsert', point: 'after-write', skip: '2', kills: [], formatVersion: 2 },
    { mode: 'cdc', point: 'after-cas', skip: '2', kills: [], formatVersion: 2 },
  ] as const;
  for (const c of cases) {
    it(`${c.mode}, v${c.formatVersion}: a worker killed at "${c.point}"${c.kills.length ? ' and on a schedule' : ''} leaves the table equal to the source state`, async () => {
      const marker = join(mkdtempSync(join(tmpdir(), 'floe-kill-')), 'killed');
      // The CDC case keeps at most 40 of its ~100 live keys in memory: its key index runs on disk.
      const spillDir = c.mode === 'cdc' ? mkdtempSync(join(tmpdir(), 'floe-spill-')) : undefined;
      const r = await runScenario({
        tableOverrides: {
          formatVersion: c.formatVersion,
          // Small cycles: a slow start (a loaded machine) can leave most of the stream in the topic
          // for the first cycle, and a crash point skipped twice needs three cycles that commit.
          maxRecordsPerCycle: 150,
          ...(spillDir ? { keyIndex: { maxMemoryKeys: 40, spillDir } } : {}),
        },
        name: uniq(`it_${c.mode}_${c.point.replace(/-/g, '_')}`),
        ratePerS: 40,
        durationS: 24,
        partitions: 4,
        commitInterval: '2s',
        kills: [...c.kills],
        supervise: true,
        log: quiet,
        changes: { mode: c.mode, keys: 150 },
        // killed on the third time there (skip 2): earlier cycles committed keys its cycle updates and deletes
        workerEnv: { FLOE_TEST_KILL_AT: c.point, FLOE_TEST_KILL_MARKER: marker, FLOE_TEST_KILL_SKIP: c.skip },
      });
      assert.ok(existsSync(marker), `the worker reached crash point ${c.point}`);
      assert.match(readFileSync(marker, 'utf8'), new RegExp(`^${c.point} `));
      assert.ok(r.selfExits >= 1, 'the killed worker was restarted by the supervisor');
      assert.deepEqual(r.problems, [], r.problems.join('; '));
      assert.ok(r.rows > 50, `${r.rows} live keys`);
      assert.equal(r.rows, r.distinctEventIds);
      if (spillDir)
        assert.ok(
          readdirSync(spillDir).some((f) => f.startsWith('floe-keyindex-')),
          'the key index spilled to its SQLite file (a stopped worker leaves it for the next to sweep)',
        );
      // The table is a v2 table with the key as its identifier fields, and deletes were written.
      const cfg = loadConfig(r.configPath);
      const tables = await openTables(cfg);
      try {
        const { metadata } = await tables.load(r.table);
        const schema = metadata.schemas.find((s) => s['schema-id'] === metadata['current-schema-id'])!;
        assert.deepEqual(schema['identifier-field-ids'], [schema.fields.find((f) => f.name === 'id')!.id]);
        const deletes = metadata.snapshots.reduce((n, s) => n + Number(s.summary['added-position-deletes'] ?? '0'), 0);
        assert.ok(deletes > 0, 'position deletes were committed');
        assert.equal(metadata['format-version'], c.formatVersion);
        if (c.formatVersion === 3) {
          // one deletion vector per data file, each replacing the last: never a position delete file
          const last = metadata.snapshots.at(-1)!.summary;
          assert.ok(
            Number(last['total-delete-files']) > 0 && metadata.snapshots.some((s) => Number(s.summary['removed-delete-files'] ?? '0') > 0),
          );
          assert.ok(
            metadata.snapshots.some((s) => Number(s.summary['added-dvs'] ?? '0') > 0),
            `DVs were committed: ${JSON.stringify(last)}`,
          );
        }
        // Iceberg Java (iceberg-core 1.10.1 with iceberg-data) reads the source state too.
        assert.deepEqual(javaRows(cfg, r.table), r.sourceState);
        if (c.point === 'after-delete-write' && c.formatVersion === 3) {
          // one DV per live data file already: nothing to merge, nothing dangling
          const rw = await rewritePositionDeletes(tables, r.table);
          assert.equal(rw.snapshotId, null, JSON.stringify(rw));
          assert.equal(rw.deleteFilesAfter, rw.deleteFilesBefore);
          // Expiry down to the last snapshot deletes the replaced DVs' Puffin files (and the
          // killed cycle's, which orphan removal finds); the live DVs are kept: same source state.
          const expired = await expireNow(tables, {
            table: r.table,
            asOfMs: Date.now(),
            olderThanMs: 0,
            retainLast: 1,
            expireId: uniq('x'),
          });
          assert.ok(expired > 0);
          const orphans = await removeOrphanFiles(tables, {
            table: r.table,
            asOfMs: Date.now(),
            olderThanMs: 0,
            force: true,
            dryRun: false,
          });
          assert.ok(orphans.orphans > 0, `the killed cycle's files are orphans: ${JSON.stringify(orphans)}`);
          const v = await verifyUpsertTable(cfg, r.table, new Map(r.sourceState!.map(([id, version]) => [id, { version }])));
          assert.deepEqual(v.problems, []);
          assert.deepEqual(javaRows(cfg, r.table), r.sourceState);
        }
        if (c.point === 'after-delete-write' && c.formatVersion === 2) {
          // The cycles' delete files merged into one per partition (the table is unpartitioned),
          // dangling positions dropped: every reader still reads the source state.
          const before = (await tables.load(r.table)).metadata.snapshots.at(-1)!.summary;
          const rw = await rewritePositionDeletes(tables, r.table);
          assert.ok(Number(before['total-delete-files']) > 1, `several delete files before: ${JSON.stringify(rw)}`);
          assert.equal(rw.deleteFilesAfter, 1, JSON.stringify(rw));
          assert.ok(rw.positionsAfter <= rw.positionsBefore && rw.positionsAfter > 0, JSON.stringify(rw));
          const after = (await tables.load(r.table)).metadata.snapshots.at(-1)!.summary;
          assert.equal(after.operation, 'replace');
          assert.equal(after['total-records'], before['total-records'], 'no data file changed');
          const v = await verifyUpsertTable(cfg, r.table, new Map(r.sourceState!.map(([id, version]) => [id, { version }])));
          assert.deepEqual(v.problems, []);
          assert.deepEqual(javaRows(cfg, r.table), r.sourceState);
        }
      } finally {
        await tables.close();
      }
    });
  }
});
