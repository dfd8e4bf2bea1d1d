/**
 * Issue 31's foundation on the real stack: floe writes and commits v2 position delete files
 * (RowDelta) on a partitioned and an unpartitioned table in floe's SQLite catalog on SeaweedFS S3,
 * and four readers agree on exactly the surviving rows: floe's own reader (planTasks +
 * readTaskBatches), PyIceberg, DuckDB's iceberg_scan and Iceberg Java (IcebergGenerics over
 * JdbcCatalog). Two delete commits per table, the first deleting rows of files in two partitions
 * (one delete file per partition), the second adding a data file and deleting rows of it and of
 * an older file in the same snapshot, then a plain append after the deletes (a later data sequence
 * number, which no earlier delete may touch). Java's ContentFileUtil.referencedDataFile must find
 * the data file a single-file delete file names in its file_path bounds.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  PositionDeleteCache,
  Transaction,
  currentSnapshot,
  planTasks,
  readTaskBatches,
  referencedDataFile,
  writePositionDeleteFiles,
  type Catalog,
  type DataFile,
  type FileIO,
  type LoadedTable,
  type PartitionSpec,
  type Schema,
  type TableIdentifier,
} from '../../iceberg';
import { ensureStack } from '../../stack';
import { stackEnv } from '../../stack/env';
import { stackPaths } from '../../stack/paths';
import { canonRows, canonValue, columnsOf, sortRows, type CanonRow } from '../oracles/canonical';
import { FAST_RETRY, appendRows, backend, createTable, dropWarehouse, open, writeFiles, type Backend } from '../oracles/floe-table';
import { duckRead, pyRead } from '../oracles/oracle';

const SCHEMA: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'region', required: false, type: 'string' },
    { id: 3, name: 'n', required: false, type: 'int' },
  ],
};
const BY_REGION: PartitionSpec = { 'spec-id': 0, fields: [{ 'source-id': 2, 'field-id': 1000, name: 'region', transform: 'identity' }] };
const UNPARTITIONED: PartitionSpec = { 'spec-id': 0, fields: [] };
const REGIONS = ['eu', 'us', 'ap'];

type Row = { id: bigint; region: string | null; n: number | null };
const rowsFrom = (from: number, count: number): Row[] =>
  Array.from({ length: count }, (_, k) => {
    const i = from + k;
    return { id: BigInt(i), region: i % 11 === 0 ? null : REGIONS[i % 3]!, n: i % 7 === 0 ? null : i * 3 };
  });

const libs = join(stackPaths().home, 'iceberg-rest', 'libs');
const skipJava = existsSync(join(libs, 'iceberg-data-1.10.1.jar')) ? false : `no Iceberg Java in ${libs} (floe stack up)`;

interface JavaRead {
  tasks: Array<{ task: string; deletes: Array<{ path: string; referenced: string | null }> }>;
  rows: CanonRow[];
}

function javaRead(b: Backend, classes: string, table: string): JavaRead {
  const s3 = stackEnv().s3;
  const db = b.config.uri.replace(/^sqlite:\/\/\//, '');
  const out = execFileSync('java', ['-cp', `${libs}/*:${classes}`, 'ReadTable', db, b.warehouse, table], {
    env: { ...process.env, FLOE_S3_ENDPOINT: s3.endpoint, FLOE_S3_ACCESS_KEY: s3.accessKeyId, FLOE_S3_SECRET_KEY: s3.secretAccessKey },
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 120_000,
  }).toString();
  const lines = out
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  return {
    tasks: lines.filter((l) => 'task' in l) as JavaRead['tasks'],
    rows: sortRows(lines.find((l) => 'rows' in l)!['rows'] as CanonRow[]),
  };
}

/** floe's reader: every task of the current snapshot, deleted positions skipped. */
async function floeRows(io: FileIO, table: LoadedTable): Promise<CanonRow[]> {
  const cols = columnsOf(SCHEMA);
  const cache = new PositionDeleteCache(io);
  const rows: CanonRow[] = [];
  for (const task of await planTasks(table, io)) {
    for await (const b of readTaskBatches(io, task, { cache })) {
      const vecs = cols.map(([name, t]) => [t, b.getChild(name)!] as const);
      for (let i = 0; i < b.numRows; i++) rows.push(vecs.map(([t, v]) => canonValue(t, v.get(i))));
    }
  }
  return sortRows(rows);
}

/** The row at each position of each data file: floe writes a partition's rows in input order. */
function rowsOfFile(rows: Row[], f: DataFile, partitioned: boolean): Row[] {
  return partitioned ? rows.filter((r) => r.region === (f.partition['region'] ?? null)) : rows;
}

