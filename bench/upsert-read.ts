/**
 * Issue 31 item 7, read side: what position deletes cost the readers, and what floe's compaction
 * gives back by applying them. A table of N rows in F Parquet files on the stack's S3 (SQLite
 * catalog), one position delete commit of D deletes spread evenly over every file (as an upsert
 * stream leaves them), read by PyIceberg (`StaticTable.from_metadata(...).scan().to_arrow()`) and
 * DuckDB (`SELECT count(*), sum(amount) FROM iceberg_scan(...)`), 3 times each; then floe's
 * compaction (planCompaction, rewriteFileGroup, commitRewrite, in-process) rewrites the files
 * with the deletes applied, and both read 3 times again. Prints the medians and their ratio.
 * Both engines must read exactly N - D rows, with the expected sum, before and after (exit 1 if
 * not). Compaction is one-way, so "before" is timed 3x, then "after" 3x (not alternated).
 *
 * Each timing runs in a fresh Python-side reader: a new StaticTable (metadata read included) and a
 * new DuckDB connection (its external file cache would otherwise serve the second query from
 * memory). Python start-up, imports and DuckDB extension loading are outside the timings.
 *
 *   npx tsx bench/upsert-read.ts [--rows 1000000] [--files 20] [--deletes 100000] [--keep]
 *
 * Needs the local stack's S3 and Python venv (`floe stack up`). The warehouse (an
 * interop-tests/ prefix of the stack's bucket) is removed at the end unless `--keep`.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Transaction,
  fastAppend,
  parquetWriteOptionsFromProperties,
  parseIdentifier,
  writeParquetFile,
  writePositionDeleteFiles,
  type Catalog,
  type DataFile,
  type FileIO,
  type LoadedTable,
  type Schema,
  type TableIdentifier,
} from '../iceberg';
import { ensureStack } from '../stack/stack';
import { runPythonJson } from '../stack/python';
import type { Tables } from '../table/tables';
import { commitRewrite, planCompaction, rewriteFileGroup } from '../maintenance';
import { FAST_RETRY, backend, createTable, dropWarehouse, open } from '../test/oracles/floe-table';
import { benchArgs, numberArg } from './support/args';

const USAGE = 'npx tsx bench/upsert-read.ts [--rows 1000000] [--files 20] [--deletes 100000] [--keep]';
const args = benchArgs(USAGE, {
  rows: { type: 'string' },
  files: { type: 'string' },
  deletes: { type: 'string' },
  keep: { type: 'boolean', default: false },
});
const ROWS = numberArg(args.rows, 1_000_000);
const FILES = numberArg(args.files, 20);
const DELETES = numberArg(args.deletes, 100_000);
const REPEAT = 3;
if (![ROWS, FILES, DELETES].every(Number.isInteger) || FILES < 2 || ROWS % FILES !== 0 || DELETES % FILES !== 0 || DELETES > ROWS) {
  console.error(`--rows and --deletes must be multiples of --files (>= 2), deletes <= rows\nusage: ${USAGE}`);
  process.exit(2);
}
const PER_FILE = ROWS / FILES;
const DELETES_PER_FILE = DELETES / FILES;

const SCHEMA: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'amount', required: true, type: 'double' },
    { id: 3, name: 'payload', required: false, type: 'string' },
  ],
};
/** Quarters are exact in binary: every sum below is exact, in any order. */
const amountOf = (i: number): number => (i % 1000) / 4;
/** The deleted positions of a file: DELETES_PER_FILE spread evenly over its PER_FILE rows. */
const deletedPositions = (): number[] => Array.from({ length: DELETES_PER_FILE }, (_, k) => Math.floor((k * PER_FILE) / DELETES_PER_FILE));

/** Times both engines REPEAT times on one metadata file; each run in a fresh reader. */
const TIME_READS = String.raw`
import json, sys, time, statistics
import pyarrow.compute as pc
from pyiceberg.table import StaticTable
from floe_duckdb import connect, pyiceberg_s3_properties
loc, repeat = sys.argv[1], int(sys.argv[2])
props = pyiceberg_s3_properties()
out = {"pyiceberg": {"seconds": [], "rows": [], "sums": []}, "duckdb": {"seconds": [], "rows": [], "sums": []}}
for _ in range(repeat):
    t0 = time.perf_counter()
    a = StaticTable.from_metadata(loc, properties=props).scan().to_arrow()
    n = a.num_rows
    out["pyiceberg"]["seconds"].append(time.perf_counter() - t0)
    out["pyiceberg"]["rows"].append(n)
    out["pyiceberg"]["sums"].append(float(pc.sum(a["amount"]).as_py() or 0))
    del a
    con = connect()
    t0 = time.perf_counter()
    r = con.sql(f"SELECT count(*), sum(amount) FROM iceberg_scan('{loc}')").fetchone()
    out["duckdb"]["seconds"].append(time.perf_counter() - t0)
    out["duckdb"]["rows"].append(int(r[0]))
    out["duckdb"]["sums"].append(float(r[1] or 0))
    con.close()
print(json.dumps(out))
`;

