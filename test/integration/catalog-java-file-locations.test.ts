/**
 * Issue 29 item 14 (its location part): Java (Hadoop's Path) writes local locations as `file:/path`,
 * one slash. A table whose location and metadata are in that form (as Spark's JdbcCatalog left it)
 * must load, take appends and list its files; before, every load failed "storage location: expected
 * a URI like s3://, file:// or memory://". Real SQLite catalog, real files.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import {
  ResolvingFileIO,
  SqlCatalog,
  SqliteDialect,
  Transaction,
  newTableMetadata,
  parseIdentifier,
  schemeOf,
  writePartitionedRows,
} from '../../iceberg';
import { absPath, liveDataFiles } from '../../maintenance/reachable';

const root = mkdtempSync(join(tmpdir(), 'floe-java-file-'));
after(() => rmSync(root, { recursive: true, force: true }));

void test('a table at file:/path (Java’s form) loads, takes appends and lists its files', async () => {
  assert.equal(schemeOf(`file:${root}/x`), 'file');
  assert.equal(absPath(`file:${root}/t`, `file:${root}/t/data/a.parquet`), `file:${root}/t/data/a.parquet`);
  const io = new ResolvingFileIO();
  const catalog = new SqlCatalog({
    name: 'floe',
    dialect: new SqliteDialect({ path: join(root, 'catalog.db') }),
    io,
    warehouse: `file:${root}/wh`,
  });
  try {
    const id = parseIdentifier('db.t');
    await catalog.createNamespace(id.namespace);
    const metadata = newTableMetadata({
      location: `file:${root}/wh/db/t`,
      schema: {
        type: 'struct',
        'schema-id': 0,
        fields: [
          { id: 1, name: 'id', required: true, type: 'long' },
          { id: 2, name: 'region', required: false, type: 'string' },
        ],
      },
      spec: { 'spec-id': 0, fields: [{ 'source-id': 2, 'field-id': 1000, name: 'region', transform: 'identity' }] },
      properties: {},
      tableUuid: '8f9d7f9c-8a5b-4b8e-9d6e-2a1c3b4d5e6f',
    });
    await catalog.createTable(id, metadata);
    for (let c = 0; c < 2; c++) {
      const { metadata: m } = await catalog.loadTable(id);
      const rows = Array.from({ length: 30 }, (_, i) => ({ id: BigInt(c * 30 + i), region: i % 2 ? 'eu' : 'us' }));
      const files = await writePartitionedRows(io, m, rows, { fileName: (n) => `c${c}-${n}.parquet` });
      const tx = new Transaction(id);
      tx.fastAppend(files, { 'floe.commit-id': `c${c}` });
      await tx.commit(catalog, io);
    }
    const loaded = await catalog.loadTable(id);
    assert.match(loaded.metadataLocation, new RegExp(`^file:${root}/wh/db/t/metadata/`), 'metadata in Java’s file:/ form');
    const live = await liveDataFiles(io, loaded.metadata);
    assert.equal(live.length, 4);
    assert.equal(
      live.reduce((n, f) => n + Number(f.dataFile.recordCount), 0),
      60,
    );
    for (const f of live) {
      assert.match(f.dataFile.filePath, /^file:\/[^/]/);
      assert.ok(await io.exists(f.dataFile.filePath), f.dataFile.filePath);
    }
  } finally {
    await catalog.close();
  }
});
