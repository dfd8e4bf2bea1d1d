import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  MemoryCatalog,
  IcebergError,
  isIcebergError,
  MemoryFileIO,
  readManifest,
  readManifestList,
  ancestors,
  currentSnapshot,
  newTableMetadata,
  parseTableMetadata,
  DataFileContent,
  ManifestEntryStatus,
  Transaction,
  expireSnapshots,
  fastAppend,
  rewriteFiles,
  packEnd,
  planMerge,
  type DataFile,
  type Schema,
  type TableIdentifier,
} from '../../iceberg';

const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'cat', required: false, type: 'string' },
  ],
};
const id: TableIdentifier = { namespace: ['db'], name: 't' };

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
      properties: { 'commit.retry.min-wait-ms': '1', ...props },
    }),
  );
  return { io, catalog };
}

let n = 0;
const df = (rows: number, cat = 'a'): DataFile => ({
  content: DataFileContent.Data,
  filePath: `memory://wh/db/t/data/cat=${cat}/f${n++}.parquet`,
  fileFormat: 'PARQUET',
  specId: 0,
  partition: { cat },
  recordCount: rows,
  fileSizeInBytes: rows * 10,
});

async function liveFiles(io: MemoryFileIO, catalog: MemoryCatalog): Promise<string[]> {
  const { metadata } = await catalog.loadTable(id);
  const s = currentSnapshot(metadata);
  if (!s) return [];
  const out: string[] = [];
  for (const m of await readManifestList(io, s['manifest-list'])) for (const e of await readManifest(io, m)) out.push(e.dataFile.filePath);
  return out.sort();
}

test('packEnd/planMerge: the newest bin waits for min-count, full bins merge', () => {
  assert.deepEqual(
    packEnd([1, 2, 3, 4, 5], (x) => x, 6),
    [[1, 2, 3], [4], [5]],
  ); // oldest packed first
  assert.deepEqual(
    packEnd([5, 1, 1, 1, 1], (x) => x, 3),
    [[5], [1], [1, 1, 1]],
  );
  const plan = planMerge(['n', 'a', 'b'], 'n', () => 1, 100, 5);
  assert.deepEqual(plan, [{ items: ['n', 'a', 'b'], merge: false }]);
  assert.deepEqual(
    planMerge(['n', 'a', 'b'], 'n', () => 1, 100, 3),
    [{ items: ['n', 'a', 'b'], merge: true }],
  );
});

test('fast append: snapshot, summary totals, sequence numbers, snapshot-log', async () => {
  const { io, catalog } = await setup();
  const t0 = await catalog.loadTable(id);
  const t1 = await fastAppend(catalog, io, t0, [df(10), df(5, 'b')], { 'floe.commit-id': 'c1' });
  const s1 = currentSnapshot(t1.metadata)!;
  assert.equal(s1['sequence-number'], 1n);
  assert.equal(s1.summary.operation, 'append');
  assert.equal(s1.summary['added-data-files'], '2');
  assert.equal(s1.summary['added-records'], '15');
  assert.equal(s1.summary['total-records'], '15');
  assert.equal(s1.summary['changed-partition-count'], '2');
  assert.equal(s1.summary['floe.commit-id'], 'c1');
  assert.ok(s1['snapshot-id'] > 0n);
  const t2 = await fastAppend(catalog, io, t1, [df(7)]);
  const s2 = currentSnapshot(t2.metadata)!;
  assert.equal(s2['parent-snapshot-id'], s1['snapshot-id']);
  assert.equal(s2['sequence-number'], 2n);
  assert.equal(s2.summary['total-records'], '22');
  assert.equal(s2.summary['total-data-files'], '3');
  assert.equal(t2.metadata['snapshot-log'].length, 2);
  // entries inherit the snapshot's sequence number through the manifest list
  const ml = await readManifestList(io, s2['manifest-list']);
  const seqs = (await Promise.all(ml.map((m) => readManifest(io, m))))
    .flat()
    .map((e) => e.sequenceNumber)
    .sort();
  assert.deepEqual(seqs, [1n, 1n, 2n]);
  // a stale base is a conflict (single attempt), and its files are cleaned up
  const before = io.locations().length;
  await assert.rejects(fastAppend(catalog, io, t1, [df(1)]), (e: unknown) => isIcebergError(e, 'CommitConflict'));
  assert.equal(io.locations().length, before, 'the failed attempt left no files');
});