type EngineRuns = Record<'pyiceberg' | 'duckdb', { seconds: number[]; rows: number[]; sums: number[] }>;

/** The Tables view maintenance/compact.ts works on (catalog, io, load), over the bench's own catalog. */
function tablesOver(catalog: Catalog, io: FileIO): Tables {
  const unused = (what: string) => () => {
    throw new Error(`bench/upsert-read: Tables.${what} is not used by compaction`);
  };
  return {
    catalog,
    io,
    load: (table) => catalog.loadTable(parseIdentifier(table)),
    ensureTable: unused('ensureTable'),
    writeDataFiles: unused('writeDataFiles'),
    openRowWriter: unused('openRowWriter'),
    appendOnce: unused('appendOnce'),
    upgradeFormatVersion: unused('upgradeFormatVersion'),
    close: () => catalog.close(),
  };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const log = (msg: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${msg}\n`);

/** Data files and delete files of the current snapshot, from its summary. */
function fileCounts(t: LoadedTable): { data: number; deletes: number; positionDeletes: number; records: number } {
  const s: Record<string, string> = t.metadata.snapshots.find((x) => x['snapshot-id'] === t.metadata['current-snapshot-id'])?.summary ?? {};
  const n = (k: string) => Number(s[k] ?? '0');
  return {
    data: n('total-data-files'),
    deletes: n('total-delete-files'),
    positionDeletes: n('total-position-deletes'),
    records: n('total-records'),
  };
}

async function main(): Promise<void> {
  await ensureStack(['s3']);
  const root = mkdtempSync(join(tmpdir(), 'floe-upsert-read-'));
  const b = backend('s3', root);
  const { catalog, io } = await open(b);
  const problems: string[] = [];
  try {
    const id: TableIdentifier = { namespace: ['bench'], name: `upsert_read_${Date.now().toString(36)}` };
    const tableName = `${id.namespace[0]}.${id.name}`;
    let table = await createTable(catalog, b, id, SCHEMA, { 'spec-id': 0, fields: [] });

    // N rows in F files (two appends), then one position delete commit spread over every file.
    let started = Date.now();
    const files: DataFile[] = [];
    for (let f = 0; f < FILES; f++) {
      const base = f * PER_FILE;
      const ids = BigInt64Array.from({ length: PER_FILE }, (_, k) => BigInt(base + k));
      const amounts = Float64Array.from({ length: PER_FILE }, (_, k) => amountOf(base + k));
      const w = await writeParquetFile(
        SCHEMA,
        { columns: { id: ids, amount: amounts, payload: Array.from({ length: PER_FILE }, (_, k) => `p${base + k}`) }, numRows: PER_FILE },
        parquetWriteOptionsFromProperties(SCHEMA, table.metadata.properties),
      );
      const filePath = `${table.metadata.location}/data/f${String(f).padStart(3, '0')}-${randomUUID()}.parquet`;
      await io.write(filePath, w.bytes);
      files.push({ ...w.stats, filePath, specId: 0, partition: {} });
    }
    table = await fastAppend(catalog, io, table, files.slice(0, FILES / 2));
    table = await fastAppend(catalog, io, table, files.slice(FILES / 2));
    const positions = deletedPositions();
    const deletes = files.flatMap((dataFile) => positions.map((pos) => ({ dataFile, pos: BigInt(pos) })));
    const w = await writePositionDeleteFiles(io, table.metadata, deletes, (k) => `upsert-read-del-${k}-${randomUUID()}.parquet`);
    const tx = new Transaction(id);
    tx.rowDelta([], w.deleteFiles, { referencedDataFiles: w.referencedDataFiles });
    table = (await tx.commit(catalog, io, { ...FAST_RETRY, table })).table;
    log(
      `built ${tableName}: ${ROWS} rows in ${FILES} files, ${DELETES} position deletes, in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );

    let expectedSum = 0;
    const gone = new Set(positions);
    for (let i = 0; i < ROWS; i++) if (!gone.has(i % PER_FILE)) expectedSum += amountOf(i);
    const expectedRows = ROWS - DELETES;

    const check = (phase: string, runs: EngineRuns) => {
      for (const [engine, r] of Object.entries(runs)) {
        r.rows.forEach((n, k) => {
          if (n !== expectedRows) problems.push(`${engine} ${phase} run ${k + 1}: ${n} rows, expected ${expectedRows}`);
        });
        r.sums.forEach((s, k) => {
          if (s !== expectedSum) problems.push(`${engine} ${phase} run ${k + 1}: sum(amount) ${s}, expected ${expectedSum}`);
        });
      }
    };
    const read = async (phase: string, t: LoadedTable): Promise<EngineRuns> => {
      log(`${phase}: ${REPEAT}x PyIceberg and DuckDB on ${t.metadataLocation}`);
      const runs = await runPythonJson<EngineRuns>(TIME_READS, [t.metadataLocation, String(REPEAT)], { timeoutMs: 10 * 60_000 });
      check(phase, runs);
      log(
        `${phase}: pyiceberg ${runs.pyiceberg.seconds.map((s) => s.toFixed(3)).join(' ')} s, duckdb ${runs.duckdb.seconds.map((s) => s.toFixed(3)).join(' ')} s`,
      );
      return runs;
    };

    const countsBefore = fileCounts(table);
    const before = await read('before', table);

    // floe's compaction, in-process: plan, rewrite every group (deletes applied), commit.
    started = Date.now();
    const tables = tablesOver(catalog, io);
    const plan = await planCompaction(tables, undefined, {
      table: tableName,
      options: { minInputFiles: 2, targetFileSizeBytes: 1024 * 1024 * 1024 },
    });
    if (plan.groups.length === 0) throw new Error(`compaction planned no group: ${JSON.stringify(plan)}`);
    const runId = randomUUID();
    const groups: Parameters<typeof commitRewrite>[1]['groups'] = [];
    for (const group of plan.groups) {
      const result = await rewriteFileGroup(tables, {
        table: tableName,
        location: plan.location,
        runId,
        group,
        targetFileSizeBytes: plan.options.targetFileSizeBytes,
      });
      groups.push({ group, result });
    }
    const res = await commitRewrite(tables, { table: tableName, location: plan.location, commitId: randomUUID(), groups });
    if (res.committedGroups.length !== plan.groups.length) throw new Error(`compaction did not commit every group: ${JSON.stringify(res)}`);
    table = await catalog.loadTable(id);
    const compactSeconds = (Date.now() - started) / 1000;
    log(
      `compacted: ${plan.groups.length} group(s), ${groups.reduce((a, g) => a + g.result.outputs.length, 0)} output file(s), in ${compactSeconds.toFixed(1)} s`,
    );
    const countsAfter = fileCounts(table);
    if (countsAfter.records !== expectedRows)
      problems.push(`after compaction total-records ${countsAfter.records}, expected ${expectedRows}`);
    if (countsAfter.deletes !== 0) problems.push(`after compaction ${countsAfter.deletes} delete files remain`);

    const after = await read('after', table);

    const rows: string[][] = [['engine', 'before s', 'after s', 'before/after', 'rows']];
    for (const engine of ['pyiceberg', 'duckdb'] as const) {
      const b0 = median(before[engine].seconds);
      const a0 = median(after[engine].seconds);
      rows.push([
        engine === 'pyiceberg' ? 'PyIceberg' : 'DuckDB',
        b0.toFixed(3),
        a0.toFixed(3),
        `${(b0 / a0).toFixed(2)}x`,
        `${median(before[engine].rows)} / ${median(after[engine].rows)}`,
      ]);
    }
    const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
    console.log(
      `\nupsert read: ${ROWS} rows in ${FILES} files, ${DELETES} position deletes (${DELETES_PER_FILE} per file); median of ${REPEAT} reads`,
    );
    for (const r of rows) console.log(r.map((v, c) => (c === 0 ? v.padEnd(widths[c]!) : v.padStart(widths[c]!))).join('  '));
    console.log(
      `before: ${countsBefore.data} data files, ${countsBefore.deletes} delete file(s) (${countsBefore.positionDeletes} position deletes); ` +
        `after: ${countsAfter.data} data file(s), ${countsAfter.deletes} delete files (${countsAfter.positionDeletes} position deletes); ` +
        `compaction ${compactSeconds.toFixed(1)} s`,
    );
    console.log(`expected ${expectedRows} rows, sum(amount) ${expectedSum}`);
    if (args.keep) console.log(`kept: ${table.metadataLocation}`);
  } finally {
    if (!args.keep) await dropWarehouse(io, b);
    await catalog.close();
    rmSync(root, { recursive: true, force: true });
  }
  if (problems.length) {
    for (const p of problems) console.error(`FAIL: ${p}`);
    process.exit(1);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
