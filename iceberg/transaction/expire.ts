/**
 * Snapshot expiry (Java RemoveSnapshots + ReachableFileCleanup): decides which snapshots go,
 * commits `remove-snapshots`, and reports the files no retained snapshot reaches so the caller
 * can delete them after the commit landed.
 *
 * Concurrency: requires main to be unchanged since the plan (assert-ref-snapshot-id); a
 * concurrent commit makes the Transaction reload and re-plan, so reachability is always computed
 * against the metadata that actually gets committed.
 */
import { isIcebergError } from '../errors';
import type { FileIO } from '../io/file-io';
import { readManifest } from '../spec/manifest';
import { readManifestList } from '../spec/manifest-list';
import { MAIN_BRANCH, ancestors, currentSnapshot } from '../spec/metadata';
import { maxSnapshotAgeMs, minSnapshotsToKeep } from '../spec/table-properties';
import type { ManifestFile, Snapshot, TableMetadata } from '../spec/types';
import { MANIFEST_READ_CONCURRENCY, mapConcurrent } from '../scan/parallel';
import type { PendingCommit, TableAction } from './snapshot-producer';

export interface ExpireSnapshotsOptions {
  /** expire snapshots older than this (epoch ms); default: table `history.expire.max-snapshot-age-ms` (5 days) before now */
  olderThanMs?: bigint;
  /** always keep this many newest snapshots of main's ancestry; default `history.expire.min-snapshots-to-keep` (1) */
  retainLast?: number;
  /** snapshot ids never to expire (e.g. the newest snapshot carrying each ingest cursor) */
  protect?: Iterable<bigint>;
}

export interface ExpiredFiles {
  snapshotIds: bigint[];
  manifestLists: string[];
  manifests: string[];
  dataFiles: string[];
}

export function snapshotsToExpire(
  m: TableMetadata,
  opts: ExpireSnapshotsOptions,
  nowMs = BigInt(Date.now()),
): { expire: Snapshot[]; retain: Snapshot[] } {
  const olderThan = opts.olderThanMs ?? nowMs - maxSnapshotAgeMs(m.properties);
  const retainLast = Math.max(1, opts.retainLast ?? minSnapshotsToKeep(m.properties));
  const keep = new Set<bigint>(opts.protect ?? []);
  // ref heads are never expired (the current snapshot is main's head)
  for (const ref of Object.values(m.refs)) keep.add(ref['snapshot-id']);
  const cur = currentSnapshot(m);
  if (cur) keep.add(cur['snapshot-id']);
  let n = 0;
  for (const s of ancestors(m)) {
    if (n++ >= retainLast) break;
    keep.add(s['snapshot-id']);
  }
  // Every branch keeps its own history as the spec's snapshot retention says (Java
  // RemoveSnapshots.computeBranchSnapshotsToRetain): ancestors of its head while fewer than the
  // ref's `min-snapshots-to-keep` (default: retainLast) are kept, or while younger than its
  // `max-snapshot-age-ms` (default: olderThan). Without this a branch another engine made with
  // `min-snapshots-to-keep` lost all but its head. Only ever adds to what is kept; refs are never
  // removed (`max-ref-age-ms` is not applied: floe leaves dropping refs to their owner).
  const byId = new Map(m.snapshots.map((s) => [s['snapshot-id'], s]));
  for (const ref of Object.values(m.refs)) {
    if (ref.type !== 'branch') continue;
    const head = byId.get(ref['snapshot-id']);
    const min = ref['min-snapshots-to-keep'] ?? retainLast;
    const cutoff = ref['max-snapshot-age-ms'] !== undefined ? nowMs - ref['max-snapshot-age-ms'] : olderThan;
    let kept = 0;
    for (const s of head ? ancestors(m, head) : []) {
      if (kept >= min && s['timestamp-ms'] < cutoff) break;
      keep.add(s['snapshot-id']);
      kept++;
    }
  }
  const expire: Snapshot[] = [];
  const retain: Snapshot[] = [];
  for (const s of m.snapshots) {
    if (keep.has(s['snapshot-id']) || s['timestamp-ms'] >= olderThan) retain.push(s);
    else expire.push(s);
  }
  return { expire, retain };
}

interface UnreachableOptions {
  /**
   * A manifest list or manifest that only expired snapshots reach and that is already gone counts
   * as deleted instead of failing the scan. Sound only when deletion goes in phases (all data files,
   * then all manifests, then all manifest lists), as `deleteExpiredFiles` does: then a missing
   * manifest means every data file it listed is gone, and a missing list every manifest it named.
   * Files of retained snapshots must always exist, so their absence still fails.
   */
  missingExpiredAreDeleted?: boolean;
}

