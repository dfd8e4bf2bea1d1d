/**
 * Interop 3: concurrent writers in separate processes on one SQLite catalog table.
 *  - two appenders committing at once: every commit lands, the main ancestry has sequence numbers
 *    1..N with no gap or repeat, each writer's commits are in order, totals are right;
 *  - rewrites (compaction of every live file) racing with appends and with each other: each rewrite
 *    either lands or fails cleanly (CommitFailed naming files another rewrite already replaced, or
 *    CommitConflict after its retries), and no append is ever lost or duplicated: PyIceberg and
 *    DuckDB read exactly the appended ids.
 * On file:// and SeaweedFS S3.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { readManifestList, ancestors, type Catalog, type FileIO, type LoadedTable, type PartitionSpec, type Schema } from '../../iceberg';
import { ensureStack } from '../../stack';
import { backend, createTable, dropWarehouse, liveFiles, open, type Backend, type BackendKind } from '../oracles/floe-table';
import type { AppendReport, RewriteReport } from '../oracles/interop-child';
import { duckRead, pyCount, pyRead } from '../oracles/oracle';

const SCHEMA: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'writer', required: true, type: 'int' },
    { id: 3, name: 'part', required: true, type: 'int' },
  ],
};
const SPEC: PartitionSpec = { 'spec-id': 0, fields: [{ 'source-id': 3, 'field-id': 1000, name: 'part', transform: 'identity' }] };
const CHILD = join(__dirname, '..', 'oracles', 'interop-child.ts');

function runChild(args: Record<string, unknown>): Promise<AppendReport | RewriteReport> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, JSON.stringify(args)], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: process.env,
    });
    let out = '',
      err = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) reject(new Error(`${String(args['mode'])} child ${String(args['writer'])} exited ${code}: ${err.slice(-3000)}`));
      else resolve(JSON.parse(out.trim().split('\n').pop()!) as AppendReport | RewriteReport);
    });
  });
}

/**
 * Starts every child, releases them together once all are loaded (each writes `<go>.ready-<writer>`;
 * seconds on a busy machine), waits for all. A child that fails before that fails the wait.
 */
async function race(root: string, label: string, children: Array<Record<string, unknown>>): Promise<Array<AppendReport | RewriteReport>> {
  const go = join(root, `go-${label}`);
  const finished = Promise.all(children.map((c) => runChild({ ...c, go })));
  for (const c of children) while (!existsSync(`${go}.ready-${String(c['writer'])}`)) await Promise.race([sleep(20), finished]);
  writeFileSync(go, '');
  return finished;
}

function checkAncestry(t: LoadedTable): bigint[] {
  const chain = [...ancestors(t.metadata)].reverse();
  const seqs = chain.map((s) => s['sequence-number']);
  assert.deepEqual(
    seqs,
    chain.map((_, i) => BigInt(i + 1)),
    'main ancestry sequence numbers are 1..N, strictly increasing, no gaps',
  );
  assert.equal(t.metadata['last-sequence-number'], BigInt(chain.length));
  assert.equal(chain.length, t.metadata.snapshots.length, 'every snapshot is on main (no commit lost its parent)');
  for (let i = 1; i < chain.length; i++) assert.equal(chain[i]!['parent-snapshot-id'], chain[i - 1]!['snapshot-id']);
  return seqs;
}

function expectedIds(reports: AppendReport[]): number[] {
  return reports
    .flatMap((r) => r.commits.flatMap((c) => Array.from({ length: c.ids[1] - c.ids[0] + 1 }, (_, j) => c.ids[0] + j)))
    .sort((a, b) => a - b);
}

