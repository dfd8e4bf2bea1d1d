/**
 * Writing deletion vectors for a v3 table (spec "Deletion Vectors"): one Puffin file per call
 * holding one deletion-vector-v1 blob per data file, each blob a delete file entry of its own
 * (content 1, file_format PUFFIN, referenced_data_file, content_offset, content_size_in_bytes,
 * record_count = its cardinality).
 *
 * At most one DV may be live per data file, and a DV must hold every position the data file's
 * older deletes (its DV, v2 position delete files from before an upgrade) held:
 * `mergeDeletionVectors` looks the live ones up in the current snapshot, writes the unions and
 * says which entries the commit removes (RowDelta `removeDeleteFiles`).
 */
import { IcebergError } from '../errors';
import type { FileIO } from '../io/file-io';
import { readPositionDeletes } from '../parquet/position-deletes';
import { MANIFEST_READ_CONCURRENCY, mapConcurrent } from '../scan/parallel';
import { readManifest } from '../spec/manifest';
import { readManifestList } from '../spec/manifest-list';
import { currentSnapshot, specById } from '../spec/metadata';
import { locationProvider } from '../spec/location-provider';
import { isDeletionVector, mayReferenceDataFile, referencedDataFile } from '../spec/position-delete';
import { type DataFile, DataFileContent, ManifestContent, type TableMetadata } from '../spec/types';
import {
  DELETION_VECTOR_BLOB_TYPE,
  ROW_POSITION_FIELD_ID,
  encodeDeletionVector,
  normalizePositions,
  readDeletionVector,
} from './deletion-vector';
import { writePuffin } from './puffin';

/** The deleted positions of one live data file (spec and partition as its manifest entry has them). */
export interface DeletionVectorTarget {
  dataFile: Pick<DataFile, 'filePath' | 'specId' | 'partition'>;
  /** 0-based row positions, any order, duplicates allowed */
  positions: Iterable<bigint>;
}

const requireV3 = (m: TableMetadata, what: string): void => {
  if (m['format-version'] < 3)
    throw IcebergError.mismatch('FeatureUnsupported', `${what}: table format-version`, '>= 3', m['format-version'], false);
};

/**
 * Writes ONE Puffin file, `fileName` under the table's data location, with a deletion vector per
 * target (one target per data file), and returns their delete file entries in target order.
 * Writes exactly the positions given: use `mergeDeletionVectors` when a target may already have
 * deletes. Concurrency: none (a fresh, uniquely named file); commit with RowDelta.
 */
export async function writeDeletionVectors(
  io: FileIO,
  metadata: TableMetadata,
  deletes: readonly DeletionVectorTarget[],
  fileName: string,
): Promise<DataFile[]> {
  requireV3(metadata, 'writing deletion vectors');
  if (deletes.length === 0)
    throw new IcebergError('DataInvalid', 'writeDeletionVectors: no data files to write deletes for', { retryable: false });
  const seen = new Set<string>();
  const blobs = [];
  for (const d of deletes) {
    if (seen.has(d.dataFile.filePath))
      throw IcebergError.mismatch('DataInvalid', `writeDeletionVectors: targets for ${d.dataFile.filePath}`, 1, 2, false);
    seen.add(d.dataFile.filePath);
    specById(metadata, d.dataFile.specId);
    const { blob, cardinality } = await encodeDeletionVector(d.positions);
    if (cardinality === 0)
      throw new IcebergError('DataInvalid', `writeDeletionVectors: no positions for ${d.dataFile.filePath}`, { retryable: false });
    blobs.push({
      type: DELETION_VECTOR_BLOB_TYPE,
      fields: [ROW_POSITION_FIELD_ID],
      data: blob,
      properties: { 'referenced-data-file': d.dataFile.filePath, cardinality: String(cardinality) },
    });
  }
  const location = locationProvider(metadata).newDataLocation(fileName);
  const { bytes, footer } = await writePuffin(io, location, blobs);
  return deletes.map((d, i): DataFile => {
    const b = footer.blobs[i]!;
    return {
      content: DataFileContent.PositionDeletes,
      filePath: location,
      fileFormat: 'PUFFIN',
      specId: d.dataFile.specId,
      partition: d.dataFile.partition,
      recordCount: Number(b.properties!['cardinality']),
      fileSizeInBytes: bytes.length,
      referencedDataFile: d.dataFile.filePath,
      contentOffset: Number(b.offset),
      contentSizeInBytes: Number(b.length),
    };
  });
}

/** The deletes live for one data file in a snapshot: its deletion vector, and position delete files that may name it. */
export interface LiveDeletes {
  dv?: DataFile;
  positionDeleteFiles: DataFile[];
}

