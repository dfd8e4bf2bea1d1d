/**
 * Interop 1: a table floe creates and appends to — four partition transforms
 * (identity string, day timestamptz, bucket[4] long, truncate[3] string), every primitive type,
 * nulls, NaNs, an all-null/all-NaN file — is read by PyIceberg through the same SQLite catalog
 * and by DuckDB's iceberg_scan on the metadata location, on file:// and on SeaweedFS S3:
 *  - equal row counts and equal values (canonical rows, lossless per type);
 *  - per-file stats PyIceberg decodes from our manifests equal what floe recorded, and equal what
 *    PyIceberg itself derives from the Parquet footer (+ NaN counts from the data);
 *  - PyIceberg's plan_files prunes by our manifests' partition tuples: no file holding a match is
 *    dropped, no file outside the matching partitions is kept.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  planFiles,
  applyTransform,
  fromBytes,
  type Catalog,
  type FileIO,
  type PartitionPredicate,
  type DataFile,
  type PartitionSpec,
  type Schema,
} from '../../iceberg';
import { ensureStack } from '../../stack';
import { canonRows, canonValue, columnsOf, type CanonRow } from '../oracles/canonical';
import { appendRows, backend, createTable, dropWarehouse, liveFiles, open, type Backend, type BackendKind } from '../oracles/floe-table';
import { duckRead, pyPlan, pyRead, type ReadResult } from '../oracles/oracle';

const SCHEMA: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'region', required: false, type: 'string' },
    { id: 3, name: 'ts', required: false, type: 'timestamptz' },
    { id: 4, name: 'name', required: false, type: 'string' },
    { id: 5, name: 'b', required: false, type: 'boolean' },
    { id: 6, name: 'i', required: false, type: 'int' },
    { id: 7, name: 'f', required: false, type: 'float' },
    { id: 8, name: 'd', required: false, type: 'double' },
    { id: 9, name: 'dec9', required: false, type: 'decimal(9, 2)' },
    { id: 10, name: 'dec38', required: false, type: 'decimal(38, 10)' },
    { id: 11, name: 'dt', required: false, type: 'date' },
    { id: 12, name: 'tm', required: false, type: 'time' },
    { id: 13, name: 'tsl', required: false, type: 'timestamp' },
    { id: 14, name: 'u', required: false, type: 'uuid' },
    { id: 15, name: 'fx', required: false, type: 'fixed[4]' },
    { id: 16, name: 'bin', required: false, type: 'binary' },
  ],
};
const SPEC: PartitionSpec = {
  'spec-id': 0,
  fields: [
    { 'source-id': 2, 'field-id': 1000, name: 'region', transform: 'identity' },
    { 'source-id': 3, 'field-id': 1001, name: 'ts_day', transform: 'day' },
    { 'source-id': 1, 'field-id': 1002, name: 'id_bucket', transform: 'bucket[4]' },
    { 'source-id': 4, 'field-id': 1003, name: 'name_trunc', transform: 'truncate[3]' },
  ],
};

const DAY_US = 86_400_000_000n;
const MAY_1 = 1_714_521_600_000_000n; // 2024-05-01T00:00:00Z in µs
// truncate[3] keeps partition paths ASCII here; escaped paths have their own test below
const NAMES = ['alpha-1', 'alps', 'betä€😀-ünïcode-name-longer-than-16', 'beta', 'al', '', null];
const REGIONS = ['eu', 'us', null];

/** Deterministic rows covering every type, edge values, nulls and NaNs. */
function makeRows(from: number, n: number): Array<Record<string, unknown>> {
  const rows: Array<Record<string, unknown>> = [];
  for (let i = from; i < from + n; i++) {
    const k = i % 6;
    const edge = i % 29 === 3; // a few rows carry extreme values
    rows.push({
      id: edge ? (1n << 62n) + BigInt(i) : BigInt(i * 7 + 1),
      region: REGIONS[k % 3],
      ts: i % 17 === 0 ? null : MAY_1 + BigInt(k % 2) * DAY_US + BigInt(i) * 1_234_567n,
      name: NAMES[(k + Math.floor(i / 6)) % NAMES.length],
      b: i % 3 === 0 ? null : i % 2 === 0,
      i: i % 13 === 0 ? null : edge ? (i % 2 ? 2147483647 : -2147483648) : ((i * 37) % 200) - 100,
      f: i % 9 === 0 ? null : i % 7 === 0 ? NaN : (i - 50) * 0.25 + 0.1,
      d: i % 8 === 0 ? null : i % 5 === 0 ? NaN : i * 1.1 - 30,
      dec9: i % 10 === 0 ? null : edge ? -999_999_999n : BigInt(i * 12_345 - 500_000),
      dec38: i % 12 === 0 ? null : edge ? 10n ** 38n - 1n : BigInt(i) * 123_456_789_012_345_678_901_234_567n - 10n ** 30n,
      dt: i % 14 === 0 ? null : edge ? -365 : 19_000 + i,
      tm: i % 11 === 0 ? null : (BigInt(i) * 1_234_567_891n) % DAY_US,
      tsl: i % 15 === 0 ? null : edge ? -1_000_000_000n - BigInt(i) : MAY_1 + BigInt(i) * 1_000_001n,
      u: i % 6 === 5 ? null : `${(0x10000000 + i * 2654435).toString(16).slice(-8)}-0000-4000-8000-${String(i).padStart(12, '0')}`,
      fx: i % 15 === 1 ? null : Uint8Array.from([i & 255, 255 - (i & 255), 0, 128]),
      bin: i % 16 === 2 ? null : Uint8Array.from({ length: i % 21 }, (_, j) => (i * 31 + j * 7) & 255),
    });
  }
  return rows;
}

