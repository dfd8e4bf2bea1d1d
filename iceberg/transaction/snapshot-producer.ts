/**
 * Snapshot producers (after PyIceberg's _SnapshotProducer / Java's MergingSnapshotProducer): a
 * template that, for one commit attempt against a given base, writes manifests and a manifest
 * list and returns the REST `{updates, requirements}`. Subclasses say which files are added and
 * which are deleted; the template handles sequence numbers, merging, summaries and cleanup.
 *
 * The snapshot id is fixed at construction, before the first attempt, so it is stable across
 * retries (a caller that lost a response can find its snapshot). Manifests of newly added files
 * do not depend on the base and are written once; everything else is rebuilt per attempt.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { IcebergError } from '../errors';
import type { FileIO } from '../io/file-io';
import { MANIFEST_READ_CONCURRENCY, mapConcurrent } from '../scan/parallel';
import {
  type ManifestReadOptions,
  type ManifestSource,
  firstRowIdInheritance,
  inheritFromManifest,
  openManifest,
  writeManifest,
} from '../spec/manifest';
import { assignFirstRowIds, readManifestList, writeManifestList } from '../spec/manifest-list';
import { MAIN_BRANCH, currentSchema, currentSnapshot, specById } from '../spec/metadata';
import {
  type DataFile,
  DataFileContent,
  ManifestContent,
  type ManifestEntry,
  ManifestEntryStatus,
  type ManifestFile,
  type Snapshot,
  type SnapshotOperation,
  type TableMetadata,
} from '../spec/types';
import { manifestMergeEnabled, manifestMinMergeCount, manifestTargetSizeBytes, metadataDirectory } from '../spec/table-properties';
import { deleteFileKey, isDeletionVector, referencedDataFile } from '../spec/position-delete';
import { deletedPositionCounts } from '../parquet/position-deletes';
import { partitionKey } from '../spec/partition';
import { planMerge } from './merge';
import { buildSummary } from './summary';
import type { TableRequirement, TableUpdate } from './updates';

/**
 * Entries of an opened manifest with inheritance from its manifest-list entry (not for `ours`:
 * unassigned yet). First row ids are inherited too (v3), so that rewriting an entry as EXISTING or
 * DELETED writes the inherited value, as the spec requires.
 */
function* manifestEntries(source: ManifestSource, m: ManifestFile, ours: boolean): Generator<ManifestEntry> {
  const rowIds = ours ? undefined : firstRowIdInheritance(m);
  for (const e of source.entries())
    yield ours ? { ...e, dataFile: { ...e.dataFile, specId: m.partitionSpecId } } : inheritFromManifest(rowIds!(e), m);
}

/** A data file's identity, partition and counts, without its column metrics (summaries need no more). */
const withoutMetrics = (f: DataFile): DataFile => ({
  content: f.content,
  filePath: f.filePath,
  fileFormat: f.fileFormat,
  specId: f.specId,
  partition: f.partition,
  recordCount: f.recordCount,
  fileSizeInBytes: f.fileSizeInBytes,
  ...(f.firstRowId !== undefined ? { firstRowId: f.firstRowId } : {}),
  ...(f.referencedDataFile !== undefined ? { referencedDataFile: f.referencedDataFile } : {}),
  ...(f.contentOffset !== undefined ? { contentOffset: f.contentOffset } : {}),
  ...(f.contentSizeInBytes !== undefined ? { contentSizeInBytes: f.contentSizeInBytes } : {}),
});

/** A random positive 63-bit id, as Java/PyIceberg generate (never 0, never negative). */
export function newSnapshotId(): bigint {
  for (;;) {
    const id = randomBytes(8).readBigUInt64BE(0) & ((1n << 63n) - 1n);
    if (id !== 0n) return id;
  }
}

/** What one attempt produced: the commit payload and the files written only for it. */
export interface PendingCommit {
  updates: TableUpdate[];
  requirements: TableRequirement[];
  /** files written for this attempt only: safe to delete if this attempt provably did not land */
  attemptFiles: string[];
  /** files a successful commit references (manifest list + manifests in it) */
  referencedFiles: string[];
}

/** An action a Transaction can run: builds its commit against the freshly loaded base. */
export interface TableAction {
  prepare(base: TableMetadata, io: FileIO, attempt: number): Promise<PendingCommit>;
  /** Every file this action wrote over all attempts (cleanup after a definite failure). */
  writtenFiles(): string[];
}

const metadataDir = (m: TableMetadata): string => metadataDirectory(m);

/** The manifest format a table's commits write: 3 for v3 tables, else 2 (v1 tables are refused before). */
const manifestFormat = (m: TableMetadata): 2 | 3 => (m['format-version'] >= 3 ? 3 : 2);

/**
 * Spec "Row-level Deletes": v3 tables take deletion vectors only ("Position delete files must
 * not be added to v3 tables"), v2 tables position delete files only (no Puffin).
 */
