/**
 * Position delete files (spec "Position Delete Files"): Parquet files of `(file_path, pos)` rows,
 * sorted by file_path then pos, each row deleting the row at 0-based position `pos` of the data
 * file at `file_path`. The columns carry the reserved field ids 2147483546 and 2147483545, which
 * every reader (Java, PyIceberg, DuckDB) resolves.
 *
 * A delete file holds the partition of the data files it names (readers look deletes up by
 * spec and partition), so deletes for several partitions are written as one file per partition.
 * Metrics are kept in full (never truncated) for both columns: readers prune with the file_path
 * bounds, and Java's ContentFileUtil.referencedDataFile takes lower == upper bound of file_path to
 * mean "this file deletes rows of that one data file only" and indexes it by path.
 */
import { IcebergError } from '../errors';
import type { FileIO } from '../io/file-io';
import { compareUnsignedBytes } from '../spec/conversions';
import { DELETE_FILE_PATH_FIELD_ID, DELETE_FILE_POS_FIELD_ID, mayReferenceDataFile, referencedDataFile } from '../spec/position-delete';
import { mapConcurrent } from '../scan/parallel';
import { locationProvider } from '../spec/location-provider';
import { currentSchema, specById } from '../spec/metadata';
import { partitionKey, partitionPath } from '../spec/partition';
import { type DataFile, DataFileContent, type PartitionRecord, type Schema, type TableMetadata } from '../spec/types';
import { readDeletionVector } from '../puffin/deletion-vector';
import { readParquetBatches } from './reader';
import { parquetWriteOptionsFromProperties, writeParquetFile } from './writer';
import type { ParquetWriteOptions } from './options';

/** The schema of a position delete file without the optional `row` column. */
export const POSITION_DELETE_SCHEMA: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    {
      id: DELETE_FILE_PATH_FIELD_ID,
      name: 'file_path',
      required: true,
      type: 'string',
      doc: 'Path of a file in which a deleted row is stored',
    },
    { id: DELETE_FILE_POS_FIELD_ID, name: 'pos', required: true, type: 'long', doc: 'Ordinal position of a deleted row in the data file' },
  ],
};

/** One deleted row: the data file's location exactly as its manifest entry names it, and the row's 0-based position. */
export interface PositionDelete {
  filePath: string;
  pos: bigint;
}

export interface PositionDeleteWriteRequest {
  /** where the delete file goes (a fresh, unique location) */
  location: string;
  /** spec and partition of the data files the deletes name (all of them: one partition per file) */
  specId: number;
  partition: PartitionRecord;
  deletes: readonly PositionDelete[];
  /** codec, row group and page sizes; metrics are always full for these two columns */
  options?: Omit<ParquetWriteOptions, 'metrics'>;
}

const utf8 = (s: string): Buffer => Buffer.from(s, 'utf8');

/**
 * Deletes grouped by data file, paths in the spec's string order (UTF-8 bytes, i.e. code points,
 * which is also the order of the file_path bounds) and positions ascending, duplicates dropped.
 */
export function sortPositionDeletes(deletes: readonly PositionDelete[]): Array<{ filePath: string; positions: BigInt64Array }> {
  const byPath = new Map<string, bigint[]>();
  for (const d of deletes) {
    if (typeof d.pos !== 'bigint' || d.pos < 0n) {
      throw IcebergError.mismatch('DataInvalid', `position delete of ${d.filePath}: pos`, 'a bigint >= 0', String(d.pos), false);
    }
    let l = byPath.get(d.filePath);
    if (!l) byPath.set(d.filePath, (l = []));
    l.push(d.pos);
  }
  const paths = [...byPath.keys()].map((p) => ({ p, b: utf8(p) })).sort((a, b) => compareUnsignedBytes(a.b, b.b));
  return paths.map(({ p }) => {
    const sorted = BigInt64Array.from(byPath.get(p)!).sort();
    let n = 0;
    for (let i = 0; i < sorted.length; i++) if (i === 0 || sorted[i] !== sorted[n - 1]) sorted[n++] = sorted[i]!;
    return { filePath: p, positions: sorted.subarray(0, n) };
  });
}

