/**
 * Iceberg format v3 on the real stack (floe's SQLite catalog on SeaweedFS S3): floe creates a v3
 * table, appends, writes deletion vectors (one Puffin file per commit) and commits them, then a
 * second DV commit on the same data file merges the first DV and removes it in the same snapshot.
 * A v2 table with a v2 position delete file is upgraded to v3 and gets a DV that absorbs it.
 * Readers: floe's scan, Iceberg Java 1.10.1 (IcebergGenerics over JdbcCatalog), PyIceberg 0.12.0
 * and DuckDB 1.5.5 (iceberg extension): all four apply the DVs and return the same rows. Last, Java
 * writes a DV (BaseDVFileWriter, positions in two 32-bit buckets) that floe reads, merges and
 * replaces, and Java reads floe's merge back. floe's compaction of a v3 table keeps row lineage:
 * Java (MetadataColumns.ROW_ID / LAST_UPDATED_SEQUENCE_NUMBER projected) reads the same _row_id and
 * _last_updated_sequence_number of every row before and after it.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  PositionDeleteCache,
  catalogFromConfig,
  Transaction,
  currentSnapshot,
  decodePuffinFooter,
  mergeDeletionVectors,
  newTableMetadata,
  planTasks,
  readDeletionVector,
  readManifestList,
  readTaskBatches,
  scanBatches,
  writePositionDeleteFiles,
  type Catalog,
  type DataFile,
  type FileIO,
  type LoadedTable,
  type PartitionSpec,
  type Schema,
  type TableIdentifier,
} from '../../iceberg';
import { commitRewrite, planCompaction, rewriteFileGroup } from '../../maintenance/compact';
import { ensureStack } from '../../stack';
import type { Tables } from '../../table/tables';
import { stackEnv } from '../../stack/env';
import { stackPaths } from '../../stack/paths';
import { icebergRestUri, icebergRestWarehouse } from '../../stack/services/iceberg-rest';
import { canonRows, canonValue, columnsOf, sortRows, type CanonRow } from '../oracles/canonical';
import { FAST_RETRY, appendRows, backend, dropWarehouse, open, type Backend } from '../oracles/floe-table';
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
const REGIONS = ['eu', 'us', 'ap'];

type Row = { id: bigint; region: string | null; n: number | null };
const rowsFrom = (from: number, count: number): Row[] =>
  Array.from({ length: count }, (_, k) => {
    const i = from + k;
    return { id: BigInt(i), region: REGIONS[i % 3]!, n: i % 7 === 0 ? null : i * 3 };
  });

const libs = join(stackPaths().home, 'iceberg-rest', 'libs');
const skipJava = existsSync(join(libs, 'iceberg-data-1.10.1.jar')) ? false : `no Iceberg Java in ${libs} (floe stack up)`;

function javaRead(b: Backend, classes: string, table: string): CanonRow[] {
  const s3 = stackEnv().s3;
  const db = b.config.uri.replace(/^sqlite:\/\/\//, '');
  const out = execFileSync('java', ['-cp', `${libs}/*:${classes}`, 'ReadTable', db, b.warehouse, table], {
    env: { ...process.env, FLOE_S3_ENDPOINT: s3.endpoint, FLOE_S3_ACCESS_KEY: s3.accessKeyId, FLOE_S3_SECRET_KEY: s3.secretAccessKey },
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 120_000,
  }).toString();
  const line = out
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{"rows"'))[0]!;
  return sortRows((JSON.parse(line) as { rows: CanonRow[] }).rows);
}

/**
 * Iceberg Java 1.10.1 writes a deletion vector (BaseDVFileWriter, one Puffin file) for one data
 * file of a table and commits it with RowDelta. Kept here (written to a temp dir and compiled) so
 * the test is one file. Usage: WriteDV <sqlite path> <warehouse> <table> <data file> <positions,...>
 */