function checkDeleteFormats(base: TableMetadata, deletes: readonly DataFile[]): void {
  const v3 = base['format-version'] >= 3;
  for (const f of deletes) {
    const dv = isDeletionVector(f);
    if (v3 && !dv)
      throw IcebergError.mismatch(
        'FeatureUnsupported',
        `adding delete file ${f.filePath} to a format-version ${base['format-version']} table: format`,
        'PUFFIN (deletion vectors)',
        f.fileFormat,
        false,
      );
    if (!v3 && dv)
      throw IcebergError.mismatch(
        'FeatureUnsupported',
        `adding deletion vector ${f.filePath}: table format-version`,
        '>= 3',
        base['format-version'],
        false,
      );
    if (dv && (f.referencedDataFile === undefined || f.contentOffset === undefined || f.contentSizeInBytes === undefined))
      throw new IcebergError(
        'DataInvalid',
        `deletion vector in ${f.filePath}: referenced_data_file, content_offset and content_size_in_bytes are required`,
        { retryable: false },
      );
  }
}

/**
 * The live deletion vectors and position delete files removed from delete manifests, keyed by
 * deleteFileKey (several DVs share one Puffin file): each manifest holding one is rewritten with
 * it DELETED and the others EXISTING; `liveDVs` maps a data file to the live DVs that stay.
 */
async function removeDeleteEntries(
  producer: SnapshotProducer,
  io: FileIO,
  parent: ManifestFile[],
  remove: ReadonlySet<string>,
  write: (specId: number, entries: Iterable<ManifestEntry>) => Promise<ManifestFile>,
  read: (bytes: Uint8Array, m: ManifestFile, opts?: ManifestReadOptions) => Generator<ManifestEntry>,
): Promise<{ manifests: ManifestFile[]; removed: DataFile[]; liveDVs: Map<string, DataFile[]> }> {
  const removed: DataFile[] = [];
  const liveDVs = new Map<string, DataFile[]>();
  const snapshotId = producer.snapshotId;
  const manifests = await mapConcurrent(parent, MANIFEST_READ_CONCURRENCY, async (m) => {
    if (m.content !== ManifestContent.Deletes || m.addedFilesCount + m.existingFilesCount === 0) return m;
    const bytes = await io.read(m.manifestPath);
    let hit = false;
    for (const e of read(bytes, m, { metrics: false })) {
      if (e.status === ManifestEntryStatus.Deleted) continue;
      if (remove.has(deleteFileKey(e.dataFile))) hit = true;
      else if (isDeletionVector(e.dataFile) && e.dataFile.referencedDataFile !== undefined) {
        let l = liveDVs.get(e.dataFile.referencedDataFile);
        if (!l) liveDVs.set(e.dataFile.referencedDataFile, (l = []));
        l.push(e.dataFile);
      }
    }
    if (!hit) return m;
    const entries = read(bytes, m);
    function* rewritten(): Generator<ManifestEntry> {
      for (const e of entries) {
        if (e.status === ManifestEntryStatus.Deleted) continue;
        if (remove.has(deleteFileKey(e.dataFile))) {
          removed.push(withoutMetrics(e.dataFile));
          yield { ...e, status: ManifestEntryStatus.Deleted, snapshotId };
        } else yield { ...e, status: ManifestEntryStatus.Existing };
      }
    }
    return write(m.partitionSpecId, rewritten());
  });
  return { manifests, removed, liveDVs };
}

export abstract class SnapshotProducer implements TableAction {
  readonly snapshotId: bigint = newSnapshotId();
  readonly commitUuid: string = randomUUID();
  private manifestCounter = 0;
  private readonly written: string[] = [];
  /** new-file manifests by spec id, written on the first attempt and reused */
  private newManifests?: ManifestFile[];
  private newManifestsFormat?: 2 | 3;

  protected constructor(
    protected readonly added: DataFile[],
    protected readonly summaryProps: Record<string, string>,
    /** position delete files this snapshot adds (RowDelta only), written to delete manifests */
    protected readonly addedDeletes: DataFile[] = [],
  ) {
    for (const f of added) {
      if (f.content !== DataFileContent.Data) {
        throw new IcebergError('FeatureUnsupported', `adding ${f.filePath}: only data files are supported, found content ${f.content}`);
      }
    }
    for (const f of addedDeletes) {
      // equality deletes are valid Iceberg, but floe's scans refuse them: never write what we cannot read
      if (f.content !== DataFileContent.PositionDeletes) {
        throw IcebergError.mismatch(
          'FeatureUnsupported',
          `adding delete file ${f.filePath}: content`,
          'position deletes (1)',
          f.content,
          false,
        );
      }
    }
  }

  abstract operation(): SnapshotOperation;
  /**
   * Filters the parent's manifests for this attempt (rewrite: marks deleted files, validates that
   * they are still live). Returns the manifests to keep and the deleted files, for the summary.
   */
  protected abstract filterManifests(
    base: TableMetadata,
    io: FileIO,
    parent: ManifestFile[],
  ): Promise<{ manifests: ManifestFile[]; deleted: DataFile[] }>;

