/**
 * The key index of an upsert table (issue 31): for each row key (the identifier columns' values,
 * key-codec.ts) the live row holding it, as (data file, 0-based position in the whole file). An
 * upsert writer looks each key up to emit a position delete for the old row.
 *
 * It is a cache of one snapshot of main and can always be rebuilt from the table alone
 * (buildKeyIndex: the snapshot's live rows, position deletes applied). `advance` follows the
 * snapshots committed since, file by file; `applyCommit` applies the writer's own commit without
 * reading anything.
 *
 * Storage sits behind `KeyStore` (key -> interned file id + position). The in-memory store holds
 * ~67 bytes per long key, ~76 per 16-character string key (bench/key-index.ts) and at most
 * MAX_MEMORY_KEYS keys; a disk-backed store
 * (an embedded KV store, for tables with more keys than memory) implements the same interface:
 * nothing else in this file knows how entries are held.
 */
import type * as arrow from 'apache-arrow';
import {
  DataFileContent,
  IcebergError,
  ManifestContent,
  ManifestEntryStatus,
  PositionDeleteCache,
  compareStrings,
  currentSchema,
  currentSnapshot,
  deletedPositions,
  mapConcurrent,
  planTasks,
  readManifest,
  readManifestList,
  readParquetBatches,
  readDeleteFile,
  isDeletionVector,
  referencedDataFile,
  type DataFile,
  type FileIO,
  type FileScanTask,
  type Row,
  type Snapshot,
  type TableMetadata,
} from '../../iceberg';
import { KeyCodec } from './key-codec';

/** Where a key's live row is: the data file's path as its manifest entry names it, and the row's position. */
interface KeyLocation {
  file: string;
  /** a JS number: a position is below the file's row count, which is far below 2^53 */
  pos: number;
}

/** An entry as a store holds it: the file as an id interned by the index. */
export interface StoredLocation {
  fileId: number;
  pos: number;
}

/**
 * Key -> location storage. The in-memory store is the default; a disk-backed one can replace it
 * (the index calls nothing else). Keys are the codec's one-byte strings.
 */
export interface KeyStore {
  readonly size: number;
  get(key: string): StoredLocation | undefined;
  /** sets the key's location; returns the previous one, if any */
  set(key: string, fileId: number, pos: number): StoredLocation | undefined;
  delete(key: string): boolean;
  /** drops every entry in one of these files (one pass); returns how many */
  deleteFiles(fileIds: ReadonlySet<number>): number;
  clear(): void;
  /** releases what the store holds outside the heap (a disk store's file) */
  close?(): void;
}

/** V8 refuses a Map of more than 2^24 entries: beyond this, keys must go to disk (disk-key-store.ts). */
const MAX_MEMORY_KEYS = 16_000_000;

/**
 * In memory: key -> slot (a small integer, stored unboxed in the Map), and per slot the file id
 * (Uint32Array) and position (Float64Array), grown by doubling; freed slots are reused.
 */
export class MemoryKeyStore implements KeyStore {
  private readonly slots = new Map<string, number>();
  private fileIds = new Uint32Array(1024);
  private positions = new Float64Array(1024);
  private free: number[] = [];
  private next = 0;

  get size(): number {
    return this.slots.size;
  }

  get(key: string): StoredLocation | undefined {
    const s = this.slots.get(key);
    return s === undefined ? undefined : { fileId: this.fileIds[s]!, pos: this.positions[s]! };
  }

  set(key: string, fileId: number, pos: number): StoredLocation | undefined {
    let s = this.slots.get(key);
    let prev: StoredLocation | undefined;
    if (s !== undefined) prev = { fileId: this.fileIds[s]!, pos: this.positions[s]! };
    else {
      if (this.slots.size >= MAX_MEMORY_KEYS) {
        throw IcebergError.mismatch(
          'FeatureUnsupported',
          'key index keys held in memory (a table this large needs keyIndex.maxMemoryKeys, which spills to disk)',
          `at most ${MAX_MEMORY_KEYS}`,
          'more',
          false,
        );
      }
      s = this.free.pop() ?? this.grow();
      this.slots.set(key, s);
    }
    this.fileIds[s] = fileId;
    this.positions[s] = pos;
    return prev;
  }

