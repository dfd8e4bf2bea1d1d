/**
 * Interop 2: PyIceberg appends to a table floe created; floe reads it (planFiles over
 * PyIceberg's manifests + floe's Parquet reader over PyIceberg's Parquet), appends again, then
 * compacts every partition into one file (read all, write one, rewriteFiles); PyIceberg and DuckDB
 * read the result: same rows, snapshots append/append/replace with sequence numbers 1/2/3.
 * On file:// and SeaweedFS S3.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  planTasks,
  readManifestList,
  currentSchema,
  defaultSpec,
  partitionKey,
  partitionRecord,
  type Catalog,
  type FileIO,
  type DataFile,
  type PartitionSpec,
  type Schema,
} from '../../iceberg';
import { ensureStack } from '../../stack';
import { canonRows, canonValue, columnsOf, sortRows } from '../oracles/canonical';
import {
  appendRows,
  backend,
  compact,
  createTable,
  dropWarehouse,
  liveFiles,
  open,
  readRows,
  type Backend,
  type BackendKind,
} from '../oracles/floe-table';
import { duckRead, pyAppend, pyRead } from '../oracles/oracle';

const SCHEMA: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'region', required: false, type: 'string' },
    { id: 3, name: 'ts', required: false, type: 'timestamptz' },
    { id: 4, name: 'amount', required: false, type: 'decimal(9, 2)' },
    { id: 5, name: 'score', required: false, type: 'double' },
    { id: 6, name: 'u', required: false, type: 'uuid' },
    { id: 7, name: 'note', required: false, type: 'string' },
  ],
};
const SPEC: PartitionSpec = {
  'spec-id': 0,
  fields: [
    { 'source-id': 2, 'field-id': 1000, name: 'region', transform: 'identity' },
    { 'source-id': 3, 'field-id': 1001, name: 'ts_day', transform: 'day' },
  ],
};
const MAY_1 = 1_714_521_600_000_000n;
const DAY = 86_400_000_000n;

function rows(from: number, n: number): Array<Record<string, unknown>> {
  return Array.from({ length: n }, (_, k) => {
    const i = from + k;
    return {
      id: BigInt(i),
      region: ['eu', 'us', null][i % 3],
      ts: i % 10 === 9 ? null : MAY_1 + BigInt(i % 2) * DAY + BigInt(i) * 1_000_003n,
      amount: i % 7 === 0 ? null : BigInt(i * 1001 - 20_000),
      score: i % 11 === 0 ? NaN : i % 5 === 0 ? null : i / 8,
      u: i % 4 === 0 ? null : `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      note: i % 6 === 0 ? null : `note ${i} ✓`,
    };
  });
}

/** JS rows -> canonical form keyed by column, what iceberg_oracle.py's append takes. */
const canonical = (rs: Array<Record<string, unknown>>) =>
  rs.map((r) => Object.fromEntries(columnsOf(SCHEMA).map(([n, t]) => [n, canonValue(t, r[n])])));