/**
 * Writes one position delete file and returns its manifest facts (content PositionDeletes, the
 * given spec and partition). Concurrency: none (a fresh, uniquely named file); the caller
 * commits it with RowDelta, which checks that the data files it names are still live.
 */
export async function writePositionDeletes(io: FileIO, req: PositionDeleteWriteRequest): Promise<DataFile> {
  if (req.deletes.length === 0)
    throw new IcebergError('DataInvalid', `position delete file ${req.location}: no deletes to write`, { retryable: false });
  const groups = sortPositionDeletes(req.deletes);
  const n = groups.reduce((a, g) => a + g.positions.length, 0);
  const filePath = new Array<string>(n);
  const pos = new BigInt64Array(n);
  let i = 0;
  for (const g of groups) {
    filePath.fill(g.filePath, i, i + g.positions.length);
    pos.set(g.positions, i);
    i += g.positions.length;
  }
  const written = await writeParquetFile(
    POSITION_DELETE_SCHEMA,
    { columns: { file_path: filePath, pos }, numRows: n },
    { ...req.options, metrics: () => ({ kind: 'full' }) },
  );
  await io.write(req.location, written.bytes);
  return {
    ...written.stats,
    content: DataFileContent.PositionDeletes,
    filePath: req.location,
    specId: req.specId,
    partition: req.partition,
  };
}

/** A deleted row of a live data file, as the caller found it (spec and partition come from the file). */
export interface DataFilePositionDelete {
  dataFile: Pick<DataFile, 'filePath' | 'specId' | 'partition'>;
  pos: bigint;
}

export interface PositionDeleteFiles {
  /** one per (spec, partition) of the data files named */
  deleteFiles: DataFile[];
  /** every data file the delete files name: RowDelta checks they are still live at commit */
  referencedDataFiles: string[];
}

/**
 * Writes the deletes of data files of any partitions, one delete file per spec and partition, in
 * the partition's directory under the table's data path (the location provider's layout).
 * `fileName(n)` names the n-th file of this call. Concurrency: none (fresh files only).
 */
export async function writePositionDeleteFiles(
  io: FileIO,
  metadata: TableMetadata,
  deletes: readonly DataFilePositionDelete[],
  fileName: (n: number) => string,
): Promise<PositionDeleteFiles> {
  if (metadata['format-version'] >= 3) {
    // spec "Row-level Deletes": position delete files must not be added to v3 tables
    throw IcebergError.mismatch(
      'FeatureUnsupported',
      'writing position delete files to a table of format-version',
      '2 (v3 tables take deletion vectors: writeDeletionVectors)',
      metadata['format-version'],
      false,
    );
  }
  const schema = currentSchema(metadata);
  const groups = new Map<string, { specId: number; partition: PartitionRecord; deletes: PositionDelete[] }>();
  for (const d of deletes) {
    const key = `${d.dataFile.specId}:${partitionKey(d.dataFile.partition)}`;
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { specId: d.dataFile.specId, partition: d.dataFile.partition, deletes: [] }));
    g.deletes.push({ filePath: d.dataFile.filePath, pos: d.pos });
  }
  const { codec, rowGroupBytes, pageSizeBytes, dictSizeBytes } = parquetWriteOptionsFromProperties(schema, metadata.properties);
  const locations = locationProvider(metadata);
  const deleteFiles: DataFile[] = [];
  let n = 0;
  for (const g of groups.values()) {
    const spec = specById(metadata, g.specId);
    const path = spec.fields.length ? partitionPath(spec, schema, g.partition) : '';
    deleteFiles.push(
      await writePositionDeletes(io, {
        location: locations.newDataLocation(fileName(n++), path),
        specId: g.specId,
        partition: g.partition,
        deletes: g.deletes,
        options: { codec, rowGroupBytes, pageSizeBytes, dictSizeBytes },
      }),
    );
  }
  return { deleteFiles, referencedDataFiles: [...new Set(deletes.map((d) => d.dataFile.filePath))] };
}

