/**
 * Iceberg format v3 in floe's library: deletion-vector-v1 blobs (64-bit portable Roaring, run
 * containers, buckets above 2^32, length/magic/CRC framing), Puffin files, v3 table metadata,
 * row lineage (first-row-id, added-rows, next-row-id, manifest and data file first_row_id), the
 * v2 -> v3 upgrade, and DVs through RowDelta and the scan (merge, one DV per data file, refusals).
 * In memory: MemoryFileIO + MemoryCatalog.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  DataFileContent,
  MemoryCatalog,
  MemoryFileIO,
  RewriteManifests,
  Transaction,
  applyUpdates,
  currentSnapshot,
  dataFileFromWire,
  dataFileToWire,
  decodeDeletionVector,
  decodePuffinFooter,
  deserializePositions,
  encodeDeletionVector,
  encodePuffin,
  expireSnapshots,
  fastAppend,
  filesTable,
  isIcebergError,
  liveDeletes,
  mergeDeletionVectors,
  newTableMetadata,
  parseTableMetadata,
  partitionsTable,
  planTasks,
  portableRoaringSize,
  puffinBlob,
  readAvroFile,
  readDeletionVector,
  readManifest,
  readManifestList,
  rewriteFiles,
  rowDelta,
  scanBatches,
  serializePositions,
  serializeTableMetadata,
  writeDeletionVectors,
  writeParquetFile,
  writePositionDeleteFiles,
  writePositionDeletes,
  type DataFile,
  type LoadedTable,
  type Schema,
  type TableIdentifier,
} from '../../iceberg';

const cmp = (a: bigint, b: bigint): number => (a < b ? -1 : a > b ? 1 : 0);
const sorted = (xs: Iterable<bigint>): bigint[] => [...new Set(xs)].sort(cmp);

// ---------- deletion-vector-v1 blobs ----------

test('DV blob: framing is length BE, magic D1 D3 39 64, vector, CRC-32 BE; round trip', async () => {
  const positions = [5n, 1n, 3n, 3n, 0n];
  const { blob, cardinality } = await encodeDeletionVector(positions);
  assert.equal(cardinality, 4);
  const b = Buffer.from(blob);
  assert.equal(b.readUInt32BE(0), b.length - 8);
  assert.deepEqual([...b.subarray(4, 8)], [0xd1, 0xd3, 0x39, 0x64]);
  // one bucket (key 0), then a 32-bit portable bitmap: no-run cookie 12346, 1 container, 4 values
  assert.equal(b.readBigUInt64LE(8), 1n);
  assert.equal(b.readUInt32LE(16), 0);
  assert.equal(b.readUInt32LE(20), 12346);
  assert.deepEqual([...(await decodeDeletionVector(blob))], [0n, 1n, 3n, 5n]);
  // exact bytes of a small vector: array container {0,1,3,5} (CRoaring's portable layout)
  assert.equal(
    b.subarray(8, b.length - 4).toString('hex'),
    '0100000000000000' + '00000000' + '3a300000' + '01000000' + '00000300' + '10000000' + '0000010003000500',
  );
});

test('DV blob: corrupt CRC, magic or length are refused', async () => {
  const { blob } = await encodeDeletionVector([1n, 2n, 3n]);
  const crc = Buffer.from(blob);
  crc[crc.length - 1]! ^= 1;
  await assert.rejects(decodeDeletionVector(crc), (e: unknown) => isIcebergError(e, 'DataInvalid') && /CRC-32/.test((e as Error).message));
  const magic = Buffer.from(blob);
  magic[5] = 0;
  await assert.rejects(decodeDeletionVector(magic), /magic/);
  await assert.rejects(decodeDeletionVector(blob.subarray(0, blob.length - 1)), /length field/);
});

test('DV bitmap: run containers (written for ranges, read back), bitmap containers, array containers', async () => {
  const run = Array.from({ length: 50_000 }, (_, i) => BigInt(i + 10));
  const dense = Array.from({ length: 10_000 }, (_, i) => BigInt(65536 + i * 2)); // > 4096 values, no runs: a bitmap container
  const sparse = [200_000n, 200_100n, 300_000n];
  const all = [...run, ...dense, ...sparse];
  const vector = await serializePositions(BigInt64Array.from(sorted(all)));
  const v = Buffer.from(vector);
  const cookie = v.readUInt32LE(12);
  assert.equal(cookie & 0xffff, 12347, 'a run container is written: the run cookie');
  assert.equal(portableRoaringSize(v, 12), v.length - 12);
  assert.deepEqual([...(await deserializePositions(vector))], sorted(all));
  // tiny vector: the blob of a 50,000-long range is a few bytes
  const { blob } = await encodeDeletionVector(run);
  assert.ok(blob.length < 40, `run-encoded blob is ${blob.length} bytes`);
});

test('DV bitmap: reads run containers with fewer than 4 containers (no offset header) and hand-built layouts', async () => {
  // hand-built 32-bit portable bitmap: run cookie, 2 containers, the first a run [7, 7+9], the second an array {3}
  const parts = Buffer.alloc(4 + 1 + 8 + 6 + 2);
  let o = 0;
  parts.writeUInt32LE(12347 | ((2 - 1) << 16), o);
  o += 4;
  parts[o++] = 0b01; // container 0 is a run container
  parts.writeUInt16LE(0, o); // key 0
  parts.writeUInt16LE(10 - 1, o + 2); // cardinality - 1
  parts.writeUInt16LE(2, o + 4); // key 2
  parts.writeUInt16LE(0, o + 6);
  o += 8;
  parts.writeUInt16LE(1, o); // 1 run
  parts.writeUInt16LE(7, o + 2); // start 7
  parts.writeUInt16LE(9, o + 4); // length - 1
  o += 6;
  parts.writeUInt16LE(3, o);
  o += 2;
  assert.equal(o, parts.length);
  assert.equal(portableRoaringSize(parts, 0), parts.length);
  const head = Buffer.alloc(12);
  head.writeBigUInt64LE(1n, 0);
  head.writeUInt32LE(5, 8); // key 5: positions 5 << 32 | low
  const got = await deserializePositions(Buffer.concat([head, parts]));
  const hi = 5n << 32n;
  assert.deepEqual([...got], [...Array.from({ length: 10 }, (_, i) => hi + 7n + BigInt(i)), hi + (2n << 16n) + 3n]);
});

test('DV bitmap: positions above 2^32 go to their own buckets, keys ascending; 2^63 is refused', async () => {
  const ps = [1n, (1n << 32n) - 1n, 1n << 32n, (1n << 32n) + 5n, (3n << 32n) + 1n, (1n << 62n) + 9n];
  const vector = Buffer.from(await serializePositions(BigInt64Array.from(ps)));
  assert.equal(vector.readBigUInt64LE(0), 4n);
  assert.equal(vector.readUInt32LE(8), 0);
  assert.deepEqual([...(await deserializePositions(vector))], ps);
  const { blob, cardinality } = await encodeDeletionVector(ps);
  assert.equal(cardinality, 6);
  assert.deepEqual([...(await decodeDeletionVector(blob))], ps);
  await assert.rejects(encodeDeletionVector([-1n]), /bigint >= 0/);
  // descending keys are refused
  const bad = Buffer.alloc(8 + 2 * (4 + 8));
  bad.writeBigUInt64LE(2n, 0);
  bad.writeUInt32LE(3, 8);
  bad.writeUInt32LE(12346, 12);
  bad.writeUInt32LE(1, 20);
  bad.writeUInt32LE(12346, 24);
  await assert.rejects(deserializePositions(bad), /bucket key/);
  // Java writes an empty bitmap for every key below the highest one: read as no positions
  const gaps = Buffer.alloc(8 + 2 * (4 + 8));
  gaps.writeBigUInt64LE(2n, 0);
  gaps.writeUInt32LE(0, 8);
  gaps.writeUInt32LE(12346, 12);
  gaps.writeUInt32LE(1, 20);
  gaps.writeUInt32LE(12346, 24);
  assert.deepEqual([...(await deserializePositions(gaps))], []);
});

// ---------- Puffin ----------

test('Puffin: magic, blobs at their offsets, footer JSON, payload size LE, flags 0', () => {
  const a = Uint8Array.of(1, 2, 3);
  const b = Uint8Array.of(9, 8);
  const { bytes, footer } = encodePuffin([
    { type: 'deletion-vector-v1', fields: [2147483645], data: a, properties: { 'referenced-data-file': 's3://x/a', cardinality: '3' } },
    { type: 'apache-datasketches-theta-v1', fields: [1], snapshotId: 1234567890123456789n, sequenceNumber: 7n, data: b },
  ]);
  const buf = Buffer.from(bytes);
  assert.equal(buf.subarray(0, 4).toString(), 'PFA1');
  assert.equal(buf.subarray(buf.length - 4).toString(), 'PFA1');
  assert.equal(buf.readUInt32LE(buf.length - 8), 0);
  const size = buf.readInt32LE(buf.length - 12);
  const json = JSON.parse(buf.toString('utf8', buf.length - 12 - size, buf.length - 12)) as { blobs: Array<Record<string, unknown>> };
  assert.deepEqual(json.blobs[0], {
    type: 'deletion-vector-v1',
    fields: [2147483645],
    'snapshot-id': -1,
    'sequence-number': -1,
    offset: 4,
    length: 3,
    properties: { 'referenced-data-file': 's3://x/a', cardinality: '3' },
  });
  const read = decodePuffinFooter(bytes);
  assert.equal(read.blobs.length, 2);
  assert.equal(read.blobs[1]!['snapshot-id'], 1234567890123456789n);
  assert.deepEqual([...puffinBlob(bytes, read.blobs[0]!)], [1, 2, 3]);
  assert.deepEqual([...puffinBlob(bytes, read.blobs[1]!)], [9, 8]);
  assert.deepEqual(read.blobs, footer.blobs);
  assert.match(read.properties!['created-by']!, /^floe/);
  const flagged = Buffer.from(bytes);
  flagged[flagged.length - 8] = 1;
  assert.throws(
    () => decodePuffinFooter(flagged),
    (e: unknown) => isIcebergError(e, 'FeatureUnsupported'),
  );
  assert.throws(() => decodePuffinFooter(bytes.subarray(1)), /not a Puffin file/);
});

// ---------- metadata ----------

const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'cat', required: false, type: 'string' },
  ],
};
const id: TableIdentifier = { namespace: ['db'], name: 't' };
const LOC = 'memory://wh/db/t';

test('v3 metadata: create with next-row-id 0, round trip with first-row-id / added-rows as bigint', () => {
  const m = newTableMetadata({ location: LOC, schema, tableUuid: 'u', formatVersion: 3, nowMs: 1n });
  assert.equal(m['format-version'], 3);
  assert.equal(m['next-row-id'], 0n);
  const text = serializeTableMetadata({
    ...m,
    'next-row-id': 9007199254740993n,
    snapshots: [
      {
        'snapshot-id': 1n,
        'sequence-number': 1n,
        'timestamp-ms': 2n,
        'manifest-list': 'x',
        summary: { operation: 'append' },
        'first-row-id': 9007199254740990n,
        'added-rows': 3n,
      },
    ],
  });
  assert.match(text, /"next-row-id":9007199254740993/);
  const back = parseTableMetadata(text);
  assert.equal(back['format-version'], 3);
  assert.equal(back['next-row-id'], 9007199254740993n);
  assert.equal(back.snapshots[0]!['first-row-id'], 9007199254740990n);
  assert.equal(back.snapshots[0]!['added-rows'], 3n);
  // v2 metadata has no next-row-id, written or parsed
  const v2 = newTableMetadata({ location: LOC, schema, tableUuid: 'u', nowMs: 1n });
  assert.equal('next-row-id' in v2, false);
  assert.doesNotMatch(serializeTableMetadata(v2), /next-row-id/);
  // a v3 file without next-row-id reads as 0
  const raw = JSON.parse(text) as Record<string, unknown>;
  delete raw['next-row-id'];
  assert.equal(parseTableMetadata(JSON.stringify(raw))['next-row-id'], 0n);
});

test('upgrade-format-version 2 -> 3 sets next-row-id 0; add-snapshot then needs first-row-id and moves next-row-id', () => {
  const v2 = newTableMetadata({ location: LOC, schema, tableUuid: 'u', nowMs: 1n });
  const v3 = applyUpdates(v2, [{ action: 'upgrade-format-version', 'format-version': 3 }], 2n);
  assert.equal(v3['format-version'], 3);
  assert.equal(v3['next-row-id'], 0n);
  const snap = {
    'snapshot-id': 5n,
    'sequence-number': 1n,
    'timestamp-ms': 3n,
    'manifest-list': 'l',
    summary: { operation: 'append' as const },
  };
  assert.throws(() => applyUpdates(v3, [{ action: 'add-snapshot', snapshot: snap }], 4n), /first-row-id and added-rows/);
  const next = applyUpdates(v3, [{ action: 'add-snapshot', snapshot: { ...snap, 'first-row-id': 0n, 'added-rows': 42n } }], 4n);
  assert.equal(next['next-row-id'], 42n);
  assert.throws(
    () =>
      applyUpdates(next, [{ action: 'add-snapshot', snapshot: { ...snap, 'snapshot-id': 6n, 'first-row-id': 10n, 'added-rows': 1n } }], 5n),
    (e: unknown) => isIcebergError(e, 'CommitConflict'),
  );
  assert.throws(() => applyUpdates(v3, [{ action: 'upgrade-format-version', 'format-version': 4 }], 2n), /1, 2 or 3/);
});

// ---------- row lineage and deletion vectors through commits ----------

async function setup(formatVersion: 2 | 3 = 3): Promise<{ io: MemoryFileIO; catalog: MemoryCatalog; table: LoadedTable }> {
  const io = new MemoryFileIO();
  const catalog = new MemoryCatalog('test', io);
  await catalog.createNamespace(['db']);
  const table = await catalog.createTable(
    id,
    newTableMetadata({
      location: LOC,
      schema,
      tableUuid: '00000000-0000-0000-0000-0000000000v3',
      formatVersion,
      properties: { 'commit.retry.min-wait-ms': '1', 'commit.manifest-merge.enabled': 'false' },
    }),
  );
  return { io, catalog, table };
}

let n = 0;
/** A real Parquet data file of ids from..from+rows-1. */
async function dataFile(io: MemoryFileIO, from: number, rows: number): Promise<DataFile> {
  const w = await writeParquetFile(schema, {
    columns: { id: BigInt64Array.from({ length: rows }, (_, i) => BigInt(from + i)), cat: new Array(rows).fill('a') },
    numRows: rows,
  });
  const filePath = `${LOC}/data/f${n++}.parquet`;
  await io.write(filePath, w.bytes);
  return { ...w.stats, filePath, specId: 0, partition: {} };
}