  writtenFiles(): string[] {
    return [...this.written];
  }

  protected newManifestLocation(base: TableMetadata): string {
    const loc = `${metadataDir(base)}/${this.commitUuid}-m${this.manifestCounter++}.avro`;
    this.written.push(loc);
    return loc;
  }

  /** Writes a manifest for this snapshot; entries keep explicit sequence numbers except ADDED-by-us. */
  protected async writeEntries(
    base: TableMetadata,
    io: FileIO,
    specId: number,
    entries: Iterable<ManifestEntry>,
    content: ManifestContent = ManifestContent.Data,
  ): Promise<ManifestFile> {
    return writeManifest(io, {
      location: this.newManifestLocation(base),
      spec: specById(base, specId),
      schema: currentSchema(base),
      snapshotId: this.snapshotId,
      entries,
      content,
      ...(manifestFormat(base) === 3 ? { formatVersion: 3 as const } : {}),
    });
  }

  /**
   * Entries of manifest `m` from its bytes, decoded one at a time, inheriting from the manifest
   * list except for manifests this snapshot wrote (their sequence number is not assigned yet:
   * entries stay "inherit").
   */
  protected entriesFrom(bytes: Uint8Array, m: ManifestFile, opts: ManifestReadOptions = {}): Generator<ManifestEntry> {
    return manifestEntries(openManifest(bytes, m.manifestPath, m.partitionSpecId, opts), m, m.addedSnapshotId === this.snapshotId);
  }

  /** One manifest per spec for added data files, then one delete manifest per spec for added delete files. */
  private async writeNewManifests(base: TableMetadata, io: FileIO): Promise<ManifestFile[]> {
    if (this.newManifests) return this.newManifests;
    const out: ManifestFile[] = [];
    for (const [content, added] of [
      [ManifestContent.Data, this.added],
      [ManifestContent.Deletes, this.addedDeletes],
    ] as const) {
      const bySpec = new Map<number, DataFile[]>();
      for (const f of added) {
        specById(base, f.specId); // the spec must exist in the table
        let l = bySpec.get(f.specId);
        if (!l) bySpec.set(f.specId, (l = []));
        l.push(f);
      }
      for (const [specId, files] of bySpec) {
        out.push(
          await this.writeEntries(
            base,
            io,
            specId,
            files.map(({ firstRowId: _assigned, ...dataFile }) => ({
              // spec "First Row ID Inheritance": an added file's first_row_id is null until the manifest list assigns one
              status: ManifestEntryStatus.Added,
              snapshotId: this.snapshotId,
              sequenceNumber: null, // inherits this snapshot's: the deletes apply to data files at or below it
              fileSequenceNumber: null,
              dataFile,
            })),
            content,
          ),
        );
      }
    }
    this.newManifests = out;
    this.newManifestsFormat = manifestFormat(base);
    return out;
  }

  /** Merges one bin into a single manifest (Java ManifestMergeManager.createManifest), entry by entry. */
  private async mergeBin(base: TableMetadata, io: FileIO, specId: number, bin: ManifestFile[]): Promise<ManifestFile> {
    const bytes = await mapConcurrent(bin, MANIFEST_READ_CONCURRENCY, (m) => io.read(m.manifestPath));
    const sources = bin.map((m, i) => this.entriesFrom(bytes[i]!, m));
    const snapshotId = this.snapshotId;
    function* merged(): Generator<ManifestEntry> {
      for (const source of sources) {
        for (const e of source) {
          const ours = e.snapshotId === snapshotId;
          if (e.status === ManifestEntryStatus.Deleted) {
            if (ours) yield e; // deletes are kept only in the snapshot that made them
          } else if (e.status === ManifestEntryStatus.Added && ours) {
            yield e;
          } else {
            yield { ...e, status: ManifestEntryStatus.Existing };
          }
        }
      }
    }
    return this.writeEntries(base, io, specId, merged());
  }

  private async mergeManifests(base: TableMetadata, io: FileIO, manifests: ManifestFile[]): Promise<ManifestFile[]> {
    if (manifests.length === 0 || !manifestMergeEnabled(base.properties)) return manifests;
    const target = manifestTargetSizeBytes(base.properties);
    const minCount = manifestMinMergeCount(base.properties);
    const first = manifests[0];
    const groups = new Map<string, ManifestFile[]>();
    for (const m of manifests) {
      // delete manifests are never merged with data manifests
      const k = `${m.content}:${m.partitionSpecId}`;
      let g = groups.get(k);
      if (!g) groups.set(k, (g = []));
      g.push(m);
    }
    const out: ManifestFile[] = [];
    for (const group of groups.values()) {
      for (const bin of planMerge(group, first, (m) => m.manifestLength, target, minCount)) {
        if (bin.merge && bin.items[0]!.content === ManifestContent.Data)
          out.push(await this.mergeBin(base, io, bin.items[0]!.partitionSpecId, bin.items));
        else out.push(...bin.items);
      }
    }
    return out;
  }

