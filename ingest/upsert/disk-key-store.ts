/**
 * The key index on disk (issue 31): a KeyStore in an SQLite file, for upsert tables with more keys
 * than a worker should hold in memory. SQLite through Node's built-in `node:sqlite` (the engine
 * the SQL catalog already uses): an embedded store that is about as well kept as software gets,
 * synchronous (KeyStore's calls are), and nothing to compile or download.
 *
 * The file is a cache like the in-memory store: it is written without a journal or fsync and
 * deleted when the store closes; one left by a killed worker is removed by the next store made in
 * the same folder (`sweepStale`). Memory stays bounded by SQLite's page cache (`cacheBytes`), not
 * by the key count. Writes run in one open transaction, committed every `WRITES_PER_COMMIT`
 * statements, since a statement per transaction would cost a commit each.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { MemoryKeyStore, type KeyStore, type StoredLocation } from './key-index';

const PREFIX = 'floe-keyindex-';
const WRITES_PER_COMMIT = 20_000;
const DEFAULT_CACHE_BYTES = 64 * 1024 * 1024;

interface DiskKeyStoreOptions {
  /** the folder the store's file goes in (default the OS temp folder) */
  dir?: string;
  /** SQLite's page cache, bytes (default 64 MiB): the store's memory, whatever the key count */
  cacheBytes?: number;
}

export class DiskKeyStore implements KeyStore {
  private readonly db: DatabaseSync;
  private readonly folder: string;
  private readonly q: {
    get: StatementSync;
    upsert: StatementSync;
    del: StatementSync;
    delFile: StatementSync;
  };
  private count = 0;
  private writes = 0;

  constructor(opts: DiskKeyStoreOptions = {}) {
    const parent = opts.dir ?? os.tmpdir();
    fs.mkdirSync(parent, { recursive: true });
    sweepStale(parent);
    this.folder = fs.mkdtempSync(path.join(parent, `${PREFIX}${process.pid}-`));
    this.db = new DatabaseSync(path.join(this.folder, 'keys.sqlite'));
    this.db.exec(`PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA temp_store = MEMORY;
      PRAGMA cache_size = -${Math.max(1024, Math.floor((opts.cacheBytes ?? DEFAULT_CACHE_BYTES) / 1024))};
      CREATE TABLE k (key BLOB PRIMARY KEY, file INTEGER NOT NULL, pos INTEGER NOT NULL) WITHOUT ROWID;
      CREATE INDEX k_file ON k (file);`);
    this.q = {
      get: this.db.prepare('SELECT file, pos FROM k WHERE key = ?'),
      upsert: this.db.prepare(
        'INSERT INTO k (key, file, pos) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET file = excluded.file, pos = excluded.pos',
      ),
      del: this.db.prepare('DELETE FROM k WHERE key = ?'),
      delFile: this.db.prepare('DELETE FROM k WHERE file = ?'),
    };
    this.db.exec('BEGIN');
  }

  get size(): number {
    return this.count;
  }

  get(key: string): StoredLocation | undefined {
    const r = this.q.get.get(bytes(key)) as { file: number; pos: number } | undefined;
    return r === undefined ? undefined : { fileId: r.file, pos: r.pos };
  }

  set(key: string, fileId: number, pos: number): StoredLocation | undefined {
    const k = bytes(key);
    const r = this.q.get.get(k) as { file: number; pos: number } | undefined;
    this.q.upsert.run(k, fileId, pos);
    if (r === undefined) this.count++;
    this.wrote(1);
    return r === undefined ? undefined : { fileId: r.file, pos: r.pos };
  }

  delete(key: string): boolean {
    const n = Number(this.q.del.run(bytes(key)).changes);
    this.count -= n;
    this.wrote(1);
    return n > 0;
  }

  deleteFiles(fileIds: ReadonlySet<number>): number {
    let n = 0;
    for (const id of fileIds) n += Number(this.q.delFile.run(id).changes);
    this.count -= n;
    this.wrote(fileIds.size);
    return n;
  }

  clear(): void {
    this.db.exec('DELETE FROM k');
    this.count = 0;
  }

  /** Closes the database and deletes its file. */
  close(): void {
    if (!this.db.isOpen) return;
    this.db.close();
    fs.rmSync(this.folder, { recursive: true, force: true });
  }

  private wrote(n: number): void {
    this.writes += n;
    if (this.writes < WRITES_PER_COMMIT) return;
    this.writes = 0;
    this.db.exec('COMMIT; BEGIN');
  }
}

/** The codec's keys are Latin-1 strings of the key's bytes: stored as those bytes. */
function bytes(key: string): Buffer {
  return Buffer.from(key, 'latin1');
}

/** Deletes the folders of stores whose process is gone (a SIGKILLed worker never closed them). */
function sweepStale(parent: string): void {
  for (const name of fs.readdirSync(parent)) {
    if (!name.startsWith(PREFIX)) continue;
    const pid = Number(name.slice(PREFIX.length).split('-')[0]);
    if (!Number.isInteger(pid) || pid === process.pid || alive(pid)) continue;
    fs.rmSync(path.join(parent, name), { recursive: true, force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * In memory up to `maxMemoryKeys`, then on disk: the first `set` beyond the limit moves every
 * entry into a DiskKeyStore and the store stays there (a table that grew that large once will
 * again; the index is rebuilt from scratch only on a restart or a `rebuild`, which `clear`s).
 */
export class SpillingKeyStore implements KeyStore {
  private memory: MemoryKeyStore | undefined = new MemoryKeyStore();
  private disk: DiskKeyStore | undefined;

  constructor(
    private readonly maxMemoryKeys: number,
    private readonly opts: DiskKeyStoreOptions = {},
  ) {}

  /** true once entries moved to disk */
  get spilled(): boolean {
    return this.disk !== undefined;
  }

  private get store(): KeyStore {
    return (this.disk ?? this.memory)!;
  }

  get size(): number {
    return this.store.size;
  }
  get(key: string): StoredLocation | undefined {
    return this.store.get(key);
  }
  set(key: string, fileId: number, pos: number): StoredLocation | undefined {
    if (this.memory && this.memory.size >= this.maxMemoryKeys && this.memory.get(key) === undefined) this.spill();
    return this.store.set(key, fileId, pos);
  }
  delete(key: string): boolean {
    return this.store.delete(key);
  }
  deleteFiles(fileIds: ReadonlySet<number>): number {
    return this.store.deleteFiles(fileIds);
  }
  clear(): void {
    this.store.clear();
  }
  close(): void {
    this.disk?.close();
  }

  private spill(): void {
    const disk = new DiskKeyStore(this.opts);
    for (const [k, at] of this.memory!.entries()) disk.set(k, at.fileId, at.pos);
    this.disk = disk;
    this.memory = undefined;
  }
}
