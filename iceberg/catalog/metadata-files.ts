/**
 * Metadata-file bookkeeping every catalog that writes metadata.json itself shares (SQL, memory):
 * where version N goes, the `metadata-log` it carries, and which old versions to delete after a
 * commit. The properties and their meaning are Java's TableProperties:
 *
 * - `write.metadata.previous-versions-max` (default 100): the metadata log keeps this many
 *   previous versions; older entries fall off it.
 * - `write.metadata.delete-after-commit.enabled` (default false): after a successful commit, the
 *   metadata files that fell off the log are deleted. Without it every commit leaves one more
 *   metadata.json behind forever (8,640 a day at a 10 s commit interval).
 *
 * Concurrency: deletion runs only after the swap landed and is best effort: a failed delete leaves
 * an orphan for the sweep, never a broken table. Files that fell off are at least
 * `previous-versions-max` commits old, so a reader holding one of them has long parsed it.
 */
import { randomUUID } from 'node:crypto';
import type { FileIO } from '../io/file-io';
import { metadataFileLocation } from '../spec/metadata';
import { metadataDeleteAfterCommit, metadataPreviousVersionsMax, writeMetadataPath } from '../spec/table-properties';
import type { MetadataLogEntry, TableMetadata } from '../spec/types';

/** Table properties the catalogs honour when writing metadata files: spec/table-properties.ts. */
export {
  METADATA_PREVIOUS_VERSIONS_MAX,
  METADATA_DELETE_AFTER_COMMIT,
  WRITE_METADATA_PATH,
  DEFAULT_PREVIOUS_VERSIONS_MAX,
} from '../spec/table-properties';

/** Builds the location of metadata file `version` (honours `write.metadata.path`). */
export const newMetadataLocation = (m: TableMetadata, version: number): string => {
  const dir = writeMetadataPath(m.properties);
  const uuid = randomUUID();
  if (dir !== undefined) return `${dir}/${String(version).padStart(5, '0')}-${uuid}.metadata.json`;
  return metadataFileLocation(m.location, version, uuid);
};

/**
 * `write.metadata.previous-versions-max` of `m` (at least 1; default 100); an unparsable value
 * is 'DataInvalid' naming it (spec/table-properties.ts).
 */
export function previousVersionsMax(m: TableMetadata): number {
  return metadataPreviousVersionsMax(m.properties);
}

/**
 * Appends the replaced metadata file to `metadata-log` and trims the log to
 * `write.metadata.previous-versions-max` newest entries (Java's TableMetadata.addPreviousFile).
 * Returns the new metadata and the entries that fell off the log.
 */
export function withPreviousMetadata(
  next: TableMetadata,
  previous: { location: string; lastUpdatedMs: bigint },
): { metadata: TableMetadata; dropped: MetadataLogEntry[] } {
  const max = previousVersionsMax(next);
  const log = [...next['metadata-log'], { 'timestamp-ms': previous.lastUpdatedMs, 'metadata-file': previous.location }];
  const cut = Math.max(0, log.length - max);
  return { metadata: { ...next, 'metadata-log': log.slice(cut) }, dropped: log.slice(0, cut) };
}

/** Never throws: this runs after the commit landed (staging already rejected an unparsable value). */
const deleteAfterCommit = (m: TableMetadata): boolean => {
  try {
    return metadataDeleteAfterCommit(m.properties);
  } catch {
    return false;
  }
};

/**
 * After a landed commit: deletes the metadata files that fell off the log when
 * `write.metadata.delete-after-commit.enabled` is true (Java's deleteRemovedMetadataFiles).
 * Never a file the new metadata still names. Best effort; returns what it deleted.
 */
export async function deleteRemovedMetadataFiles(
  io: FileIO,
  committed: TableMetadata,
  committedLocation: string,
  dropped: MetadataLogEntry[],
): Promise<string[]> {
  if (dropped.length === 0 || !deleteAfterCommit(committed)) return [];
  const keep = new Set([committedLocation, ...committed['metadata-log'].map((e) => e['metadata-file'])]);
  const gone: string[] = [];
  for (const e of dropped) {
    if (keep.has(e['metadata-file'])) continue;
    try {
      await io.delete(e['metadata-file']);
      gone.push(e['metadata-file']);
    } catch {
      // an orphan for the sweep, never a broken table
    }
  }
  return gone;
}