  delete(key: string): boolean {
    const s = this.slots.get(key);
    if (s === undefined) return false;
    this.slots.delete(key);
    this.free.push(s);
    return true;
  }

  deleteFiles(fileIds: ReadonlySet<number>): number {
    let n = 0;
    if (fileIds.size === 0) return 0;
    for (const [k, s] of this.slots) {
      if (fileIds.has(this.fileIds[s]!)) {
        this.slots.delete(k); // deleting the current entry while iterating a Map is safe
        this.free.push(s);
        n++;
      }
    }
    return n;
  }

  clear(): void {
    this.slots.clear();
    this.free = [];
    this.next = 0;
  }

  /** Every entry, in no particular order. */
  *entries(): IterableIterator<[string, StoredLocation]> {
    for (const [k, s] of this.slots) yield [k, { fileId: this.fileIds[s]!, pos: this.positions[s]! }];
  }

  private grow(): number {
    if (this.next === this.fileIds.length) {
      const f = new Uint32Array(this.fileIds.length * 2);
      f.set(this.fileIds);
      const p = new Float64Array(this.positions.length * 2);
      p.set(this.positions);
      this.fileIds = f;
      this.positions = p;
    }
    return this.next++;
  }
}

/** Keys found at two live rows (a table that violates its key, e.g. another engine's writes). */
interface DuplicateReport {
  count: number;
  /** the first few, described (`id=42`) */
  examples: Array<{ key: string; kept: KeyLocation; dropped: KeyLocation }>;
}

interface KeyIndexOptions {
  /** data files read at once (default 4) */
  concurrency?: number;
  /** default: in memory */
  store?: KeyStore;
}

type AdvanceResult =
  | { action: 'current' }
  | { action: 'advanced'; snapshots: number; filesScanned: number; deleteFilesRead: number; duplicates: DuplicateReport }
  | { action: 'rebuilt'; reason: string; filesScanned: number; duplicates: DuplicateReport };

/** The writer's own commit, as it committed it. */
interface OwnCommit {
  snapshotId: bigint;
  /** the snapshot it was committed on: must be the index's, else `advance` instead */
  parentSnapshotId: bigint | undefined;
  /** new data files with their rows' keys in row order (position = index) */
  added: ReadonlyArray<{ file: string; keys: readonly string[] }>;
  /** the rows its position deletes removed, with the keys it looked up for them */
  deleted: ReadonlyArray<{ key: string; file: string; pos: number }>;
}

const MAX_EXAMPLES = 10;
const DEFAULT_CONCURRENCY = 4;

/** Deletes and adds of one snapshot, from the manifests it wrote. */
interface SnapshotChanges {
  snapshot: Snapshot;
  addedData: DataFile[];
  removedData: string[];
  addedDeletes: DataFile[];
  removedDeletes: DataFile[];
}

export class KeyIndex {
  private readonly fileIds = new Map<string, number>();
  private files: Array<string | undefined> = [];
  /** per file id: the data file as its manifest entry gave it (spec and partition), when known */
  private infos: Array<Pick<DataFile, 'filePath' | 'specId' | 'partition'> | undefined> = [];
  private dup: DuplicateReport = { count: 0, examples: [] };

  private constructor(
    private codec: KeyCodec,
    private readonly store: KeyStore,
    private readonly opts: KeyIndexOptions,
    /** the snapshot of main this index reflects (undefined: a table without snapshots) */
    private snapshot: bigint | undefined,
  ) {}

  /** See buildKeyIndex. */
  static async build(io: FileIO, metadata: TableMetadata, idColumns: readonly string[], opts: KeyIndexOptions = {}): Promise<KeyIndex> {
    const index = new KeyIndex(new KeyCodec(currentSchema(metadata), idColumns), opts.store ?? new MemoryKeyStore(), opts, undefined);
    await index.rebuild(io, metadata);
    return index;
  }