/** One partition where every nullable column is null and both float columns are all NaN. */
function degenerateRows(n: number): Array<Record<string, unknown>> {
  return Array.from({ length: n }, () => ({
    id: 4n,
    region: 'nan-land',
    ts: null,
    name: null,
    f: NaN,
    d: NaN,
    b: null,
    i: null,
    dec9: null,
    dec38: null,
    dt: null,
    tm: null,
    tsl: null,
    u: null,
    fx: null,
    bin: null,
  }));
}

const hexMap = (m: Map<number, Uint8Array> | undefined): Record<string, string> =>
  Object.fromEntries([...(m ?? new Map<number, Uint8Array>())].map(([k, v]) => [String(k), Buffer.from(v).toString('hex')]));
const numMap = (m: Map<number, number> | undefined): Record<string, number> =>
  Object.fromEntries([...(m ?? new Map<number, number>())].map(([k, v]) => [String(k), v]));

for (const kind of ['file', 's3'] as BackendKind[]) {
  void describe(`interop read (${kind}): floe writes, PyIceberg + DuckDB read`, { timeout: 170_000 }, () => {
    const root = mkdtempSync(join(tmpdir(), `floe-interop-read-${kind}-`));
    let b: Backend;
    let catalog: Catalog;
    let io: FileIO;
    const id = { namespace: ['interop'], name: 'all_types' };
    const table = 'interop.all_types';
    const written: Array<{ file: DataFile; rows: Array<Record<string, unknown>> }> = [];
    let allRows: Array<Record<string, unknown>> = [];
    let expected: CanonRow[];
    let py: ReadResult;
    let metadataLocation: string;

    before(async () => {
      await ensureStack(['s3']);
      b = backend(kind, root);
      ({ catalog, io } = await open(b));
      await createTable(catalog, b, id, SCHEMA, SPEC);
      const batches = [makeRows(0, 120), [...makeRows(120, 120), ...degenerateRows(5)]];
      for (const [n, rows] of batches.entries()) {
        const r = await appendRows(catalog, io, id, rows, `append${n}`, { 'floe.test': `append-${n}` });
        // rows of one file = rows of this append whose partition the file carries
        for (const f of r.files) {
          written.push({
            file: f,
            rows: rows.filter((row) =>
              SPEC.fields.every((pf) => {
                const src = SCHEMA.fields.find((x) => x.id === pf['source-id'])!;
                return samePartitionValue(applyTransform(pf.transform, src.type as never, row[src.name]), f.partition[pf.name] ?? null);
              }),
            ),
          });
        }
        allRows = allRows.concat(rows);
        metadataLocation = r.table.metadataLocation;
      }
      expected = canonRows(SCHEMA, allRows);
      py = await pyRead(b.oracle, table, { referenceStats: true });
    });

    after(async () => {
      if (io) await dropWarehouse(io, b);
      await catalog?.close();
      rmSync(root, { recursive: true, force: true });
    });

    void it('floe wrote what it was given: files partition the rows, manifests list exactly them', async () => {
      assert.equal(
        written.reduce((a, w) => a + w.rows.length, 0),
        allRows.length,
        'rows per file (by partition) must add up to all rows',
      );
      for (const w of written) assert.equal(w.file.recordCount, w.rows.length, `${w.file.filePath}: record_count`);
      const live = await liveFiles(io, await catalog.loadTable(id));
      assert.deepEqual(live.map((f) => f.filePath).sort(), written.map((w) => w.file.filePath).sort());
    });

    void it('PyIceberg reads the same rows (count and every value)', () => {
      assert.equal(py.metadata_location, metadataLocation);
      assert.deepEqual(
        py.columns,
        columnsOf(SCHEMA).map(([n, t]) => [n, t]),
      );
      assert.equal(py.rows.length, allRows.length, 'PyIceberg row count');
      assertSameRows(py.rows, expected, 'PyIceberg');
    });

    void it('DuckDB iceberg_scan reads the same rows (count and every value)', async () => {
      const duck = await duckRead(metadataLocation, columnsOf(SCHEMA), {
        eu: "SELECT count(*) FROM $SRC WHERE region = 'eu'",
        nan_f: 'SELECT count(*) FROM $SRC WHERE isnan(f)',
      });
      assert.equal(duck.count, allRows.length, 'DuckDB count(*)');
      assertSameRows(duck.rows, expected, 'DuckDB');
      assert.deepEqual(duck.queries?.['eu'], [[allRows.filter((r) => r['region'] === 'eu').length]]);
      assert.deepEqual(duck.queries?.['nan_f'], [[allRows.filter((r) => Number.isNaN(r['f'])).length]]);
    });

    void it('PyIceberg decodes from our manifests exactly the per-file stats floe recorded', () => {
      const byPath = new Map(py.files.map((f) => [f.file_path, f]));
      assert.equal(py.files.length, written.length, 'inspect.files() count');
      for (const { file: f } of written) {
        const p = byPath.get(f.filePath);
        assert.ok(p, `inspect.files() lacks ${f.filePath}`);
        const where = `${f.filePath}:`;
        assert.equal(p.content, 0, `${where} content`);
        assert.equal(p.file_format, 'PARQUET', `${where} file_format`);
        assert.equal(p.record_count, f.recordCount, `${where} record_count`);
        assert.equal(p.file_size_in_bytes, f.fileSizeInBytes, `${where} file_size_in_bytes`);
        assert.deepEqual(p.column_sizes ?? {}, numMap(f.columnSizes), `${where} column_sizes`);
        assert.deepEqual(p.value_counts ?? {}, numMap(f.valueCounts), `${where} value_counts`);
        assert.deepEqual(p.null_value_counts ?? {}, numMap(f.nullValueCounts), `${where} null_value_counts`);
        assert.deepEqual(p.nan_value_counts ?? {}, numMap(f.nanValueCounts), `${where} nan_value_counts`);
        assert.deepEqual(p.lower_bounds ?? {}, hexMap(f.lowerBounds), `${where} lower_bounds`);
        assert.deepEqual(p.upper_bounds ?? {}, hexMap(f.upperBounds), `${where} upper_bounds`);
        assert.deepEqual(p.split_offsets ?? [], f.splitOffsets ?? [], `${where} split_offsets`);
        const partition = Object.fromEntries(
          SPEC.fields.map((pf) => {
            const src = SCHEMA.fields.find((x) => x.id === pf['source-id'])!;
            const t = pf.transform === 'day' || pf.transform.startsWith('bucket') ? 'int' : src.type;
            return [pf.name, canonPartition(t as string, f.partition[pf.name] ?? null)];
          }),
        );
        assert.deepEqual(p.partition, partition, `${where} partition`);
      }
    });

    void it('floe stats equal what PyIceberg derives from the Parquet footer (NaN counts from the data)', () => {
      const problems: string[] = [];
      for (const p of py.files) {
        const ref = p.reference!;
        const floe = written.find((w) => w.file.filePath === p.file_path)!.file;
        const cmp = (what: string, ours: Record<string, unknown>, theirs: Record<string, unknown>) => {
          const keys = new Set([...Object.keys(ours), ...Object.keys(theirs)]);
          for (const k of keys) {
            if (JSON.stringify(ours[k]) !== JSON.stringify(theirs[k])) {
              const col = SCHEMA.fields.find((x) => String(x.id) === k);
              problems.push(
                `${p.file_path.split('/').slice(-2).join('/')} ${what}[${k} ${col?.name}:${String(col?.type)}]: floe ${JSON.stringify(ours[k])} vs pyiceberg ${JSON.stringify(theirs[k])}`,
              );
            }
          }
        };
        assert.equal(ref.record_count, floe.recordCount);
        cmp('value_counts', numMap(floe.valueCounts), ref.value_counts);
        cmp('null_value_counts', numMap(floe.nullValueCounts), ref.null_value_counts);
        cmp('nan_value_counts', numMap(floe.nanValueCounts), ref.nan_value_counts);
        cmp('lower_bounds', hexMap(floe.lowerBounds), ref.lower_bounds);
        cmp('upper_bounds', hexMap(floe.upperBounds), ref.upper_bounds);
        assert.deepEqual(floe.splitOffsets ?? [], ref.split_offsets, `${p.file_path}: split_offsets`);
      }
      assert.deepEqual(problems, [], `stats differ from PyIceberg's own (${problems.length}):\n${problems.slice(0, 40).join('\n')}`);
    });

    void it("PyIceberg's plan_files keeps exactly the files of the matching partitions", async () => {
      const X = 7n * 42n + 1n; // id of row 42
      const filters: Record<string, { expr: string; partition: (f: DataFile) => boolean; row: (r: Record<string, unknown>) => boolean }> = {
        region_eq: { expr: "region == 'eu'", partition: (f) => f.partition['region'] === 'eu', row: (r) => r['region'] === 'eu' },
        region_null: { expr: 'region is null', partition: (f) => f.partition['region'] === null, row: (r) => r['region'] === null },
        ts_day: {
          expr: "ts >= '2024-05-02T00:00:00+00:00' and ts < '2024-05-03T00:00:00+00:00'",
          partition: (f) => f.partition['ts_day'] === 19845, // 2024-05-02
          row: (r) => r['ts'] !== null && (r['ts'] as bigint) >= MAY_1 + DAY_US && (r['ts'] as bigint) < MAY_1 + 2n * DAY_US,
        },
        id_bucket: {
          expr: `id == ${X}`,
          partition: (f) => f.partition['id_bucket'] === applyTransform('bucket[4]', 'long', X),
          row: (r) => r['id'] === X,
        },
        name_trunc: {
          expr: "name == 'alpha-1'",
          partition: (f) => f.partition['name_trunc'] === 'alp',
          row: (r) => r['name'] === 'alpha-1',
        },
      };
      const plans = await pyPlan(b.oracle, table, Object.fromEntries(Object.entries(filters).map(([k, v]) => [k, v.expr])));
      const all = written.map((w) => w.file.filePath).sort();
      assert.deepEqual(plans['__all__'], all, 'unfiltered plan_files = every live file');
      for (const [label, flt] of Object.entries(filters)) {
        const got = new Set(plans[label]);
        const mustKeep = written.filter((w) => w.rows.some(flt.row)).map((w) => w.file.filePath);
        const mayKeep = new Set(written.filter((w) => flt.partition(w.file)).map((w) => w.file.filePath));
        assert.ok(mustKeep.length > 0 && mayKeep.size < all.length, `${label}: test data must make pruning observable`);
        for (const p of mustKeep) assert.ok(got.has(p), `${label}: plan_files dropped ${p}, which holds matching rows`);
        for (const p of got) assert.ok(mayKeep.has(p), `${label}: plan_files kept ${p}, outside the matching partitions`);
      }
      // identity and day partitions: every file of the matching partition holds a match -> exact
      for (const label of ['region_eq', 'region_null', 'ts_day']) {
        const mayKeep = written
          .filter((w) => filters[label]!.partition(w.file))
          .map((w) => w.file.filePath)
          .sort();
        assert.deepEqual(plans[label], mayKeep, `${label}: exactly the files of the matching partition`);
      }
      // The bucket filter prunes by partition, not only by column bounds: some file outside
      // bucket(X) has id bounds that contain X, and plan_files still drops it.
      const boundsAdmit = written.filter((w) => !filters['id_bucket']!.partition(w.file) && admits(w.file, 1, X));
      assert.ok(boundsAdmit.length > 0, 'data should put X inside the id range of a file in another bucket');
      for (const w of boundsAdmit)
        assert.ok(!plans['id_bucket']!.includes(w.file.filePath), `id_bucket: kept ${w.file.filePath} from another bucket`);
    });

    void it("floe's planFiles with partition predicates keeps the same files as PyIceberg", async () => {
      const t = await catalog.loadTable(id);
      const X = 7n * 42n + 1n;
      const plans = await pyPlan(b.oracle, table, {
        region_eq: "region == 'eu'",
        region_null: 'region is null',
        ts_day: "ts >= '2024-05-02T00:00:00+00:00' and ts < '2024-05-03T00:00:00+00:00'",
        id_bucket: `id == ${X}`,
      });
      const ours = async (filter: PartitionPredicate[]) =>
        (await planFiles(t, io, { partitionFilter: filter })).map((f) => f.filePath).sort();
      assert.deepEqual(await ours([{ field: 'region', op: '=', value: 'eu' }]), plans['region_eq']);
      assert.deepEqual(await ours([{ field: 'region', op: 'is-null' }]), plans['region_null']);
      assert.deepEqual(await ours([{ field: 'ts_day', op: '=', value: 19845 }]), plans['ts_day']);
      // PyIceberg also prunes by column bounds, floe's partition filter only by partition
      const bucket = await ours([{ field: 'id_bucket', op: '=', value: applyTransform('bucket[4]', 'long', X) }]);
      for (const p of plans['id_bucket']!) assert.ok(bucket.includes(p), `floe planFiles dropped ${p}`);
      assert.deepEqual(await ours([]), plans['__all__']);
    });

    void it('PyIceberg sees two append snapshots with sequence numbers 1, 2 and floe summaries', () => {
      const snaps = py.snapshots.list;
      assert.deepEqual(
        snaps.map((s) => [s.operation, s.sequence_number, s.summary['floe.test']]),
        [
          ['append', 1, 'append-0'],
          ['append', 2, 'append-1'],
        ],
      );
      assert.equal(snaps[1]!.parent_snapshot_id, snaps[0]!.snapshot_id);
      assert.equal(py.snapshots.current, snaps[1]!.snapshot_id);
      assert.equal(snaps[1]!.summary['total-records'], String(allRows.length));
      assert.equal(snaps[1]!.summary['total-data-files'], String(written.length));
    });
  });
}

