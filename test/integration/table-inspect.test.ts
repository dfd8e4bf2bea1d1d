/**
 * `floe table commits|files|partitions|manifests --json` (issue 32 item 7) as a user runs them (the
 * CLI as a child process) on the real stack, column by column against PyIceberg's
 * `table.inspect.snapshots()/files()/partitions()/manifests()` on the same metadata file: an orders
 * table (day x event_type partitions) in a SQLite catalog on SeaweedFS S3, three appends, then a
 * RowDelta adding position deletes for rows of two data files (one delete file per partition).
 * Compared: ids, paths, counts, sizes, metrics maps, summaries, partition values and manifest
 * partition summaries; bounds where PyIceberg's readable form is a plain int or string.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { ensureStack } from '../../stack/stack';
import { runPythonJson } from '../../stack/python';
import { findTable, loadConfig, type FloeConfig } from '../../config';
import { openTables } from '../../table/tables';
import { ensureIngestTables } from '../../ingest/tables';
import { Transaction, writePositionDeleteFiles, type DataFile } from '../../iceberg';
import { maintenanceTestConfig, orderRows } from './maintenance-oracles';

const ROOT = resolve(__dirname, '../..');
const TYPES = ['created', 'paid', 'shipped', 'cancelled'];
const DAY_US = BigInt(Date.UTC(2026, 5, 1)) * 1000n;

type Json = Record<string, unknown>;

/**
 * PyIceberg's four inspect tables as JSON: ids as decimal strings (as floe prints them), times as
 * epoch ms, dates as ISO dates (as floe prints partition values), binary bounds left out.
 */
const PY_INSPECT = String.raw`
import datetime, json, sys
from pyiceberg.table import StaticTable
from floe_duckdb import pyiceberg_s3_properties
t = StaticTable.from_metadata(sys.argv[1], properties=pyiceberg_s3_properties())
def plain(v):
    if isinstance(v, datetime.datetime):
        return int(v.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000)
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [plain(x) for x in v]
    return v
IDS = {"snapshot_id", "parent_id", "added_snapshot_id", "last_updated_snapshot_id"}
MAPS = {"summary", "column_sizes", "value_counts", "null_value_counts", "nan_value_counts"}
def cell(k, v):
    if v is None:
        return None
    if k in IDS:
        return str(v)
    if k in MAPS:  # arrow maps come as lists of pairs; JSON object keys are strings
        return {str(a): plain(b) for a, b in v}
    if k == "readable_metrics":  # bounds only where their text form is unambiguous: ints and strings
        return {c: {m: ((str(x) if type(x) in (int, str) else None) if m.endswith("bound") else x) for m, x in ms.items()} for c, ms in v.items()}
    return plain(v)
def rows(tbl, drop=()):
    return [{k: cell(k, v) for k, v in r.items() if k not in drop} for r in tbl.to_pylist()]
files = rows(t.inspect.files(), drop=("lower_bounds", "upper_bounds", "key_metadata"))
print(json.dumps({
    "snapshots": rows(t.inspect.snapshots()),
    "history": rows(t.inspect.history()),
    "files": files,
    "partitions": rows(t.inspect.partitions()),
    "manifests": rows(t.inspect.manifests()),
}))
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

/** A fresh orders table in a SQLite catalog of its own. */
function freshTable(): { path: string; cfg: FloeConfig; table: string } {
  const name = `it_inspect_${Date.now().toString(36)}`;
  const { path, table } = maintenanceTestConfig(name);
  const db = join(mkdtempSync(join(tmpdir(), 'floe-inspect-')), 'catalog.db');
  const raw = parseYaml(readFileSync(path, 'utf8')) as { catalog: Record<string, unknown> };
  raw.catalog = { ...raw.catalog, type: 'sql', uri: `sqlite:///${db}`, warehouse: `s3://floe/${name}` };
  writeFileSync(path, stringifyYaml(raw));
  return { path, cfg: loadConfig(path), table };
}

/** Three appends of 8 rows over 4 partitions (the third in 2 only), then position deletes on two files; the metadata location. */
async function seed(cfg: FloeConfig, table: string): Promise<string> {
  const t = findTable(cfg, table);
  const tables = await openTables(cfg);
  try {
    await ensureIngestTables(tables, t, cfg.schemaRegistry);
    let first: DataFile[] = [];
    for (let c = 0; c < 3; c++) {
      const rows = orderRows(c * 8, 8).map((r, k) => ({
        ...r,
        event_type: TYPES[c === 2 ? k % 2 : k % 4]!,
        event_time: DAY_US + BigInt(c * 8 + k) * 1_000_000n,
      }));
      const files = await tables.writeDataFiles(table, rows, `seed-${c}`, t.targetFileSizeBytes);
      if (c === 0) first = files;
      await tables.appendOnce(table, { files, summary: { 'floe.commit-id': `seed-${c}` }, validate: () => undefined });
    }
    const loaded = await tables.load(table);
    const [a, b] = first;
    const w = await writePositionDeleteFiles(
      tables.io,
      loaded.metadata,
      [
        { dataFile: a!, pos: 0n },
        { dataFile: a!, pos: 1n },
        { dataFile: b!, pos: 0n },
      ],
      (k) => `inspect-del-${k}.parquet`,
    );
    assert.equal(w.deleteFiles.length, 2);
    const tx = new Transaction(loaded.identifier);
    tx.rowDelta([], w.deleteFiles, { referencedDataFiles: w.referencedDataFiles });
    return (await tx.commit(tables.catalog, tables.io, { table: loaded })).table.metadataLocation;
  } finally {
    await tables.close();
  }
}