  async prepare(base: TableMetadata, io: FileIO, attempt: number): Promise<PendingCommit> {
    if (base['format-version'] !== 2 && base['format-version'] !== 3) {
      throw IcebergError.mismatch('FeatureUnsupported', 'commit to table format-version', '2 or 3', base['format-version'], false);
    }
    checkDeleteFormats(base, this.addedDeletes);
    // new-file manifests written for a v2 base cannot serve a base upgraded to v3 since (or back)
    if (this.newManifests && this.newManifestsFormat !== manifestFormat(base)) this.newManifests = undefined;
    const writtenBefore = this.written.length;
    const parent = currentSnapshot(base);
    const parentManifests = parent ? await readManifestList(io, parent['manifest-list']) : [];
    const newManifests = await this.writeNewManifests(base, io);
    const { manifests: kept, deleted } = await this.filterManifests(base, io, parentManifests);
    // Java: a manifest with no live files that an older snapshot wrote is dropped from the list.
    const live = kept.filter(
      (m) => m.addedSnapshotId === this.snapshotId || m.addedFilesCount > 0 || m.existingFilesCount > 0 || m.deletedFilesCount === 0,
    );
    const manifests = await this.mergeManifests(base, io, [...newManifests, ...live]);

    const manifestList = `${metadataDir(base)}/snap-${this.snapshotId}-${attempt}-${this.commitUuid}.avro`;
    this.written.push(manifestList);
    const commit = await commitSnapshot(io, base, {
      snapshotId: this.snapshotId,
      manifestList,
      manifests,
      summary: buildSummary(this.operation(), { added: [...this.added, ...this.addedDeletes], deleted }, parent, this.summaryProps),
    });
    const reused = new Set(this.newManifests ?? []);
    const attemptFiles = this.written.slice(writtenBefore).filter((p) => ![...reused].some((m) => m.manifestPath === p));
    return { ...commit, attemptFiles };
  }
}

/**
 * A new snapshot of main over `manifests` (the next sequence number, parent the current snapshot):
 * writes its manifest list at `manifestList` and returns the updates and requirements that commit
 * it, fenced to that parent, and the files it references. Every snapshot producer ends here.
 */
export async function commitSnapshot(
  io: FileIO,
  base: TableMetadata,
  o: { snapshotId: bigint; manifestList: string; manifests: ManifestFile[]; summary: Snapshot['summary'] },
): Promise<Omit<PendingCommit, 'attemptFiles'>> {
  const parent = currentSnapshot(base);
  const sequenceNumber = base['last-sequence-number'] + 1n;
  // v3 row lineage (spec "Snapshot Row IDs"): first-row-id is the table's next-row-id on every
  // attempt; data manifests without a first_row_id get one from it; added-rows is what they took
  const v3 = base['format-version'] >= 3;
  const firstRowId = v3 ? (base['next-row-id'] ?? 0n) : undefined;
  await writeManifestList(io, {
    location: o.manifestList,
    snapshotId: o.snapshotId,
    parentSnapshotId: parent?.['snapshot-id'] ?? null,
    sequenceNumber,
    manifests: o.manifests,
    ...(firstRowId !== undefined ? { firstRowId } : {}),
  });
  const snapshot: Snapshot = {
    'snapshot-id': o.snapshotId,
    ...(parent ? { 'parent-snapshot-id': parent['snapshot-id'] } : {}),
    'sequence-number': sequenceNumber,
    'timestamp-ms': nowAfter(base),
    'manifest-list': o.manifestList,
    summary: o.summary,
    'schema-id': base['current-schema-id'],
    ...(firstRowId !== undefined ? { 'first-row-id': firstRowId, 'added-rows': assignFirstRowIds(o.manifests, firstRowId).addedRows } : {}),
  };
  return {
    updates: [
      { action: 'add-snapshot', snapshot },
      { action: 'set-snapshot-ref', 'ref-name': MAIN_BRANCH, type: 'branch', 'snapshot-id': o.snapshotId },
    ],
    requirements: [
      { type: 'assert-table-uuid', uuid: base['table-uuid'] },
      { type: 'assert-ref-snapshot-id', ref: MAIN_BRANCH, 'snapshot-id': parent?.['snapshot-id'] ?? null },
    ],
    referencedFiles: [o.manifestList, ...o.manifests.map((m) => m.manifestPath)],
  };
}

/** Snapshot timestamps must not go backwards relative to the table (Java rejects large skews). */
function nowAfter(base: TableMetadata): bigint {
  const now = BigInt(Date.now());
  return now > base['last-updated-ms'] ? now : base['last-updated-ms'] + 1n;
}

/**
 * Appends data files in a new `append` snapshot. Concurrency: appends never conflict logically;
 * a lost CAS is retried against the new base with the same snapshot id.
 */