/**
 * Partition paths are URL-encoded (Java's URLEncoder, as Iceberg Java writes them), so a location
 * holds `%XX` escapes; every engine takes the object name literally (S3 key, Hadoop Path, pyarrow's
 * LocalFileSystem). Here the identity partition values need escaping: PyIceberg and DuckDB must
 * find every file floe wrote, and the file must exist at the literal path after `file://`.
 */
for (const kind of ['file', 's3'] as BackendKind[]) {
  void describe(`interop read (${kind}): partition values that need escaping in the path`, { timeout: 120_000 }, () => {
    const root = mkdtempSync(join(tmpdir(), `floe-interop-escape-${kind}-`));
    let b: Backend;
    let catalog: Catalog;
    let io: FileIO;
    const id = { namespace: ['interop'], name: 'escaped' };
    const schema: Schema = {
      type: 'struct',
      'schema-id': 0,
      fields: [
        { id: 1, name: 'id', required: true, type: 'long' },
        { id: 2, name: 'tag', required: false, type: 'string' },
      ],
    };
    const mk = (tags: string[], base: number) => tags.flatMap((tag, k) => [0, 1].map((j) => ({ id: BigInt(base + k * 10 + j), tag })));
    const rows1 = mk(['bé€', 'x%41y', 'plain'], 0);
    const rows2 = mk(['a b/c'], 100); // '/' is escaped as %2F in the path
    let rows = rows1;
    let files: DataFile[] = [];
    let metadataLocation = '';

    before(async () => {
      await ensureStack(['s3']);
      b = backend(kind, root);
      ({ catalog, io } = await open(b));
      await createTable(catalog, b, id, schema, {
        'spec-id': 0,
        fields: [{ 'source-id': 2, 'field-id': 1000, name: 'tag', transform: 'identity' }],
      });
    });
    const appended = () => assert.ok(metadataLocation, 'nothing to read: the append above failed');
    after(async () => {
      if (io) await dropWarehouse(io, b);
      await catalog?.close();
      rmSync(root, { recursive: true, force: true });
    });

    void it('floe appends rows whose partition path needs escaping (non-ASCII, %)', async () => {
      const r = await appendRows(catalog, io, id, rows1, 'esc');
      files = r.files;
      metadataLocation = r.table.metadataLocation;
      assert.ok(
        files.some((f) => f.filePath.includes('/tag=b%C3%A9%E2%82%AC/')),
        files.map((f) => f.filePath).join('\n'),
      );
      assert.ok(files.some((f) => f.filePath.includes('/tag=x%2541y/')));
    });

    void it('floe appends rows whose partition value contains "/" (escaped %2F)', async () => {
      appended();
      const r = await appendRows(catalog, io, id, rows2, 'esc2');
      assert.ok(
        r.files.every((f) => f.filePath.includes('/tag=a+b%2Fc/')),
        r.files.map((f) => f.filePath).join('\n'),
      );
      files = [...files, ...r.files];
      metadataLocation = r.table.metadataLocation;
      rows = [...rows1, ...rows2];
    });

    if (kind === 'file') {
      void it('file:// data files exist at the literal path after file:// (as pyarrow and Hadoop open them)', () => {
        appended();
        const missing = files.map((f) => f.filePath.slice('file://'.length)).filter((p) => !existsSync(p));
        assert.deepEqual(missing, [], 'floe wrote these locations somewhere else (LocalFileIO percent-decodes locations)');
      });
    }

    void it('PyIceberg reads every row', async () => {
      appended();
      const py = await pyRead(b.oracle, 'interop.escaped');
      assert.deepEqual(py.rows, canonRows(schema, rows));
    });

    void it('DuckDB reads every row', async () => {
      appended();
      const duck = await duckRead(metadataLocation, columnsOf(schema));
      assert.equal(duck.count, rows.length);
      assert.deepEqual(duck.rows, canonRows(schema, rows));
    });
  });
}