for (const kind of ['file', 's3'] as BackendKind[]) {
  void describe(`interop (${kind}): PyIceberg appends, floe reads + appends + compacts, PyIceberg reads`, { timeout: 170_000 }, () => {
    const root = mkdtempSync(join(tmpdir(), `floe-interop-pywrite-${kind}-`));
    const id = { namespace: ['interop'], name: 'mixed' };
    const table = 'interop.mixed';
    const pyRows = rows(0, 60);
    const floeRows = rows(60, 45);
    let b: Backend;
    let catalog: Catalog;
    let io: FileIO;
    let pyFiles: DataFile[] = [];
    let beforeCompaction: DataFile[] = [];
    let compacted: DataFile[] = [];

    before(async () => {
      await ensureStack(['s3']);
      b = backend(kind, root);
      ({ catalog, io } = await open(b));
      // merge from the 2nd manifest on: floe's append rewrites PyIceberg's manifest entries as EXISTING
      await createTable(catalog, b, id, SCHEMA, SPEC, { 'commit.manifest.min-count-to-merge': '2' });
    });
    after(async () => {
      if (io) await dropWarehouse(io, b);
      await catalog?.close();
      rmSync(root, { recursive: true, force: true });
    });

    void it('PyIceberg appends to the floe-created table', async () => {
      const r = await pyAppend(b.oracle, table, canonical(pyRows), { writer: 'pyiceberg' });
      const t = await catalog.loadTable(id);
      assert.equal(t.metadataLocation, r.metadata_location, 'floe loads the metadata PyIceberg committed');
      assert.equal(t.metadata['current-snapshot-id']?.toString(), r.snapshot_id);
      assert.equal(t.metadata['last-sequence-number'], 1n);
    });

    void it("floe plans PyIceberg's files and reads PyIceberg's Parquet back row for row", async () => {
      const t = await catalog.loadTable(id);
      const tasks = await planTasks(t, io);
      pyFiles = tasks.map((x) => x.file);
      assert.ok(pyFiles.length >= 4, `expected one file per (region, day), found ${pyFiles.length}`);
      assert.ok(
        tasks.every((x) => x.dataSequenceNumber === 1n),
        'data sequence numbers inherited from the manifest list',
      );
      assert.equal(
        pyFiles.reduce((a, f) => a + f.recordCount, 0),
        pyRows.length,
        'record counts from PyIceberg manifests',
      );
      // partition tuples PyIceberg wrote decode to what floe computes for the rows in each file
      const schema = currentSchema(t.metadata),
        spec = defaultSpec(t.metadata);
      const expectedKeys = new Set(pyRows.map((r) => partitionKey(partitionRecord(spec, schema, r))));
      assert.deepEqual(new Set(pyFiles.map((f) => partitionKey(f.partition))), expectedKeys);
      for (const f of pyFiles) {
        const inFile = await readRows(io, SCHEMA, [f]);
        const want = canonRows(
          SCHEMA,
          pyRows.filter((r) => partitionKey(partitionRecord(spec, schema, r)) === partitionKey(f.partition)),
        );
        assert.deepEqual(sortRows(inFile), want, `rows of ${f.filePath}`);
      }
    });

    void it('floe appends again on top of the PyIceberg snapshot', async () => {
      const r = await appendRows(catalog, io, id, floeRows, 'floe', { writer: 'floe' });
      assert.equal(r.table.metadata['last-sequence-number'], 2n);
      beforeCompaction = await liveFiles(io, r.table);
      assert.equal(beforeCompaction.length, pyFiles.length + r.files.length);
      const all = await readRows(io, SCHEMA, beforeCompaction);
      assert.deepEqual(sortRows(all), canonRows(SCHEMA, [...pyRows, ...floeRows]));
      // PyIceberg's files keep data sequence number 1 through floe's manifest merge, floe's get 2
      const manifests = await readManifestList(io, r.table.metadata.snapshots.at(-1)!['manifest-list']);
      assert.equal(manifests.length, 1, "PyIceberg's manifest and floe's new one were merged");
      const py = await pyRead(b.oracle, table);
      const pyPaths = new Set(pyFiles.map((f) => f.filePath));
      for (const f of py.files) {
        const seq = f.sequence_number;
        assert.equal(seq, pyPaths.has(f.file_path) ? 1 : 2, `${f.file_path}: data sequence number after the merge`);
      }
      assert.deepEqual(py.rows, canonRows(SCHEMA, [...pyRows, ...floeRows]));
    });

    void it('floe compacts every partition into one file (rewriteFiles -> replace)', async () => {
      const t = await catalog.loadTable(id);
      const r = await compact(catalog, io, t, beforeCompaction, 'compact');
      compacted = r.added;
      const live = await liveFiles(io, r.table);
      assert.deepEqual(live.map((f) => f.filePath).sort(), compacted.map((f) => f.filePath).sort(), 'only the compacted files are live');
      const keys = live.map((f) => partitionKey(f.partition));
      assert.equal(new Set(keys).size, keys.length, 'one file per partition');
      assert.ok(compacted.length < beforeCompaction.length, 'compaction reduced the file count');
      assert.deepEqual(sortRows(await readRows(io, SCHEMA, live)), canonRows(SCHEMA, [...pyRows, ...floeRows]));
    });

    void it('PyIceberg reads the compacted table: same rows, append/append/replace, stats of the new files', async () => {
      const py = await pyRead(b.oracle, table, { referenceStats: true });
      assert.deepEqual(py.rows, canonRows(SCHEMA, [...pyRows, ...floeRows]));
      assert.deepEqual(
        py.snapshots.list.map((s) => [s.operation, s.sequence_number]),
        [
          ['append', 1],
          ['append', 2],
          ['replace', 3],
        ],
      );
      const [s1, s2, s3] = py.snapshots.list;
      assert.equal(s2!.parent_snapshot_id, s1!.snapshot_id);
      assert.equal(s3!.parent_snapshot_id, s2!.snapshot_id);
      assert.equal(py.snapshots.current, s3!.snapshot_id);
      assert.equal(s1!.summary['writer'], 'pyiceberg');
      assert.equal(s2!.summary['writer'], 'floe');
      const total = String(pyRows.length + floeRows.length);
      assert.equal(s2!.summary['total-records'], total);
      assert.equal(s3!.summary['total-records'], total);
      assert.equal(s3!.summary['deleted-data-files'], String(beforeCompaction.length));
      assert.equal(s3!.summary['added-data-files'], String(compacted.length));
      assert.equal(s3!.summary['total-data-files'], String(compacted.length));
      assert.equal(s3!.summary['deleted-records'], total);
      assert.equal(s3!.summary['added-records'], total);
      assert.deepEqual(py.files.map((f) => f.file_path).sort(), compacted.map((f) => f.filePath).sort());
      for (const f of py.files) {
        const ours = compacted.find((c) => c.filePath === f.file_path)!;
        assert.equal(f.record_count, ours.recordCount);
        assert.equal(f.sequence_number, 3, `${f.file_path}: data sequence number`);
        assert.deepEqual(f.null_value_counts, Object.fromEntries([...ours.nullValueCounts!].map(([k, v]) => [String(k), v])));
        // stats of files rewritten from PyIceberg's Arrow layout equal PyIceberg's own derivation
        const ref = f.reference!;
        assert.deepEqual(f.value_counts, ref.value_counts, `${f.file_path}: value_counts vs footer`);
        assert.deepEqual(f.null_value_counts, ref.null_value_counts, `${f.file_path}: null_value_counts vs footer`);
        assert.deepEqual(f.nan_value_counts, ref.nan_value_counts, `${f.file_path}: nan_value_counts vs data`);
        assert.deepEqual(f.lower_bounds, ref.lower_bounds, `${f.file_path}: lower_bounds vs footer`);
        assert.deepEqual(f.upper_bounds, ref.upper_bounds, `${f.file_path}: upper_bounds vs footer`);
      }
    });

    void it('DuckDB reads the compacted table with the same rows', async () => {
      const t = await catalog.loadTable(id);
      const duck = await duckRead(t.metadataLocation, columnsOf(SCHEMA));
      assert.equal(duck.count, pyRows.length + floeRows.length);
      assert.deepEqual(duck.rows, canonRows(SCHEMA, [...pyRows, ...floeRows]));
    });
  });
}
