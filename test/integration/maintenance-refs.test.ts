/**
 * Issue 29 item 13: a table whose tags and branches another engine made (PyIceberg's
 * manage_snapshots, an append to a branch), against the real stack. floe's commits (the ingest
 * commit path, compaction) go to main and keep every ref; expiry keeps what the refs reference
 * under the spec's retention (a tag's snapshot, a branch's head and, per its
 * `min-snapshots-to-keep`, its ancestors: before, floe kept only the branch's head); orphan
 * removal keeps files only a branch or a tag reaches. Every check reads through PyIceberg.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { ensureStack } from '../../stack/stack';
import { runPythonJson } from '../../stack/python';
import { findTable, loadConfig, type FloeConfig } from '../../config';
import { connectClient } from '../../client';
import { compactTable, expireTable, removeOrphans } from '../../client/maintenance';
import { openTables } from '../../table/tables';
import { maintenanceTestConfig, orderRows, seedSmallFiles, withWorker } from './maintenance-oracles';

// PyIceberg on floe's SQLite catalog. `refs`: tag `audit` at main's 2nd snapshot, branch `dev` at
// its 3rd, two appends to `dev` (the rows of main's 1st snapshot), then branch `keep3` at dev's
// head with min-snapshots-to-keep 3 (made last: PyIceberg 0.12's append to a branch writes the ref
// again without its retention). `read`: every snapshot id, the refs, and the rows each ref reads.
const PY = String.raw`
import json, sys
from pyiceberg.catalog.sql import SqlCatalog
from floe_duckdb import pyiceberg_s3_properties
db, warehouse, table, step = sys.argv[1:5]
cat = SqlCatalog("floe", uri=f"sqlite:///{db}", warehouse=warehouse, **pyiceberg_s3_properties())
t = cat.load_table(table)
main = sorted(t.metadata.snapshots, key=lambda s: s.sequence_number)
if step == "refs":
    with t.manage_snapshots() as ms:
        ms.create_tag(snapshot_id=main[1].snapshot_id, tag_name="audit")
        ms.create_branch(snapshot_id=main[2].snapshot_id, branch_name="dev")
    rows = t.scan(snapshot_id=main[0].snapshot_id).to_arrow()
    t.append(rows, branch="dev")
    t.append(rows, branch="dev")
    t = cat.load_table(table)
    with t.manage_snapshots() as ms:
        ms.create_branch(snapshot_id=t.metadata.refs["dev"].snapshot_id, branch_name="keep3", min_snapshots_to_keep=3)
    t = cat.load_table(table)
rows = lambda sid: t.scan(snapshot_id=sid).to_arrow().num_rows
refs = {name: {"snapshot": str(r.snapshot_id), "type": r.snapshot_ref_type.value, "min": r.min_snapshots_to_keep} for name, r in t.metadata.refs.items()}
chain, sid = [], t.metadata.refs["dev"].snapshot_id
while sid is not None:
    s = t.snapshot_by_id(sid)
    if s is None:
        break
    chain.append(str(sid))
    sid = s.parent_snapshot_id
print(json.dumps({
    "snapshots": [str(s.snapshot_id) for s in sorted(t.metadata.snapshots, key=lambda s: s.sequence_number)],
    "refs": refs,
    "devChain": chain,
    "rows": {name: rows(r.snapshot_id) for name, r in t.metadata.refs.items()},
}))
`;

interface PyState {
  snapshots: string[];
  refs: Record<string, { snapshot: string; type: string; min: number | null }>;
  devChain: string[];
  rows: Record<string, number>;
}

describe('a table with another engine’s tags and branches (real stack)', { timeout: 10 * 60_000 }, () => {
  before(async () => {
    await ensureStack(['temporal', 's3']);
  });

  it('floe commits to main and keeps the refs; expiry keeps what tags and branches reference; orphan removal keeps their files', async () => {
    const name = `it_mrefs_${Date.now().toString(36)}`;
    const { path, table } = maintenanceTestConfig(name);
    // A catalog of its own, so PyIceberg writes to nobody else's tables.
    const db = join(mkdtempSync(join(tmpdir(), 'floe-refs-')), 'catalog.db');
    const warehouse = `s3://floe/${name}`;
    const raw = parseYaml(readFileSync(path, 'utf8')) as any;
    raw.catalog = { ...raw.catalog, type: 'sql', uri: `sqlite:///${db}`, warehouse };
    writeFileSync(path, stringifyYaml(raw));
    const cfg = loadConfig(path);
    const py = (step: string) => runPythonJson<PyState>(PY, [db, warehouse, table, step], { timeoutMs: 180_000 });

    await seedSmallFiles(cfg, table, 4, 30); // main: s1..s4, 30 rows each
    const made = await py('refs');
    const [s1, s2, s3, s4] = made.snapshots as [string, string, string, string];
    const [d2, d1] = made.devChain as [string, string];
    assert.deepEqual(made.devChain, [d2, d1, s3, s2, s1], 'dev: two appends on top of main’s 3rd snapshot');
    const refsMade = {
      main: { snapshot: s4, type: 'branch', min: null },
      audit: { snapshot: s2, type: 'tag', min: null },
      dev: { snapshot: d2, type: 'branch', min: null },
      keep3: { snapshot: d2, type: 'branch', min: 3 },
    };
    assert.deepEqual(made.refs, refsMade);
    const rows = { main: 120, audit: 60, dev: 150, keep3: 150 };
    assert.deepEqual(made.rows, rows);

    // The ingest commit path (tables.appendOnce, what ingest/commit-cycle.ts calls): main moves, the refs stay.
    const tables = await openTables(cfg);
    try {
      const t = findTable(cfg, table);
      const files = await tables.writeDataFiles(table, orderRows(500, 30), 'ingest-after-refs', t.targetFileSizeBytes);
      await tables.appendOnce(table, { files, summary: { 'floe.commit-id': `ingest-${name}` }, validate: () => undefined });
    } finally {
      await tables.close();
    }
    const ingested = await py('read');
    const a1 = ingested.snapshots.at(-1)!;
    assert.deepEqual(ingested.refs, { ...refsMade, main: { snapshot: a1, type: 'branch', min: null } });
    rows.main = 150;
    assert.deepEqual(ingested.rows, rows);

    await withWorker(cfg, async () => {
      const fc = await connectClient(cfg);
      try {
        const c = await compactTable(fc, table, { minInputFiles: 2 });
        assert.deepEqual(c.failed_data_file_groups, []);
        assert.ok(c.rewritten_data_files_count >= 2, JSON.stringify(c));
        const compacted = await py('read');
        const c1 = compacted.snapshots.at(-1)!;
        assert.deepEqual(compacted.refs, { ...refsMade, main: { snapshot: c1, type: 'branch', min: null } }, 'compaction moved main only');
        assert.deepEqual(compacted.rows, rows);

        // Everything is older than the cutoff; main and dev keep their heads (retain last 1). The
        // tag keeps s2; keep3 keeps its head and two ancestors (min-snapshots-to-keep 3): d2, d1, s3.
        const e = await expireTable(fc, table, { olderThanMs: 0, retainLast: 1 });
        const expired = await py('read');
        assert.deepEqual(new Set(expired.snapshots), new Set([s2, s3, d1, d2, c1]), `kept: ${JSON.stringify(expired.snapshots)}`);
        assert.equal(e.expiredSnapshots, 3, 's1, s4 and the ingest commit a1 expire');
        assert.deepEqual(expired.refs, compacted.refs, 'expiry removes no ref');
        assert.deepEqual(expired.devChain, [d2, d1, s3, s2], 'dev’s history up to the expired s1');
        assert.deepEqual(expired.rows, rows, 'every ref still reads (its files exist)');

        // Files only the tag (s2's small files, compacted away on main) or the branch (dev's
        // appends) reach are not orphans; a stray file is, as a control.
        const stray = await withTablesIo(cfg, table, `stray-${Date.now()}.parquet`);
        await sleep(1500); // the stray file must be older than the 1 s grace period
        const o = await removeOrphans(fc, table, { olderThanMs: 1000, force: true });
        assert.deepEqual(o.sample, [stray], 'the sweep deletes the stray file and nothing else');
        assert.equal(o.deleted, 1);
        assert.deepEqual((await py('read')).rows, rows);
      } finally {
        await fc.close();
      }
    });
  });
});

/** Writes an unreferenced file named `file` in the table's data directory; returns its location. */
async function withTablesIo(cfg: FloeConfig, table: string, file: string): Promise<string> {
  const tables = await openTables(cfg);
  try {
    const location = `${(await tables.load(table)).metadata.location}/data/${file}`;
    await tables.io.write(location, new TextEncoder().encode('orphan'));
    return location;
  } finally {
    await tables.close();
  }
}