function samePartitionValue(a: unknown, b: unknown): boolean {
  if (a instanceof Uint8Array && b instanceof Uint8Array) return Buffer.from(a).equals(Buffer.from(b));
  return a === b;
}

function canonPartition(type: string, v: unknown): unknown {
  if (v === null) return null;
  if (type === 'string') return v;
  return canonValue(type as never, v);
}

function admits(f: DataFile, fieldId: number, x: bigint): boolean {
  const lo = f.lowerBounds?.get(fieldId),
    hi = f.upperBounds?.get(fieldId);
  if (!lo || !hi) return false;
  return (fromBytes('long', lo) as bigint) <= x && x <= (fromBytes('long', hi) as bigint);
}

function assertSameRows(got: CanonRow[], want: CanonRow[], who: string): void {
  if (JSON.stringify(got) === JSON.stringify(want)) return;
  const g = new Set(got.map((r) => JSON.stringify(r))),
    w = new Set(want.map((r) => JSON.stringify(r)));
  const missing = [...w].filter((r) => !g.has(r)),
    extra = [...g].filter((r) => !w.has(r));
  assert.fail(
    `${who}: rows differ from what floe wrote (${got.length} vs ${want.length}); ` +
      `missing ${missing.length}, e.g.\n  ${missing.slice(0, 3).join('\n  ')}\nunexpected ${extra.length}, e.g.\n  ${extra.slice(0, 3).join('\n  ')}`,
  );
}
