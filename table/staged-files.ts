/**
 * Staged file lists: Temporal stores every activity input and result in the workflow's history and
 * refuses a payload above 2 MB (and a history above 50 MB). A data file in its wire form
 * (iceberg/spec/data-file.ts) is ~830 bytes for a 9-column table, so one ingest cycle that writes
 * a few thousand files (a wide partition spec, a backlog) or a compaction plan over ~15k files
 * would stop the table. Large lists are therefore written to the object store beside the table's
 * metadata, and history carries a reference to them.
 *
 * Layout: `<tableLocation>/metadata/floe-staged/<name>`. Every name starts with the file-name
 * prefix its writer marked pending (table/pending.ts) *before* writing it: `<commitId>-` for
 * an ingest cycle, `<runId>-` for a compaction run. So the orphan sweep keeps a staged list while
 * its commit may still read it; afterwards it is deleted (best effort) or, unreachable from any
 * metadata, removed by the sweep like any orphan.
 *
 * Formats:
 * - the data files of an ingest cycle: an Iceberg v2 manifest (iceberg/spec/manifest.ts) of ADDED
 *   entries without snapshot id or sequence numbers. Chosen over JSON lines of the wire form
 *   because it is ~30 bytes a file instead of ~830 (Avro, deflate, bounds as bytes instead of
 *   base64), its typed round trip of partition values and bounds is the very codec the commit
 *   writes the table's manifests with, and it is a real Iceberg artifact any Avro/Iceberg tool
 *   reads when someone inspects the bucket;
 * - compaction plans and rewrite outputs: JSON (floe's own small structures, one object per group).
 *
 * Concurrency: every staged object is written once under a name unique to its writer and attempt,
 * then only read; deleting is idempotent. No Temporal imports: domain code the activities call.
 */
import {
  IcebergError,
  isIcebergError,
  dataFileFromWire,
  dataFileToWire,
  decodeManifest,
  encodeManifest,
  currentSchema,
  specById,
  ManifestEntryStatus,
  type FileIO,
  type DataFile,
  type TableMetadata,
} from '../iceberg';
import type { FileListEntry, StagedFileList } from './wire';

/** Folder (relative to the table location) holding staged lists. */
export const STAGED_DIR = 'metadata/floe-staged';

/**
 * Inline budget of the data-file lists one ingest commit carries in history (summed over its
 * partition groups; data files and dead-letter files each get it). At ~830 bytes a file this
 * keeps ~300 files inline, the small-batch path recorded histories and most cycles take; beyond
 * it a list is staged. Staging costs one PUT at poll time and one GET at commit (bench/staged-files.ts
 * on the local SeaweedFS: ~20 ms each at 300 files, ~0.3 s at 5,000), so the budget is about
 * history size, not speed: 256 KiB twice (poll result and commit input) per cycle keeps a run far
 * below Temporal's 2 MB payload limit and lets continue-as-new bound the history.
 */
export const INLINE_FILE_LIST_BUDGET_BYTES = 256 * 1024;

export const isStagedFileList = (e: FileListEntry): e is FileListEntry & StagedFileList =>
  typeof e['stagedFiles'] === 'string' && typeof e['count'] === 'number';

const trim = (location: string): string => location.replace(/\/+$/, '');

/** `<tableLocation>/metadata/floe-staged/<name>`; `name` must be a single path segment. */
export function stagedLocation(tableLocation: string, name: string): string {
  if (name.length === 0 || name.includes('/'))
    throw new Error(`staged list name: expected a file name without "/", found ${JSON.stringify(name)}`);
  return `${trim(tableLocation)}/${STAGED_DIR}/${name}`;
}

/** Bytes `files` take in history as JSON (their wire form). */
export const wireListBytes = (files: readonly FileListEntry[]): number => Buffer.byteLength(JSON.stringify(files));

/**
 * Writes `files` as Iceberg manifests named `<baseName>.avro` (one per partition spec; a second
 * spec gets `<baseName>-s<specId>.avro`) and returns their references.
 */