async function ids(t: LoadedTable, io: MemoryFileIO): Promise<bigint[]> {
  const out: bigint[] = [];
  for await (const b of scanBatches(t, io, { columns: ['id'] })) for (const v of b.getChild('id')!) out.push(v as bigint);
  return out.sort(cmp);
}

test('row lineage: snapshot first-row-id / added-rows, manifest first_row_id, data files inherit first_row_id', async () => {
  const { io, catalog, table } = await setup();
  const a = await dataFile(io, 0, 10);
  const b = await dataFile(io, 100, 5);
  let t = await fastAppend(catalog, io, table, [a, b]);
  let s = currentSnapshot(t.metadata)!;
  assert.equal(s['first-row-id'], 0n);
  assert.equal(s['added-rows'], 15n);
  assert.equal(t.metadata['next-row-id'], 15n);
  const list = await readManifestList(io, s['manifest-list']);
  assert.equal(list[0]!.firstRowId, 0n);
  const avroList = readAvroFile(await io.read(s['manifest-list']));
  assert.equal(avroList.metadata['format-version'], '3');
  assert.equal(avroList.metadata['first-row-id'], '0');
  const man = readAvroFile(await io.read(list[0]!.manifestPath));
  assert.equal(man.metadata['format-version'], '3');
  const entries = await readManifest(io, list[0]!);
  assert.deepEqual(
    entries.map((e) => e.dataFile.firstRowId),
    [0n, 10n],
  );

  const c = await dataFile(io, 200, 7);
  t = await fastAppend(catalog, io, t, [c]);
  s = currentSnapshot(t.metadata)!;
  assert.equal(s['first-row-id'], 15n);
  assert.equal(s['added-rows'], 7n, 'the existing manifest keeps its first_row_id and takes no new ids');
  assert.equal(t.metadata['next-row-id'], 22n);
  const list2 = await readManifestList(io, s['manifest-list']);
  assert.deepEqual(list2.map((m) => m.firstRowId!).sort(cmp), [0n, 15n]);
  assert.deepEqual(await ids(t, io), [
    ...Array.from({ length: 10 }, (_, i) => BigInt(i)),
    100n,
    101n,
    102n,
    103n,
    104n,
    ...Array.from({ length: 7 }, (_, i) => BigInt(200 + i)),
  ]);
});

