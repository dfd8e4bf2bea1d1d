/**
 * Read-ahead for compaction inputs: small files cost one object-store round trip each, which
 * dominates rewriting thousands of them, so the next few small files are fetched while the
 * current one decodes. Memory stays bounded by bytes, not by a file count: files are fetched in
 * order while the bytes held (fetched or in flight, not yet released) stay within `budgetBytes`,
 * and a file larger than `maxFileBytes` is never fetched whole (the reader streams it by ranges).
 */
import type { FileInfo, FileIO } from '../iceberg';

interface PrefetchOptions {
  /** Files larger than this are not prefetched (default 8 MiB, the reader's whole-file limit). */
  maxFileBytes?: number;
  /** Bytes held at most: prefetched or in flight and not yet released (default 16 MiB). */
  budgetBytes?: number;
}

export class PrefetchingFileIO implements FileIO {
  private readonly cache = new Map<string, { bytes: Promise<Uint8Array>; size: number }>();
  private held = 0;
  private readonly maxFileBytes: number;
  private readonly budgetBytes: number;

  constructor(
    private readonly io: FileIO,
    opts: PrefetchOptions = {},
  ) {
    this.maxFileBytes = opts.maxFileBytes ?? 8 * 1024 * 1024;
    this.budgetBytes = opts.budgetBytes ?? 16 * 1024 * 1024;
  }

  /** Bytes currently held by prefetched files (fetched or in flight). */
  get heldBytes(): number {
    return this.held;
  }

  /**
   * Starts fetching `files` in order (those small enough) unless already cached; stops at the
   * first one that would take the held bytes over the budget (one file is always allowed).
   */
  prefetch(files: ReadonlyArray<{ location: string; size: number }>): void {
    for (const f of files) {
      if (f.size > this.maxFileBytes || this.cache.has(f.location)) continue;
      if (this.cache.size > 0 && this.held + f.size > this.budgetBytes) return;
      const bytes = this.io.read(f.location);
      bytes.catch(() => undefined); // surfaced when the file is actually read
      this.cache.set(f.location, { bytes, size: f.size });
      this.held += f.size;
    }
  }

  /** Drops a file's cached bytes (after it was consumed). */
  release(location: string): void {
    const c = this.cache.get(location);
    if (!c) return;
    this.cache.delete(location);
    this.held -= c.size;
  }

  read(location: string): Promise<Uint8Array> {
    return this.cache.get(location)?.bytes ?? this.io.read(location);
  }

  async readRange(location: string, offset: number, length: number): Promise<Uint8Array> {
    const cached = this.cache.get(location);
    if (cached) return (await cached.bytes).subarray(offset, offset + length);
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
