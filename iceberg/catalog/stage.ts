/**
 * The one staging step of every catalog that writes metadata.json itself (SQL, memory), after
 * PyIceberg's `MetastoreCatalog._update_and_stage_table`: check the requirements against the
 * current table (none for create), apply the updates, carry the replaced file into `metadata-log`
 * (trimmed to `write.metadata.previous-versions-max`) and pick the new file's location (version
 * N+1, or 0 for create, under `write.metadata.path` when set).
 *
 * A catalog then only writes the staged file (`writeStagedMetadata`), does its own atomic pointer
 * swap, and afterwards either removes the file of a swap that provably did not land
 * (`discardStagedMetadata`) or deletes the metadata files that fell off the log
 * (`cleanUpAfterCommit`, honouring `write.metadata.delete-after-commit.enabled`).
 *
 * The REST catalog stages server-side and does not use this.
 */
import { IcebergError } from '../errors';
import type { FileIO } from '../io/file-io';
import { encodeTableMetadata, parseMetadataVersion, withFrozenHistory } from '../spec/metadata';
import { metadataDeleteAfterCommit } from '../spec/table-properties';
import type { MetadataLogEntry, TableIdentifier, TableMetadata } from '../spec/types';
import { applyUpdates, checkRequirements } from './apply';
import { identToString } from './catalog';
import { deleteRemovedMetadataFiles, newMetadataLocation, withPreviousMetadata } from './metadata-files';
import type { TableRequirement, TableUpdate } from './updates';

/** The table a commit starts from: the pointer the catalog loaded and the metadata it names. */
export interface CurrentTable {
  metadataLocation: string;
  metadata: TableMetadata;
}

export interface StagedTable {
  identifier: TableIdentifier;
  /** The metadata to write (the current metadata itself when `changed` is false). */
  metadata: TableMetadata;
  /** Where to write it; the current location when `changed` is false. */
  metadataLocation: string;
  /** The location the swap must still find (undefined for create). */
  baseMetadataLocation: string | undefined;
  /** False when the updates changed nothing: write nothing, swap nothing, return the current table. */
  changed: boolean;
  /** Log entries that fell off `metadata-log`: their files go after the swap lands (cleanUpAfterCommit). */
  dropped: MetadataLogEntry[];
  /** `write.metadata.delete-after-commit.enabled` of the staged metadata, read (and validated) before any write. */
  deleteAfterCommit: boolean;
}

export interface StageOptions {
  /** `last-updated-ms` for the applied updates (a newer added snapshot's timestamp wins). */
  nowMs: bigint;
  /** For create (`current` undefined): the table's initial metadata, staged as version 0. */
  initial?: TableMetadata;
}

/**
 * Checks `requirements` against `current` (undefined: the table does not exist, so only
 * `assert-create` passes), applies `updates` and returns the staged table. Without `current`
 * and without `opts.initial` the table does not exist: 'NotFound'. An unparsable metadata table
 * property (spec/table-properties.ts) is 'DataInvalid' here, before anything is written.
 * Pure: reads and writes nothing.
 */
export function stageTable(
  identifier: TableIdentifier,
  current: CurrentTable | undefined,
  requirements: TableRequirement[],
  updates: TableUpdate[],
  opts: StageOptions,
): StagedTable {
  checkRequirements(current?.metadata, requirements); // 'NotFound' for a missing table unless assert-create
  if (!current) {
    if (!opts.initial) {
      throw new IcebergError('NotFound', `table ${identToString(identifier)} does not exist; create it with createTable`, {
        retryable: false,
      });
    }
    const metadata = withFrozenHistory(applyUpdates(opts.initial, updates, opts.nowMs));
    return {
      identifier,
      metadata,
      metadataLocation: newMetadataLocation(metadata, 0),
      baseMetadataLocation: undefined,
      changed: true,
      dropped: [],
      deleteAfterCommit: false,
    };
  }
  const base = current.metadata;
  const applied = applyUpdates(base, updates, opts.nowMs);
  if (applied === base) {
    return {
      identifier,
      metadata: base,
      metadataLocation: current.metadataLocation,
      baseMetadataLocation: current.metadataLocation,
      changed: false,
      dropped: [],
      deleteAfterCommit: false,
    };
  }
  const { metadata, dropped } = withPreviousMetadata(applied, {
    location: current.metadataLocation,
    lastUpdatedMs: base['last-updated-ms'],
  });
  return {
    identifier,
    // history records frozen, so their JSON is cached from this commit to the next (spec/metadata.ts)
    metadata: withFrozenHistory(metadata),
    metadataLocation: newMetadataLocation(metadata, parseMetadataVersion(current.metadataLocation) + 1),
    baseMetadataLocation: current.metadataLocation,
    changed: true,
    dropped,
    deleteAfterCommit: metadataDeleteAfterCommit(metadata.properties),
  };
}

/** Writes the staged metadata.json (before the swap). */
export async function writeStagedMetadata(io: FileIO, staged: StagedTable): Promise<void> {
  await io.write(staged.metadataLocation, encodeTableMetadata(staged.metadata));
}

/** Removes the staged file of a swap that provably did not land. Best effort: a failure leaves an orphan. */
export async function discardStagedMetadata(io: FileIO, staged: StagedTable): Promise<void> {
  await io.delete(staged.metadataLocation).catch(() => undefined);
}

/**
 * After the swap landed: deletes the metadata files that fell off the log when
 * `write.metadata.delete-after-commit.enabled` is true. Best effort; returns what it deleted.
 */
export async function cleanUpAfterCommit(io: FileIO, staged: StagedTable): Promise<string[]> {
  if (!staged.deleteAfterCommit) return [];
  return deleteRemovedMetadataFiles(io, staged.metadata, staged.metadataLocation, staged.dropped);
}
