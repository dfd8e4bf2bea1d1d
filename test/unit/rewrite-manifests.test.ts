import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  MemoryCatalog,
  MemoryFileIO,
  isIcebergError,
  readManifest,
  readManifestList,
  currentSnapshot,
  newTableMetadata,
  DataFileContent,
  ManifestContent,
  ManifestEntryStatus,
  RewriteManifests,
  Transaction,
  fastAppend,
  packByPartition,
  rewriteFiles,
  rowDelta,
  type DataFile,
  type ManifestFile,
  type Schema,
  type TableIdentifier,
} from '../../iceberg';
import { rewriteManifests } from '../../maintenance/rewrite-manifests';
import type { Tables } from '../../table/tables';

const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'cat', required: false, type: 'string' },
  ],
};
const id: TableIdentifier = { namespace: ['db'], name: 't' };
const NAME = 'db.t';

async function setup(props: Record<string, string> = {}) {
  const io = new MemoryFileIO();
  const catalog = new MemoryCatalog('test', io);
  await catalog.createNamespace(['db']);
  await catalog.createTable(
    id,
    newTableMetadata({
      location: 'memory://wh/db/t',
      schema,
      tableUuid: '00000000-0000-0000-0000-000000000001',
      spec: { 'spec-id': 0, fields: [{ 'source-id': 2, 'field-id': 1000, name: 'cat', transform: 'identity' }] },
      // every append keeps its own manifest: the layout a streaming ingest leaves
      properties: { 'commit.retry.min-wait-ms': '1', 'commit.manifest-merge.enabled': 'false', ...props },
    }),
  );
  // the maintenance function needs only these members of Tables
  const tables = {
    catalog,
    io,
    load: (t: string) => catalog.loadTable({ namespace: t.split('.').slice(0, -1), name: t.split('.').pop()! }),
  };
  return { io, catalog, tables: tables as unknown as Tables };
}

let n = 0;
const df = (rows: number, cat: string): DataFile => ({
  content: DataFileContent.Data,
  filePath: `memory://wh/db/t/data/cat=${cat}/f${n++}.parquet`,
  fileFormat: 'PARQUET',
  specId: 0,
  partition: { cat },
  recordCount: rows,
  fileSizeInBytes: rows * 10,
  // metrics must survive the rewrite
  valueCounts: new Map([[1, rows]]),
  lowerBounds: new Map([[1, new Uint8Array([1, 0, 0, 0, 0, 0, 0, 0])]]),
});

type Setup = Awaited<ReturnType<typeof setup>>;

/** `count` appends, each of one file in each of `cats` (rows = 1 + index). */
async function appendMany({ io, catalog }: Setup, count: number, cats: string[]): Promise<DataFile[]> {
  const all: DataFile[] = [];
  for (let i = 0; i < count; i++) {
    const files = cats.map((c) => df(1 + i, c));
    all.push(...files);
    await fastAppend(catalog, io, await catalog.loadTable(id), files);
  }
  return all;
}

interface Live {
  manifest: ManifestFile;
  path: string;
  cat: string;
  status: ManifestEntryStatus;
  snapshotId: bigint | null;
  seq: bigint | null;
  fileSeq: bigint | null;
  valueCounts: Map<number, number> | undefined;
}

async function state({ io, catalog }: Setup): Promise<{ manifests: ManifestFile[]; live: Live[] }> {
  const { metadata } = await catalog.loadTable(id);
  const s = currentSnapshot(metadata);
  if (!s) return { manifests: [], live: [] };
  const manifests = await readManifestList(io, s['manifest-list']);
  const live: Live[] = [];
  for (const m of manifests) {
    for (const e of await readManifest(io, m)) {
      live.push({
        manifest: m,
        path: e.dataFile.filePath,
        cat: String(e.dataFile.partition['cat']),
        status: e.status,
        snapshotId: e.snapshotId,
        seq: e.sequenceNumber,
        fileSeq: e.fileSequenceNumber,
        valueCounts: e.dataFile.valueCounts,
      });
    }
  }
  return { manifests, live };
}