export class FastAppend extends SnapshotProducer {
  constructor(files: DataFile[], summaryProps: Record<string, string> = {}) {
    super(files, summaryProps);
  }
  operation(): SnapshotOperation {
    return 'append';
  }
  protected async filterManifests(
    _base: TableMetadata,
    _io: FileIO,
    parent: ManifestFile[],
  ): Promise<{ manifests: ManifestFile[]; deleted: DataFile[] }> {
    return { manifests: parent, deleted: [] };
  }
}

/** A rewrite whose outputs already apply the table's position deletes (compaction of a table with deletes). */
export interface RewriteDeletesOptions {
  /**
   * Rows the outputs hold: the replaced files' rows minus their deleted positions. Checked on
   * every attempt against the deletes live in the snapshot the commit lands on: a position only
   * ever gets deleted while its file is live, so equal counts mean the outputs applied exactly
   * those deletes; a delete committed since the rewrite read the table fails the commit
   * (CommitFailed, not retryable; Java's validateNoNewDeletesForDataFiles). Equality deletes are refused.
   */
  records: number;
  /** Position delete files that name only replaced files: removed in the same snapshot. */
  remove?: DataFile[];
}

/**
 * Replaces `deleted` data files with `added` ones in a `replace` snapshot (compaction).
 * Concurrency: on every attempt each deleted file must still be live in the current snapshot, or
 * the commit fails with IcebergError('CommitFailed', not retryable) naming the missing files;
 * files appended concurrently are untouched and do not conflict.
 * Sequence numbers: added files get this commit's; surviving entries keep theirs; deleted entries
 * keep their original data sequence number (spec "Sequence Numbers").
 * Deletes: without `deletes`, a table with live delete files is refused (the outputs would bring
 * deleted rows back); with it, see RewriteDeletesOptions.
 */
export class RewriteFiles extends SnapshotProducer {
  private readonly deletedPaths: Set<string>;
  private readonly removeDeletes: Set<string>;
  constructor(
    private readonly deletedFiles: DataFile[],
    added: DataFile[],
    summaryProps: Record<string, string> = {},
    private readonly deletes?: RewriteDeletesOptions,
  ) {
    super(added, summaryProps);
    this.deletedPaths = new Set(deletedFiles.map((f) => f.filePath));
    this.removeDeletes = new Set((deletes?.remove ?? []).map(deleteFileKey));
    if (this.deletedPaths.size === 0)
      throw new IcebergError('DataInvalid', 'rewriteFiles needs at least one file to replace', { retryable: false });
    const rowsOut = deletes ? deletes.records : deletedFiles.reduce((a, f) => a + f.recordCount, 0);
    const rowsIn = added.reduce((a, f) => a + f.recordCount, 0);
    if (rowsIn !== rowsOut) {
      throw IcebergError.mismatch('DataInvalid', 'rewriteFiles record count (added vs replaced)', rowsOut, rowsIn, false);
    }
  }
  operation(): SnapshotOperation {
    return 'replace';
  }

  /**
   * A live delete file this rewrite removes: one of `deletes.remove`, or a deletion vector of a
   * replaced file (spec: "When removing a data file, writers must also remove any deletion vector
   * that applies to that data file").
   */
  private removesDelete(f: DataFile): boolean {
    if (this.removeDeletes.has(deleteFileKey(f))) return true;
    return isDeletionVector(f) && f.referencedDataFile !== undefined && this.deletedPaths.has(f.referencedDataFile);
  }

  /**
   * The delete manifests of the parent, checked (no equality deletes; the replaced files' deleted
   * positions as many as the outputs left out) and with `remove` marked deleted.
   */
  private async filterDeleteManifests(
    base: TableMetadata,
    io: FileIO,
    manifests: ManifestFile[],
  ): Promise<{ manifests: ManifestFile[]; removed: DataFile[] }> {
    const removed: DataFile[] = [];
    const deleteFiles: DataFile[] = [];
    const snapshotId = this.snapshotId;
    const out = await mapConcurrent(manifests, MANIFEST_READ_CONCURRENCY, async (m) => {
      const bytes = await io.read(m.manifestPath);
      let touched = false;
      for (const e of this.entriesFrom(bytes, m)) {
        if (e.status === ManifestEntryStatus.Deleted) continue;
        if (e.dataFile.content === DataFileContent.EqualityDeletes)
          throw IcebergError.mismatch(
            'FeatureUnsupported',
            `rewriteFiles: delete file ${e.dataFile.filePath} content`,
            'position deletes',
            'equality deletes',
            false,
          );
        if (this.removesDelete(e.dataFile)) touched = true;
        deleteFiles.push(e.dataFile);
      }
      if (!touched) return m;
      const removes = (f: DataFile): boolean => this.removesDelete(f);
      const entries = this.entriesFrom(bytes, m);
      function* rewritten(): Generator<ManifestEntry> {
        for (const e of entries) {
          if (e.status === ManifestEntryStatus.Deleted) continue;
          if (removes(e.dataFile)) {
            removed.push(withoutMetrics(e.dataFile));
            yield { ...e, status: ManifestEntryStatus.Deleted, snapshotId };
          } else yield { ...e, status: ManifestEntryStatus.Existing };
        }
      }
      return this.writeEntries(base, io, m.partitionSpecId, rewritten(), ManifestContent.Deletes);
    });
    let deleted = 0;
    for (const n of (await deletedPositionCounts(io, deleteFiles, this.deletedPaths, MANIFEST_READ_CONCURRENCY)).values()) deleted += n;
    const expected = this.deletedFiles.reduce((a, f) => a + f.recordCount, 0) - deleted;
    if (expected !== this.deletes!.records) {
      throw new IcebergError(
        'CommitFailed',
        `rewrite: the replaced files hold ${expected} live rows in snapshot ${currentSnapshot(base)?.['snapshot-id'] ?? 'none'}, the outputs ${this.deletes!.records}: position deletes were committed since the rewrite read them`,
        { retryable: false, context: { conflicting: [...this.deletedPaths], expected, found: this.deletes!.records } },
      );
    }
    return { manifests: out, removed };
  }

