/**
 * The upsert key index (issue 31, ingest/upsert/key-index.ts) on the real stack: a table of
 * 100,000 rows with a long id in 20 Parquet files on the stack's S3 (two appends, ids shuffled
 * so a position says nothing about the id, several row groups per file), then a position delete
 * commit over several files. The index floe builds must give every live id the (file, position)
 * PyIceberg finds: PyIceberg plans the scan (data files with their delete files), pyarrow reads
 * each data file's ids in file order and each delete file's (file_path, pos), and the live rows
 * are the positions no delete names; PyIceberg's own scan must return the same ids.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  Transaction,
  fastAppend,
  readParquetInfo,
  writeParquetFile,
  writePositionDeleteFiles,
  type Catalog,
  type DataFile,
  type FileIO,
  type Schema,
  type TableIdentifier,
} from '../../iceberg';
import { buildKeyIndex } from '../../ingest/upsert/key-index';
import { ensureStack, runPythonJson } from '../../stack';
import { FAST_RETRY, backend, createTable, dropWarehouse, open, type Backend } from '../oracles/floe-table';

const SCHEMA: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'payload', required: false, type: 'string' },
  ],
};
const ROWS = 100_000;
const FILES = 20;

/** PyIceberg plans, pyarrow reads: every live row as [id, data file path, position in the file]. */
const PY_LOCATIONS = `
import json, sys
import pyarrow.parquet as pq
from pyiceberg.catalog.sql import SqlCatalog
from floe_duckdb import pyiceberg_s3_properties

req = json.loads(sys.argv[1])
c = req["catalog"]
tbl = SqlCatalog(c["name"], uri=c["uri"], warehouse=c["warehouse"], **pyiceberg_s3_properties()).load_table(req["table"])

def read(path, columns):
    with tbl.io.new_input(path).open() as fh:
        return pq.read_table(fh, columns=columns)

rows, deleted = [], 0
for task in tbl.scan().plan_files():
    path = task.file.file_path
    gone = set()
    for d in task.delete_files:
        t = read(d.file_path, ["file_path", "pos"])
        gone.update(p for f, p in zip(t.column("file_path").to_pylist(), t.column("pos").to_pylist()) if f == path)
    deleted += len(gone)
    for pos, v in enumerate(read(path, ["id"]).column("id").to_pylist()):
        if pos not in gone:
            rows.append([str(v), path, pos])
scan = tbl.scan(selected_fields=("id",)).to_arrow().column("id").to_pylist()
print(json.dumps({"rows": rows, "deleted": deleted, "scan": sorted(str(v) for v in scan)}))
`;

describe('key index on the real stack: every live id where PyIceberg finds it', { timeout: 180_000 }, () => {
  const root = mkdtempSync(join(tmpdir(), 'floe-keyindex-'));
  let b: Backend;
  let catalog: Catalog;
  let io: FileIO;

  before(async () => {
    await ensureStack(['s3']);
    b = backend('s3', root);
    ({ catalog, io } = await open(b));
  });

  after(async () => {
    if (io) await dropWarehouse(io, b);
    await catalog?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('100k rows in 20 files, a position delete commit: build, then compare each key', async () => {
    const id: TableIdentifier = { namespace: ['keyindex'], name: `t_${Date.now().toString(36)}` };
    let table = await createTable(catalog, b, id, SCHEMA, { 'spec-id': 0, fields: [] });
    // ids: a permutation of 0..ROWS-1 (a multiplier coprime to ROWS), shifted past 2^53
    const idAt = (i: number): bigint => BigInt((i * 7_919) % ROWS) + 2n ** 60n;
    const per = ROWS / FILES;
    const files: DataFile[] = [];
    for (let f = 0; f < FILES; f++) {
      const ids = BigInt64Array.from({ length: per }, (_, k) => idAt(f * per + k));
      const w = await writeParquetFile(
        SCHEMA,
        { columns: { id: ids, payload: Array.from(ids, (v) => `p${v}`) }, numRows: per },
        { rowGroupRows: 1_500 },
      );
      const filePath = `${table.metadata.location}/data/f${String(f).padStart(2, '0')}-${randomUUID()}.parquet`;
      await io.write(filePath, w.bytes);
      files.push({ ...w.stats, filePath, specId: 0, partition: {} });
    }
    assert.equal((await readParquetInfo(io, files[0]!.filePath)).numRowGroups, 4);
    table = await fastAppend(catalog, io, table, files.slice(0, FILES / 2));
    table = await fastAppend(catalog, io, table, files.slice(FILES / 2));

    // deletes in 5 files: every 97th row, and the first and last rows of row groups
    const deletes = files
      .filter((_, f) => f % 4 === 1)
      .flatMap((f) =>
        [0, 1_499, 1_500, 2_999, 3_000, per - 1, ...Array.from({ length: per / 97 }, (_, k) => k * 97 + 5)].map((pos) => ({
          dataFile: f,
          pos: BigInt(pos),
        })),
      );
    const w = await writePositionDeleteFiles(io, table.metadata, deletes, (k) => `keyindex-del-${k}-${randomUUID()}.parquet`);
    const tx = new Transaction(id);
    tx.rowDelta([], w.deleteFiles, { referencedDataFiles: w.referencedDataFiles });
    table = (await tx.commit(catalog, io, { ...FAST_RETRY, table })).table;
    const deletedCount = new Set(deletes.map((d) => `${d.dataFile.filePath}#${d.pos}`)).size;

    const started = Date.now();
    const index = await buildKeyIndex(io, table.metadata, ['id']);
    const buildMs = Date.now() - started;
    assert.equal(index.size, ROWS - deletedCount);
    assert.equal(index.duplicates.count, 0);

    const py = await runPythonJson<{ rows: Array<[string, string, number]>; deleted: number; scan: string[] }>(PY_LOCATIONS, [
      JSON.stringify({ catalog: b.oracle, table: `${id.namespace[0]}.${id.name}` }),
    ]);
    assert.equal(py.deleted, deletedCount);
    assert.equal(py.rows.length, ROWS - deletedCount);
    assert.deepEqual(py.rows.map((r) => r[0]).sort(), py.scan, "PyIceberg's scan returns exactly the rows its deletes leave");
    const keys = index.keysOf(py.rows.map(([v]) => ({ id: BigInt(v) })));
    let mismatches = 0;
    py.rows.forEach(([v, file, pos], k) => {
      const at = index.lookup(keys[k]!);
      if (at?.file !== file || at.pos !== pos) {
        if (mismatches++ < 5) assert.fail(`id ${v}: PyIceberg ${file}#${pos}, index ${at ? `${at.file}#${at.pos}` : 'none'}`);
      }
    });
    assert.equal(mismatches, 0);
    // the deleted ids are not in the index
    const gone = index.keysOf(deletes.slice(0, 50).map((d) => ({ id: idAt(files.indexOf(d.dataFile) * per + Number(d.pos)) })));
    for (const k of gone) assert.equal(index.lookup(k), undefined);
    console.log(`key index: ${index.size} keys from ${FILES} files on S3 in ${buildMs} ms`);
  });
});