test('upgrade v2 -> v3: next-row-id 0, the first v3 commit assigns ids to the existing manifests too', async () => {
  const { io, catalog, table } = await setup(2);
  const a = await dataFile(io, 0, 4);
  let t = await fastAppend(catalog, io, table, [a]);
  const v2Snapshot = currentSnapshot(t.metadata)!;
  assert.equal(v2Snapshot['first-row-id'], undefined);
  assert.equal(readAvroFile(await io.read(v2Snapshot['manifest-list'])).metadata['format-version'], '2');
  t = await catalog.commitTable(id, [], [{ action: 'upgrade-format-version', 'format-version': 3 }]);
  assert.equal(t.metadata['format-version'], 3);
  assert.equal(t.metadata['next-row-id'], 0n);
  const b = await dataFile(io, 10, 3);
  t = await fastAppend(catalog, io, t, [b]);
  const s = currentSnapshot(t.metadata)!;
  assert.equal(s['first-row-id'], 0n);
  assert.equal(s['added-rows'], 7n, 'the new manifest (3 rows) and the upgraded one (4 existing rows)');
  assert.equal(t.metadata['next-row-id'], 7n);
  const all = (await Promise.all((await readManifestList(io, s['manifest-list'])).map((m) => readManifest(io, m)))).flat();
  assert.deepEqual(all.map((e) => e.dataFile.firstRowId!).sort(cmp), [0n, 3n]);
});

