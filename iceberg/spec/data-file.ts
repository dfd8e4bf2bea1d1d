/**
 * DataFile <-> plain JSON ("wire form") so a data file can live in Temporal history, which stores
 * JSON: Maps become objects keyed by field id, bytes become base64, and bigint partition values
 * are tagged (`{"$bigint": "..."}`) so they do not come back as lossy numbers or strings.
 */
import { IcebergError } from '../errors';
import type { DataFile, DataFileContent, FileFormat, PartitionRecord, PartitionValue } from './types';

export type WirePartitionValue =
  | null
  | boolean
  | number
  | string
  | { $bigint: string }
  | { $bytes: string }
  /** float/double values JSON cannot hold: NaN, Infinity, -Infinity, -0 */
  | { $float: string };

export type DataFileWire = {
  content: number;
  filePath: string;
  fileFormat: FileFormat;
  specId: number;
  partition: Record<string, WirePartitionValue>;
  recordCount: number;
  fileSizeInBytes: number;
  columnSizes?: Record<string, number>;
  valueCounts?: Record<string, number>;
  nullValueCounts?: Record<string, number>;
  nanValueCounts?: Record<string, number>;
  lowerBounds?: Record<string, string>;
  upperBounds?: Record<string, string>;
  splitOffsets?: number[];
  equalityIds?: number[];
  sortOrderId?: number;
  /** decimal string: a 64-bit row id */
  firstRowId?: string;
  referencedDataFile?: string;
  contentOffset?: number;
  contentSizeInBytes?: number;
};

const b64 = (u: Uint8Array): string => Buffer.from(u.buffer, u.byteOffset, u.byteLength).toString('base64');
const unb64 = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'base64'));

const valueToWire = (v: PartitionValue): WirePartitionValue => {
  if (typeof v === 'bigint') return { $bigint: v.toString() };
  if (v instanceof Uint8Array) return { $bytes: b64(v) };
  if (typeof v === 'number' && (!Number.isFinite(v) || Object.is(v, -0))) return { $float: Object.is(v, -0) ? '-0' : String(v) };
  return v;
};
const valueFromWire = (v: WirePartitionValue, key: string): PartitionValue => {
  if (v === null || typeof v === 'boolean' || typeof v === 'number' || typeof v === 'string') return v;
  if (typeof v === 'object' && '$bigint' in v) return BigInt(v.$bigint);
  if (typeof v === 'object' && '$bytes' in v) return unb64(v.$bytes);
  if (typeof v === 'object' && '$float' in v) return Number(v.$float);
  throw new IcebergError('DataInvalid', `wire data file: partition value "${key}" has an unknown shape: ${JSON.stringify(v)}`);
};

function mapToObj<V, W>(m: Map<number, V> | undefined, f: (v: V) => W): Record<string, W> | undefined {
  if (!m) return undefined;
  const o: Record<string, W> = {};
  for (const [k, v] of m) o[String(k)] = f(v);
  return o;
}
function objToMap<W, V>(o: Record<string, W> | undefined, f: (w: W) => V): Map<number, V> | undefined {
  if (!o) return undefined;
  return new Map(Object.entries(o).map(([k, v]) => [Number(k), f(v)]));
}
const id = <T>(x: T): T => x;

export function dataFileToWire(df: DataFile): DataFileWire {
  const partition: Record<string, WirePartitionValue> = {};
  for (const [k, v] of Object.entries(df.partition)) partition[k] = valueToWire(v);
  const w: DataFileWire = {
    content: df.content,
    filePath: df.filePath,
    fileFormat: df.fileFormat,
    specId: df.specId,
    partition,
    recordCount: df.recordCount,
    fileSizeInBytes: df.fileSizeInBytes,
    columnSizes: mapToObj(df.columnSizes, id),
    valueCounts: mapToObj(df.valueCounts, id),
    nullValueCounts: mapToObj(df.nullValueCounts, id),
    nanValueCounts: mapToObj(df.nanValueCounts, id),
    lowerBounds: mapToObj(df.lowerBounds, b64),
    upperBounds: mapToObj(df.upperBounds, b64),
    splitOffsets: df.splitOffsets,
    equalityIds: df.equalityIds,
    sortOrderId: df.sortOrderId,
    firstRowId: df.firstRowId === undefined ? undefined : df.firstRowId.toString(),
    referencedDataFile: df.referencedDataFile,
    contentOffset: df.contentOffset,
    contentSizeInBytes: df.contentSizeInBytes,
  };
  for (const k of Object.keys(w) as Array<keyof DataFileWire>) if (w[k] === undefined) delete w[k];
  return w;
}

export function dataFileFromWire(input: DataFileWire | Record<string, unknown>): DataFile {
  const w = input as DataFileWire;
  if (
    typeof w.filePath !== 'string' ||
    typeof w.recordCount !== 'number' ||
    typeof w.fileSizeInBytes !== 'number' ||
    typeof w.partition !== 'object'
  ) {
    throw new IcebergError(
      'DataInvalid',
      `wire data file: expected filePath, recordCount, fileSizeInBytes and partition, found keys ${Object.keys(input).join(',')}`,
    );
  }
  const partition: PartitionRecord = {};
  for (const [k, v] of Object.entries(w.partition)) partition[k] = valueFromWire(v, k);
  const df: DataFile = {
    content: w.content as DataFileContent,
    filePath: w.filePath,
    fileFormat: w.fileFormat,
    specId: w.specId,
    partition,
    recordCount: w.recordCount,
    fileSizeInBytes: w.fileSizeInBytes,
    columnSizes: objToMap(w.columnSizes, id),
    valueCounts: objToMap(w.valueCounts, id),
    nullValueCounts: objToMap(w.nullValueCounts, id),
    nanValueCounts: objToMap(w.nanValueCounts, id),
    lowerBounds: objToMap(w.lowerBounds, unb64),
    upperBounds: objToMap(w.upperBounds, unb64),
    splitOffsets: w.splitOffsets,
    equalityIds: w.equalityIds,
    sortOrderId: w.sortOrderId,
    firstRowId: w.firstRowId === undefined ? undefined : BigInt(w.firstRowId),
    referencedDataFile: w.referencedDataFile,
    contentOffset: w.contentOffset,
    contentSizeInBytes: w.contentSizeInBytes,
  };
  for (const k of Object.keys(df) as Array<keyof DataFile>) if (df[k] === undefined) delete df[k];
  return df;
}