const pick = (r: Json, cols: string[]): Json => Object.fromEntries(cols.map((c) => [c, r[c] ?? null]));
const byKey = (key: (r: Json) => string) => (a: Json, b: Json) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0);

describe(
  'floe table commits|files|partitions|manifests --json match PyIceberg inspect (real stack, the CLI as a process)',
  { timeout: 120_000 },
  () => {
    before(async () => {
      await ensureStack(['s3']);
    });

    it('four metadata tables, column by column', async () => {
      const t = freshTable();
      const location = await seed(t.cfg, t.table);
      const run = async (what: string): Promise<Json[]> => {
        const r = await floe(t.path, 'table', what, t.table, '--json');
        assert.equal(r.code, 0, r.stderr);
        return JSON.parse(r.stdout) as Json[];
      };
      // PyIceberg and the four CLI processes overlap (two cores)
      const [py, commits, files, partitions, manifests] = await Promise.all([
        runPythonJson<Record<'snapshots' | 'history' | 'files' | 'partitions' | 'manifests', Json[]>>(PY_INSPECT, [location], {
          timeoutMs: 60_000,
        }),
        run('commits'),
        run('files'),
        run('partitions'),
        run('manifests'),
      ]);

      // snapshots (+ history's is_current_ancestor)
      assert.equal(commits.length, 4);
      const snapCols = ['snapshot_id', 'parent_id', 'operation', 'manifest_list', 'summary'];
      assert.deepEqual(
        commits.map((r) => ({ ...pick(r, snapCols), committed_at: Date.parse(r['committed_at'] as string) })),
        py.snapshots.map((r) => ({ ...pick(r, snapCols), committed_at: r['committed_at'] })),
      );
      assert.deepEqual(
        commits.map((r) => [r['snapshot_id'], r['is_current_ancestor']]),
        py.history.map((r) => [r['snapshot_id'], r['is_current_ancestor']]),
      );
      assert.deepEqual(
        commits.map((r) => r['operation']),
        ['append', 'append', 'append', 'delete'],
      );
      assert.equal(commits.at(-1)!['total_rows'], '24', "floe's text columns are still there for scripts");

      // files: 4 + 4 + 2 data files, 2 position delete files
      const fileCols = [
        'content',
        'file_path',
        'file_format',
        'spec_id',
        'partition',
        'record_count',
        'file_size_in_bytes',
        'column_sizes',
        'value_counts',
        'null_value_counts',
        'nan_value_counts',
        'split_offsets',
        'equality_ids',
        'sort_order_id',
      ];
      const byPath = byKey((r) => r['file_path'] as string);
      assert.equal(files.length, 12);
      assert.deepEqual(files.map((r) => r['content']).sort(), [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1]);
      assert.deepEqual(files.map((r) => pick(r, fileCols)).sort(byPath), py.files.map((r) => pick(r, fileCols)).sort(byPath));
      // readable bounds PyIceberg shows as a plain int or string (strings and longs here)
      const ours = new Map(files.map((f) => [f['file_path'], f['readable_metrics'] as Record<string, Json>]));
      let compared = 0;
      for (const f of py.files) {
        for (const [col, m] of Object.entries(f['readable_metrics'] as Record<string, Json>)) {
          for (const k of ['lower_bound', 'upper_bound', 'value_count', 'null_value_count', 'column_size']) {
            if (m[k] === null && k.endsWith('bound')) continue;
            assert.equal(ours.get(f['file_path'])![col]![k], m[k], `${String(f['file_path'])} ${col}.${k}`);
            compared++;
          }
        }
      }
      assert.ok(compared > 100, `compared ${compared} readable metrics`);

      // partitions: 4 of them, two with a position delete file each
      const partCols = [
        'partition',
        'spec_id',
        'record_count',
        'file_count',
        'total_data_file_size_in_bytes',
        'position_delete_record_count',
        'position_delete_file_count',
        'equality_delete_record_count',
        'equality_delete_file_count',
        'last_updated_snapshot_id',
      ];
      const byPartition = byKey((r) => JSON.stringify(r['partition']));
      assert.equal(partitions.length, 4);
      assert.deepEqual(
        partitions.map((r) => ({ ...pick(r, partCols), last_updated_at: Date.parse(r['last_updated_at'] as string) })).sort(byPartition),
        py.partitions.map((r) => ({ ...pick(r, partCols), last_updated_at: r['last_updated_at'] })).sort(byPartition),
      );
      assert.equal(
        partitions.reduce((n, r) => n + (r['position_delete_record_count'] as number), 0),
        3,
      );

      // manifests: the data manifests (appends merge them) and one delete manifest
      const manCols = [
        'content',
        'path',
        'length',
        'partition_spec_id',
        'added_snapshot_id',
        'added_data_files_count',
        'existing_data_files_count',
        'deleted_data_files_count',
        'added_delete_files_count',
        'existing_delete_files_count',
        'deleted_delete_files_count',
        'partition_summaries',
      ];
      const byManifest = byKey((r) => r['path'] as string);
      assert.deepEqual(
        manifests.map((r) => r['content']).filter((c) => c === 1),
        [1],
        'one delete manifest',
      );
      assert.deepEqual(manifests.map((r) => pick(r, manCols)).sort(byManifest), py.manifests.map((r) => pick(r, manCols)).sort(byManifest));

      // the text forms run too
      const text = await floe(t.path, 'table', 'partitions', t.table);
      assert.equal(text.code, 0, text.stderr);
      assert.match(text.stdout, /event_time_day=2026-06-01\/event_type=created/);
    });
  },
);
