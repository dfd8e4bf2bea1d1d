/**
 * Two separate processes commit concurrently to one table of one SQLite catalog file: WAL +
 * busy_timeout + the CAS UPDATE must make every commit land exactly once, conflicts resolved by
 * reload-and-retry, with an unbroken snapshot chain.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { SqlCatalog, SqliteDialect, LocalFileIO, ancestors, newTableMetadata, parseMetadataVersion } from '../../iceberg';

const root = mkdtempSync(join(tmpdir(), 'floe-sqlite-procs-'));
after(() => rmSync(root, { recursive: true, force: true }));

interface ChildResult {
  worker: string;
  committed: string[];
  conflicts: number;
}

const runChild = (args: string[]): Promise<ChildResult> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(__dirname, 'catalog-commit-child.ts'), ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: process.env,
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) reject(new Error(`child ${args[2]} exited ${code}: ${err}`));
      else resolve(JSON.parse(out.trim().split('\n').pop()!) as ChildResult);
    });
  });

void test('two processes commit 25 snapshots each to one SQLite catalog table; all 50 land', async () => {
  const dbPath = join(root, 'catalog.db');
  const warehouse = pathToFileURL(join(root, 'warehouse')).href;
  const cat = new SqlCatalog({ name: 'floe', dialect: new SqliteDialect({ path: dbPath }), io: new LocalFileIO(), warehouse });
  await cat.createNamespace(['db']);
  const id = { namespace: ['db'], name: 'shared' };
  const t0 = await cat.createTable(
    id,
    newTableMetadata({
      location: await cat.defaultTableLocation(id),
      schema: { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'id', required: true, type: 'long' }] },
      tableUuid: randomUUID(),
    }),
  );

  const go = join(root, 'go');
  const children = [runChild([dbPath, warehouse, 'a', '25', go]), runChild([dbPath, warehouse, 'b', '25', go])];
  // Release both together once each says it is ready (loading tsx takes seconds on a busy
  // machine; a fixed sleep let one start late, and then nothing overlapped).
  const ready = ['a', 'b'].map((w) => `${go}.ready-${w}`);
  for (let i = 0; !ready.every((f) => existsSync(f)); i++) {
    if (i > 24_000) assert.fail('the children never got ready');
    await sleep(5);
  }
  writeFileSync(go, '');
  const results = await Promise.all(children);

  const final = await cat.loadTable(id);
  const all = results.flatMap((r) => r.committed).sort();
  assert.equal(all.length, 50);
  assert.deepEqual(
    final.metadata.snapshots.map((s) => s['snapshot-id'].toString()).sort(),
    all,
    'every reported commit is in the table, once',
  );
  // The main branch is one unbroken chain through all 50 snapshots (no lost update).
  assert.equal([...ancestors(final.metadata)].length, 50);
  assert.equal(final.metadata['last-sequence-number'], 50n);
  assert.equal(parseMetadataVersion(final.metadataLocation), 50);
  // Per worker, its snapshots appear in its own commit order.
  for (const w of ['a', 'b']) {
    const seqs = final.metadata.snapshots.filter((s) => s.summary['floe.worker'] === w).map((s) => Number(s.summary['floe.seq']));
    assert.deepEqual(
      seqs,
      Array.from({ length: 25 }, (_, i) => i),
    );
  }
  // Losers deleted their metadata files: exactly versions 0..50 remain.
  const metaDir = new URL(`${t0.metadata.location}/metadata`).pathname;
  assert.equal(readdirSync(metaDir).filter((f) => f.endsWith('.metadata.json')).length, 51);
  const conflicts = results.reduce((n, r) => n + r.conflicts, 0);
  assert.ok(conflicts > 0, `the processes overlapped and conflicted (conflicts: ${conflicts})`);
  await cat.close();
});