const WRITE_DV_JAVA = `
import java.util.HashMap;
import java.util.Map;
import org.apache.iceberg.*;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.deletes.BaseDVFileWriter;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.OutputFileFactory;
import org.apache.iceberg.jdbc.JdbcCatalog;

public class WriteDV {
  public static void main(String[] args) throws Exception {
    Map<String, String> props = new HashMap<>();
    props.put(CatalogProperties.URI, "jdbc:sqlite:" + args[0]);
    props.put(CatalogProperties.WAREHOUSE_LOCATION, args[1]);
    props.put(CatalogProperties.FILE_IO_IMPL, "org.apache.iceberg.aws.s3.S3FileIO");
    props.put("s3.endpoint", System.getenv("FLOE_S3_ENDPOINT"));
    props.put("s3.path-style-access", "true");
    props.put("s3.access-key-id", System.getenv("FLOE_S3_ACCESS_KEY"));
    props.put("s3.secret-access-key", System.getenv("FLOE_S3_SECRET_KEY"));
    props.put("client.region", "us-east-1");
    JdbcCatalog catalog = new JdbcCatalog();
    catalog.initialize("floe", props);
    Table table = catalog.loadTable(TableIdentifier.parse(args[2]));
    DataFile target = null;
    try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
      for (FileScanTask t : tasks) if (t.file().location().equals(args[3])) target = t.file();
    }
    OutputFileFactory files = OutputFileFactory.builderFor(table, 1, 1).format(FileFormat.PUFFIN).build();
    BaseDVFileWriter writer = new BaseDVFileWriter(files, path -> null);
    for (String p : args[4].split(",")) writer.delete(target.location(), Long.parseLong(p), table.specs().get(target.specId()), target.partition());
    writer.close();
    RowDelta delta = table.newRowDelta();
    for (DeleteFile dv : writer.result().deleteFiles()) {
      delta.addDeletes(dv);
      System.out.println("{\\"dv\\":\\"" + dv.location() + "\\",\\"offset\\":" + dv.contentOffset() + ",\\"size\\":" + dv.contentSizeInBytes() + ",\\"records\\":" + dv.recordCount() + "}");
    }
    delta.commit();
    catalog.close();
  }
}
`;

