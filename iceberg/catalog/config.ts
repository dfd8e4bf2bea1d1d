/**
 * Builds a catalog and its FileIO from a small config object (what `floe.yaml` or a CLI flag
 * holds), validating it up front so a typo fails at startup naming the key, not at first commit.
 *
 *   {type: 'sql', name, uri: 'sqlite:///rel.db' | 'sqlite:////abs.db' | 'postgresql://u:p@h:5433/db', warehouse}
 *   {type: 'rest', uri: 'http://127.0.0.1:8181', warehouse?, token? | credential?: 'id:secret', name?}
 *
 * SQLite URIs follow SQLAlchemy (three slashes + relative path, four for an absolute one), so the
 * string from a PyIceberg `.pyiceberg.yaml` opens the same file.
 */
import * as path from 'node:path';
import { IcebergError } from '../errors';
import type { FileIO } from '../io/file-io';
import { ResolvingFileIO, schemeOf } from '../io/resolve';
import type { FileIOOptions } from '../io/resolve';
import type { S3Options } from '../io/s3';
import type { Catalog } from './catalog';
import { configSecrets, redactError, redactSecrets } from './redact';
import { RestCatalog } from './rest';
import { SqlCatalog } from './sql';
import type { SqlDialect } from './sql-dialect';

interface CommonConfig {
  /** Explicit S3 settings; otherwise `properties` (s3.*) and then the SDK's standard chain. */
  s3?: S3Options;
  /** Iceberg FileIO properties (`s3.endpoint`, `s3.access-key-id`, ...). */
  properties?: Record<string, string>;
}
export interface SqlCatalogConfig extends CommonConfig {
  type: 'sql';
  /** `catalog_name` in the tables; must match PyIceberg's catalog name to share tables. */
  name: string;
  uri: string;
  warehouse: string;
  /** SQLite only: wait this long for another process's write lock, ms. */
  busyTimeoutMs?: number;
}
export interface RestCatalogConfig extends CommonConfig {
  type: 'rest';
  uri: string;
  name?: string;
  warehouse?: string;
  token?: string;
  /** OAuth2 client credentials `id:secret` (PyIceberg's `credential`). */
  credential?: string;
  timeoutMs?: number;
}
export type CatalogConfig = SqlCatalogConfig | RestCatalogConfig;

const ALLOWED: Record<CatalogConfig['type'], readonly string[]> = {
  sql: ['type', 'name', 'uri', 'warehouse', 's3', 'properties', 'busyTimeoutMs'],
  rest: ['type', 'name', 'uri', 'warehouse', 'token', 'credential', 's3', 'properties', 'timeoutMs'],
};
const S3_KEYS: readonly string[] = [
  'endpoint',
  'region',
  'forcePathStyle',
  'accessKeyId',
  'secretAccessKey',
  'sessionToken',
  'maxAttempts',
  'multipartThresholdBytes',
  'partSizeBytes',
  'listPageSize',
];

// The found value is quoted back, redacted: a mistyped `uri` still holds the real password.
const bad = (key: string, expected: string, found: unknown): IcebergError =>
  IcebergError.mismatch(
    'DataInvalid',
    `catalog config "${key}"`,
    expected,
    found === undefined ? 'nothing' : redactSecrets(JSON.stringify(found) ?? String(found)),
    false,
  );

const str = (o: Record<string, unknown>, key: string, required: boolean): string | undefined => {
  const v = o[key];
  if (v === undefined && !required) return undefined;
  if (typeof v !== 'string' || v.length === 0) throw bad(key, 'a non-empty string', v);
  return v;
};