  protected async filterManifests(
    base: TableMetadata,
    io: FileIO,
    parent: ManifestFile[],
  ): Promise<{ manifests: ManifestFile[]; deleted: DataFile[] }> {
    const deletes = parent.filter((m) => m.content === ManifestContent.Deletes && m.addedFilesCount + m.existingFilesCount > 0);
    let deleteManifests: ManifestFile[] = deletes;
    let removedDeletes: DataFile[] = [];
    if (deletes.length > 0 && !this.deletes) {
      // New files get a higher data sequence number, so older equality/position deletes would stop
      // applying to the rewritten rows: refuse rather than resurrect deleted rows.
      throw IcebergError.mismatch(
        'FeatureUnsupported',
        'rewriteFiles on a table with live delete files: delete manifests',
        0,
        deletes.length,
        false,
      );
    }
    if (deletes.length > 0) ({ manifests: deleteManifests, removed: removedDeletes } = await this.filterDeleteManifests(base, io, deletes));
    parent = [...parent.filter((m) => !deletes.includes(m)), ...deleteManifests];
    const found = new Map<string, DataFile>();
    const skip = (m: ManifestFile): boolean =>
      m.content !== ManifestContent.Data || (m.addedFilesCount === 0 && m.existingFilesCount === 0 && m.deletedFilesCount > 0);
    const deletedPaths = this.deletedPaths;
    const snapshotId = this.snapshotId;
    // Manifest by manifest, a few at a time, entry by entry: a first pass without the column
    // metrics finds the manifests that hold a replaced file; only those are decoded in full and
    // rewritten, streaming into the new manifest. Nothing holds all entries of a table at once
    // (a 10,000-file table's entries with metrics are ~70 MB of JS objects).
    const out = await mapConcurrent(parent, MANIFEST_READ_CONCURRENCY, async (m) => {
      if (skip(m)) return m;
      const bytes = await io.read(m.manifestPath);
      let hit = false;
      for (const e of this.entriesFrom(bytes, m, { metrics: false })) {
        if (e.status !== ManifestEntryStatus.Deleted && deletedPaths.has(e.dataFile.filePath)) {
          hit = true;
          break;
        }
      }
      if (!hit) return m;
      const entries = this.entriesFrom(bytes, m);
      function* rewritten(): Generator<ManifestEntry> {
        for (const e of entries) {
          if (e.status === ManifestEntryStatus.Deleted) continue; // old deletes do not carry forward
          if (deletedPaths.has(e.dataFile.filePath)) {
            found.set(e.dataFile.filePath, withoutMetrics(e.dataFile));
            yield { ...e, status: ManifestEntryStatus.Deleted, snapshotId };
          } else {
            yield { ...e, status: ManifestEntryStatus.Existing };
          }
        }
      }
      return this.writeEntries(base, io, m.partitionSpecId, rewritten());
    });
    const missing = [...this.deletedPaths].filter((p) => !found.has(p));
    const notRemoved = [...this.removeDeletes].filter((p) => !removedDeletes.some((f) => deleteFileKey(f) === p));
    if (notRemoved.length > 0)
      throw new IcebergError(
        'CommitFailed',
        `rewrite: ${notRemoved.length} delete files to remove are no longer live: ${notRemoved.slice(0, 10).join(', ')}`,
        {
          retryable: false,
          context: { missing: notRemoved, expected: 'live', found: 'missing' },
        },
      );
    if (missing.length > 0) {
      throw new IcebergError(
        'CommitFailed',
        `rewrite: ${missing.length} of ${this.deletedPaths.size} replaced files are no longer live in the current snapshot: expected live, found missing: ${missing.slice(0, 10).join(', ')}${missing.length > 10 ? ', …' : ''}`,
        { retryable: false, context: { missing, expected: 'live', found: 'missing' } },
      );
    }
    return { manifests: out, deleted: [...found.values(), ...removedDeletes] };
  }