/** data manifests holding each partition */
function manifestsPerPartition(live: Live[]): Map<string, Set<string>> {
  const by = new Map<string, Set<string>>();
  for (const l of live) {
    if (l.manifest.content !== ManifestContent.Data) continue;
    let s = by.get(l.cat);
    if (!s) by.set(l.cat, (s = new Set()));
    s.add(l.manifest.manifestPath);
  }
  return by;
}

const identity = (l: Live) => [l.path, l.snapshotId, l.seq, l.fileSeq];
const byPath = (a: Live, b: Live) => (a.path < b.path ? -1 : 1);

test('packByPartition: partitions stay whole unless one exceeds the target', () => {
  const e = (key: string, size: number, specId = 0) => ({ specId, key, size });
  const sorted = [e('a', 3), e('a', 3), e('b', 3), e('c', 2), e('c', 2), e('d', 20), e('d', 1)];
  const bins = packByPartition(sorted, 10);
  assert.deepEqual(
    bins.map((b) => b.map((x) => x.key).join('')),
    ['aab', 'cc', 'd', 'd'],
  );
  // a spec change always starts a new manifest
  assert.deepEqual(
    packByPartition([e('a', 1, 0), e('a', 1, 1)], 100).map((b) => b.length),
    [1, 1],
  );
});

test('rewrite clusters 24 manifests into one: same files, sequence numbers, snapshot ids and metrics; summary as Java', async () => {
  const s = await setup();
  // each append touches 3 of 4 partitions, rotating: every partition is spread over many manifests
  const cats = ['a', 'b', 'c', 'd'];
  for (let i = 0; i < 8; i++)
    await appendMany(
      s,
      1,
      cats.filter((_, k) => k !== i % 4),
    );
  await appendMany(s, 16, ['x']);
  const before = await state(s);
  assert.equal(before.manifests.length, 24);
  const parentSummary = currentSnapshot((await s.catalog.loadTable(id)).metadata)!.summary;

  const r = await rewriteManifests(s.tables, NAME);
  assert.equal(r.noop, null);
  assert.equal(r.manifestsBefore, 24);
  assert.equal(r.manifestsAfter, 1);
  assert.equal(r.entries, 40);
  assert.equal(r.partitions, 5);
  assert.equal(r.maxManifestsPerPartition, 16);

  const { metadata } = await s.catalog.loadTable(id);
  const snap = currentSnapshot(metadata)!;
  assert.equal(snap['snapshot-id'].toString(), r.snapshotId);
  assert.equal(snap.summary.operation, 'replace');
  assert.equal(snap.summary['manifests-created'], '1');
  assert.equal(snap.summary['manifests-kept'], '0');
  assert.equal(snap.summary['manifests-replaced'], '24');
  assert.equal(snap.summary['entries-processed'], '40');
  assert.equal(snap.summary['total-records'], parentSummary['total-records']);
  assert.equal(snap.summary['total-data-files'], '40');
  assert.equal(snap.summary['added-data-files'], undefined);

  const after = await state(s);
  assert.equal(after.manifests.length, 1);
  const m = after.manifests[0]!;
  assert.equal(m.addedSnapshotId, snap['snapshot-id']);
  assert.equal(m.sequenceNumber, snap['sequence-number']);
  assert.equal(m.minSequenceNumber, 1n, 'the oldest entry keeps sequence number 1');
  assert.equal(m.existingFilesCount, 40);
  assert.equal(m.addedFilesCount, 0);
  assert.ok(after.live.every((l) => l.status === ManifestEntryStatus.Existing));
  assert.deepEqual(after.live.sort(byPath).map(identity), before.live.sort(byPath).map(identity));
  assert.deepEqual(
    after.live.sort(byPath).map((l) => l.valueCounts),
    before.live.sort(byPath).map((l) => l.valueCounts),
  );
  // entries of one partition are contiguous, partitions in order
  const order = (await readManifest(s.io, m)).map((e) => String(e.dataFile.partition['cat']));
  assert.deepEqual(order, [...order].sort());
  // no leftover files: the manifest list and manifest written are the ones referenced
  assert.ok(s.io.locations().every((l) => !l.includes('/snap-') || metadata.snapshots.some((x) => x['manifest-list'] === l)));
});

