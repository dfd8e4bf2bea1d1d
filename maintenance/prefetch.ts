/**
 * Read-ahead for compaction inputs: small files cost one object-store round trip each, which
 * dominates rewriting thousands of them, so the next few small files are fetched while the
 * current one decodes. Memory stays bounded: at most `window` files of at most `maxBytes` each.
 */
import type { FileInfo, FileIO } from '../iceberg/io/file-io';

export class PrefetchingFileIO implements FileIO {
  private readonly cache = new Map<string, Promise<Uint8Array>>();

  constructor(
    private readonly io: FileIO,
    private readonly maxBytes = 8 * 1024 * 1024,
  ) {}

  /** Starts fetching `files` (those small enough) unless already cached. */
  prefetch(files: ReadonlyArray<{ location: string; size: number }>): void {
    for (const f of files) {
      if (f.size > this.maxBytes || this.cache.has(f.location)) continue;
      const p = this.io.read(f.location);
      p.catch(() => undefined); // surfaced when the file is actually read
      this.cache.set(f.location, p);
    }
  }

  /** Drops a file's cached bytes (after it was consumed). */
  release(location: string): void {
    this.cache.delete(location);
  }

  read(location: string): Promise<Uint8Array> {
    return this.cache.get(location) ?? this.io.read(location);
  }

  async readRange(location: string, offset: number, length: number): Promise<Uint8Array> {
    const cached = this.cache.get(location);
    if (cached) return (await cached).subarray(offset, offset + length);
    return this.io.readRange(location, offset, length);
  }

  write(location: string, data: Uint8Array): Promise<void> {
    return this.io.write(location, data);
  }
  delete(location: string): Promise<void> {
    return this.io.delete(location);
  }
  exists(location: string): Promise<boolean> {
    return this.io.exists(location);
  }
  stat(location: string): Promise<FileInfo> {
    return this.io.stat(location);
  }
  list(prefix: string): AsyncIterable<FileInfo> {
    return this.io.list(prefix);
  }
}