  /** The files this rewrite replaces (as given). */
  replaced(): DataFile[] {
    return this.deletedFiles;
  }
}

/**
 * Replaces position delete files by others in a `replace` snapshot that changes no row (Spark's
 * rewrite_position_delete_files): the caller merged several delete files of a partition into one
 * and left out the positions of data files that are no longer live. The added files get this
 * snapshot's sequence number; they name only files live before it, so they apply to exactly the
 * rows the removed ones did.
 * Concurrency: each removed delete file must still be live on every attempt (CommitFailed, not
 * retryable, naming the missing ones); concurrent appends and deletes are kept. A data file a new
 * delete file names that a concurrent compaction rewrote is left named by a dangling delete
 * (harmless: that compaction applied the positions, which the removed files held too).
 */
export class ReplaceDeleteFiles extends SnapshotProducer {
  private readonly removedKeys: Set<string>;
  constructor(removed: DataFile[], added: DataFile[], summaryProps: Record<string, string> = {}) {
    super([], summaryProps, added);
    this.removedKeys = new Set(removed.map(deleteFileKey));
    if (this.removedKeys.size === 0)
      throw new IcebergError('DataInvalid', 'replaceDeleteFiles needs at least one delete file to remove', { retryable: false });
  }
  operation(): SnapshotOperation {
    return 'replace';
  }

  protected async filterManifests(
    base: TableMetadata,
    io: FileIO,
    parent: ManifestFile[],
  ): Promise<{ manifests: ManifestFile[]; deleted: DataFile[] }> {
    const removed = this.removedKeys;
    const { manifests, removed: found } = await removeDeleteEntries(
      this,
      io,
      parent,
      removed,
      (specId, entries) => this.writeEntries(base, io, specId, entries, ManifestContent.Deletes),
      (bytes, m, opts) => this.entriesFrom(bytes, m, opts),
    );
    const missing = [...removed].filter((p) => !found.some((f) => deleteFileKey(f) === p));
    if (missing.length > 0)
      throw new IcebergError(
        'CommitFailed',
        `replace delete files: ${missing.length} of ${removed.size} delete files are no longer live: ${missing.slice(0, 10).join(', ')}`,
        { retryable: false, context: { missing, expected: 'live', found: 'missing' } },
      );
    return { manifests, deleted: found };
  }
}

export interface RowDeltaOptions {
  /**
   * Every data file the added position deletes name. Required when deletes are added: each must
   * be live in the snapshot the commit lands on (or be added by this commit).
   */
  referencedDataFiles?: string[];
  summaryProps?: Record<string, string>;
  /**
   * Live delete files this snapshot removes (v3: the deletion vectors and single-file position
   * delete files the added DVs replace, whose positions they hold). Each must still be live on
   * every attempt, else CommitFailed (not retryable). See `mergeDeletionVectors`.
   */
  removeDeleteFiles?: DataFile[];
}

/**
 * Adds data files and position delete files in one snapshot (Java's RowDelta): `append` when it
 * adds data only, `delete` when it adds deletes only, `overwrite` when both (Java's
 * BaseRowDelta.operation and the spec's operation meanings). Delete files go to delete manifests
 * and inherit this snapshot's sequence number, so they apply to every data file committed at or
 * before it and to none committed later (spec "Scan Planning").
 * Concurrency: on every attempt each referenced data file must still be live in the current
 * snapshot (or added here), else IcebergError('CommitFailed', not retryable) names the missing
 * files: a concurrent compaction that rewrote them moved the rows to new files these positions do
 * not name, and committing would leave deletes that delete nothing (the rows come back).
 * Concurrent appends do not conflict. Each attempt reads the current snapshot's data manifests
 * (without column metrics) for that check.
 */
export class RowDelta extends SnapshotProducer {
  private readonly referenced: Set<string>;
  private readonly removeKeys: Set<string>;

  constructor(addedDataFiles: DataFile[], addedDeleteFiles: DataFile[], opts: RowDeltaOptions = {}) {
    super(addedDataFiles, opts.summaryProps ?? {}, addedDeleteFiles);
    this.referenced = new Set(opts.referencedDataFiles ?? []);
    this.removeKeys = new Set((opts.removeDeleteFiles ?? []).map(deleteFileKey));
    const dvTargets = new Set<string>();
    for (const f of addedDeleteFiles) {
      if (!isDeletionVector(f) || f.referencedDataFile === undefined) continue;
      if (dvTargets.has(f.referencedDataFile))
        throw IcebergError.mismatch('DataInvalid', `rowDelta: deletion vectors added for ${f.referencedDataFile}`, 1, 2, false);
      dvTargets.add(f.referencedDataFile);
    }
    if (addedDeleteFiles.length > 0 && this.referenced.size === 0) {
      throw new IcebergError('DataInvalid', 'rowDelta adds position deletes but names no referenced data files to validate', {
        retryable: false,
      });
    }
    for (const f of addedDeleteFiles) {
      const only = referencedDataFile(f);
      if (only !== undefined && !this.referenced.has(only)) {
        throw IcebergError.mismatch('DataInvalid', `rowDelta: data file named by ${f.filePath}`, 'among referencedDataFiles', only, false);
      }
    }
  }