test('deletion vectors: write, commit, scan; a second DV for the same file merges and replaces the first', async () => {
  const { io, catalog, table } = await setup();
  const a = await dataFile(io, 0, 20);
  const b = await dataFile(io, 100, 10);
  let t = await fastAppend(catalog, io, table, [a, b]);

  const dvs = await writeDeletionVectors(
    io,
    t.metadata,
    [
      { dataFile: a, positions: [0n, 5n, 5n, 19n] },
      { dataFile: b, positions: [9n] },
    ],
    'dv-1.puffin',
  );
  assert.equal(dvs.length, 2);
  assert.equal(dvs[0]!.filePath, dvs[1]!.filePath, 'one Puffin file');
  assert.equal(dvs[0]!.fileFormat, 'PUFFIN');
  assert.equal(dvs[0]!.content, DataFileContent.PositionDeletes);
  assert.equal(dvs[0]!.referencedDataFile, a.filePath);
  assert.equal(dvs[0]!.recordCount, 3);
  assert.equal(dvs[0]!.contentOffset, 4);
  const puffin = await io.read(dvs[0]!.filePath);
  const footer = decodePuffinFooter(puffin);
  assert.deepEqual(
    footer.blobs.map((x) => [x.type, x.fields, x['snapshot-id'], x['sequence-number'], Number(x.offset), Number(x.length), x.properties]),
    dvs.map((d) => [
      'deletion-vector-v1',
      [2147483645],
      -1n,
      -1n,
      d.contentOffset,
      d.contentSizeInBytes,
      { 'referenced-data-file': d.referencedDataFile, cardinality: String(d.recordCount) },
    ]),
  );
  assert.deepEqual([...(await readDeletionVector(io, dvs[1]!))], [9n]);
  t = (await rowDelta(catalog, io, id, [], dvs, { referencedDataFiles: [a.filePath, b.filePath] }, { table: t })).table;
  let s = currentSnapshot(t.metadata)!;
  assert.equal(s.summary['added-dvs'], '2');
  assert.equal(s.summary['added-position-deletes'], '4');
  assert.equal(s['added-rows'], 0n);
  const tasks = await planTasks(t, io);
  assert.deepEqual(
    tasks.map((x) => x.deletes.map((d) => d.contentOffset)),
    dvs.map((d) => [d.contentOffset]),
  );
  const expect1 = [
    ...Array.from({ length: 20 }, (_, i) => BigInt(i)).filter((x) => ![0n, 5n, 19n].includes(x)),
    ...Array.from({ length: 9 }, (_, i) => BigInt(100 + i)),
  ];
  assert.deepEqual(await ids(t, io), expect1);

  // a second DV on a: merged with the live one, which the same snapshot removes (b's DV stays)
  const merged = await mergeDeletionVectors(io, t.metadata, [{ dataFile: a, positions: [1n, 5n] }], 'dv-2.puffin');
  assert.deepEqual(
    merged.removeDeleteFiles.map((f) => f.contentOffset),
    [dvs[0]!.contentOffset],
  );
  assert.deepEqual([...(await readDeletionVector(io, merged.deleteFiles[0]!))], [0n, 1n, 5n, 19n]);
  // a plain second DV without removing the first is refused: at most one DV per data file
  const dup = await writeDeletionVectors(io, t.metadata, [{ dataFile: a, positions: [2n] }], 'dv-dup.puffin');
  await assert.rejects(
    rowDelta(catalog, io, id, [], dup, { referencedDataFiles: [a.filePath] }, { table: t }),
    (e: unknown) => isIcebergError(e, 'CommitFailed') && /already have a live deletion vector/.test((e as Error).message),
  );
  t = (
    await rowDelta(
      catalog,
      io,
      id,
      [],
      merged.deleteFiles,
      { referencedDataFiles: merged.referencedDataFiles, removeDeleteFiles: merged.removeDeleteFiles },
      { table: t },
    )
  ).table;
  s = currentSnapshot(t.metadata)!;
  assert.equal(s.summary['added-dvs'], '1');
  assert.equal(s.summary['removed-dvs'], '1');
  const live = await liveDeletes(io, t.metadata, [a.filePath, b.filePath]);
  assert.equal(live.get(a.filePath)!.dv!.filePath, merged.deleteFiles[0]!.filePath);
  assert.equal(live.get(b.filePath)!.dv!.filePath, dvs[1]!.filePath);
  assert.deepEqual(
    await ids(t, io),
    expect1.filter((x) => x !== 1n),
  );
  // metadata tables: DVs are position delete rows with their blob's place; partitions count no DV as a file
  const files = await filesTable(t, io);
  assert.deepEqual(
    files.map((f) => [f.content, f.file_format, f.record_count, f.referenced_data_file ?? null, f.first_row_id ?? null]),
    [
      [0, 'PARQUET', 20, null, 0n],
      [0, 'PARQUET', 10, null, 20n],
      [1, 'PUFFIN', 4, a.filePath, null],
      [1, 'PUFFIN', 1, b.filePath, null],
    ],
  );
  const [part] = await partitionsTable(t, io);
  assert.equal(part!.position_delete_record_count, 5);
  assert.equal(part!.position_delete_file_count, 0);
  // removing the same DV again fails: it is no longer live
  await assert.rejects(
    rowDelta(catalog, io, id, [], dup, { referencedDataFiles: [a.filePath], removeDeleteFiles: [dvs[0]!] }, { table: t }),
    (e: unknown) => isIcebergError(e, 'CommitFailed') && /no longer live/.test((e as Error).message),
  );
});

