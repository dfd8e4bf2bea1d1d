/**
 * What table metadata reaches: the live data files of the current snapshot (compaction planning)
 * and every file any retained snapshot or metadata version references (expiry, orphan removal).
 * Reads each manifest list and manifest once, a few at a time.
 */
import {
  mapConcurrent,
  readManifest,
  readManifestList,
  currentSnapshot,
  ManifestContent,
  type FileIO,
  type ManifestReadOptions,
  type DataFile,
  type ManifestFile,
  type TableMetadata,
} from '../iceberg';

interface LiveDataFile {
  dataFile: DataFile;
  manifest: ManifestFile;
}

/**
 * Live (ADDED/EXISTING) data files of the current snapshot of main. `metrics: false` leaves out
 * their column metrics (planning and liveness checks need path, size, count and partition; with
 * metrics a 10,000-file table's entries are ~70 MB of JS objects, without them ~5 MB).
 */
export async function liveDataFiles(io: FileIO, m: TableMetadata, opts: ManifestReadOptions = {}): Promise<LiveDataFile[]> {
  const snap = currentSnapshot(m);
  if (!snap) return [];
  const manifests = (await readManifestList(io, snap['manifest-list'])).filter((x) => x.content === ManifestContent.Data);
  const perManifest = await mapConcurrent(manifests, 8, async (manifest) =>
    (await readManifest(io, manifest, opts)).map((e) => ({ dataFile: e.dataFile, manifest })),
  );
  return perManifest.flat();
}

/** Live delete files of the current snapshot of main (position and equality), without column metrics but their bounds. */
export async function liveDeleteFiles(io: FileIO, m: TableMetadata): Promise<DataFile[]> {
  const snap = currentSnapshot(m);
  if (!snap) return [];
  const manifests = (await readManifestList(io, snap['manifest-list'])).filter(
    (x) => x.content === ManifestContent.Deletes && x.addedFilesCount + x.existingFilesCount > 0,
  );
  return (await mapConcurrent(manifests, 8, async (manifest) => (await readManifest(io, manifest)).map((e) => e.dataFile))).flat();
}

interface Reachable {
  metadataFiles: Set<string>;
  manifestLists: Set<string>;
  manifests: Set<string>;
  /** data and delete files, referenced by any entry (also DELETED ones: a retained older snapshot may read them) */
  dataFiles: Set<string>;
  /** statistics / partition-statistics files */
  other: Set<string>;
}

export const reachableSize = (r: Reachable): number =>
  r.metadataFiles.size + r.manifestLists.size + r.manifests.size + r.dataFiles.size + r.other.size;

/**
 * Every file reachable from `m`: its snapshots' manifest lists, their manifests, the files those
 * list, statistics files, and (when `metadataLocation` is given) the metadata.json itself and
 * every metadata.json in its metadata log. A missing manifest list of a snapshot is an error:
 * the table would be broken and nothing may be deleted on that basis.
 */
export async function reachableFiles(io: FileIO, m: TableMetadata, metadataLocation?: string): Promise<Reachable> {
  const r: Reachable = { metadataFiles: new Set(), manifestLists: new Set(), manifests: new Set(), dataFiles: new Set(), other: new Set() };
  if (metadataLocation) r.metadataFiles.add(metadataLocation);
  for (const e of m['metadata-log']) r.metadataFiles.add(e['metadata-file']);
  for (const s of [...(m.statistics ?? []), ...(m['partition-statistics'] ?? [])] as Array<Record<string, unknown>>) {
    const p = s['statistics-path'];
    if (typeof p === 'string') r.other.add(p);
  }
  const lists = [...new Set(m.snapshots.map((s) => s['manifest-list']))];
  for (const l of lists) r.manifestLists.add(l);
  const manifestsByPath = new Map<string, ManifestFile>();
  for (const ms of await mapConcurrent(lists, 8, (l) => readManifestList(io, l))) {
    for (const mf of ms) if (!manifestsByPath.has(mf.manifestPath)) manifestsByPath.set(mf.manifestPath, mf);
  }
  for (const p of manifestsByPath.keys()) r.manifests.add(p);
  await mapConcurrent([...manifestsByPath.values()], 8, async (mf) => {
    for (const e of await readManifest(io, mf, { includeDeleted: true, metrics: false })) r.dataFiles.add(e.dataFile.filePath);
  });
  return r;
}

/** Relative to the table location when under it (shorter in Temporal history). */
export const relPath = (location: string, path: string): string =>
  path.startsWith(`${location}/`) ? path.slice(location.length + 1) : path;
/** Absolute when it has a scheme (`s3://`, `file:///`, Java's `file:/`) or is a rooted path. */
export const absPath = (location: string, path: string): string =>
  /^[a-z][a-z0-9+.-]*:\//i.test(path) || path.startsWith('/') ? path : `${location}/${path}`;