  get snapshotId(): bigint | undefined {
    return this.snapshot;
  }
  get size(): number {
    return this.store.size;
  }
  /** Releases the store (a disk store's file); the index is not used after. */
  close(): void {
    this.store.close?.();
  }

  /** keys found twice among live rows since the last (re)build */
  get duplicates(): DuplicateReport {
    return this.dup;
  }

  /** The keys of a writer's rows (values as the Parquet writer accepts them), in row order. */
  keysOf(rows: readonly Row[]): string[] {
    return this.codec.keysOfRows(rows);
  }
  describe(key: string): string {
    return this.codec.describe(key);
  }

  lookup(key: string): KeyLocation | undefined {
    const l = this.store.get(key);
    return l === undefined ? undefined : { file: this.files[l.fileId]!, pos: l.pos };
  }
  /** A located file's spec and partition (a position delete is filed with them), when the index read it from a manifest. */
  dataFile(path: string): Pick<DataFile, 'filePath' | 'specId' | 'partition'> | undefined {
    const id = this.fileIds.get(path);
    return id === undefined ? undefined : this.infos[id];
  }
  set(key: string, at: KeyLocation): void {
    this.store.set(key, this.intern(at.file), at.pos);
  }
  remove(key: string): boolean {
    return this.store.delete(key);
  }

  /**
   * Applies the writer's own commit without reading: its deletes, then its new rows. Returns
   * 'stale' (changing nothing) when the commit's parent is not this index's snapshot, i.e. other
   * commits landed in between: call `advance` instead, which also reads the writer's files.
   */
  applyCommit(c: OwnCommit): 'applied' | 'stale' {
    if (c.parentSnapshotId !== this.snapshot) return 'stale';
    const addedFiles = new Set(c.added.map((a) => a.file));
    for (const d of c.deleted) if (!addedFiles.has(d.file)) this.removeAt(d.key, d.file, d.pos);
    for (const a of c.added) {
      const id = this.intern(a.file);
      a.keys.forEach((k, pos) => this.put(k, id, pos));
    }
    // deletes of rows it added in the same commit apply after those rows are in
    for (const d of c.deleted) if (addedFiles.has(d.file)) this.removeAt(d.key, d.file, d.pos);
    this.snapshot = c.snapshotId;
    return 'applied';
  }