function javaWriteDV(
  b: Backend,
  classes: string,
  table: string,
  dataFile: string,
  positions: bigint[],
): { dv: string; offset: number; size: number; records: number } {
  const s3 = stackEnv().s3;
  const db = b.config.uri.replace(/^sqlite:\/\/\//, '');
  const out = execFileSync('java', ['-cp', `${libs}/*:${classes}`, 'WriteDV', db, b.warehouse, table, dataFile, positions.join(',')], {
    env: { ...process.env, FLOE_S3_ENDPOINT: s3.endpoint, FLOE_S3_ACCESS_KEY: s3.accessKeyId, FLOE_S3_SECRET_KEY: s3.secretAccessKey },
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 120_000,
  }).toString();
  return JSON.parse(
    out
      .trim()
      .split('\n')
      .filter((l) => l.startsWith('{"dv"'))[0]!,
  ) as { dv: string; offset: number; size: number; records: number };
}

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

/** Iceberg Java 1.10.1's row lineage of every live row: id -> [_row_id, _last_updated_sequence_number] as strings. */
function javaLineage(b: Backend, classes: string, table: string): Map<string, [string | null, string | null]> {
  const s3 = stackEnv().s3;
  const db = b.config.uri.replace(/^sqlite:\/\/\//, '');
  const out = execFileSync('java', ['-cp', `${libs}/*:${classes}`, 'ReadLineage', db, b.warehouse, table, 'id'], {
    env: { ...process.env, FLOE_S3_ENDPOINT: s3.endpoint, FLOE_S3_ACCESS_KEY: s3.accessKeyId, FLOE_S3_SECRET_KEY: s3.secretAccessKey },
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 120_000,
  }).toString();
  const line = out
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{"rows"'))[0]!;
  const rows = (JSON.parse(line) as { rows: [string, string | null, string | null][] }).rows;
  return new Map(rows.map(([id, rowId, seq]) => [id, [rowId, seq]]));
}

/** floe's row lineage of every live row (scan with the lineage option), in javaLineage's form. */
async function floeLineage(io: FileIO, t: LoadedTable): Promise<Map<string, [string | null, string | null]>> {
  const out = new Map<string, [string | null, string | null]>();
  const str = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));
  for await (const b of scanBatches(t, io, { columns: ['id'], rowLineage: true })) {
    const ids = b.getChild('id')!,
      rowIds = b.getChild('_row_id')!,
      seqs = b.getChild('_last_updated_sequence_number')!;
    for (let i = 0; i < b.numRows; i++) out.set(String(ids.get(i)), [str(rowIds.get(i)), str(seqs.get(i))]);
  }
  return out;
}

/** Each live data file's first_row_id (inherited when the manifest holds none). */
async function firstRowIds(t: LoadedTable): Promise<Map<string, bigint | undefined>> {
  // io is the suite's; planTasks reads manifests with first row id inheritance applied
  return new Map((await planTasks(t, sharedIo!)).map((x) => [x.file.filePath, x.file.firstRowId]));
}
let sharedIo: FileIO | undefined;

describe('Iceberg v3 deletion vectors floe writes: floe, Iceberg Java, PyIceberg and DuckDB (real stack)', { timeout: 300_000 }, () => {
  const root = mkdtempSync(join(tmpdir(), 'floe-v3-'));
  const classes = mkdtempSync(join(tmpdir(), 'floe-v3-java-'));
  let b: Backend;
  let catalog: Catalog;
  let io: FileIO;

  before(async () => {
    await ensureStack(['s3']);
    b = backend('s3', root);
    ({ catalog, io } = await open(b));
    sharedIo = io;
    if (!skipJava) {
      const src = join(classes, 'WriteDV.java');
      writeFileSync(src, WRITE_DV_JAVA);
      const fixtures = join(__dirname, '..', 'fixtures', 'java');
      execFileSync(
        'javac',
        ['-d', classes, '-cp', `${libs}/*`, join(fixtures, 'ReadTable.java'), join(fixtures, 'ReadLineage.java'), src],
        {
          stdio: 'pipe',
        },
      );
    }
  });

  after(async () => {
    if (io) await dropWarehouse(io, b);
    await catalog?.close();
    rmSync(root, { recursive: true, force: true });
    rmSync(classes, { recursive: true, force: true });
  });

  /**
   * Every reader on the table must return exactly `expected`: floe, Iceberg Java 1.10.1, PyIceberg
   * 0.12.0 and DuckDB 1.5.5 all apply deletion vectors (found when this test was written).
   */
  async function readAll(table: LoadedTable, name: string, expected: CanonRow[]): Promise<void> {
    assert.deepEqual(await floeRows(io, table), expected, 'floe');
    if (!skipJava) assert.deepEqual(javaRead(b, classes, name), expected, 'Iceberg Java 1.10.1');
    const py = await pyRead(b.oracle, name);
    assert.equal(py.metadata_location, table.metadataLocation);
    assert.deepEqual(py.rows, expected, 'PyIceberg 0.12.0');
    const duck = await duckRead(table.metadataLocation, columnsOf(SCHEMA));
    assert.equal(duck.count, expected.length, 'DuckDB count(*)');
    assert.deepEqual(duck.rows, expected, 'DuckDB 1.5.5');
  }

  it('v3 table: append, a DV commit, a second DV commit merging the first on the same data file', async () => {
    const id: TableIdentifier = { namespace: ['v3'], name: `dv_${Date.now().toString(36)}` };
    const name = `${id.namespace[0]}.${id.name}`;
    if (!(await catalog.namespaceExists(id.namespace))) await catalog.createNamespace(id.namespace);
    const created = await catalog.createTable(
      id,
      newTableMetadata({
        location: `${b.warehouse}/${id.namespace.join('/')}/${id.name}`,
        schema: SCHEMA,
        spec: BY_REGION,
        tableUuid: randomUUID(),
        formatVersion: 3,
        properties: { 'write.parquet.compression-codec': 'zstd' },
      }),
    );
    assert.equal(created.metadata['format-version'], 3);
    assert.equal(created.metadata['next-row-id'], 0n);

    const rows1 = rowsFrom(0, 60),
      rows2 = rowsFrom(60, 60);
    const a1 = await appendRows(catalog, io, id, rows1, 'a1');
    assert.equal(a1.table.metadata['next-row-id'], 60n);
    const a2 = await appendRows(catalog, io, id, rows2, 'a2');
    assert.equal(currentSnapshot(a2.table.metadata)!['first-row-id'], 60n);
    assert.equal(a2.table.metadata['next-row-id'], 120n);
    const rowIds = await firstRowIds(a2.table);
    assert.deepEqual(
      [...rowIds.values()].map((x) => x!).sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)),
      [0n, 20n, 40n, 60n, 80n, 100n],
      'each file 20 rows: ids 0.. for the first append, 60.. for the second',
    );

    const deleted = new Set<bigint>();
    const of = (rows: Row[], f: DataFile) => rows.filter((r) => r.region === f.partition['region']);
    const target = (rows: Row[], f: DataFile, positions: number[]) => {
      for (const p of positions) deleted.add(of(rows, f)[p]!.id);
      return { dataFile: f, positions: positions.map(BigInt) };
    };
    const eu1 = a1.files.find((f) => f.partition['region'] === 'eu')!;
    const us2 = a2.files.find((f) => f.partition['region'] === 'us')!;

    // commit 1: DVs for two data files of two partitions, in one Puffin file
    const m1 = await mergeDeletionVectors(
      io,
      a2.table.metadata,
      [target(rows1, eu1, [0, 3, 4, 17]), target(rows2, us2, [1, 2, 9])],
      `dv1-${randomUUID()}.puffin`,
    );
    assert.equal(m1.removeDeleteFiles.length, 0);
    assert.equal(new Set(m1.deleteFiles.map((d) => d.filePath)).size, 1);
    const tx1 = new Transaction(id);
    tx1.rowDelta([], m1.deleteFiles, { referencedDataFiles: m1.referencedDataFiles, removeDeleteFiles: m1.removeDeleteFiles });
    const t1 = (await tx1.commit(catalog, io, { ...FAST_RETRY, table: a2.table })).table;
    const s1 = currentSnapshot(t1.metadata)!;
    assert.equal(s1.summary.operation, 'delete');
    assert.equal(s1.summary['added-dvs'], '2');
    assert.equal(s1['first-row-id'], 120n);
    // the commit merged the two data manifests (Java's merge rules): the merged one got a new
    // first_row_id with room for its existing rows, which keep the row ids they had
    assert.equal(t1.metadata['next-row-id'], 120n + s1['added-rows']!);
    assert.deepEqual(await firstRowIds(t1), rowIds);

    // commit 2: more of eu1 (one already deleted): the new DV holds both, the old is removed
    const m2 = await mergeDeletionVectors(io, t1.metadata, [target(rows1, eu1, [5, 3, 6])], `dv2-${randomUUID()}.puffin`);
    assert.deepEqual(
      m2.removeDeleteFiles.map((f) => [f.filePath, f.referencedDataFile]),
      [[m1.deleteFiles[0]!.filePath, eu1.filePath]],
    );
    assert.equal(m2.deleteFiles[0]!.recordCount, 6);
    const tx2 = new Transaction(id);
    tx2.rowDelta([], m2.deleteFiles, { referencedDataFiles: m2.referencedDataFiles, removeDeleteFiles: m2.removeDeleteFiles });
    const t2 = (await tx2.commit(catalog, io, { ...FAST_RETRY, table: t1 })).table;
    const s2 = currentSnapshot(t2.metadata)!;
    assert.equal(s2.summary['added-dvs'], '1');
    assert.equal(s2.summary['removed-dvs'], '1');
    assert.equal(s2.summary['total-position-deletes'], '9', 'eu1: 6, us2: 3');
    const tasks = await planTasks(t2, io);
    const withDeletes = new Map(tasks.filter((t) => t.deletes.length > 0).map((t) => [t.file.filePath, t.deletes.map((d) => d.filePath)]));
    assert.deepEqual(
      withDeletes,
      new Map([
        [eu1.filePath, [m2.deleteFiles[0]!.filePath]],
        [us2.filePath, [m1.deleteFiles[1]!.filePath]],
      ]),
    );
    // the manifests and the Puffin file as Java writes them
    const puffin = decodePuffinFooter(await io.read(m2.deleteFiles[0]!.filePath));
    assert.deepEqual(puffin.blobs[0]!.properties, { 'referenced-data-file': eu1.filePath, cardinality: '6' });
    const list = await readManifestList(io, s2['manifest-list']);
    assert.ok(list.filter((m) => m.content === 0).every((m) => m.firstRowId !== undefined));

    const all = [...rows1, ...rows2];
    const expected = canonRows(
      SCHEMA,
      all.filter((r) => !deleted.has(r.id)),
    );
    assert.equal(expected.length, all.length - 9);
    await readAll(t2, name, expected);
  });

  it('floe compaction of a v3 table keeps row lineage: Iceberg Java reads the same _row_id and _last_updated_sequence_number', async () => {
    const id: TableIdentifier = { namespace: ['v3'], name: `lin_${Date.now().toString(36)}` };
    const name = `${id.namespace[0]}.${id.name}`;
    if (!(await catalog.namespaceExists(id.namespace))) await catalog.createNamespace(id.namespace);
    await catalog.createTable(
      id,
      newTableMetadata({
        location: `${b.warehouse}/${id.namespace.join('/')}/${id.name}`,
        schema: SCHEMA,
        spec: BY_REGION,
        tableUuid: randomUUID(),
        formatVersion: 3,
      }),
    );
    const rows1 = rowsFrom(0, 60),
      rows2 = rowsFrom(60, 60);
    const a1 = await appendRows(catalog, io, id, rows1, 'l1');
    const a2 = await appendRows(catalog, io, id, rows2, 'l2');
    const deleted = new Set<bigint>();
    const target = (rows: Row[], f: DataFile, positions: number[]) => {
      const of = rows.filter((r) => r.region === f.partition['region']);
      for (const p of positions) deleted.add(of[p]!.id);
      return { dataFile: f, positions: positions.map(BigInt) };
    };
    const eu1 = a1.files.find((f) => f.partition['region'] === 'eu')!;
    const us2 = a2.files.find((f) => f.partition['region'] === 'us')!;
    const m = await mergeDeletionVectors(
      io,
      a2.table.metadata,
      [target(rows1, eu1, [0, 5, 19]), target(rows2, us2, [3])],
      `dvl-${randomUUID()}.puffin`,
    );
    const tx = new Transaction(id);
    tx.rowDelta([], m.deleteFiles, { referencedDataFiles: m.referencedDataFiles, removeDeleteFiles: m.removeDeleteFiles });
    const t0 = (await tx.commit(catalog, io, { ...FAST_RETRY, table: a2.table })).table;

    const before = await floeLineage(io, t0);
    assert.equal(before.size, 120 - deleted.size);
    assert.ok([...before.values()].every(([r, s]) => r !== null && s !== null));
    if (!skipJava) assert.deepEqual(javaLineage(b, classes, name), before, 'Iceberg Java 1.10.1 reads the lineage floe synthesizes');

    // floe's compaction (plan, rewrite every group, commit), as the workflow runs it
    const tables = { catalog, io, load: () => catalog.loadTable(id) } as unknown as Tables;
    const plan = await planCompaction(tables, undefined, { table: name, options: { minInputFiles: 2 } });
    assert.equal(plan.groups.length, 3, 'one group per region');
    const runId = `lin-${randomUUID()}`;
    const results = [];
    for (const group of plan.groups) {
      const input = { table: name, location: plan.location, runId, group, targetFileSizeBytes: 128 * 1024 * 1024 };
      results.push({ group, result: await rewriteFileGroup(tables, input) });
    }
    const r = await commitRewrite(tables, { table: name, location: plan.location, commitId: `${runId}-c`, groups: results });
    assert.deepEqual(r.skippedGroups, []);
    const t1 = await catalog.loadTable(id);
    const tasks = await planTasks(t1, io);
    assert.equal(tasks.length, 3);
    assert.ok(tasks.every((x) => x.deletes.length === 0 && x.file.filePath.includes(runId)));

    assert.deepEqual(await floeLineage(io, t1), before, 'floe, after compaction');
    const expected = canonRows(
      SCHEMA,
      [...rows1, ...rows2].filter((row) => !deleted.has(row.id)),
    );
    if (!skipJava) assert.deepEqual(javaLineage(b, classes, name), before, 'Iceberg Java 1.10.1, after compaction');
    // the rows, without lineage columns, for floe, Java, PyIceberg and DuckDB
    await readAll(t1, name, expected);
  });

  it('a v2 table with position deletes upgraded to v3 gets a DV that absorbs them', async () => {
    const id: TableIdentifier = { namespace: ['v3'], name: `up_${Date.now().toString(36)}` };
    const name = `${id.namespace[0]}.${id.name}`;
    if (!(await catalog.namespaceExists(id.namespace))) await catalog.createNamespace(id.namespace);
    await catalog.createTable(
      id,
      newTableMetadata({
        location: `${b.warehouse}/${id.namespace.join('/')}/${id.name}`,
        schema: SCHEMA,
        spec: BY_REGION,
        tableUuid: randomUUID(),
      }),
    );
    const rows = rowsFrom(0, 45);
    const a = await appendRows(catalog, io, id, rows, 'a');
    const eu = a.files.find((f) => f.partition['region'] === 'eu')!;
    const euRows = rows.filter((r) => r.region === 'eu');
    const pd = await writePositionDeleteFiles(
      io,
      a.table.metadata,
      [0n, 1n].map((pos) => ({ dataFile: eu, pos })),
      (k) => `pd-${k}-${randomUUID()}.parquet`,
    );
    const tx = new Transaction(id);
    tx.rowDelta([], pd.deleteFiles, { referencedDataFiles: pd.referencedDataFiles });
    let t = (await tx.commit(catalog, io, { ...FAST_RETRY, table: a.table })).table;
    assert.equal(t.metadata['format-version'], 2);

    t = await catalog.commitTable(
      id,
      [{ type: 'assert-table-uuid', uuid: t.metadata['table-uuid'] }],
      [{ action: 'upgrade-format-version', 'format-version': 3 }],
    );
    assert.equal(t.metadata['format-version'], 3);
    assert.equal(t.metadata['next-row-id'], 0n);

    const m = await mergeDeletionVectors(io, t.metadata, [{ dataFile: eu, positions: [4n] }], `dv-up-${randomUUID()}.puffin`);
    assert.deepEqual(
      m.removeDeleteFiles.map((f) => f.filePath),
      pd.deleteFiles.map((f) => f.filePath),
    );
    assert.equal(m.deleteFiles[0]!.recordCount, 3);
    const tx2 = new Transaction(id);
    tx2.rowDelta([], m.deleteFiles, { referencedDataFiles: m.referencedDataFiles, removeDeleteFiles: m.removeDeleteFiles });
    t = (await tx2.commit(catalog, io, { ...FAST_RETRY, table: t })).table;
    const s = currentSnapshot(t.metadata)!;
    assert.equal(s['first-row-id'], 0n);
    assert.equal(t.metadata['next-row-id'], 45n, 'the upgraded data manifest got its row ids');
    const deleted = new Set([euRows[0]!.id, euRows[1]!.id, euRows[4]!.id]);
    const expected = canonRows(
      SCHEMA,
      rows.filter((r) => !deleted.has(r.id)),
    );
    await readAll(t, name, expected);
  });
  it(
    'a DV Iceberg Java writes (positions in two 32-bit buckets) is read by floe, merged by floe and read back by Java',
    { skip: skipJava },
    async () => {
      const id: TableIdentifier = { namespace: ['v3'], name: `java_${Date.now().toString(36)}` };
      const name = `${id.namespace[0]}.${id.name}`;
      if (!(await catalog.namespaceExists(id.namespace))) await catalog.createNamespace(id.namespace);
      await catalog.createTable(
        id,
        newTableMetadata({
          location: `${b.warehouse}/${id.namespace.join('/')}/${id.name}`,
          schema: SCHEMA,
          spec: BY_REGION,
          tableUuid: randomUUID(),
          formatVersion: 3,
        }),
      );
      const rows = rowsFrom(0, 60);
      const a = await appendRows(catalog, io, id, rows, 'a');
      const eu = a.files.find((f) => f.partition['region'] === 'eu')!;
      const euRows = rows.filter((r) => r.region === 'eu');
      // a run (0..9), a lone position, and one past 2^32 (Java writes buckets 0 and 1)
      const javaPositions = [...Array.from({ length: 10 }, (_, i) => BigInt(i)), 15n, (1n << 32n) + 1n];
      const written = javaWriteDV(b, classes, name, eu.filePath, javaPositions);
      assert.equal(written.records, javaPositions.length);

      let t = await catalog.loadTable(id);
      const tasks = await planTasks(t, io);
      const dv = tasks.find((x) => x.file.filePath === eu.filePath)!.deletes;
      assert.equal(dv.length, 1);
      assert.deepEqual(
        [
          dv[0]!.fileFormat,
          dv[0]!.filePath,
          dv[0]!.referencedDataFile,
          dv[0]!.contentOffset,
          dv[0]!.contentSizeInBytes,
          dv[0]!.recordCount,
        ],
        ['PUFFIN', written.dv, eu.filePath, written.offset, written.size, written.records],
      );
      assert.deepEqual([...(await readDeletionVector(io, dv[0]!))], javaPositions);
      const footer = decodePuffinFooter(await io.read(written.dv));
      assert.deepEqual(footer.blobs[0]!.fields, [2147483645]);
      assert.equal(footer.blobs[0]!.properties!['cardinality'], String(javaPositions.length));

      const deleted = new Set([...Array.from({ length: 10 }, (_, i) => euRows[i]!.id), euRows[15]!.id]);
      const expect = (): CanonRow[] =>
        canonRows(
          SCHEMA,
          rows.filter((r) => !deleted.has(r.id)),
        );
      assert.deepEqual(await floeRows(io, t), expect(), 'floe reads the DV Java wrote');

      // floe merges one more position into Java's DV and removes it
      const m = await mergeDeletionVectors(io, t.metadata, [{ dataFile: eu, positions: [19n] }], `dv-${randomUUID()}.puffin`);
      assert.deepEqual(
        m.removeDeleteFiles.map((f) => [f.filePath, f.contentOffset]),
        [[written.dv, written.offset]],
      );
      const tx = new Transaction(id);
      tx.rowDelta([], m.deleteFiles, { referencedDataFiles: m.referencedDataFiles, removeDeleteFiles: m.removeDeleteFiles });
      t = (await tx.commit(catalog, io, { ...FAST_RETRY, table: t })).table;
      deleted.add(euRows[19]!.id);
      assert.deepEqual(await floeRows(io, t), expect(), 'floe');
      assert.deepEqual(javaRead(b, classes, name), expect(), 'Iceberg Java reads the DV floe merged');
    },
  );
  it("Iceberg Java's REST catalog server accepts floe's v3 commits (row lineage checked by its TableMetadata builder)", async () => {
    await ensureStack(['s3', 'iceberg-rest']);
    const s3 = stackEnv().s3;
    const rest = await catalogFromConfig({
      type: 'rest',
      uri: icebergRestUri(),
      credential: `floe-it:${randomUUID()}`,
      s3: {
        endpoint: s3.endpoint,
        region: s3.region,
        forcePathStyle: true,
        accessKeyId: s3.accessKeyId,
        secretAccessKey: s3.secretAccessKey,
      },
    });
    const ns = `v3_${Date.now().toString(36)}`;
    const id: TableIdentifier = { namespace: [ns], name: 't' };
    try {
      await rest.catalog.createNamespace([ns]);
      const created = await rest.catalog.createTable(
        id,
        newTableMetadata({
          location: `${icebergRestWarehouse()}/${ns}/t`,
          schema: SCHEMA,
          spec: BY_REGION,
          tableUuid: randomUUID(),
          formatVersion: 3,
        }),
      );
      assert.equal(created.metadata['format-version'], 3);
      assert.equal(created.metadata['next-row-id'], 0n);
      const rows = rowsFrom(0, 30);
      const a = await appendRows(rest.catalog, rest.io, id, rows, 'a');
      assert.equal(currentSnapshot(a.table.metadata)!['first-row-id'], 0n);
      assert.equal(a.table.metadata['next-row-id'], 30n, "the server's next-row-id");
      const us = a.files.find((f) => f.partition['region'] === 'us')!;
      let t = a.table;
      for (const positions of [
        [0n, 1n],
        [1n, 7n],
      ]) {
        const m = await mergeDeletionVectors(rest.io, t.metadata, [{ dataFile: us, positions }], `dv-${randomUUID()}.puffin`);
        const tx = new Transaction(id);
        tx.rowDelta([], m.deleteFiles, { referencedDataFiles: m.referencedDataFiles, removeDeleteFiles: m.removeDeleteFiles });
        t = (await tx.commit(rest.catalog, rest.io, { ...FAST_RETRY, table: t })).table;
      }
      const usRows = rows.filter((r) => r.region === 'us');
      const deleted = new Set([usRows[0]!.id, usRows[1]!.id, usRows[7]!.id]);
      const floe: CanonRow[] = [];
      for (const task of await planTasks(t, rest.io)) {
        for await (const batch of readTaskBatches(rest.io, task)) {
          const vecs = columnsOf(SCHEMA).map(([n, ty]) => [ty, batch.getChild(n)!] as const);
          for (let i = 0; i < batch.numRows; i++) floe.push(vecs.map(([ty, v]) => canonValue(ty, v.get(i))));
        }
      }
      assert.deepEqual(
        sortRows(floe),
        canonRows(
          SCHEMA,
          rows.filter((r) => !deleted.has(r.id)),
        ),
      );
      assert.equal(currentSnapshot(t.metadata)!.summary['total-position-deletes'], '3');
    } finally {
      await rest.catalog.dropTable(id, { purge: true }).catch(() => undefined);
      await rest.catalog.dropNamespace([ns]).catch(() => undefined);
      await rest.catalog.close();
    }
  });
});