const isNotFound = (e: unknown): boolean => isIcebergError(e, 'NotFound');

/** Files reachable only from `expire` (manifest lists, manifests, data files). */
export async function unreachableFiles(
  io: FileIO,
  expire: Snapshot[],
  retain: Snapshot[],
  opts: UnreachableOptions = {},
): Promise<ExpiredFiles> {
  const listCache = new Map<string, ManifestFile[]>();
  const manifestsOf = async (s: Snapshot): Promise<ManifestFile[]> => {
    let l = listCache.get(s['manifest-list']);
    if (!l) listCache.set(s['manifest-list'], (l = await readManifestList(io, s['manifest-list'])));
    return l;
  };
  const goneOk = <T>(read: Promise<T>, empty: T): Promise<T> =>
    opts.missingExpiredAreDeleted
      ? read.catch((e: unknown) => {
          if (isNotFound(e)) return empty;
          throw e;
        })
      : read;
  const retainedManifests = new Map<string, ManifestFile>();
  for (const lists of await mapConcurrent(retain, MANIFEST_READ_CONCURRENCY, manifestsOf))
    for (const m of lists) retainedManifests.set(m.manifestPath, m);
  const removedManifests = new Map<string, ManifestFile>();
  const retainedLists = new Set(retain.map((s) => s['manifest-list']));
  const goneLists = new Set<string>();
  for (const s of expire) {
    const lists = retainedLists.has(s['manifest-list']) ? await manifestsOf(s) : await goneOk(manifestsOf(s), null);
    if (lists === null) {
      goneLists.add(s['manifest-list']);
      continue;
    }
    for (const m of lists) if (!retainedManifests.has(m.manifestPath)) removedManifests.set(m.manifestPath, m);
  }
  const candidates = new Set<string>();
  const goneManifests = new Set<string>();
  const removedEntries = await mapConcurrent([...removedManifests.values()], MANIFEST_READ_CONCURRENCY, async (m) => {
    const entries = await goneOk(readManifest(io, m, { includeDeleted: true, metrics: false }), null);
    if (entries === null) goneManifests.add(m.manifestPath);
    return (entries ?? []).map((e) => e.dataFile.filePath);
  });
  for (const p of removedEntries.flat()) candidates.add(p);
  if (candidates.size > 0) {
    // a file stays if any retained manifest still lists it as live
    const withLive = [...retainedManifests.values()].filter(
      (m) => !(m.addedFilesCount === 0 && m.existingFilesCount === 0 && m.deletedFilesCount > 0),
    );
    await mapConcurrent(withLive, MANIFEST_READ_CONCURRENCY, async (m) => {
      for (const e of await readManifest(io, m, { metrics: false })) candidates.delete(e.dataFile.filePath);
    });
  }
  return {
    snapshotIds: expire.map((s) => s['snapshot-id']),
    manifestLists: [...new Set(expire.map((s) => s['manifest-list']))].filter((l) => !retainedLists.has(l) && !goneLists.has(l)),
    manifests: [...removedManifests.keys()].filter((m) => !goneManifests.has(m)),
    dataFiles: [...candidates],
  };
}

export class ExpireSnapshots implements TableAction {
  /** The files of the attempt that committed (valid only after Transaction.commit succeeded). */
  result: ExpiredFiles = { snapshotIds: [], manifestLists: [], manifests: [], dataFiles: [] };
  constructor(private readonly opts: ExpireSnapshotsOptions = {}) {}

  writtenFiles(): string[] {
    return [];
  }

  async prepare(base: TableMetadata, io: FileIO): Promise<PendingCommit> {
    const { expire, retain } = snapshotsToExpire(base, this.opts);
    this.result = await unreachableFiles(io, expire, retain);
    return {
      updates: expire.length ? [{ action: 'remove-snapshots', 'snapshot-ids': expire.map((s) => s['snapshot-id']) }] : [],
      requirements: [
        { type: 'assert-table-uuid', uuid: base['table-uuid'] },
        { type: 'assert-ref-snapshot-id', ref: MAIN_BRANCH, 'snapshot-id': base.refs[MAIN_BRANCH]?.['snapshot-id'] ?? null },
      ],
      attemptFiles: [],
      referencedFiles: [],
    };
  }
}