test('1,000 appends keep the manifest list small and totals right', async () => {
  const { io, catalog } = await setup({ 'commit.manifest.min-count-to-merge': '20' });
  let t = await catalog.loadTable(id);
  let rows = 0;
  let maxManifests = 0;
  for (let i = 0; i < 1000; i++) {
    const r = 1 + (i % 7);
    rows += r;
    t = await fastAppend(catalog, io, t, [df(r, i % 3 ? 'a' : 'b')]);
    const s = currentSnapshot(t.metadata)!;
    if (i % 50 === 49 || i === 999) {
      const ml = await readManifestList(io, s['manifest-list']);
      maxManifests = Math.max(maxManifests, ml.length);
    }
  }
  const s = currentSnapshot(t.metadata)!;
  assert.equal(s.summary['total-records'], String(rows));
  assert.equal(s.summary['total-data-files'], '1000');
  const ml = await readManifestList(io, s['manifest-list']);
  assert.ok(maxManifests <= 20, `manifest list stayed small (max ${maxManifests})`);
  const entries = (await Promise.all(ml.map((m) => readManifest(io, m)))).flat();
  assert.equal(entries.length, 1000);
  assert.equal(
    entries.reduce((a, e) => a + e.dataFile.recordCount, 0),
    rows,
  );
  assert.equal(new Set(entries.map((e) => e.dataFile.filePath)).size, 1000);
  // every file keeps the data sequence number of the commit that added it
  const seqs = entries.map((e) => e.sequenceNumber!).sort((a, b) => (a < b ? -1 : 1));
  assert.deepEqual(
    seqs,
    Array.from({ length: 1000 }, (_, i) => BigInt(i + 1)),
  );
  // the metadata.json on storage is exactly the metadata the catalog hands out
  const onDisk = parseTableMetadata(Buffer.from(await io.read(t.metadataLocation)).toString('utf8'));
  assert.deepEqual(onDisk, t.metadata);
  // write.metadata.previous-versions-max defaults to 100 (as in Java): the log keeps the newest 100
  assert.equal(onDisk['metadata-log'].length, 100);
});

test('Transaction retries a lost CAS with the same snapshot id and cleans only the dead attempt', async () => {
  const { io, catalog } = await setup();
  await fastAppend(catalog, io, await catalog.loadTable(id), [df(1)]);
  let raced = false;
  catalog.beforeCommit = async () => {
    if (raced) return;
    raced = true; // a concurrent writer lands between our load and our swap
    catalog.beforeCommit = undefined;
    await fastAppend(catalog, io, await catalog.loadTable(id), [df(2)]);
    catalog.beforeCommit = async () => {};
  };
  const tx = new Transaction(id);
  const a = tx.fastAppend([df(3)]);
  const validated: number[] = [];
  const r = await tx.commit(catalog, io, {
    validate: (t) => {
      validated.push(t.metadata.snapshots.length);
    },
  });
  assert.equal(r.attempts, 2);
  assert.deepEqual(validated, [1, 2], 'validate ran against each reloaded base');
  const s = currentSnapshot(r.table.metadata)!;
  assert.equal(s['snapshot-id'], a.snapshotId);
  assert.equal(s['sequence-number'], 3n);
  assert.equal(s.summary['total-records'], '6');
  // no dangling manifest lists from the failed attempt
  const lists = io.locations().filter((l) => l.includes('/snap-'));
  assert.deepEqual(lists.sort(), r.table.metadata.snapshots.map((x) => x['manifest-list']).sort());
});

test('CommitStateUnknown keeps every written file', async () => {
  const { io, catalog } = await setup();
  catalog.beforeCommit = () => {
    throw new IcebergError('CommitStateUnknown', 'socket closed after send');
  };
  const before = io.locations().length;
  const tx = new Transaction(id);
  tx.fastAppend([df(3)]);
  await assert.rejects(tx.commit(catalog, io), (e: unknown) => isIcebergError(e, 'CommitStateUnknown'));
  assert.ok(io.locations().length > before, 'manifest + manifest list were kept');
});

