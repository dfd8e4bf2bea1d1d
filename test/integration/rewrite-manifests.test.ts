/**
 * `floe table rewrite-manifests` (issue 32 item 3) as a user runs it (the CLI as a child process)
 * on the real stack: an orders table in a SQLite catalog on SeaweedFS S3, 40 appends each
 * touching the same 4 partitions (40 data manifests, every partition spread over all of them).
 * After the rewrite, PyIceberg, DuckDB and Iceberg Java (iceberg-core + iceberg-data through
 * JdbcCatalog) read exactly the rows they read before (a digest of every row), Java finds one data
 * manifest per partition, and the snapshot is a `replace` with Java's RewriteManifests summary
 * fields. Running the command again is a no-op; on a missing table it exits 3.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { ensureStack } from '../../stack/stack';
import { stackEnv } from '../../stack/env';
import { stackPaths } from '../../stack/paths';
import { runPythonJson } from '../../stack/python';
import { findTable, loadConfig, type FloeConfig } from '../../config';
import { openTables } from '../../table/tables';
import { ensureIngestTables } from '../../ingest/tables';
import { currentSnapshot } from '../../iceberg';
import type { ManifestRewriteResult } from '../../maintenance/rewrite-manifests';
import { maintenanceTestConfig, orderRows } from './maintenance-oracles';

const ROOT = resolve(__dirname, '../..');
const libs = join(stackPaths().home, 'iceberg-rest', 'libs');
const skip = existsSync(join(libs, 'iceberg-core-1.10.1.jar')) ? false : `no Iceberg Java in ${libs} (floe stack up)`;
const classes = mkdtempSync(join(tmpdir(), 'floe-java-rewrite-manifests-'));

const APPENDS = 40;
const TYPES = ['created', 'paid', 'shipped', 'cancelled'];
const DAY_US = BigInt(Date.UTC(2026, 5, 1)) * 1000n; // 2026-06-01, one day partition

interface Digest {
  rows: number;
  digest: string;
}
interface JavaRead extends Digest {
  manifests: number;
  partitions: number;
  maxManifestsPerPartition: number;
}

/** Every row through PyIceberg's scan and DuckDB's iceberg_scan, as a digest of sorted lines. */
const PY_READ = String.raw`
import hashlib, json, sys
from pyiceberg.table import StaticTable
from floe_duckdb import connect, pyiceberg_s3_properties
loc = sys.argv[1]
def digest(rows):
    lines = sorted(f"{e}|{o}|{t}" for e, o, t in rows)
    return {"rows": len(lines), "digest": hashlib.sha256("".join(l + "\n" for l in lines).encode()).hexdigest()}
a = StaticTable.from_metadata(loc, properties=pyiceberg_s3_properties()).scan(selected_fields=("event_id", "order_id", "event_type")).to_arrow()
py = digest(zip(a["event_id"].to_pylist(), a["order_id"].to_pylist(), a["event_type"].to_pylist()))
duck = digest(connect().sql(f"SELECT event_id, order_id, event_type FROM iceberg_scan('{loc}')").fetchall())
print(json.dumps({"pyiceberg": py, "duckdb": duck}))
`;

/** Runs `floe <args>` from the sources; resolves with the exit code and output whatever the code. */
async function floe(configPath: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', resolve(ROOT, 'cli/main.ts'), '-c', configPath, ...args],
      { cwd: ROOT, timeout: 50_000 },
    );
    return { code: 0, stdout, stderr };
  } catch (e) {
    const x = e as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof x.code === 'number' ? x.code : -1, stdout: x.stdout ?? '', stderr: x.stderr ?? '' };
  }
}

/** A fresh orders table in a SQLite catalog of its own (Java's JdbcCatalog opens it too). */
function freshTable(): { path: string; cfg: FloeConfig; table: string; db: string; warehouse: string } {
  const name = `it_rwm_${Date.now().toString(36)}`;
  const { path, table } = maintenanceTestConfig(name);
  const db = join(mkdtempSync(join(tmpdir(), 'floe-rwm-')), 'catalog.db');
  const warehouse = `s3://floe/${name}`;
  const raw = parseYaml(readFileSync(path, 'utf8')) as { catalog: Record<string, unknown> };
  raw.catalog = { ...raw.catalog, type: 'sql', uri: `sqlite:///${db}`, warehouse };
  writeFileSync(path, stringifyYaml(raw));
  return { path, cfg: loadConfig(path), table, db, warehouse };
}