  /**
   * Brings the index to the table's current snapshot of main. When that snapshot descends from
   * the index's, each snapshot in between is applied in commit order: its removed data files'
   * entries dropped, the rows its position deletes name removed (read from those data files, when
   * the index points there), its added data files scanned (minus positions its own deletes
   * remove). Otherwise (expired history, a rollback, changed identifier types, a snapshot that
   * removes delete files) it rebuilds. Reads immutable files only.
   */
  async advance(io: FileIO, metadata: TableMetadata): Promise<AdvanceResult> {
    const current = currentSnapshot(metadata);
    const codec = new KeyCodec(currentSchema(metadata), this.codec.names);
    if (!codec.sameAs(this.codec)) {
      this.codec = codec;
      return this.rebuildWith(io, metadata, 'the identifier columns changed type');
    }
    if (current?.['snapshot-id'] === this.snapshot) return { action: 'current' };
    const path = pathFrom(metadata, this.snapshot, current);
    if (!path) return this.rebuildWith(io, metadata, `snapshot ${this.snapshot ?? 'none'} is not an ancestor of the current snapshot`);
    const changes = await mapConcurrent(path, 4, (s) => changesOf(io, s));
    const refused = changes.find((c) => unfollowedRemovals(c) > 0);
    if (refused)
      return this.rebuildWith(
        io,
        metadata,
        `snapshot ${refused.snapshot['snapshot-id']} removes ${unfollowedRemovals(refused)} delete files`,
      );
    // a file added and removed again within the window is never read
    const liveAtEnd = new Map<string, boolean>();
    for (const c of changes) {
      for (const p of c.removedData) liveAtEnd.set(p, false);
      for (const f of c.addedData) liveAtEnd.set(f.filePath, true);
    }
    const found: DuplicateReport = { count: 0, examples: [] };
    let filesScanned = 0,
      deleteFilesRead = 0;
    for (const c of changes) {
      const gone = new Set<number>();
      for (const p of c.removedData) {
        const id = this.fileIds.get(p);
        if (id !== undefined) gone.add(id);
      }
      this.store.deleteFiles(gone);
      for (const id of gone) this.forget(id);
      // positions this snapshot deletes, per data file
      const deleted = new Map<string, bigint[]>();
      for (const d of c.addedDeletes) {
        deleteFilesRead++;
        for (const [p, positions] of await readDeleteFile(io, d)) {
          let l = deleted.get(p);
          if (!l) deleted.set(p, (l = []));
          for (const x of positions) l.push(x);
        }
      }
      const addedPaths = new Set(c.addedData.map((f) => f.filePath));
      for (const [p, positions] of deleted) {
        const id = this.fileIds.get(p);
        if (id === undefined || addedPaths.has(p)) continue; // not indexed, or read below without them
        const sorted = sortedDistinct(positions);
        filesScanned++;
        await this.readKeys(io, p, undefined, sorted, (key, pos) => {
          const at = this.store.get(key);
          if (at && at.fileId === id && at.pos === pos) this.store.delete(key);
        });
      }
      const toScan = c.addedData.filter((f) => liveAtEnd.get(f.filePath));
      filesScanned += toScan.length;
      await this.scanFiles(
        io,
        toScan.map((f) => ({ file: f, skip: sortedDistinct(deleted.get(f.filePath) ?? []) })),
        found,
      );
    }
    this.snapshot = current?.['snapshot-id'];
    this.mergeDuplicates(found);
    return { action: 'advanced', snapshots: changes.length, filesScanned, deleteFilesRead, duplicates: found };
  }

  /** Re-reads the current snapshot from scratch (see buildKeyIndex). */
  async rebuild(io: FileIO, metadata: TableMetadata): Promise<{ filesScanned: number; duplicates: DuplicateReport }> {
    this.store.clear();
    this.fileIds.clear();
    this.files = [];
    this.infos = [];
    this.dup = { count: 0, examples: [] };
    const snap = currentSnapshot(metadata);
    const tasks = snap ? await planTasks(metadata, io, { snapshotId: snap['snapshot-id'] }) : [];
    // Later data wins for a key found twice: data sequence number (commit order), then path
    // (spec string order), then position in the file.
    tasks.sort((a, b) =>
      a.dataSequenceNumber !== b.dataSequenceNumber
        ? a.dataSequenceNumber < b.dataSequenceNumber
          ? -1
          : 1
        : compareStrings(a.file.filePath, b.file.filePath),
    );
    const cache = new PositionDeleteCache(io);
    await this.scanFiles(
      io,
      tasks.map((t) => ({ file: t.file, task: t })),
      this.dup,
      cache,
    );
    this.snapshot = snap?.['snapshot-id'];
    return { filesScanned: tasks.length, duplicates: this.dup };
  }

  private async rebuildWith(io: FileIO, metadata: TableMetadata, reason: string): Promise<AdvanceResult> {
    const r = await this.rebuild(io, metadata);
    return { action: 'rebuilt', reason, ...r };
  }