for (const kind of ['file', 's3'] as BackendKind[]) {
  void describe(`interop concurrency (${kind}): separate writer processes on one SQLite catalog`, { timeout: 170_000 }, () => {
    const root = mkdtempSync(join(tmpdir(), `floe-interop-conc-${kind}-`));
    let b: Backend;
    let catalog: Catalog;
    let io: FileIO;

    before(async () => {
      await ensureStack(['s3']);
      b = backend(kind, root);
      ({ catalog, io } = await open(b));
    });
    after(async () => {
      if (io) await dropWarehouse(io, b);
      await catalog?.close();
      rmSync(root, { recursive: true, force: true });
    });

    void it('two appenders at once: all commits land, sequence numbers 1..N, totals right', async () => {
      const id = { namespace: ['conc'], name: 'appends' };
      // merge manifests early so concurrent retries also re-merge (EXISTING entries, explicit seqs)
      await createTable(catalog, b, id, SCHEMA, SPEC, { 'commit.manifest.min-count-to-merge': '4' });
      const COMMITS = 12,
        ROWS = 10;
      const reports = (await race(
        root,
        'appends',
        [1, 2].map((writer) => ({
          mode: 'append',
          config: b.config,
          table: 'conc.appends',
          writer,
          commits: COMMITS,
          rows: ROWS,
        })),
      )) as AppendReport[];

      const t = await catalog.loadTable(id);
      checkAncestry(t);
      const onMain = new Map(t.metadata.snapshots.map((s) => [s['snapshot-id'].toString(), s]));
      for (const r of reports) {
        assert.equal(r.commits.length, COMMITS, `writer ${r.writer} commits`);
        const seqs = r.commits.map((c) => BigInt(c.sequenceNumber));
        for (let i = 1; i < seqs.length; i++) assert.ok(seqs[i]! > seqs[i - 1]!, `writer ${r.writer}: its sequence numbers increase`);
        for (const c of r.commits) {
          const s = onMain.get(c.snapshotId);
          assert.ok(s, `writer ${r.writer}: snapshot ${c.snapshotId} is not in the table`);
          assert.equal(s['sequence-number'].toString(), c.sequenceNumber, 'the sequence number the writer saw is the one on main');
          assert.equal(s.summary['added-records'], String(ROWS));
        }
      }
      const interleaved = [...ancestors(t.metadata)]
        .reverse()
        .map((s) => s.summary['floe.writer'])
        .join('');
      assert.ok(/12|21/.test(interleaved), `the two writers' commits should interleave, found ${interleaved}`);
      const total = 2 * COMMITS * ROWS;
      const cur = t.metadata.snapshots.find((s) => s['snapshot-id'] === t.metadata['current-snapshot-id'])!;
      assert.equal(cur.summary['total-records'], String(total));
      const live = await liveFiles(io, t);
      assert.equal(cur.summary['total-data-files'], String(live.length));
      assert.equal(
        live.reduce((a, f) => a + f.recordCount, 0),
        total,
      );
      const py = await pyCount(b.oracle, 'conc.appends', 'id');
      assert.equal(py.count, total, 'PyIceberg row count');
      assert.deepEqual(py.values, expectedIds(reports), 'PyIceberg reads exactly the appended ids');
      assert.deepEqual(
        py.snapshots.list.map((s) => s.sequence_number).sort((x, y) => x - y),
        Array.from({ length: 2 * COMMITS }, (_, i) => i + 1),
      );
      // every file keeps the data sequence number of the commit that added it, through merges
      const seqOf = new Map(reports.flatMap((r) => r.commits.map((c, k) => [`w${r.writer}-c${k}-`, Number(c.sequenceNumber)] as const)));
      const read = await pyRead(b.oracle, 'conc.appends');
      assert.equal(read.files.length, live.length);
      for (const f of read.files) {
        const name = f.file_path.split('/').pop()!;
        const want = [...seqOf].find(([prefix]) => name.startsWith(prefix))?.[1];
        assert.equal(f.sequence_number, want, `${name}: data sequence number as PyIceberg reads it`);
      }
      const manifests = await readManifestList(io, cur['manifest-list']);
      assert.ok(manifests.length < 2 * COMMITS, `manifests were merged: ${manifests.length} manifests for ${2 * COMMITS} appends`);
    });

    void it('rewrites racing with appends (and each other) land or fail cleanly; no append is lost', async () => {
      const id = { namespace: ['conc'], name: 'rewrites' };
      await createTable(catalog, b, id, SCHEMA, SPEC, { 'commit.manifest.min-count-to-merge': '4' });
      const COMMITS = 10,
        ROWS = 10;
      const reports = await race(root, 'rewrites', [
        ...[1, 2].map((writer) => ({ mode: 'append', config: b.config, table: 'conc.rewrites', writer, commits: COMMITS, rows: ROWS })),
        ...[7, 8].map((writer) => ({ mode: 'rewrite', config: b.config, table: 'conc.rewrites', writer, rounds: 4 })),
      ]);
      const appends = reports.filter((r): r is AppendReport => r.mode === 'append');
      const rewrites = reports.filter((r): r is RewriteReport => r.mode === 'rewrite');

      const t = await catalog.loadTable(id);
      checkAncestry(t);
      const byId = new Map(t.metadata.snapshots.map((s) => [s['snapshot-id'].toString(), s]));
      for (const r of appends) {
        assert.equal(r.commits.length, COMMITS);
        for (const c of r.commits) assert.equal(byId.get(c.snapshotId)?.summary.operation, 'append', `append ${c.snapshotId} on main`);
      }
      const rounds = rewrites.flatMap((r) => r.rounds);
      const committed = rounds.filter((r) => r.outcome === 'committed');
      const outcomes = rounds.map((r) => r.outcome).join(', ');
      assert.ok(committed.length > 0, `at least one rewrite must land for the race to mean anything: ${outcomes}`);
      for (const r of committed)
        assert.equal(byId.get(r.snapshotId!)?.summary.operation, 'replace', `rewrite ${r.snapshotId} on main as replace`);
      assert.equal(t.metadata.snapshots.length, 2 * COMMITS + committed.length, 'snapshots = appends + landed rewrites');

      const replacedByOthers = new Set(committed.flatMap((r) => r.replaced ?? []));
      const live = new Set((await liveFiles(io, t)).map((f) => f.filePath));
      for (const r of rounds.filter((x) => x.outcome === 'commit-failed')) {
        assert.ok(r.missing && r.missing.length > 0, `CommitFailed must name the vanished files: ${r.message}`);
        for (const p of r.missing) {
          assert.ok(!live.has(p), `CommitFailed named ${p} as vanished, yet it is live`);
          assert.ok(replacedByOthers.has(p), `${p} vanished but no landed rewrite replaced it`);
        }
      }
      for (const r of committed)
        for (const p of r.added ?? [])
          if (!live.has(p)) assert.ok(replacedByOthers.has(p), `compacted file ${p} vanished without being rewritten again`);

      const total = 2 * COMMITS * ROWS;
      const cur = t.metadata.snapshots.find((s) => s['snapshot-id'] === t.metadata['current-snapshot-id'])!;
      assert.equal(cur.summary['total-records'], String(total), `total-records after ${outcomes}`);
      const py = await pyCount(b.oracle, 'conc.rewrites', 'id');
      assert.equal(py.count, total, `PyIceberg row count after rewrites (${outcomes})`);
      assert.deepEqual(py.values, expectedIds(appends), 'PyIceberg reads every appended id exactly once');
      const duck = await duckRead(t.metadataLocation, [['id', 'long']]);
      assert.equal(duck.count, total, 'DuckDB row count');
      process.stdout.write(`# ${kind} rewrite outcomes: ${outcomes}\n`);
    });
  });
}