export async function writeStagedDataFiles(
  io: FileIO,
  metadata: TableMetadata,
  baseName: string,
  files: readonly DataFile[],
): Promise<StagedFileList[]> {
  const bySpec = new Map<number, DataFile[]>();
  for (const f of files) {
    let l = bySpec.get(f.specId);
    if (!l) bySpec.set(f.specId, (l = []));
    l.push(f);
  }
  const schema = currentSchema(metadata);
  const out: StagedFileList[] = [];
  for (const [specId, list] of bySpec) {
    const name = bySpec.size === 1 ? `${baseName}.avro` : `${baseName}-s${specId}.avro`;
    const location = stagedLocation(metadata.location, name);
    const { bytes } = encodeManifest({
      location,
      spec: specById(metadata, specId),
      schema,
      snapshotId: 0n,
      entries: list.map((dataFile) => ({
        status: ManifestEntryStatus.Added,
        snapshotId: null,
        sequenceNumber: null,
        fileSequenceNumber: null,
        dataFile,
      })),
    });
    await io.write(location, bytes);
    out.push({ stagedFiles: location, count: list.length, bytes: bytes.length });
  }
  return out;
}

/** The data files of a staged list. A missing list throws IcebergError 'NotFound'. */
export async function readStagedDataFiles(io: FileIO, ref: StagedFileList): Promise<DataFile[]> {
  const bytes = await io.read(ref.stagedFiles);
  if (bytes.length !== ref.bytes) {
    throw IcebergError.mismatch('DataInvalid', `staged file list ${ref.stagedFiles} size`, ref.bytes, bytes.length, false);
  }
  const files = decodeManifest(bytes, ref.stagedFiles).entries.map((e) => e.dataFile);
  if (files.length !== ref.count) {
    throw IcebergError.mismatch('DataInvalid', `staged file list ${ref.stagedFiles} entries`, ref.count, files.length, false);
  }
  return files;
}

/**
 * The list to put in history: the wire form of `files` when it fits `budgetBytes`, else one
 * reference per staged manifest (written under `baseName`, see `writeStagedDataFiles`).
 */
export async function fileListForHistory(
  io: FileIO,
  files: readonly DataFile[],
  budgetBytes: number,
  stage: { metadata: () => Promise<TableMetadata>; baseName: string },
): Promise<FileListEntry[]> {
  const wire: FileListEntry[] = files.map(dataFileToWire);
  if (files.length === 0 || wireListBytes(wire) <= budgetBytes) return wire;
  return writeStagedDataFiles(io, await stage.metadata(), stage.baseName, files);
}

/** Data files of a list from history, staged lists read back in place (order kept). */
export async function expandFileList(io: FileIO, entries: readonly FileListEntry[]): Promise<DataFile[]> {
  const parts = await Promise.all(entries.map(async (e) => (isStagedFileList(e) ? readStagedDataFiles(io, e) : [dataFileFromWire(e)])));
  return parts.flat();
}

/** Locations of the staged lists among `entries`. */
export const stagedLocations = (entries: readonly FileListEntry[]): string[] => entries.filter(isStagedFileList).map((e) => e.stagedFiles);

/** Deletes staged objects; best effort (a leftover is an orphan the sweep removes). */
export async function deleteStaged(io: FileIO, locations: readonly string[]): Promise<void> {
  await Promise.all(locations.map((l) => io.delete(l).catch(() => undefined)));
}

/** Writes a JSON staged object (compaction plans and outputs). */
export async function writeStagedJson(io: FileIO, location: string, value: unknown): Promise<number> {
  const bytes = new TextEncoder().encode(JSON.stringify(value));
  await io.write(location, bytes);
  return bytes.length;
}

/** Reads a JSON staged object. A missing one throws IcebergError 'NotFound'. */
export async function readStagedJson<T>(io: FileIO, location: string): Promise<T> {
  return JSON.parse(new TextDecoder().decode(await io.read(location))) as T;
}

/** True for the error a missing staged object (or any missing file) reads as. */
export const isNotFound = (e: unknown): boolean =>
  isIcebergError(e, 'NotFound') || /NoSuchKey|NotFound|not found|ENOENT/i.test(String((e as Error)?.message));