  /**
   * Reads files `concurrency` at a time and applies them in the given order (so "later wins" is
   * the order of `files`, whatever finishes first). `skip`: sorted positions to leave out; `task`:
   * take them from the task's delete files instead.
   */
  private async scanFiles(
    io: FileIO,
    files: Array<{ file: DataFile; skip?: BigInt64Array; task?: FileScanTask }>,
    report: DuplicateReport,
    cache = new PositionDeleteCache(io),
  ): Promise<void> {
    const width = Math.max(1, this.opts.concurrency ?? DEFAULT_CONCURRENCY);
    for (let i = 0; i < files.length; i += width) {
      const window = files.slice(i, i + width);
      const read = await Promise.all(
        window.map(async (f) => {
          const skip = f.task ? await deletedPositions(io, f.task, cache) : (f.skip ?? new BigInt64Array(0));
          const keys: string[] = [];
          const pos: number[] = [];
          await this.readKeys(io, f.file.filePath, f.file.fileSizeInBytes, skip, (k, p) => (keys.push(k), pos.push(p)), true);
          return { path: f.file.filePath, file: f.file, keys, pos };
        }),
      );
      for (const r of read) {
        const id = this.intern(r.path);
        this.infos[id] = { filePath: r.file.filePath, specId: r.file.specId, partition: r.file.partition };
        for (let k = 0; k < r.keys.length; k++) this.put(r.keys[k]!, id, r.pos[k]!, report);
      }
    }
  }

  /**
   * Calls `f(key, pos)` for rows of data file `path` in file order: with `exclude`, every row
   * except the sorted positions `positions`; without, only those positions. Positions count over
   * the whole file (all row groups), as position deletes do.
   */
  private async readKeys(
    io: FileIO,
    path: string,
    fileSize: number | undefined,
    positions: BigInt64Array,
    f: (key: string, pos: number) => void,
    exclude = false,
  ): Promise<void> {
    if (!exclude && positions.length === 0) return;
    let offset = 0; // position of the batch's first row in the file
    let k = 0; // next position of `positions`
    for await (const b of readParquetBatches(io, path, { columns: this.codec.names, ...(fileSize ? { fileSize } : {}) })) {
      const end = offset + b.numRows;
      while (k < positions.length && Number(positions[k]!) < offset) k++;
      const wanted = exclude || (k < positions.length && Number(positions[k]!) < end);
      if (wanted) this.visit(b, path, offset, end, positions, k, exclude, f);
      while (k < positions.length && Number(positions[k]!) < end) k++;
      offset = end;
      if (!exclude && k >= positions.length) break;
    }
  }

  private visit(
    b: arrow.RecordBatch,
    path: string,
    offset: number,
    end: number,
    positions: BigInt64Array,
    k: number,
    exclude: boolean,
    f: (key: string, pos: number) => void,
  ): void {
    const keys = this.codec.keysOfBatch(b, `data file ${path}`, offset);
    if (exclude) {
      for (let i = 0; i < keys.length; i++) {
        const pos = offset + i;
        if (k < positions.length && Number(positions[k]!) === pos) {
          k++;
          continue;
        }
        f(keys[i]!, pos);
      }
    } else {
      for (; k < positions.length && Number(positions[k]!) < end; k++) {
        const pos = Number(positions[k]!);
        f(keys[pos - offset]!, pos);
      }
    }
  }

  private put(key: string, fileId: number, pos: number, report: DuplicateReport = this.dup): void {
    const prev = this.store.set(key, fileId, pos);
    if (prev === undefined) return;
    report.count++;
    if (report.examples.length < MAX_EXAMPLES)
      report.examples.push({
        key: this.codec.describe(key),
        kept: { file: this.files[fileId]!, pos },
        dropped: { file: this.files[prev.fileId]!, pos: prev.pos },
      });
  }

  private removeAt(key: string, file: string, pos: number): void {
    const at = this.store.get(key);
    if (at && at.pos === pos && this.files[at.fileId] === file) this.store.delete(key);
  }

  private mergeDuplicates(found: DuplicateReport): void {
    this.dup.count += found.count;
    for (const e of found.examples) if (this.dup.examples.length < MAX_EXAMPLES) this.dup.examples.push(e);
  }

  private intern(path: string): number {
    let id = this.fileIds.get(path);
    if (id === undefined) {
      id = this.files.length;
      this.files.push(path);
      this.fileIds.set(path, id);
    }
    return id;
  }

  /** A removed file's id is not reused: an entry still naming it would name another file. */
  private forget(id: number): void {
    const p = this.files[id];
    if (p !== undefined) this.fileIds.delete(p);
    this.files[id] = undefined;
    this.infos[id] = undefined;
  }
}