/**
 * The live deletes of `dataFilePaths` in the current snapshot of main (its delete manifests
 * only): per path the DV naming it and the v2 position delete files whose referenced file or
 * file_path bounds admit it. Paths without any are left out. Reads immutable files only.
 */
export async function liveDeletes(io: FileIO, metadata: TableMetadata, dataFilePaths: Iterable<string>): Promise<Map<string, LiveDeletes>> {
  const paths = new Set(dataFilePaths);
  const out = new Map<string, LiveDeletes>();
  const snap = currentSnapshot(metadata);
  if (!snap || paths.size === 0) return out;
  const manifests = (await readManifestList(io, snap['manifest-list'])).filter(
    (m) => m.content === ManifestContent.Deletes && m.addedFilesCount + m.existingFilesCount > 0,
  );
  const encoded = [...paths].map((p) => ({ p, b: Buffer.from(p, 'utf8') }));
  const of = (p: string): LiveDeletes => {
    let l = out.get(p);
    if (!l) out.set(p, (l = { positionDeleteFiles: [] }));
    return l;
  };
  for (const entries of await mapConcurrent(manifests, MANIFEST_READ_CONCURRENCY, (m) => readManifest(io, m))) {
    for (const { dataFile: d } of entries) {
      if (d.content !== DataFileContent.PositionDeletes) continue;
      const only = referencedDataFile(d);
      if (isDeletionVector(d)) {
        if (only === undefined || !paths.has(only)) continue;
        const l = of(only);
        if (l.dv) throw IcebergError.mismatch('DataInvalid', `live deletion vectors of ${only}`, 1, 2, false);
        l.dv = d;
      } else if (only !== undefined) {
        if (paths.has(only)) of(only).positionDeleteFiles.push(d);
      } else for (const { p, b } of encoded) if (mayReferenceDataFile(d, b)) of(p).positionDeleteFiles.push(d);
    }
  }
  return out;
}

/** New deletion vectors holding old and new positions, and what the commit that adds them removes. */
export interface MergedDeletionVectors {
  /** the new DVs, one per target (commit with RowDelta) */
  deleteFiles: DataFile[];
  /** the live DVs and single-file position delete files they replace (RowDelta `removeDeleteFiles`) */
  removeDeleteFiles: DataFile[];
  /** the targets' data files (RowDelta `referencedDataFiles`) */
  referencedDataFiles: string[];
}

/**
 * Writes one Puffin file whose DV for each target holds the target's positions and every
 * position its live deletes hold (its live DV, else the v2 position delete files naming it), and
 * returns what RowDelta needs to commit them: the old DVs and single-file position delete files
 * are removed in the same snapshot (a position delete file naming several data files stays; the
 * new DV makes readers skip it for this one). A DV committed for a target after this read fails
 * that commit (CommitFailed): merge again against the new snapshot.
 */
export async function mergeDeletionVectors(
  io: FileIO,
  metadata: TableMetadata,
  deletes: readonly DeletionVectorTarget[],
  fileName: string,
): Promise<MergedDeletionVectors> {
  requireV3(metadata, 'merging deletion vectors');
  const live = await liveDeletes(
    io,
    metadata,
    deletes.map((d) => d.dataFile.filePath),
  );
  const removeDeleteFiles: DataFile[] = [];
  const merged = await mapConcurrent(deletes, MANIFEST_READ_CONCURRENCY, async (d): Promise<DeletionVectorTarget> => {
    const path = d.dataFile.filePath;
    const old = live.get(path);
    if (!old) return d;
    const parts: Iterable<bigint>[] = [d.positions];
    if (old.dv) {
      parts.push(await readDeletionVector(io, old.dv));
      removeDeleteFiles.push(old.dv);
    } else {
      for (const f of old.positionDeleteFiles) {
        const p = (await readPositionDeletes(io, f, new Set([path]))).get(path);
        if (p) parts.push(p);
      }
    }
    for (const f of old.positionDeleteFiles) if (referencedDataFile(f) === path) removeDeleteFiles.push(f);
    return {
      dataFile: d.dataFile,
      positions: normalizePositions(
        (function* () {
          for (const p of parts) yield* p;
        })(),
      ),
    };
  });
  return {
    deleteFiles: await writeDeletionVectors(io, metadata, merged, fileName),
    removeDeleteFiles,
    referencedDataFiles: deletes.map((d) => d.dataFile.filePath),
  };
}

/**
 * The positions one delete file removes, per data file: a deletion vector's (its referenced data
 * file), or a v2 position delete file's (every data file it names).
 */
export async function readDeleteFile(io: FileIO, deleteFile: DataFile): Promise<Map<string, Iterable<bigint>>> {
  if (isDeletionVector(deleteFile)) return new Map([[referencedDataFile(deleteFile)!, await readDeletionVector(io, deleteFile)]]);
  return readPositionDeletes(io, deleteFile);
}
