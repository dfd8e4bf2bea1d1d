/**
 * FileIO: the small storage interface every other module uses (read, write, delete, list).
 * Locations are full URIs: `s3://bucket/key`, `file:///abs/path`, `memory://...`.
 */
export interface FileInfo {
  location: string;
  size: number;
  /** last modification time, epoch millis (orphan removal compares it with a grace period) */
  lastModified: number;
}

export interface FileIO {
  read(location: string): Promise<Uint8Array>;
  /** Reads `length` bytes at `offset` (Parquet footers, row groups). */
  readRange(location: string, offset: number, length: number): Promise<Uint8Array>;
  /** Writes the whole object; overwrites. Large bodies use multipart where the store has it. */
  write(location: string, data: Uint8Array): Promise<void>;
  /** Idempotent: deleting a missing file is not an error. */
  delete(location: string): Promise<void>;
  exists(location: string): Promise<boolean>;
  stat(location: string): Promise<FileInfo>;
  /** Every file under the prefix, recursively. */
  list(prefix: string): AsyncIterable<FileInfo>;
}