/**
 * Builds the key index of `metadata`'s current snapshot of main: the identifier columns of every
 * live data file (planTasks), minus the rows position deletes remove. A key found at two live
 * rows is reported in `duplicates`; the later row wins, in the order (data sequence number, file
 * path, position). Rows with a null identifier fail (DataInvalid, naming the file). Reads
 * immutable files only.
 */
export function buildKeyIndex(
  io: FileIO,
  metadata: TableMetadata,
  idColumns: readonly string[],
  opts: KeyIndexOptions = {},
): Promise<KeyIndex> {
  return KeyIndex.build(io, metadata, idColumns, opts);
}

/** The snapshots after `from` up to `to` on main's ancestry, oldest first; undefined if `from` is not reached. */
function pathFrom(m: TableMetadata, from: bigint | undefined, to: Snapshot | undefined): Snapshot[] | undefined {
  const byId = new Map(m.snapshots.map((s) => [s['snapshot-id'], s]));
  const out: Snapshot[] = [];
  let s = to;
  while (s) {
    if (s['snapshot-id'] === from) return out.reverse();
    out.push(s);
    const parent = s['parent-snapshot-id'];
    if (parent === undefined) return from === undefined ? out.reverse() : undefined;
    s = byId.get(parent); // an expired parent ends the walk: the history is cut
    if (out.length > m.snapshots.length) return undefined;
  }
  return undefined;
}

/** What snapshot `s` added and removed: the entries its own manifests mark ADDED or DELETED by it. */
async function changesOf(io: FileIO, s: Snapshot): Promise<SnapshotChanges> {
  const id = s['snapshot-id'];
  const out: SnapshotChanges = { snapshot: s, addedData: [], removedData: [], addedDeletes: [], removedDeletes: [] };
  const manifests = (await readManifestList(io, s['manifest-list'])).filter(
    (m) => m.addedSnapshotId === id && (m.addedFilesCount > 0 || m.deletedFilesCount > 0),
  );
  for (const m of manifests) {
    for (const e of await readManifest(io, m, { includeDeleted: true, metrics: false })) {
      if (e.snapshotId !== id || e.status === ManifestEntryStatus.Existing) continue;
      const f = e.dataFile;
      const added = e.status === ManifestEntryStatus.Added;
      if (m.content === ManifestContent.Data) {
        if (added) out.addedData.push(f);
        else out.removedData.push(f.filePath);
      } else if (!added) out.removedDeletes.push(f);
      else if (f.content === DataFileContent.PositionDeletes) out.addedDeletes.push(f);
      else {
        throw IcebergError.mismatch(
          'FeatureUnsupported',
          `key index: snapshot ${id} delete file ${f.filePath} content`,
          'position deletes (1)',
          f.content,
          false,
        );
      }
    }
  }
  return out;
}

/**
 * The delete files a snapshot removes that `advance` cannot follow. A v3 table's DV replaced by a
 * DV of the same data file in the same snapshot (the new one holds the old one's positions: a
 * merge) and a delete file of a data file the snapshot removes (compaction) change no live row the
 * added files do not say; anything else (v2 delete files rewritten, dangling ones dropped) makes
 * the index rebuild.
 */
function unfollowedRemovals(c: SnapshotChanges): number {
  if (c.removedDeletes.length === 0) return 0;
  const removedData = new Set(c.removedData);
  const newDvs = new Set(c.addedDeletes.filter(isDeletionVector).map((d) => referencedDataFile(d)));
  return c.removedDeletes.filter((d) => {
    const ref = referencedDataFile(d);
    return !(ref !== undefined && (removedData.has(ref) || (isDeletionVector(d) && newDvs.has(ref))));
  }).length;
}

function sortedDistinct(l: readonly bigint[]): BigInt64Array {
  const a = BigInt64Array.from(l).sort();
  let n = 0;
  for (let i = 0; i < a.length; i++) if (i === 0 || a[i] !== a[n - 1]) a[n++] = a[i]!;
  return a.subarray(0, n);
}