/** `APPENDS` appends of 8 rows, 2 in each of the 4 partitions (one day x 4 event types). */
async function seed(cfg: FloeConfig, table: string): Promise<void> {
  const t = findTable(cfg, table);
  const tables = await openTables(cfg);
  try {
    await ensureIngestTables(tables, t, cfg.schemaRegistry);
    for (let c = 0; c < APPENDS; c++) {
      const rows = orderRows(c * 8, 8).map((r, k) => ({
        ...r,
        event_type: TYPES[k % 4]!,
        event_time: DAY_US + BigInt(c * 8 + k) * 1_000_000n,
      }));
      const files = await tables.writeDataFiles(table, rows, `seed-${c}`, t.targetFileSizeBytes);
      assert.equal(files.length, 4);
      await tables.appendOnce(table, { files, summary: { 'floe.commit-id': `seed-${c}` }, validate: () => undefined });
    }
  } finally {
    await tables.close();
  }
}

async function loadTable(cfg: FloeConfig, table: string) {
  const tables = await openTables(cfg);
  try {
    return await tables.load(table);
  } finally {
    await tables.close();
  }
}

async function javaRead(t: { db: string; warehouse: string; table: string }): Promise<JavaRead> {
  const s3 = stackEnv().s3;
  const { stdout } = await promisify(execFile)(
    'java',
    ['-cp', `${libs}/*:${classes}`, 'RewriteManifestsRead', t.db, t.warehouse, t.table],
    {
      env: { ...process.env, FLOE_S3_ENDPOINT: s3.endpoint, FLOE_S3_ACCESS_KEY: s3.accessKeyId, FLOE_S3_SECRET_KEY: s3.secretAccessKey },
      timeout: 60_000,
    },
  );
  return JSON.parse(stdout.trim().split('\n').pop()!) as JavaRead;
}

const engineDigests = async (metadataLocation: string) =>
  runPythonJson<{ pyiceberg: Digest; duckdb: Digest }>(PY_READ, [metadataLocation], { timeoutMs: 60_000 });

describe('floe table rewrite-manifests (real stack, the CLI as a process)', { timeout: 120_000, skip }, () => {
  before(async () => {
    await ensureStack(['s3']);
    execFileSync('javac', ['-d', classes, '-cp', `${libs}/*`, join(__dirname, '..', 'fixtures', 'java', 'RewriteManifestsRead.java')], {
      stdio: 'pipe',
    });
  });

  it('40 manifests become one per partition; PyIceberg, DuckDB and Iceberg Java read the same rows', async () => {
    const t = freshTable();
    await seed(t.cfg, t.table);
    const before = await loadTable(t.cfg, t.table);
    // the three engines read concurrently (two cores: the JVM and Python overlap)
    const [enginesBefore, javaBefore] = await Promise.all([engineDigests(before.metadataLocation), javaRead(t)]);
    assert.equal(javaBefore.rows, APPENDS * 8);
    assert.equal(javaBefore.manifests, APPENDS);
    assert.equal(javaBefore.partitions, 4);
    assert.equal(javaBefore.maxManifestsPerPartition, APPENDS);
    assert.deepEqual(enginesBefore.pyiceberg, { rows: javaBefore.rows, digest: javaBefore.digest });
    assert.deepEqual(enginesBefore.duckdb, { rows: javaBefore.rows, digest: javaBefore.digest });

    const run = await floe(t.path, 'table', 'rewrite-manifests', t.table, '--json');
    assert.equal(run.code, 0, run.stderr);
    const r = JSON.parse(run.stdout) as ManifestRewriteResult;
    assert.deepEqual(
      { before: r.manifestsBefore, after: r.manifestsAfter, entries: r.entries, partitions: r.partitions, noop: r.noop },
      { before: APPENDS, after: 1, entries: APPENDS * 4, partitions: 4, noop: null },
    );

    const after = await loadTable(t.cfg, t.table);
    const snap = currentSnapshot(after.metadata)!;
    assert.equal(snap['snapshot-id'].toString(), r.snapshotId);
    assert.equal(snap.summary.operation, 'replace');
    assert.deepEqual(
      [
        snap.summary['manifests-created'],
        snap.summary['manifests-kept'],
        snap.summary['manifests-replaced'],
        snap.summary['entries-processed'],
      ],
      ['1', '0', String(APPENDS), String(APPENDS * 4)],
    );
    assert.equal(snap.summary['total-records'], String(APPENDS * 8));

    const [javaAfter, enginesAfter] = await Promise.all([javaRead(t), engineDigests(after.metadataLocation)]);
    assert.deepEqual(javaAfter, {
      rows: javaBefore.rows,
      digest: javaBefore.digest,
      manifests: 1,
      partitions: 4,
      maxManifestsPerPartition: 1,
    });
    assert.deepEqual(enginesAfter, enginesBefore);

    // again: already clustered, nothing committed, exit 0
    const again = await floe(t.path, 'table', 'rewrite-manifests', t.table);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /already one data manifest per partition/);
    assert.equal((await loadTable(t.cfg, t.table)).metadata.snapshots.length, after.metadata.snapshots.length);
    // a table the catalog does not have: exit 3 (not found)
    const missing = await floe(t.path, 'table', 'rewrite-manifests', `${t.table}_missing`);
    assert.equal(missing.code, 3, missing.stderr);
  });
});
