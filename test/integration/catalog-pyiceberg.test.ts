/**
 * Oracle: PyIceberg's SqlCatalog opens the SQLite catalog we write, loads our table (so the
 * metadata.json is valid to another implementation), and we load and commit on top of a table
 * PyIceberg wrote data to, after which PyIceberg still reads every row.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { SqlCatalog, SqliteDialect, LocalFileIO, newTableMetadata } from '../../iceberg';
import { runPythonJson, stackEnv } from '../../stack';

const python = stackEnv().python.python;
const skip = existsSync(python) ? false : `PyIceberg venv missing: ${python} (run \`npx tsx cli/main.ts stack up\`)`;

const root = mkdtempSync(join(tmpdir(), 'floe-pyiceberg-'));
after(() => rmSync(root, { recursive: true, force: true }));

const PY = String.raw`
import json, sys
from pyiceberg.catalog.sql import SqlCatalog
db, warehouse, step = sys.argv[1], sys.argv[2], sys.argv[3]
cat = SqlCatalog("floe", uri=f"sqlite:///{db}", warehouse=warehouse)
if step == "load":
    t = cat.load_table("db.events")
    m = t.metadata
    print(json.dumps({
        "namespaces": [list(n) for n in cat.list_namespaces()],
        "tables": [list(i) for i in cat.list_tables("db")],
        "metadata_location": t.metadata_location,
        "format_version": m.format_version,
        "table_uuid": str(m.table_uuid),
        "fields": [[f.field_id, f.name, str(f.field_type), f.required] for f in t.schema().fields],
        "spec": [[f.source_id, f.field_id, f.name, str(f.transform)] for f in t.spec().fields],
        "properties": m.properties,
        "current_snapshot_id": str(m.current_snapshot_id),
        "summary": dict(t.current_snapshot().summary.additional_properties) if t.current_snapshot() else None,
        "metadata_log": [e.metadata_file for e in m.metadata_log],
        "ns_props": cat.load_namespace_properties("db"),
    }))
elif step == "write":
    import pyarrow as pa
    cat.create_namespace("py")
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": pa.array(["a", "b", "c"])})
    t = cat.create_table("py.rows", schema=data.schema)
    t.append(data)
    print(json.dumps({"metadata_location": t.metadata_location, "snapshot_id": str(t.current_snapshot().snapshot_id)}))
else:
    t = cat.load_table("py.rows")
    print(json.dumps({"rows": t.scan().to_arrow().num_rows, "props": t.properties, "metadata_location": t.metadata_location}))
`;

void test('PyIceberg SqlCatalog loads a table we created and committed to', { skip }, async () => {
  const dbPath = join(root, 'catalog.db');
  const warehouse = pathToFileURL(join(root, 'warehouse')).href;
  const cat = new SqlCatalog({ name: 'floe', dialect: new SqliteDialect({ path: dbPath }), io: new LocalFileIO(), warehouse });
  await cat.createNamespace(['db'], { owner: 'floe' });
  const id = { namespace: ['db'], name: 'events' };
  const created = await cat.createTable(
    id,
    newTableMetadata({
      location: await cat.defaultTableLocation(id),
      schema: {
        type: 'struct',
        'schema-id': 0,
        fields: [
          { id: 1, name: 'id', required: true, type: 'long' },
          { id: 2, name: 'ts', required: false, type: 'timestamptz' },
          { id: 3, name: 'payload', required: false, type: 'string' },
        ],
      },
      spec: { 'spec-id': 0, fields: [{ 'source-id': 2, 'field-id': 1000, name: 'ts_day', transform: 'day' }] },
      properties: { 'write.format.default': 'parquet' },
      tableUuid: randomUUID(),
    }),
  );
  const snapshotId = 9007199254740993n; // 2^53 + 1: not representable as a double
  const committed = await cat.commitTable(
    id,
    [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': null }],
    [
      {
        action: 'add-snapshot',
        snapshot: {
          'snapshot-id': snapshotId,
          'sequence-number': 1n,
          'timestamp-ms': BigInt(Date.now()),
          'manifest-list': `${created.metadata.location}/metadata/snap-${snapshotId}.avro`,
          summary: { operation: 'append', 'floe.commit-id': 'c1' },
          'schema-id': 0,
        },
      },
      { action: 'set-snapshot-ref', 'ref-name': 'main', 'snapshot-id': snapshotId, type: 'branch' },
      { action: 'set-properties', updates: { 'floe.ingest': 'yes' } },
    ],
  );
  await cat.close();

  const py = await runPythonJson<Record<string, unknown>>(PY, [dbPath, warehouse, 'load']);
  assert.deepEqual(py['namespaces'], [['db']]);
  assert.deepEqual(py['tables'], [['db', 'events']]);
  assert.equal(py['metadata_location'], committed.metadataLocation);
  assert.equal(py['format_version'], 2);
  assert.equal(py['table_uuid'], committed.metadata['table-uuid']);
  assert.deepEqual(py['fields'], [
    [1, 'id', 'long', true],
    [2, 'ts', 'timestamptz', false],
    [3, 'payload', 'string', false],
  ]);
  assert.deepEqual(py['spec'], [[2, 1000, 'ts_day', 'day']]);
  assert.deepEqual(py['properties'], { 'write.format.default': 'parquet', 'floe.ingest': 'yes' });
  assert.equal(py['current_snapshot_id'], snapshotId.toString());
  assert.deepEqual(py['summary'], { 'floe.commit-id': 'c1' });
  assert.deepEqual(py['metadata_log'], [created.metadataLocation]);
  assert.deepEqual(py['ns_props'], { owner: 'floe' });
});

void test('we load and commit to a table PyIceberg wrote; PyIceberg still reads all rows', { skip }, async () => {
  const dbPath = join(root, 'catalog2.db');
  const warehouse = pathToFileURL(join(root, 'warehouse2')).href;
  const written = await runPythonJson<{ metadata_location: string; snapshot_id: string }>(PY, [dbPath, warehouse, 'write']);
  const cat = new SqlCatalog({ name: 'floe', dialect: new SqliteDialect({ path: dbPath }), io: new LocalFileIO(), warehouse });
  assert.deepEqual(await cat.listNamespaces(), [['py']]);
  const id = { namespace: ['py'], name: 'rows' };
  const t = await cat.loadTable(id);
  assert.equal(t.metadataLocation, written.metadata_location);
  assert.equal(t.metadata['current-snapshot-id']?.toString(), written.snapshot_id);
  const next = await cat.commitTable(
    id,
    [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': BigInt(written.snapshot_id) }],
    [{ action: 'set-properties', updates: { 'floe.touched': 'true' } }],
  );
  await cat.close();
  const py = await runPythonJson<{ rows: number; props: Record<string, string>; metadata_location: string }>(PY, [
    dbPath,
    warehouse,
    'read',
  ]);
  assert.equal(py.rows, 3);
  assert.equal(py.props['floe.touched'], 'true');
  assert.equal(py.metadata_location, next.metadataLocation);
});
