/**
 * Position delete files as manifest entries describe them (spec "Position Delete Files",
 * "Scan Planning"): the reserved field ids of their columns, and what a delete file's
 * file_path bounds say about the data files it names. Pure: planning and commits use it without
 * touching Parquet.
 */
import { compareUnsignedBytes } from './conversions';
import { type DataFile, DataFileContent } from './types';

/** Reserved field ids (spec "Reserved Field IDs"). */
export const DELETE_FILE_PATH_FIELD_ID = 2147483546;
export const DELETE_FILE_POS_FIELD_ID = 2147483545;

/** A deletion vector (v3): a position delete blob in a Puffin file, naming exactly one data file. */
export const isDeletionVector = (f: DataFile): boolean => f.content === DataFileContent.PositionDeletes && f.fileFormat === 'PUFFIN';

/**
 * The one data file a position delete file (or deletion vector) names: its referenced_data_file
 * when set, else when its file_path bounds say so (lower == upper, as Java's
 * ContentFileUtil.referencedDataFile decides); undefined when it may name several.
 */
export function referencedDataFile(deleteFile: DataFile): string | undefined {
  if (deleteFile.content !== DataFileContent.PositionDeletes) return undefined;
  if (deleteFile.referencedDataFile !== undefined) return deleteFile.referencedDataFile;
  const lo = deleteFile.lowerBounds?.get(DELETE_FILE_PATH_FIELD_ID);
  const hi = deleteFile.upperBounds?.get(DELETE_FILE_PATH_FIELD_ID);
  if (!lo || !hi || compareUnsignedBytes(lo, hi) !== 0) return undefined;
  return Buffer.from(lo.buffer, lo.byteOffset, lo.byteLength).toString('utf8');
}

/**
 * False only when the delete file's file_path bounds prove it names no row of `dataFilePath`.
 * Bounds may be truncated by other writers (a prefix lower bound, an incremented upper bound):
 * both still bound every value, so the byte comparison stays conservative.
 */
export function mayReferenceDataFile(deleteFile: DataFile, dataFilePath: Uint8Array): boolean {
  if (deleteFile.referencedDataFile !== undefined)
    return compareUnsignedBytes(dataFilePath, Buffer.from(deleteFile.referencedDataFile, 'utf8')) === 0;
  const lo = deleteFile.lowerBounds?.get(DELETE_FILE_PATH_FIELD_ID);
  const hi = deleteFile.upperBounds?.get(DELETE_FILE_PATH_FIELD_ID);
  if (lo && compareUnsignedBytes(dataFilePath, lo) < 0) return false;
  if (hi && compareUnsignedBytes(dataFilePath, hi) > 0) return false;
  return true;
}

/**
 * A delete file's identity in a snapshot: its path, and for a deletion vector also its blob's
 * offset (several DVs live in one Puffin file, each its own manifest entry).
 */
export const deleteFileKey = (f: DataFile): string => (f.contentOffset === undefined ? f.filePath : `${f.filePath}#${f.contentOffset}`);