test('v3 tables refuse position delete files; v2 tables refuse deletion vectors', async () => {
  const { io, catalog, table } = await setup();
  const a = await dataFile(io, 0, 3);
  const t = await fastAppend(catalog, io, table, [a]);
  await assert.rejects(
    writePositionDeleteFiles(io, t.metadata, [{ dataFile: a, pos: 0n }], (k) => `d${k}.parquet`),
    (e: unknown) => isIcebergError(e, 'FeatureUnsupported') && /deletion vectors/.test((e as Error).message),
  );
  const pd = await writePositionDeletes(io, {
    location: `${LOC}/data/pd.parquet`,
    specId: 0,
    partition: {},
    deletes: [{ filePath: a.filePath, pos: 0n }],
  });
  await assert.rejects(rowDelta(catalog, io, id, [], [pd], { referencedDataFiles: [a.filePath] }, { table: t }), (e: unknown) =>
    isIcebergError(e, 'FeatureUnsupported'),
  );

  const v2 = await setup(2);
  const b = await dataFile(v2.io, 0, 3);
  const t2 = await fastAppend(v2.catalog, v2.io, v2.table, [b]);
  await assert.rejects(writeDeletionVectors(v2.io, t2.metadata, [{ dataFile: b, positions: [0n] }], 'x.puffin'), /format-version/);
  const dv = await writeDeletionVectors(v2.io, { ...t2.metadata, 'format-version': 3 }, [{ dataFile: b, positions: [0n] }], 'x.puffin');
  await assert.rejects(rowDelta(v2.catalog, v2.io, id, [], dv, { referencedDataFiles: [b.filePath] }, { table: t2 }), /format-version/);
});

