/**
 * Builds a catalog and its FileIO from a small config object (what `floe.yaml` or a CLI flag
 * holds), validating it up front so a typo fails at startup naming the key, not at first commit.
 *
 *   {type: 'sql', name, uri: 'sqlite:///rel.db' | 'sqlite:////abs.db' | 'postgresql://u:p@h:5433/db', warehouse}
 *   {type: 'rest', uri: 'http://127.0.0.1:8181', warehouse?, token? | credential?: 'id:secret', name?}
 *
 * A REST catalog's secrets can instead be named: `credentialEnv` / `credentialFile` (OAuth2
 * `client_id:client_secret`) and `tokenEnv` / `tokenFile`, read here, in the process that connects.
 * Iceberg catalog properties go in `properties` under their usual names: `oauth2-server-uri`,
 * `scope`, `rest.sigv4-enabled`, `rest.signing-region`, `rest.signing-name`, `header.<Name>`, `s3.*`.
 *
 * SQLite URIs follow SQLAlchemy (three slashes + relative path, four for an absolute one), so the
 * string from a PyIceberg `.pyiceberg.yaml` opens the same file.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { IcebergError } from '../errors';
import type { FileIO } from '../io/file-io';
import { ResolvingFileIO, ScopedFileIO, schemeOf } from '../io/resolve';
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
  /** Where the worker reads `credential` / `token` from instead (never the config itself). */
  credentialEnv?: string;
  credentialFile?: string;
  tokenEnv?: string;
  tokenFile?: string;
  timeoutMs?: number;
}
export type CatalogConfig = SqlCatalogConfig | RestCatalogConfig;

const ALLOWED: Record<CatalogConfig['type'], readonly string[]> = {
  sql: ['type', 'name', 'uri', 'warehouse', 's3', 'properties', 'busyTimeoutMs'],
  rest: [
    'type',
    'name',
    'uri',
    'warehouse',
    'token',
    'credential',
    'credentialEnv',
    'credentialFile',
    'tokenEnv',
    'tokenFile',
    's3',
    'properties',
    'timeoutMs',
  ],
};
const S3_KEYS: readonly string[] = [
  'endpoint',
  'region',
  'forcePathStyle',
  'accessKeyId',
  'secretAccessKey',
  'sessionToken',
  'profile',
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
    const given = ['token', 'tokenEnv', 'tokenFile', 'credential', 'credentialEnv', 'credentialFile'].filter(
      (k) => str(o, k, false) !== undefined,
    );
    if (given.length > 1) throw bad(given[1]!, `one way to authenticate, not ${given.join(' and ')}`, given.join(', '));
    for (const k of ['tokenEnv', 'credentialEnv']) {
      if (o[k] !== undefined && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(o[k] as string)) throw bad(k, 'an environment variable name', o[k]);
    }
    const props = (o['properties'] ?? {}) as Record<string, string>;
    for (const k of ['credential', 'token']) {
      if (props[k] !== undefined) throw bad(`properties.${k}`, `no secret in properties: use ${k}Env or ${k}File`, '(redacted)');
    }
    const sigv4 = props['rest.sigv4-enabled'];
    if (sigv4 !== undefined && sigv4 !== 'true' && sigv4 !== 'false')
      throw bad('properties.rest.sigv4-enabled', '"true" or "false"', sigv4);
    if (props['oauth2-server-uri'] !== undefined && !/^https?:\/\/[^/]/.test(props['oauth2-server-uri']))
      throw bad('properties.oauth2-server-uri', 'http(s)://host/path of an OAuth2 token endpoint', props['oauth2-server-uri']);
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

/** `credentialEnv` / `credentialFile` (or the token's): the secret, read now; failures name the key, never the value. */
function namedSecret(cfg: RestCatalogConfig, base: 'credential' | 'token'): string | undefined {
  const inline = cfg[base];
  if (inline !== undefined) return inline;
  const envName = cfg[`${base}Env`];
  if (envName !== undefined) {
    const v = process.env[envName];
    if (!v) throw bad(`${base}Env`, `environment variable ${envName} to hold the ${base}`, `${envName} unset or empty`);
    return v.trim();
  }
  const file = cfg[`${base}File`];
  if (file !== undefined) {
    let v: string;
    try {
      v = readFileSync(file, 'utf8').trim();
    } catch (e) {
      throw bad(`${base}File`, `a readable file holding the ${base}`, `${file}: ${(e as NodeJS.ErrnoException).code ?? 'unreadable'}`);
    }
    if (!v) throw bad(`${base}File`, `a file holding the ${base}`, `${file} is empty`);
    return v;
  }
  return undefined;
}

/** `header.<Name>` catalog properties (Java, PyIceberg): extra HTTP headers. */
const headerProperties = (props: Record<string, string>): Record<string, string> =>
  Object.fromEntries(
    Object.entries(props)
      .filter(([k]) => k.startsWith('header.'))
      .map(([k, v]) => [k.slice('header.'.length), v]),
  );

/**
 * Validates `raw`, connects, and returns the catalog with a FileIO for its tables. SQL catalogs
 * create their tables if missing; REST catalogs fetch /v1/config, whose `s3.*` properties
 * (e.g. the endpoint) fill in FileIO settings the config did not give, and each table's files go
 * through a FileIO built from that table's LoadTableResult (vended credentials; ScopedFileIO).
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
  const token = namedSecret(cfg, 'token');
  const credential = namedSecret(cfg, 'credential');
  secrets.push(...configSecrets({ token, credential }));
  const props = cfg.properties ?? {};
  const headers = headerProperties(props);
  const delegation = Object.keys(headers).find((h) => h.toLowerCase() === 'x-iceberg-access-delegation');
  // The FileIO exists before the catalog, which reports each table's storage config to it.
  let catalogProps: Record<string, string> = {};
  const io = new ScopedFileIO({
    s3: cfg.s3,
    get properties() {
      return { ...catalogProps, ...props };
    },
  });
  const catalog: RestCatalog = new RestCatalog({
    uri: cfg.uri,
    name: cfg.name,
    warehouse: cfg.warehouse,
    token,
    credential,
    oauthServerUri: props['oauth2-server-uri'],
    scope: props['scope'],
    headers,
    ...(delegation !== undefined ? { accessDelegation: headers[delegation] } : {}),
    ...(props['rest.sigv4-enabled'] === 'true'
      ? { sigv4: { region: props['rest.signing-region'] ?? props['client.region'], service: props['rest.signing-name'] } }
      : {}),
    timeoutMs: cfg.timeoutMs,
    properties: cfg.properties,
    onTableConfig: ({ id, location, config, storageCredentials }) => {
      const refresh = () => catalog.refreshCredentials(id);
      io.setScope(location, config, refresh);
      for (const c of storageCredentials) io.setScope(c.prefix, { ...config, ...c.config }, refresh);
    },
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
  catalogProps = catalog.properties;
  return { catalog, io };
}