describe(
  'position deletes floe writes: floe, PyIceberg, DuckDB and Iceberg Java read the same rows (real stack)',
  { timeout: 240_000 },
  () => {
    const root = mkdtempSync(join(tmpdir(), 'floe-posdel-'));
    const classes = mkdtempSync(join(tmpdir(), 'floe-posdel-java-'));
    let b: Backend;
    let catalog: Catalog;
    let io: FileIO;

    before(async () => {
      await ensureStack(['s3']);
      b = backend('s3', root);
      ({ catalog, io } = await open(b));
      if (!skipJava)
        execFileSync('javac', ['-d', classes, '-cp', `${libs}/*`, join(__dirname, '..', 'fixtures', 'java', 'ReadTable.java')], {
          stdio: 'pipe',
        });
    });

    after(async () => {
      if (io) await dropWarehouse(io, b);
      await catalog?.close();
      rmSync(root, { recursive: true, force: true });
      rmSync(classes, { recursive: true, force: true });
    });

    for (const [kind, spec] of [
      ['partitioned', BY_REGION],
      ['unpartitioned', UNPARTITIONED],
    ] as const) {
      it(`${kind} table: two delete commits, then an append`, async () => {
        const partitioned = spec.fields.length > 0;
        const id: TableIdentifier = { namespace: ['posdel'], name: `${kind}_${Date.now().toString(36)}` };
        const name = `${id.namespace[0]}.${id.name}`;
        await createTable(catalog, b, id, SCHEMA, spec);

        // two appends: per partition two data files (one when unpartitioned, per append)
        const rows1 = rowsFrom(0, 60),
          rows2 = rowsFrom(60, 60);
        const a1 = await appendRows(catalog, io, id, rows1, 'a1');
        const a2 = await appendRows(catalog, io, id, rows2, 'a2');
        const deleted = new Set<bigint>();
        const del = (rows: Row[], f: DataFile, positions: number[]) =>
          positions.map((p) => {
            deleted.add(rowsOfFile(rows, f, partitioned)[p]!.id);
            return { dataFile: f, pos: BigInt(p) };
          });
        const eu1 = a1.files.find((f) => !partitioned || f.partition['region'] === 'eu')!;
        const us2 = a2.files.find((f) => !partitioned || f.partition['region'] === 'us')!;

        // commit 1: rows of files in two partitions (one delete file per partition)
        const w1 = await writePositionDeleteFiles(
          io,
          a2.table.metadata,
          [...del(rows1, eu1, [0, 3, 4, 5, 17]), ...del(rows2, us2, [1, 2, 9])],
          (k) => `posdel1-${k}-${randomUUID()}.parquet`,
        );
        assert.equal(w1.deleteFiles.length, partitioned ? 2 : 1);
        if (partitioned) assert.deepEqual(w1.deleteFiles.map((d) => referencedDataFile(d)).sort(), [eu1.filePath, us2.filePath].sort());
        const tx1 = new Transaction(id);
        tx1.rowDelta([], w1.deleteFiles, { referencedDataFiles: w1.referencedDataFiles, summaryProps: { 'floe.test': 'deletes-1' } });
        const t1 = (await tx1.commit(catalog, io, { ...FAST_RETRY, table: a2.table })).table;
        assert.equal(currentSnapshot(t1.metadata)!.summary.operation, 'delete');

        // commit 2: a new data file, rows of it and more (and an already deleted) rows of eu1
        const rows3 = rowsFrom(120, 30);
        const added = await writeFiles(io, t1.metadata, rows3, 'a3');
        const eu3 = added.find((f) => !partitioned || f.partition['region'] === 'eu')!;
        const w2 = await writePositionDeleteFiles(
          io,
          t1.metadata,
          [...del(rows1, eu1, [5, 6]), ...del(rows3, eu3, [0, 2])],
          (k) => `posdel2-${k}-${randomUUID()}.parquet`,
        );
        const tx2 = new Transaction(id);
        tx2.rowDelta(added, w2.deleteFiles, { referencedDataFiles: w2.referencedDataFiles });
        const t2 = (await tx2.commit(catalog, io, { ...FAST_RETRY, table: t1 })).table;
        const s2 = currentSnapshot(t2.metadata)!;
        assert.equal(s2.summary.operation, 'overwrite');
        assert.equal(s2.summary['total-position-deletes'], '12', 'every delete row counts, the re-deleted one too');

        // an append after the deletes: its rows all survive, whatever file_path bounds say
        const rows4 = rowsFrom(150, 30);
        const a4 = await appendRows(catalog, io, id, rows4, 'a4');
        const table = a4.table;

        const all = [...rows1, ...rows2, ...rows3, ...rows4];
        const expected = canonRows(
          SCHEMA,
          all.filter((r) => !deleted.has(r.id)),
        );
        assert.equal(expected.length, all.length - 11);

        assert.deepEqual(await floeRows(io, table), expected, 'floe');
        const py = await pyRead(b.oracle, name);
        assert.equal(py.metadata_location, table.metadataLocation);
        assert.deepEqual(py.rows, expected, 'PyIceberg');
        const duck = await duckRead(table.metadataLocation, columnsOf(SCHEMA));
        assert.equal(duck.count, expected.length, 'DuckDB count(*)');
        assert.deepEqual(duck.rows, expected, 'DuckDB');
        if (!skipJava) {
          const java = javaRead(b, classes, name);
          assert.deepEqual(java.rows, expected, 'Iceberg Java');
          // Java attaches our deletes to the files they name, and finds single-file delete files' target
          const javaDeletes = new Map(java.tasks.map((t) => [t.task, t.deletes]));
          let singleFile = 0;
          for (const d of [...w1.deleteFiles, ...w2.deleteFiles]) {
            const only = referencedDataFile(d);
            if (only === undefined) continue;
            singleFile++;
            const found = javaDeletes.get(only)?.find((x) => x.path === d.filePath);
            assert.ok(found, `Java applies ${d.filePath} to ${only}`);
            assert.equal(found.referenced, only, 'Java ContentFileUtil.referencedDataFile');
          }
          assert.equal(singleFile, partitioned ? 2 : 0, 'single-file delete files checked in Java');
          for (const f of a4.files) assert.deepEqual(javaDeletes.get(f.filePath), [], 'no delete applies to a later append');
        }
      });
    }
  },
);
