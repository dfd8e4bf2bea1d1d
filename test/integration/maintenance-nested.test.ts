/**
 * One table's maintenance never touches another table's files. `a.b` lives at `<wh>/a/b` and
 * `a.b.c` at `<wh>/a/b/c`: floe refuses to create the nested one, and when another engine made it
 * anyway (PyIceberg here), a forced orphan sweep of `a.b` leaves every file of `a.b.c` alone.
 * Real stack: Temporal dev server, SeaweedFS S3, a SQLite catalog of its own (so the two tables
 * are exactly `a.b` and `a.b.c`), PyIceberg and DuckDB reading afterwards.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { ensureStack } from '../../stack/stack';
import { runPythonJson } from '../../stack/python';
import { connectClient } from '../../client';
import { removeOrphans } from '../../client/maintenance';
import { openTables } from '../../table/tables';
import { findTable, loadConfig } from '../../config';
import { engineReads, maintenanceTestConfig, seedSmallFiles, withWorker } from './maintenance-oracles';
import { ensureIngestTables } from '../../ingest/tables';

// PyIceberg on the same SQLite catalog: create a.b.c at <wh>/a/b/c (no floe check on this path)
// and append to it three times, or scan it.
const PY = String.raw`
import json, sys
import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from floe_duckdb import pyiceberg_s3_properties
db, warehouse, step = sys.argv[1], sys.argv[2], sys.argv[3]
cat = SqlCatalog("floe", uri=f"sqlite:///{db}", warehouse=warehouse, **pyiceberg_s3_properties())
if step == "create":
    try:
        cat.create_namespace(("a", "b"))
    except Exception:
        pass
    data = lambda lo: pa.table({"id": pa.array(range(lo, lo + 10), pa.int64()), "note": pa.array([f"c{i}" for i in range(lo, lo + 10)])})
    t = cat.create_table(("a", "b", "c"), schema=data(0).schema, location=f"{warehouse}/a/b/c")
    for lo in (0, 10, 20):
        t.append(data(lo))
    print(json.dumps({"location": t.location(), "metadata_location": t.metadata_location}))
else:
    t = cat.load_table(("a", "b", "c"))
    print(json.dumps({"rows": t.scan().to_arrow().num_rows, "metadata_location": t.metadata_location}))
`;

describe('nested table locations (real stack)', { timeout: 10 * 60_000 }, () => {
  before(async () => {
    await ensureStack(['temporal', 's3']);
  });

  it("orphan removal of a.b never deletes a.b.c's files; floe refuses to create a.b.c inside a.b", async () => {
    // A catalog of its own: exactly the tables a.b and a.b.c (and a.b's dead-letter table elsewhere).
    const name = `it_mnested_${Date.now().toString(36)}`;
    const { path } = maintenanceTestConfig(name);
    const dir = mkdtempSync(join(tmpdir(), 'floe-nested-'));
    const db = join(dir, 'catalog.db');
    const raw = parseYaml(readFileSync(path, 'utf8')) as any;
    const warehouse = `s3://floe/${name}`;
    raw.catalog = { ...raw.catalog, type: 'sql', uri: `sqlite:///${db}`, warehouse };
    Object.assign(raw.tables[0], { table: 'a.b', deadLetterTable: 'dl.a_b_dead_letters' });
    writeFileSync(path, stringifyYaml(raw));
    const cfg = loadConfig(path);

    await seedSmallFiles(cfg, 'a.b', 3, 30); // floe creates a.b at <wh>/a/b and appends 3 times
    const tables = await openTables(cfg);
    try {
      const ab = await tables.load('a.b');
      assert.equal(ab.metadata.location, `${warehouse}/a/b`);
      assert.equal(ab.metadata.properties['write.metadata.delete-after-commit.enabled'], 'true');
      assert.equal(ab.metadata.properties['write.metadata.previous-versions-max'], '100');

      // floe refuses the nested table, naming both.
      const nested = { ...findTable(cfg, 'a.b'), table: 'a.b.c', deadLetterTable: 'dl.a_b_c_dead_letters' };
      await assert.rejects(ensureIngestTables(tables, nested, cfg.schemaRegistry), (e: Error) => {
        assert.match(
          e.message,
          /cannot create table a\.b\.c at s3:\/\/floe\/.*\/a\/b\/c: its location lies inside the location of table a\.b/,
        );
        return true;
      });
      assert.equal(await tables.catalog.tableExists({ namespace: ['a', 'b'], name: 'c' }), false);

      // Another engine creates it anyway, with data.
      const created = await runPythonJson<{ location: string; metadata_location: string }>(PY, [db, warehouse, 'create'], {
        timeoutMs: 180_000,
      });
      assert.equal(created.location, `${warehouse}/a/b/c`);
      const innerFiles: string[] = [];
      for await (const f of tables.io.list(`${warehouse}/a/b/c/`)) innerFiles.push(f.location);
      assert.ok(innerFiles.filter((f) => f.endsWith('.parquet')).length >= 3, `a.b.c has data files: ${innerFiles.join(', ')}`);

      // A real orphan of a.b, so the sweep demonstrably deletes something.
      const stray = `${warehouse}/a/b/data/stray-${Date.now()}.parquet`;
      await tables.io.write(stray, new TextEncoder().encode('orphan'));
      await sleep(1500);

      await withWorker(cfg, async () => {
        const fc = await connectClient(cfg);
        try {
          const r = await removeOrphans(fc, 'a.b', { olderThanMs: 1000, force: true });
          assert.deepEqual(r.sample, [stray], "the sweep of a.b deletes only a.b's own orphan");
          assert.equal(r.deleted, 1);
          assert.deepEqual(r.nestedTables, ['a.b.c']);
          assert.equal(r.keptByOtherTables, innerFiles.length);
        } finally {
          await fc.close();
        }
      });

      for (const f of innerFiles) assert.ok(await tables.io.exists(f), `${f} of a.b.c still exists`);
      assert.ok(!(await tables.io.exists(stray)));
      // Both tables still scan: a.b through PyIceberg and DuckDB, a.b.c through PyIceberg.
      const reads = await engineReads((await tables.load('a.b')).metadataLocation);
      assert.equal(reads.pyiceberg.rows, 90);
      assert.equal(reads.duckdb.rows, 90);
      const inner = await runPythonJson<{ rows: number }>(PY, [db, warehouse, 'scan'], { timeoutMs: 180_000 });
      assert.equal(inner.rows, 30);
    } finally {
      await tables.close();
    }
  });
});