test('split at commit.manifest.target-size-bytes: whole partitions per manifest, a partition over the target split', async () => {
  const s = await setup();
  await appendMany(s, 10, ['a', 'b', 'c', 'd']);
  const before = await state(s);
  // each entry is estimated at its manifest's length over its entry count (4)
  const perEntry = Math.max(...before.manifests.map((m) => m.manifestLength / 4));
  const partitionBytes = 10 * perEntry;
  await new Transaction(id)
    .setProperties({ 'commit.manifest.target-size-bytes': String(Math.ceil(partitionBytes * 2.5)) })
    .commit(s.catalog, s.io);

  const r = await rewriteManifests(s.tables, NAME);
  assert.equal(r.manifestsAfter, 2, 'two partitions per manifest');
  const after = await state(s);
  for (const [cat, ms] of manifestsPerPartition(after.live)) assert.equal(ms.size, 1, `partition ${cat}: one manifest`);
  assert.deepEqual(after.live.sort(byPath).map(identity), before.live.sort(byPath).map(identity));

  // a target below one partition's size splits partitions; nothing is lost or duplicated
  const tx = new Transaction(id);
  const a = new RewriteManifests({ targetSizeBytes: Math.ceil(partitionBytes / 3) });
  tx.add(a);
  // already one manifest per partition: an explicit small target does not force a rewrite
  await tx.commit(s.catalog, s.io);
  assert.equal(a.plan?.noop, 'clustered');

  // a target below one entry's size: every entry in its own manifest, partitions in order
  await appendMany(s, 1, ['a', 'b', 'c', 'd']);
  const tx2 = new Transaction(id);
  tx2.add(new RewriteManifests({ targetSizeBytes: 1 }));
  await tx2.commit(s.catalog, s.io);
  const split = await state(s);
  assert.equal(split.manifests.length, 44);
  assert.deepEqual(
    split.manifests.map((m) => m.existingFilesCount),
    new Array(44).fill(1),
  );
  const paths = split.live.map((l) => l.path);
  assert.equal(new Set(paths).size, paths.length, 'no duplicated file');
  assert.equal(paths.length, 44);
});

test('delete manifests are kept as they are; data sequence numbers still make the deletes apply', async () => {
  const s = await setup();
  const files = await appendMany(s, 6, ['a', 'b']);
  const target = files[0]!;
  const del: DataFile = {
    content: DataFileContent.PositionDeletes,
    filePath: 'memory://wh/db/t/data/cat=a/del-0.parquet',
    fileFormat: 'PARQUET',
    specId: 0,
    partition: { cat: 'a' },
    recordCount: 1,
    fileSizeInBytes: 100,
  };
  await rowDelta(s.catalog, s.io, id, [], [del], { referencedDataFiles: [target.filePath] });
  await appendMany(s, 2, ['a']);
  const before = await state(s);
  const deleteManifests = before.manifests.filter((m) => m.content === ManifestContent.Deletes);
  assert.equal(deleteManifests.length, 1);

  const r = await rewriteManifests(s.tables, NAME);
  assert.equal(r.manifestsAfter, 1);
  const after = await state(s);
  assert.deepEqual(
    after.manifests.filter((m) => m.content === ManifestContent.Deletes),
    deleteManifests,
  );
  const snap = currentSnapshot((await s.catalog.loadTable(id)).metadata)!;
  assert.equal(snap.summary['manifests-kept'], '1');
  assert.equal(snap.summary['total-delete-files'], '1');
  // the delete (sequence 7) still applies to the data file (sequence 1), not to later files
  const deleteSeq = after.live.find((l) => l.path === del.filePath)!.seq!;
  assert.equal(after.live.find((l) => l.path === target.filePath)!.seq, 1n);
  assert.ok(after.live.filter((l) => l.cat === 'a' && l.manifest.content === ManifestContent.Data).some((l) => l.seq! > deleteSeq));
  assert.deepEqual(
    after.live
      .filter((l) => l.manifest.content === ManifestContent.Data)
      .sort(byPath)
      .map(identity),
    before.live
      .filter((l) => l.manifest.content === ManifestContent.Data)
      .sort(byPath)
      .map(identity),
  );
});