/**
 * The deleted positions of a position delete file or deletion vector (v3, Puffin), per data file path (ascending, as the file
 * stores them; re-sorted when a writer did not). `only` restricts to these data files. Reads the
 * two columns by name, as every writer names them (spec), whatever else the file holds (`row`).
 */
export async function readPositionDeletes(
  io: FileIO,
  deleteFile: DataFile,
  only?: ReadonlySet<string>,
): Promise<Map<string, BigInt64Array>> {
  if (deleteFile.content !== DataFileContent.PositionDeletes) {
    throw IcebergError.mismatch('DataInvalid', `${deleteFile.filePath} content`, 'position deletes (1)', deleteFile.content, false);
  }
  if (deleteFile.fileFormat === 'PUFFIN') {
    const p = deleteFile.referencedDataFile;
    if (p === undefined) throw new IcebergError('DataInvalid', `deletion vector in ${deleteFile.filePath}: no referenced_data_file`);
    return only && !only.has(p) ? new Map() : new Map([[p, await readDeletionVector(io, deleteFile)]]);
  }
  if (deleteFile.fileFormat !== 'PARQUET') {
    throw IcebergError.mismatch(
      'FeatureUnsupported',
      `position delete file ${deleteFile.filePath} format`,
      'PARQUET',
      deleteFile.fileFormat,
      false,
    );
  }
  const acc = new Map<string, bigint[]>();
  for await (const b of readParquetBatches(io, deleteFile.filePath, {
    columns: ['file_path', 'pos'],
    fileSize: deleteFile.fileSizeInBytes,
  })) {
    const paths = b.getChild('file_path'),
      pos = b.getChild('pos');
    if (!paths || !pos)
      throw new IcebergError('DataInvalid', `${deleteFile.filePath}: position delete file without file_path and pos columns`);
    let last: string | undefined, list: bigint[] | undefined;
    for (let i = 0; i < b.numRows; i++) {
      const p = paths.get(i) as string | null;
      const v = pos.get(i) as bigint | number | null;
      if (p === null || v === null) throw new IcebergError('DataInvalid', `${deleteFile.filePath}: null file_path or pos at row ${i}`);
      if (p !== last) {
        last = p;
        list = only && !only.has(p) ? undefined : acc.get(p);
        if (!list && (!only || only.has(p))) acc.set(p, (list = []));
      }
      list?.push(BigInt(v));
    }
  }
  const out = new Map<string, BigInt64Array>();
  for (const [p, l] of acc) {
    const a = BigInt64Array.from(l);
    for (let i = 1; i < a.length; i++)
      if (a[i]! < a[i - 1]!) {
        a.sort();
        break;
      }
    out.set(p, a);
  }
  return out;
}

/**
 * Distinct deleted positions per data file of `paths`, over the position delete files given (the
 * live ones of a snapshot): only delete files whose file_path bounds admit one of the paths are read.
 */
export async function deletedPositionCounts(
  io: FileIO,
  deleteFiles: readonly DataFile[],
  paths: ReadonlySet<string>,
  concurrency = 8,
): Promise<Map<string, number>> {
  const encoded = [...paths].map((p) => Buffer.from(p, 'utf8'));
  const relevant = deleteFiles.filter((d) => {
    const only = referencedDataFile(d);
    return only !== undefined ? paths.has(only) : encoded.some((p) => mayReferenceDataFile(d, p));
  });
  const byFile = new Map<string, Set<bigint>>();
  for (const r of await mapConcurrent(relevant, concurrency, (d) => readPositionDeletes(io, d, paths)))
    for (const [p, positions] of r) {
      let set = byFile.get(p);
      if (!set) byFile.set(p, (set = new Set()));
      for (const x of positions) set.add(x);
    }
  return new Map([...byFile].map(([p, set]) => [p, set.size]));
}
