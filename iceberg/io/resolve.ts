/**
 * Picks the FileIO for a location by URI scheme, as Java's ResolvingFileIO / PyIceberg's
 * load_file_io do. Implementations are loaded lazily: the AWS SDK costs ~100 ms to import and a
 * file:// deployment never needs it.
 */
import { IcebergError } from '../errors';
import type { FileInfo, FileIO } from './file-io';
import type { S3Options } from './s3';

export interface FileIOOptions {
  s3?: S3Options;
  /**
   * Iceberg FileIO properties (`s3.endpoint`, `s3.access-key-id`, ...), e.g. from a REST
   * catalog's config; explicit `s3` options win over them.
   */
  properties?: Record<string, string>;
}

export type Scheme = 's3' | 'file' | 'memory';

export const schemeOf = (location: string): Scheme => {
  const m = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\//.exec(location);
  if (!m) {
    if (location.startsWith('/')) return 'file';
    throw IcebergError.mismatch('DataInvalid', 'storage location', 'a URI like s3://, file:// or memory://', location, false);
  }
  const s = m[1]!.toLowerCase();
  if (s === 's3' || s === 's3a' || s === 's3n') return 's3';
  if (s === 'file') return 'file';
  if (s === 'memory') return 'memory';
  throw IcebergError.mismatch('FeatureUnsupported', `storage scheme of ${location}`, 's3, s3a, file or memory', s, false);
};

/** One FileIO for the scheme of `location`. */
export function resolveFileIO(location: string, options: FileIOOptions = {}): FileIO {
  switch (schemeOf(location)) {
    case 's3': {
      const { S3FileIO, s3OptionsFromProperties } = require('./s3') as typeof import('./s3');
      return new S3FileIO({ ...s3OptionsFromProperties(options.properties ?? {}), ...(options.s3 ?? {}) });
    }
    case 'file': {
      const { LocalFileIO } = require('./local') as typeof import('./local');
      return new LocalFileIO();
    }
    case 'memory':
      // One process-wide store, so every memory:// FileIO sees the same files.
      return (require('./memory') as typeof import('./memory')).memoryFileIO;
  }
}

/**
 * A FileIO that dispatches every call by the location's scheme, creating one implementation per
 * scheme on first use; what a catalog hands out when its tables may live on several stores.
 */
export class ResolvingFileIO implements FileIO {
  private readonly byScheme = new Map<Scheme, FileIO>();
  constructor(private readonly options: FileIOOptions = {}) {}

  io(location: string): FileIO {
    const scheme = schemeOf(location);
    let io = this.byScheme.get(scheme);
    if (!io) {
      io = resolveFileIO(location, this.options);
      this.byScheme.set(scheme, io);
    }
    return io;
  }

  read(location: string): Promise<Uint8Array> {
    return this.io(location).read(location);
  }
  readRange(location: string, offset: number, length: number): Promise<Uint8Array> {
    return this.io(location).readRange(location, offset, length);
  }
  write(location: string, data: Uint8Array): Promise<void> {
    return this.io(location).write(location, data);
  }
  delete(location: string): Promise<void> {
    return this.io(location).delete(location);
  }
  exists(location: string): Promise<boolean> {
    return this.io(location).exists(location);
  }
  stat(location: string): Promise<FileInfo> {
    return this.io(location).stat(location);
  }
  list(prefix: string): AsyncIterable<FileInfo> {
    return this.io(prefix).list(prefix);
  }
}