test('a concurrent append is kept: retry on the new head rewrites only the planned manifests', async () => {
  const s = await setup();
  await appendMany(s, 10, ['a', 'b']);
  const late = df(7, 'a');
  let lateManifest: string | undefined;
  s.catalog.beforeCommit = async () => {
    s.catalog.beforeCommit = undefined;
    await fastAppend(s.catalog, s.io, await s.catalog.loadTable(id), [late]);
    const { manifests } = await state(s);
    lateManifest = manifests[0]!.manifestPath;
  };
  const before = await state(s);
  const tx = new Transaction(id);
  const a = new RewriteManifests();
  tx.add(a);
  const r = await tx.commit(s.catalog, s.io);
  assert.equal(r.attempts, 2);
  const after = await state(s);
  assert.equal(after.manifests.length, 2);
  assert.ok(
    after.manifests.some((m) => m.manifestPath === lateManifest),
    'the concurrent manifest is kept as is',
  );
  const snap = currentSnapshot(r.table.metadata)!;
  assert.equal(snap['snapshot-id'], a.snapshotId);
  assert.equal(snap.summary['manifests-created'], '1');
  assert.equal(snap.summary['manifests-kept'], '1');
  assert.equal(snap.summary['manifests-replaced'], '10');
  assert.equal(snap.summary['total-data-files'], '21');
  const paths = after.live.map((l) => l.path).sort();
  assert.deepEqual(paths, [...before.live.map((l) => l.path), late.filePath].sort());
  // only the first attempt's manifest list is gone
  const lists = s.io.locations().filter((l) => l.includes('/snap-'));
  assert.deepEqual(lists.sort(), r.table.metadata.snapshots.map((x) => x['manifest-list']).sort());
});

test('a planned manifest rewritten concurrently fails the commit (CommitFailed, not retried) and leaves no files', async () => {
  const s = await setup();
  const files = await appendMany(s, 5, ['a', 'b']);
  s.catalog.beforeCommit = async () => {
    s.catalog.beforeCommit = undefined;
    // a compaction replaces a file: its manifest is rewritten under another name
    await rewriteFiles(s.catalog, s.io, id, [files[0]!], [df(1, 'a')]);
  };
  const tx = new Transaction(id);
  const a = new RewriteManifests();
  tx.add(a);
  await assert.rejects(
    tx.commit(s.catalog, s.io),
    (e: unknown) => isIcebergError(e, 'CommitFailed') && !e.retryable && /planned manifests are no longer in snapshot/.test(e.message),
  );
  const after = await state(s);
  assert.ok(!after.live.some((l) => l.path === files[0]!.filePath), 'the replaced file stays replaced');
  assert.equal(after.live.length, 10);
  assert.ok(a.writtenFiles().length > 1, 'the rewrite wrote manifests before it failed');
  const left = new Set(s.io.locations());
  assert.deepEqual(
    a.writtenFiles().filter((f) => left.has(f)),
    [],
    'none of them are left',
  );
});

test('no-op: an empty table, and a table with one manifest per partition, commit nothing', async () => {
  const s = await setup();
  const empty = await rewriteManifests(s.tables, NAME);
  assert.deepEqual(
    { noop: empty.noop, snapshotId: empty.snapshotId, before: empty.manifestsBefore, after: empty.manifestsAfter },
    { noop: 'empty', snapshotId: null, before: 0, after: 0 },
  );
  for (const c of ['a', 'b', 'c']) await appendMany(s, 1, [c]);
  const snapshots = (await s.catalog.loadTable(id)).metadata.snapshots.length;
  const r = await rewriteManifests(s.tables, NAME);
  assert.equal(r.noop, 'clustered');
  assert.equal(r.snapshotId, null);
  assert.equal(r.manifestsAfter, 3);
  assert.equal((await s.catalog.loadTable(id)).metadata.snapshots.length, snapshots);
  // after a real rewrite, running again is a no-op
  await appendMany(s, 3, ['a', 'b']);
  assert.equal((await rewriteManifests(s.tables, NAME)).noop, null);
  assert.equal((await rewriteManifests(s.tables, NAME)).noop, 'clustered');
  const per = manifestsPerPartition((await state(s)).live);
  assert.deepEqual([...per.keys()].sort(), ['a', 'b', 'c']);
});
