/**
 * Staged file lists (table/staged-files.ts): a large list goes to the object store as an
 * Iceberg manifest and comes back exactly (wire form equal, typed partition values included); a
 * small one stays inline as before; names carry the marked prefix so pending markers protect them.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  MemoryFileIO,
  newTableMetadata,
  dataFileToWire,
  toPartitionValue,
  readAvroFile,
  DataFileContent,
  type DataFile,
  type Schema,
} from '../../iceberg';
import { isProtected } from '../../table/pending';
import {
  STAGED_DIR,
  deleteStaged,
  expandFileList,
  fileListForHistory,
  isStagedFileList,
  readStagedDataFiles,
  stagedLocations,
  wireListBytes,
  writeStagedDataFiles,
} from '../../table/staged-files';

const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'ts', required: true, type: 'timestamptz' },
    { id: 3, name: 'cat', required: false, type: 'string' },
    { id: 4, name: 'amount', required: false, type: 'decimal(10, 2)' },
    { id: 5, name: 'u', required: false, type: 'uuid' },
  ],
};
const metadata = newTableMetadata({
  location: 'memory://wh/db/t',
  schema,
  tableUuid: '5c1ee3d6-0000-4000-8000-000000000000',
  spec: {
    'spec-id': 0,
    fields: [
      { 'source-id': 2, 'field-id': 1000, name: 'ts_day', transform: 'day' },
      { 'source-id': 3, 'field-id': 1001, name: 'cat', transform: 'identity' },
      { 'source-id': 1, 'field-id': 1002, name: 'id_bucket', transform: 'bucket[512]' },
      { 'source-id': 4, 'field-id': 1003, name: 'amount', transform: 'identity' },
      { 'source-id': 2, 'field-id': 1004, name: 'ts_raw', transform: 'identity' },
      { 'source-id': 5, 'field-id': 1005, name: 'u', transform: 'identity' },
    ],
  },
});

const file = (i: number): DataFile => ({
  content: DataFileContent.Data,
  filePath: `memory://wh/db/t/data/f${i}.parquet`,
  fileFormat: 'PARQUET',
  specId: 0,
  partition: {
    ts_day: 19000 + (i % 7),
    cat: i % 2 ? `c${i % 10}` : null,
    id_bucket: i % 512,
    amount: toPartitionValue('decimal(10, 2)', `-${i}.05`),
    ts_raw: 1_700_000_000_000_000n + BigInt(i),
    u: toPartitionValue('uuid', 'f79c3e09-677c-4bbd-a479-3f349cb785e7'),
  },
  recordCount: 100 + i,
  fileSizeInBytes: 4096 + i,
  columnSizes: new Map([
    [1, 10],
    [2, 20 + i],
  ]),
  valueCounts: new Map([[1, 100 + i]]),
  nullValueCounts: new Map([[3, i % 3]]),
  nanValueCounts: new Map(),
  lowerBounds: new Map([
    [1, Uint8Array.of(i % 256, 0, 0, 0, 0, 0, 0, 0)],
    [3, new TextEncoder().encode('aa')],
  ]),
  upperBounds: new Map([
    [1, Uint8Array.of(255, 0, 0, 0, 0, 0, 0, 0)],
    [3, new TextEncoder().encode(`zz${i}`)],
  ]),
  splitOffsets: [4],
  sortOrderId: 0,
});

test('a staged list is an Iceberg manifest named by the marked prefix, and reads back exactly', async () => {
  const io = new MemoryFileIO();
  const files = Array.from({ length: 2000 }, (_, i) => file(i));
  const [ref, ...more] = await writeStagedDataFiles(io, metadata, 'c0ffee-g1-a2', files);
  assert.equal(more.length, 0);
  assert.equal(ref!.stagedFiles, `memory://wh/db/t/${STAGED_DIR}/c0ffee-g1-a2.avro`);
  assert.equal(ref!.count, 2000);
  // the commit id prefix the ingest marks before writing protects it from the orphan sweep
  assert.ok(isProtected(ref!.stagedFiles, [{ filePrefix: 'c0ffee-' }]));
  const avro = readAvroFile(await io.read(ref!.stagedFiles));
  assert.equal(avro.metadata['format-version'], '2');
  assert.equal(avro.metadata['partition-spec-id'], '0');
  const back = await readStagedDataFiles(io, ref!);
  assert.deepEqual(back.map(dataFileToWire), files.map(dataFileToWire));
  // far smaller than the wire form history would carry
  assert.ok(ref!.bytes * 5 < wireListBytes(files.map(dataFileToWire)), `${ref!.bytes} vs ${wireListBytes(files.map(dataFileToWire))}`);
});

test('fileListForHistory keeps small lists inline (unchanged wire form) and stages large ones', async () => {
  const io = new MemoryFileIO();
  let loads = 0;
  const stage = {
    metadata: async () => {
      loads++;
      return metadata;
    },
    baseName: 'abc-g0-a1',
  };
  const small = [file(1), file(2)];
  const inline = await fileListForHistory(io, small, 256 * 1024, stage);
  assert.deepEqual(inline, small.map(dataFileToWire));
  assert.equal(loads, 0, 'the inline path loads nothing and writes nothing');
  assert.equal(io.stats.writes, 0);
  assert.deepEqual(await fileListForHistory(io, [], 0, stage), []);

  const large = Array.from({ length: 1000 }, (_, i) => file(i));
  const staged = await fileListForHistory(io, large, 256 * 1024, stage);
  assert.equal(staged.length, 1);
  assert.ok(isStagedFileList(staged[0]!));
  assert.ok(wireListBytes(staged) < 300);
  // A commit input concatenates inline files and references: expanded in order.
  const mixed = [...small.map(dataFileToWire), ...staged];
  assert.deepEqual((await expandFileList(io, mixed)).map(dataFileToWire), [...small, ...large].map(dataFileToWire));
  assert.deepEqual(stagedLocations(mixed), [`memory://wh/db/t/${STAGED_DIR}/abc-g0-a1.avro`]);

  await deleteStaged(io, stagedLocations(mixed));
  await assert.rejects(expandFileList(io, mixed), (e: Error & { kind?: string }) => e.kind === 'NotFound');
});

test('a staged list whose size or count does not match its reference is refused', async () => {
  const io = new MemoryFileIO();
  const [ref] = await writeStagedDataFiles(io, metadata, 'x-g0-a1', [file(1), file(2)]);
  await assert.rejects(readStagedDataFiles(io, { ...ref!, count: 3 }), /entries/);
  await assert.rejects(readStagedDataFiles(io, { ...ref!, bytes: ref!.bytes + 1 }), /size/);
});