/** Checks shape and names the first offending key; returns the config typed. */
export function validateCatalogConfig(raw: unknown): CatalogConfig {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw bad('(root)', 'an object', raw);
  const o = raw as Record<string, unknown>;
  const type = o['type'];
  if (type !== 'sql' && type !== 'rest') throw bad('type', '"sql" or "rest"', type);
  for (const k of Object.keys(o)) {
    if (!ALLOWED[type].includes(k)) throw bad(k, `one of the ${type} catalog keys ${ALLOWED[type].join(', ')}`, k);
  }
  const uri = str(o, 'uri', true)!;
  if (o['s3'] !== undefined) {
    if (typeof o['s3'] !== 'object' || o['s3'] === null) throw bad('s3', 'an object', o['s3']);
    for (const k of Object.keys(o['s3'])) if (!S3_KEYS.includes(k)) throw bad(`s3.${k}`, `one of ${S3_KEYS.join(', ')}`, k);
  }
  if (o['properties'] !== undefined) {
    const p = o['properties'];
    if (typeof p !== 'object' || p === null) throw bad('properties', 'an object of strings', p);
    for (const [k, v] of Object.entries(p)) if (typeof v !== 'string') throw bad(`properties.${k}`, 'a string', v);
  }
  if (type === 'sql') {
    str(o, 'name', true);
    const warehouse = str(o, 'warehouse', true)!;
    try {
      schemeOf(warehouse);
    } catch {
      throw bad('warehouse', 'a location like s3://bucket/prefix or file:///abs/path', warehouse);
    }
    if (!/^(sqlite|postgres(ql)?)(\+[a-z0-9]+)?:\/\//.test(uri))
      throw bad('uri', 'sqlite:///path or postgresql://user:pass@host:port/db', uri);
    if (o['busyTimeoutMs'] !== undefined && (typeof o['busyTimeoutMs'] !== 'number' || o['busyTimeoutMs'] < 0)) {
      throw bad('busyTimeoutMs', 'a non-negative number', o['busyTimeoutMs']);
    }
  } else {
    if (!/^https?:\/\/[^/]/.test(uri)) throw bad('uri', 'http(s)://host:port', uri);
    str(o, 'name', false);
    str(o, 'warehouse', false);
    str(o, 'token', false);
    str(o, 'credential', false);
    if (o['token'] !== undefined && o['credential'] !== undefined)
      throw bad('credential', 'either "token" or "credential", not both', 'both');
    if (o['timeoutMs'] !== undefined && (typeof o['timeoutMs'] !== 'number' || o['timeoutMs'] <= 0))
      throw bad('timeoutMs', 'a positive number', o['timeoutMs']);
  }
  return o as unknown as CatalogConfig;
}

/** `sqlite:///rel/x.db` -> 'rel/x.db' (cwd-relative), `sqlite:////abs/x.db` -> '/abs/x.db'. */
export const sqlitePathFromUri = (uri: string): string => {
  const m = /^sqlite(\+[a-z0-9]+)?:\/\/\/(.*)$/.exec(uri);
  if (!m || m[2]!.length === 0) throw bad('uri', 'sqlite:///relative/path.db or sqlite:////absolute/path.db', uri);
  const p = m[2]!.split('?')[0]!;
  return p === ':memory:' ? p : path.resolve(p);
};

const dialectFor = (cfg: SqlCatalogConfig): SqlDialect => {
  if (cfg.uri.startsWith('sqlite')) {
    const { SqliteDialect } = require('./sql-sqlite') as typeof import('./sql-sqlite');
    return new SqliteDialect({ path: sqlitePathFromUri(cfg.uri), busyTimeoutMs: cfg.busyTimeoutMs });
  }
  const { PostgresDialect } = require('./sql-postgres') as typeof import('./sql-postgres');
  // SQLAlchemy driver suffixes (postgresql+psycopg2://) mean nothing to node-postgres.
  return new PostgresDialect({ connectionString: cfg.uri.replace(/^postgres(ql)?(\+[a-z0-9]+)?:/, 'postgresql:') });
};

/**
 * Validates `raw`, connects, and returns the catalog with a FileIO for its tables. SQL catalogs
 * create their tables if missing; REST catalogs fetch /v1/config, whose `s3.*` properties
 * (e.g. the endpoint) fill in FileIO settings the config did not give.
 */
export async function catalogFromConfig(raw: unknown): Promise<{ catalog: Catalog; io: FileIO }> {
  const cfg = validateCatalogConfig(raw);
  const secrets = configSecrets(cfg);
  const ioOptions: FileIOOptions = { s3: cfg.s3, properties: cfg.properties };
  if (cfg.type === 'sql') {
    const io = new ResolvingFileIO(ioOptions);
    const catalog = new SqlCatalog({ name: cfg.name, dialect: dialectFor(cfg), io, warehouse: cfg.warehouse, secrets });
    try {
      await catalog.init();
    } catch (e) {
      await catalog.close().catch(() => undefined);
      throw new IcebergError(
        'Io',
        redactSecrets(`catalog config "uri" ${cfg.uri}: cannot open the catalog: ${(e as Error).message}`, secrets),
        { cause: redactError(e, secrets) },
      );
    }
    return { catalog, io };
  }
  const catalog = new RestCatalog({
    uri: cfg.uri,
    name: cfg.name,
    warehouse: cfg.warehouse,
    token: cfg.token,
    credential: cfg.credential,
    timeoutMs: cfg.timeoutMs,
    properties: cfg.properties,
  });
  try {
    await catalog.init();
  } catch (e) {
    throw new IcebergError(
      'Io',
      redactSecrets(`catalog config "uri" ${cfg.uri}: cannot reach the REST catalog: ${(e as Error).message}`, secrets),
      { cause: redactError(e, secrets) },
    );
  }
  const io = new ResolvingFileIO({ s3: cfg.s3, properties: { ...catalog.properties, ...(cfg.properties ?? {}) } });
  return { catalog, io };
}