test('upgraded table: a DV merges the v2 position deletes of its data file and removes the single-file delete file', async () => {
  const { io, catalog, table } = await setup(2);
  const a = await dataFile(io, 0, 10);
  const b = await dataFile(io, 100, 10);
  let t = await fastAppend(catalog, io, table, [a, b]);
  // v2: one delete file naming only a, one naming a and b
  const onlyA = await writePositionDeletes(io, {
    location: `${LOC}/data/pd-a.parquet`,
    specId: 0,
    partition: {},
    deletes: [{ filePath: a.filePath, pos: 1n }],
  });
  const both = await writePositionDeletes(io, {
    location: `${LOC}/data/pd-ab.parquet`,
    specId: 0,
    partition: {},
    deletes: [
      { filePath: a.filePath, pos: 2n },
      { filePath: b.filePath, pos: 3n },
    ],
  });
  t = (await rowDelta(catalog, io, id, [], [onlyA, both], { referencedDataFiles: [a.filePath, b.filePath] }, { table: t })).table;
  t = await catalog.commitTable(id, [], [{ action: 'upgrade-format-version', 'format-version': 3 }]);

  const merged = await mergeDeletionVectors(io, t.metadata, [{ dataFile: a, positions: [7n] }], 'dv-up.puffin');
  assert.deepEqual([...(await readDeletionVector(io, merged.deleteFiles[0]!))], [1n, 2n, 7n]);
  assert.deepEqual(
    merged.removeDeleteFiles.map((f) => f.filePath),
    [onlyA.filePath],
  );
  t = (
    await rowDelta(
      catalog,
      io,
      id,
      [],
      merged.deleteFiles,
      { referencedDataFiles: merged.referencedDataFiles, removeDeleteFiles: merged.removeDeleteFiles },
      { table: t },
    )
  ).table;
  const tasks = await planTasks(t, io);
  const byFile = Object.fromEntries(tasks.map((x) => [x.file.filePath, x.deletes.map((d) => d.fileFormat)]));
  assert.deepEqual(byFile[a.filePath], ['PUFFIN'], 'the DV alone applies to a (the shared v2 file is skipped for it)');
  assert.deepEqual(byFile[b.filePath], ['PARQUET']);
  const expected = [
    ...Array.from({ length: 10 }, (_, i) => BigInt(i)).filter((x) => ![1n, 2n, 7n].includes(x)),
    ...Array.from({ length: 10 }, (_, i) => BigInt(100 + i)).filter((x) => x !== 103n),
  ];
  assert.deepEqual(await ids(t, io), expected);
  const s = currentSnapshot(t.metadata)!;
  assert.equal(s['first-row-id'], 0n);
  assert.equal(t.metadata['next-row-id'], 20n, 'the upgraded data manifest got row ids in the first v3 commit');
});