test('rewriteFiles: concurrent appends survive; vanished files fail with CommitFailed naming them', async () => {
  const { io, catalog } = await setup();
  const a = df(10),
    b = df(20),
    c = df(5, 'b');
  await fastAppend(catalog, io, await catalog.loadTable(id), [a, b]);
  await fastAppend(catalog, io, await catalog.loadTable(id), [c]);
  const merged = df(30);
  // a concurrent append lands during the rewrite's first CAS
  const late = df(1);
  catalog.beforeCommit = async () => {
    catalog.beforeCommit = undefined;
    await fastAppend(catalog, io, await catalog.loadTable(id), [late]);
  };
  const r = await rewriteFiles(catalog, io, id, [a, b], [merged], { 'floe.compaction': 'x' });
  assert.equal(r.attempts, 2);
  const s = currentSnapshot(r.table.metadata)!;
  assert.equal(s.summary.operation, 'replace');
  assert.equal(s.summary['deleted-data-files'], '2');
  assert.equal(s.summary['added-data-files'], '1');
  assert.equal(s.summary['total-records'], '36');
  assert.equal(s.summary['total-data-files'], '3');
  assert.deepEqual(await liveFiles(io, catalog), [merged.filePath, c.filePath, late.filePath].sort());
  // deleted entries keep their original data sequence number; existing ones too
  const ml = await readManifestList(io, s['manifest-list']);
  const all = (await Promise.all(ml.map((m) => readManifest(io, m, { includeDeleted: true })))).flat();
  const del = all.filter((e) => e.status === ManifestEntryStatus.Deleted);
  assert.deepEqual(
    del.map((e) => [e.dataFile.filePath, e.sequenceNumber]).sort(),
    [
      [a.filePath, 1n],
      [b.filePath, 1n],
    ].sort(),
  );
  assert.equal(all.find((e) => e.dataFile.filePath === c.filePath)!.sequenceNumber, 2n);
  assert.equal(all.find((e) => e.dataFile.filePath === merged.filePath)!.sequenceNumber, s['sequence-number']);

  // replacing files that are no longer live fails without retry and names them
  const before = io.locations().length;
  await assert.rejects(
    rewriteFiles(catalog, io, id, [a, c], [df(15)]),
    (e: unknown) => isIcebergError(e, 'CommitFailed') && !e.retryable && e.message.includes(a.filePath) && !e.message.includes(c.filePath),
  );
  assert.equal(io.locations().length, before, 'the failed rewrite left no files');
  // record counts must balance
  assert.throws(
    () => new Transaction(id).rewriteFiles([c], [df(4)]),
    (e: unknown) => isIcebergError(e, 'DataInvalid'),
  );
});

test('expireSnapshots: removes old snapshots and reports only unreachable files', async () => {
  const { io, catalog } = await setup({ 'commit.manifest-merge.enabled': 'false' });
  const a = df(10),
    b = df(20),
    c = df(5);
  await fastAppend(catalog, io, await catalog.loadTable(id), [a]); // S1
  await fastAppend(catalog, io, await catalog.loadTable(id), [b]); // S2
  const s3 = await rewriteFiles(catalog, io, id, [a, b], [df(30)]); // S3 replaces a,b
  await fastAppend(catalog, io, await catalog.loadTable(id), [c]); // S4
  const m = (await catalog.loadTable(id)).metadata;
  const [S1, S2, S3, S4] = m.snapshots;
  assert.equal(S3!['snapshot-id'], s3.snapshotIds[0]);
  // keep S2 via protect: then a,b stay reachable (S2 reads them)
  const r1 = await expireSnapshots(catalog, io, id, {
    olderThanMs: BigInt(Date.now()) + 1000n,
    retainLast: 1,
    protect: [S2!['snapshot-id']],
  });
  assert.deepEqual(r1.expired.snapshotIds, [S1!['snapshot-id'], S3!['snapshot-id']]);
  assert.deepEqual(r1.expired.dataFiles, []);
  assert.deepEqual(r1.expired.manifestLists.sort(), [S1!['manifest-list'], S3!['manifest-list']].sort());
  assert.deepEqual(
    r1.table.metadata.snapshots.map((s) => s['snapshot-id']),
    [S2!['snapshot-id'], S4!['snapshot-id']],
  );
  assert.deepEqual(
    r1.table.metadata['snapshot-log'].map((e) => e['snapshot-id']),
    [S4!['snapshot-id']],
  );
  // now expire S2 too: a and b are reachable from nothing retained
  const r2 = await expireSnapshots(catalog, io, id, { olderThanMs: BigInt(Date.now()) + 1000n, retainLast: 1 });
  assert.deepEqual(r2.expired.snapshotIds, [S2!['snapshot-id']]);
  assert.deepEqual(r2.expired.dataFiles.sort(), [a.filePath, b.filePath].sort());
  const current = new Set((await readManifestList(io, S4!['manifest-list'])).map((x) => x.manifestPath));
  for (const p of r2.expired.manifests) assert.ok(!current.has(p), `${p} is not referenced by the retained snapshot`);
  assert.equal([...ancestors(r2.table.metadata)].length, 1);
  assert.deepEqual(await liveFiles(io, catalog), [c.filePath, (await liveFiles(io, catalog)).find((p) => p !== c.filePath)!].sort());
});
