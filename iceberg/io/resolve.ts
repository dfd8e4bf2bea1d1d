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
  // `file:/path` is how Java (Hadoop's Path) writes local locations: a scheme with one slash.
  if (/^file:\/(?!\/)/i.test(location)) return 'file';
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

/** `s3a://b/k` and `s3n://b/k` name the same object as `s3://b/k`. */
const normalizeScheme = (location: string): string => location.replace(/^s3[an]:\/\//i, 's3://');

const underPrefix = (location: string, prefix: string): boolean =>
  location.startsWith(prefix) && (prefix.endsWith('/') || location.length === prefix.length || location[prefix.length] === '/');

/** Properties that are credentials: they change without a new S3 client when they expire. */
const CREDENTIAL_KEYS = ['s3.access-key-id', 's3.secret-access-key', 's3.session-token', 's3.session-token-expires-at-ms'];

interface Scope {
  properties: Record<string, string>;
  refresh?: () => Promise<void>;
  refreshing?: Promise<void>;
  io?: FileIO;
  /** What the current `io` was built from (non-credential properties, and keys that never expire). */
  builtFrom?: string;
}

/**
 * A FileIO whose locations below a registered prefix (a table's location, a storage credential's
 * prefix) use that prefix's own FileIO, built from the properties a REST catalog returned for the
 * table (its LoadTableResult `config` and `storage-credentials`: vended keys, endpoint, region),
 * as Java's S3FileIO does with storage credentials; the longest prefix wins. Everything else goes
 * to the catalog-wide FileIO.
 *
 * Vended keys win over the configured ones for their prefix. Keys that carry
 * `s3.session-token-expires-at-ms` are asked for per request (the SDK caches them until 5 minutes
 * before expiry) and refreshed through the scope's `refresh` once they are within `refreshMarginMs`
 * of expiring.
 */
export class ScopedFileIO implements FileIO {
  private readonly scopes = new Map<string, Scope>();
  private readonly fallback: ResolvingFileIO;

  constructor(
    private readonly options: FileIOOptions = {},
    private readonly refreshMarginMs = 5 * 60_000,
    private readonly now: () => number = Date.now,
  ) {
    this.fallback = new ResolvingFileIO(options);
  }

  /** Registers (or updates) the properties for everything below `prefix`. */
  setScope(prefix: string, properties: Record<string, string>, refresh?: () => Promise<void>): void {
    const key = normalizeScheme(prefix);
    const scope = this.scopes.get(key);
    if (scope === undefined) this.scopes.set(key, { properties, refresh });
    else {
      scope.properties = properties;
      if (refresh) scope.refresh = refresh;
    }
  }

  /** The prefix whose scope serves `location`, if any (tests, diagnostics). */
  scopeOf(location: string): string | undefined {
    const loc = normalizeScheme(location);
    let best: string | undefined;
    for (const prefix of this.scopes.keys())
      if (underPrefix(loc, prefix) && (best === undefined || prefix.length > best.length)) best = prefix;
    return best;
  }

  io(location: string): FileIO {
    const prefix = schemeOf(location) === 's3' ? this.scopeOf(location) : undefined;
    if (prefix === undefined) return this.fallback.io(location);
    const scope = this.scopes.get(prefix)!;
    const expires = scope.properties['s3.session-token-expires-at-ms'] !== undefined;
    const stable = Object.entries(scope.properties)
      .filter(([k]) => !CREDENTIAL_KEYS.includes(k) || (!expires && k !== 's3.session-token-expires-at-ms'))
      .sort(([a], [b]) => (a < b ? -1 : 1));
    const builtFrom = JSON.stringify(stable);
    if (scope.io === undefined || scope.builtFrom !== builtFrom) {
      scope.io = this.build(scope);
      scope.builtFrom = builtFrom;
    }
    return scope.io;
  }

  private build(scope: Scope): FileIO {
    const { S3FileIO, s3OptionsFromProperties } = require('./s3') as typeof import('./s3');
    const { accessKeyId, secretAccessKey, sessionToken: _sessionToken, ...vended } = s3OptionsFromProperties(scope.properties);
    const base = { ...s3OptionsFromProperties(this.options.properties ?? {}), ...(this.options.s3 ?? {}), ...vended };
    if (!accessKeyId || !secretAccessKey) return new S3FileIO(base);
    // The configured keys never mix with vended ones.
    delete base.accessKeyId;
    delete base.secretAccessKey;
    delete base.sessionToken;
    return new S3FileIO({ ...base, credentialProvider: () => this.credentials(scope) });
  }

  private async credentials(scope: Scope) {
    const expiresAt = (): number | undefined => {
      const v = Number(scope.properties['s3.session-token-expires-at-ms']);
      return Number.isFinite(v) && v > 0 ? v : undefined;
    };
    const exp = expiresAt();
    if (exp !== undefined && scope.refresh && exp - this.now() < this.refreshMarginMs) {
      scope.refreshing ??= scope.refresh().finally(() => {
        scope.refreshing = undefined;
      });
      await scope.refreshing;
    }
    const p = scope.properties;
    const exp2 = expiresAt();
    return {
      accessKeyId: p['s3.access-key-id'] ?? '',
      secretAccessKey: p['s3.secret-access-key'] ?? '',
      ...(p['s3.session-token'] ? { sessionToken: p['s3.session-token'] } : {}),
      ...(exp2 !== undefined ? { expiration: new Date(exp2) } : {}),
    };
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