test('a transaction retried after a concurrent DV commit fails instead of leaving two DVs', async () => {
  const { io, catalog, table } = await setup();
  const a = await dataFile(io, 0, 5);
  const t = await fastAppend(catalog, io, table, [a]);
  const first = await mergeDeletionVectors(io, t.metadata, [{ dataFile: a, positions: [0n] }], 'c1.puffin');
  const second = await mergeDeletionVectors(io, t.metadata, [{ dataFile: a, positions: [1n] }], 'c2.puffin');
  await rowDelta(catalog, io, id, [], first.deleteFiles, { referencedDataFiles: first.referencedDataFiles });
  const tx = new Transaction(id);
  tx.rowDelta([], second.deleteFiles, { referencedDataFiles: second.referencedDataFiles, removeDeleteFiles: second.removeDeleteFiles });
  await assert.rejects(tx.commit(catalog, io, { table: t }), (e: unknown) => isIcebergError(e, 'CommitFailed'));
});

test('v3 compaction (RewriteFiles) removes the DVs of the files it replaces; RewriteManifests keeps first row ids', async () => {
  const { io, catalog, table } = await setup();
  const a = await dataFile(io, 0, 6);
  let t = await fastAppend(catalog, io, table, [a]);
  const b = await dataFile(io, 10, 4);
  t = await fastAppend(catalog, io, t, [b]);
  const dvs = await writeDeletionVectors(io, t.metadata, [{ dataFile: a, positions: [0n, 2n] }], 'c.puffin');
  t = (await rowDelta(catalog, io, id, [], dvs, { referencedDataFiles: [a.filePath] }, { table: t })).table;
  const before = new Map((await planTasks(t, io)).map((x) => [x.file.filePath, x.file.firstRowId]));
  assert.deepEqual(
    [...before.values()].sort((x, y) => cmp(x!, y!)),
    [0n, 6n],
  );

  // manifests: one per append; the rewrite clusters them and the files keep their row ids
  const tx = new Transaction(id);
  tx.add(new RewriteManifests({}));
  t = (await tx.commit(catalog, io, { table: t })).table;
  assert.deepEqual(new Map((await planTasks(t, io)).map((x) => [x.file.filePath, x.file.firstRowId])), before);

  // compaction of a: the output holds its 4 live rows; a's DV goes with it
  const out = await dataFile(io, 1, 4); // stands in for ids 1, 3, 4, 5
  t = (await rewriteFiles(catalog, io, id, [a], [out], {}, { table: t }, { records: 4 })).table;
  const s = currentSnapshot(t.metadata)!;
  assert.equal(s.summary['removed-dvs'], '1');
  const tasks = await planTasks(t, io);
  assert.deepEqual(
    tasks.map((x) => x.deletes.length),
    [0, 0],
  );
  assert.equal((await liveDeletes(io, t.metadata, [a.filePath])).size, 0);
});