  operation(): SnapshotOperation {
    if (this.addedDeletes.length === 0) return 'append';
    return this.added.length === 0 ? 'delete' : 'overwrite';
  }

  /**
   * Removes `removeDeleteFiles` and, when deletion vectors are added, checks that no other DV of
   * their data files is live (spec: at most one DV per data file in a snapshot; a DV committed
   * concurrently fails this one with CommitFailed, not retryable: its positions are not in ours).
   */
  private async filterDeletes(
    base: TableMetadata,
    io: FileIO,
    parent: ManifestFile[],
  ): Promise<{ manifests: ManifestFile[]; deleted: DataFile[] }> {
    const dvs = this.addedDeletes.filter(isDeletionVector);
    if (this.removeKeys.size === 0 && dvs.length === 0) return { manifests: parent, deleted: [] };
    const { manifests, removed, liveDVs } = await removeDeleteEntries(
      this,
      io,
      parent,
      this.removeKeys,
      (specId, entries) => this.writeEntries(base, io, specId, entries, ManifestContent.Deletes),
      (bytes, m, opts) => this.entriesFrom(bytes, m, opts),
    );
    const missing = [...this.removeKeys].filter((k) => !removed.some((f) => deleteFileKey(f) === k));
    if (missing.length > 0)
      throw new IcebergError(
        'CommitFailed',
        `rowDelta: ${missing.length} of ${this.removeKeys.size} delete files to remove are no longer live (replaced concurrently): ${missing.slice(0, 10).join(', ')}`,
        { retryable: false, context: { missing, expected: 'live', found: 'missing' } },
      );
    const conflicting = dvs.map((d) => d.referencedDataFile!).filter((p) => (liveDVs.get(p)?.length ?? 0) > 0);
    if (conflicting.length > 0)
      throw new IcebergError(
        'CommitFailed',
        `rowDelta: ${conflicting.length} data files already have a live deletion vector this commit does not replace (added concurrently?): ${conflicting.slice(0, 10).join(', ')}`,
        { retryable: false, context: { conflicting, expected: 'no other live deletion vector', found: 'live' } },
      );
    return { manifests, deleted: removed };
  }

  protected async filterManifests(
    base: TableMetadata,
    io: FileIO,
    parent0: ManifestFile[],
  ): Promise<{ manifests: ManifestFile[]; deleted: DataFile[] }> {
    const { manifests: parent, deleted } = await this.filterDeletes(base, io, parent0);
    const addedHere = new Set(this.added.map((f) => f.filePath));
    const pending = new Set([...this.referenced].filter((p) => !addedHere.has(p)));
    if (pending.size === 0) return { manifests: parent, deleted };
    const found = new Map<string, DataFile>();
    const data = parent.filter((m) => m.content === ManifestContent.Data && m.addedFilesCount + m.existingFilesCount > 0);
    await mapConcurrent(data, MANIFEST_READ_CONCURRENCY, async (m) => {
      if (found.size === pending.size) return;
      const bytes = await io.read(m.manifestPath);
      for (const e of this.entriesFrom(bytes, m, { metrics: false })) {
        if (e.status !== ManifestEntryStatus.Deleted && pending.has(e.dataFile.filePath)) found.set(e.dataFile.filePath, e.dataFile);
      }
    });
    const missing = [...pending].filter((p) => !found.has(p));
    if (missing.length > 0) {
      throw new IcebergError(
        'CommitFailed',
        `rowDelta: ${missing.length} of ${this.referenced.size} data files named by the position deletes are no longer live in snapshot ${currentSnapshot(base)?.['snapshot-id'] ?? 'none'} (rewritten or removed concurrently): expected live, found missing: ${missing.slice(0, 10).join(', ')}${missing.length > 10 ? ', …' : ''}`,
        { retryable: false, context: { missing, expected: 'live', found: 'missing' } },
      );
    }
    // A delete applies only to data files of its own spec and partition: one filed elsewhere
    // would be skipped by every reader.
    for (const d of this.addedDeletes) {
      const only = referencedDataFile(d);
      const target = only === undefined ? undefined : found.get(only);
      if (target && (target.specId !== d.specId || partitionKey(target.partition) !== partitionKey(d.partition))) {
        throw IcebergError.mismatch(
          'DataInvalid',
          `rowDelta: partition of delete file ${d.filePath}`,
          `spec ${target.specId} ${partitionKey(target.partition)} (its data file's)`,
          `spec ${d.specId} ${partitionKey(d.partition)}`,
          false,
        );
      }
    }
    return { manifests: parent, deleted };
  }
}
