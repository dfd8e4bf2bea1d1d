/**
 * In-memory FileIO for tests (`memory://...`). `memoryFileIO` shares one process-wide store so
 * every memory:// FileIO the resolver hands out sees the same files; `new MemoryFileIO()` is an
 * isolated store for a single test.
 */
import { IcebergError } from '../errors';
import type { FileIO, FileInfo } from './file-io';

interface Stored {
  data: Uint8Array;
  lastModified: number;
}

export class MemoryFileIO implements FileIO {
  /** Counters tests use to assert what a commit wrote or deleted. */
  readonly stats = { writes: 0, deletes: 0, reads: 0 };
  constructor(private readonly files: Map<string, Stored> = new Map()) {}

  private get(location: string): Stored {
    const f = this.files.get(location);
    if (!f) throw new IcebergError('NotFound', `file not found: ${location}`, { retryable: false, context: { location } });
    return f;
  }
  async read(location: string): Promise<Uint8Array> {
    this.stats.reads++;
    return this.get(location).data.slice();
  }
  async readRange(location: string, offset: number, length: number): Promise<Uint8Array> {
    const d = this.get(location).data;
    if (offset < 0 || offset + length > d.length) {
      throw IcebergError.mismatch('DataInvalid', `readRange ${location}`, `a range within 0..${d.length}`, `${offset}+${length}`, false);
    }
    return d.slice(offset, offset + length);
  }
  async write(location: string, data: Uint8Array): Promise<void> {
    this.stats.writes++;
    this.files.set(location, { data: data.slice(), lastModified: Date.now() });
  }
  async delete(location: string): Promise<void> {
    this.stats.deletes++;
    this.files.delete(location);
  }
  async exists(location: string): Promise<boolean> {
    return this.files.has(location);
  }
  async stat(location: string): Promise<FileInfo> {
    const f = this.get(location);
    return { location, size: f.data.length, lastModified: f.lastModified };
  }
  async *list(prefix: string): AsyncIterable<FileInfo> {
    // A prefix is a directory, as on S3FileIO and LocalFileIO: listing `…/t` never yields `…/t2/x`.
    const dir = prefix.endsWith('/') ? prefix : `${prefix}/`;
    for (const [location, f] of [...this.files].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      if (location.startsWith(dir)) yield { location, size: f.data.length, lastModified: f.lastModified };
    }
  }
  /** Test helper: every stored location. */
  locations(): string[] {
    return [...this.files.keys()].sort();
  }
  /** Test helper: back-date a file (orphan grace periods). */
  setLastModified(location: string, ms: number): void {
    this.get(location).lastModified = ms;
  }
}

/** The process-wide memory:// store. */
export const memoryFileIO = new MemoryFileIO();