test('DataFile wire form keeps the v3 fields (first row id as a decimal string)', () => {
  const f: DataFile = {
    content: DataFileContent.PositionDeletes,
    filePath: 's3://b/t/data/x.puffin',
    fileFormat: 'PUFFIN',
    specId: 0,
    partition: {},
    recordCount: 3,
    fileSizeInBytes: 100,
    referencedDataFile: 's3://b/t/data/a.parquet',
    contentOffset: 4,
    contentSizeInBytes: 40,
  };
  const w = dataFileToWire(f);
  assert.deepEqual(dataFileFromWire(JSON.parse(JSON.stringify(w)) as Record<string, unknown>), f);
  const d: DataFile = { ...f, content: DataFileContent.Data, fileFormat: 'PARQUET', firstRowId: 9007199254740993n };
  delete d.referencedDataFile;
  const back = dataFileFromWire(JSON.parse(JSON.stringify(dataFileToWire(d))) as Record<string, unknown>);
  assert.equal(back.firstRowId, 9007199254740993n);
});

test('expiry: a Puffin file one of whose DVs is still live is not unreachable; once none is, it is', async () => {
  const { io, catalog, table } = await setup();
  const a = await dataFile(io, 0, 5);
  const b = await dataFile(io, 10, 5);
  let t = await fastAppend(catalog, io, table, [a, b]);
  const dvs = await writeDeletionVectors(
    io,
    t.metadata,
    [
      { dataFile: a, positions: [0n] },
      { dataFile: b, positions: [1n] },
    ],
    'shared.puffin',
  );
  t = (await rowDelta(catalog, io, id, [], dvs, { referencedDataFiles: [a.filePath, b.filePath] }, { table: t })).table;
  // a's DV is replaced by a merged one: the shared Puffin file still holds b's live DV
  const m = await mergeDeletionVectors(io, t.metadata, [{ dataFile: a, positions: [1n] }], 'a2.puffin');
  t = (
    await rowDelta(
      catalog,
      io,
      id,
      [],
      m.deleteFiles,
      { referencedDataFiles: m.referencedDataFiles, removeDeleteFiles: m.removeDeleteFiles },
      { table: t },
    )
  ).table;
  const far = BigInt(Date.now()) + 60_000n;
  let r = await expireSnapshots(catalog, io, id, { olderThanMs: far, retainLast: 1 }, { table: t });
  assert.ok(!r.expired.dataFiles.includes(dvs[0]!.filePath), 'b still needs the shared Puffin file');
  t = r.table;
  const m2 = await mergeDeletionVectors(io, t.metadata, [{ dataFile: b, positions: [2n] }], 'b2.puffin');
  t = (
    await rowDelta(
      catalog,
      io,
      id,
      [],
      m2.deleteFiles,
      { referencedDataFiles: m2.referencedDataFiles, removeDeleteFiles: m2.removeDeleteFiles },
      { table: t },
    )
  ).table;
  r = await expireSnapshots(catalog, io, id, { olderThanMs: far + 60_000n, retainLast: 1 }, { table: t });
  assert.ok(r.expired.dataFiles.includes(dvs[0]!.filePath), 'no live DV is left in the shared Puffin file');
  assert.deepEqual(await ids(r.table, io), [2n, 3n, 4n, 10n, 13n, 14n]);
});

test('Transaction.upgradeFormatVersion(3) then an append in the same commit: a v3 snapshot assigning ids to old and new rows', async () => {
  const { io, catalog, table } = await setup(2);
  const a = await dataFile(io, 0, 4);
  const t0 = await fastAppend(catalog, io, table, [a]);
  const b = await dataFile(io, 10, 2);
  const tx = new Transaction(id);
  tx.upgradeFormatVersion(3);
  tx.fastAppend([b]);
  const { table: t } = await tx.commit(catalog, io, { table: t0 });
  assert.equal(t.metadata['format-version'], 3);
  const s = currentSnapshot(t.metadata)!;
  assert.equal(s['first-row-id'], 0n);
  assert.equal(t.metadata['next-row-id'], 6n);
  // a second upgrade is a no-op
  const again = new Transaction(id);
  again.upgradeFormatVersion(3);
  const r = await again.commit(catalog, io, { table: t });
  assert.equal(r.table.metadataLocation, t.metadataLocation);
});
