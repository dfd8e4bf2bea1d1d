/**
 * Issue 29 item 11: floe writes data files where the table's location properties say, as Java
 * and PyIceberg do (iceberg/spec/location-provider.ts). Tables PyIceberg created with
 * `write.data.path`, and with `write.object-storage.enabled` (hashed prefixes), get floe's files
 * under that path, each hashed prefix the one PyIceberg computes for the file, and PyIceberg reads
 * every row floe appended. Before, every writer hard-coded `<location>/data`.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { LocalFileIO, SqlCatalog, SqliteDialect, Transaction, parseIdentifier, writePartitionedRows } from '../../iceberg';
import { runPythonJson, stackEnv } from '../../stack';

const python = stackEnv().python.python;
const skip = existsSync(python) ? false : `PyIceberg venv missing: ${python} (run \`npx tsx cli/main.ts stack up\`)`;
const root = mkdtempSync(join(tmpdir(), 'floe-locations-'));
after(() => rmSync(root, { recursive: true, force: true }));

const PY = String.raw`
import json, sys
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import NestedField, LongType, StringType
from pyiceberg.partitioning import PartitionSpec, PartitionField
from pyiceberg.transforms import IdentityTransform
from pyiceberg.table.locations import ObjectStoreLocationProvider
db, warehouse, custom, step = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
cat = SqlCatalog("floe", uri=f"sqlite:///{db}", warehouse=warehouse)
tables = {"db.custom": {"write.data.path": custom}, "db.hashed": {"write.object-storage.enabled": "true"}}
if step == "create":
    cat.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "region", StringType(), required=False))
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="region"))
    for name, props in tables.items():
        cat.create_table(name, schema=schema, partition_spec=spec, properties=props)
    print(json.dumps({"ok": True}))
else:
    out = {}
    for name in tables:
        t = cat.load_table(name)
        files = [task.file.file_path for task in t.scan().plan_files()]
        data = t.location_provider().data_path
        wrong_hash = 0
        if name == "db.hashed":
            for p in files:
                parts = p[len(data) + 1:].split("/")
                if "/".join(parts[:4]) != ObjectStoreLocationProvider._compute_hash("/".join(parts[4:])): wrong_hash += 1
        out[name] = {"rows": t.scan().to_arrow().num_rows, "files": files, "dataPath": data, "wrongHash": wrong_hash}
    print(json.dumps(out))
`;

void test(
  'tables PyIceberg created with write.data.path / object storage get floe’s files where PyIceberg would put them',
  { skip },
  async () => {
    const db = join(root, 'catalog.db');
    const warehouse = pathToFileURL(join(root, 'wh')).href;
    const custom = pathToFileURL(join(root, 'elsewhere', 'custom')).href;
    await runPythonJson(PY, [db, warehouse, custom, 'create']);

    const io = new LocalFileIO();
    const catalog = new SqlCatalog({ name: 'floe', dialect: new SqliteDialect({ path: db }), io, warehouse });
    try {
      for (const name of ['db.custom', 'db.hashed']) {
        const id = parseIdentifier(name);
        const { metadata } = await catalog.loadTable(id);
        const rows = Array.from({ length: 30 }, (_, i) => ({ id: BigInt(i), region: ['eu', 'us', 'apac'][i % 3]! }));
        const files = await writePartitionedRows(io, metadata, rows, { fileName: (n) => `floe-${n}.parquet` });
        assert.equal(files.length, 3, 'one file per partition');
        const tx = new Transaction(id);
        tx.fastAppend(files, { 'floe.commit-id': `loc-${name}` });
        await tx.commit(catalog, io);
      }
    } finally {
      await catalog.close();
    }

    const py = await runPythonJson<Record<string, { rows: number; files: string[]; dataPath: string; wrongHash: number }>>(PY, [
      db,
      warehouse,
      custom,
      'read',
    ]);
    const c = py['db.custom']!;
    assert.equal(c.rows, 30);
    assert.equal(c.dataPath, custom);
    for (const f of c.files) assert.match(f, new RegExp(`^${custom}/region=(eu|us|apac)/floe-\\d\\.parquet$`));
    const h = py['db.hashed']!;
    assert.equal(h.rows, 30);
    assert.ok(h.dataPath.endsWith('/db/hashed/data'), h.dataPath);
    for (const f of h.files) assert.match(f, /\/data\/[01]{4}\/[01]{4}\/[01]{4}\/[01]{8}\/region=(eu|us|apac)\/floe-\d\.parquet$/);
    assert.equal(h.wrongHash, 0, 'every hashed prefix is the one PyIceberg computes');
  },
);
