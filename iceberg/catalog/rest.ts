/**
 * RestCatalog: the Iceberg REST catalog protocol (open-api/rest-catalog-open-api.yaml) for
 * Polaris, Lakekeeper, Nessie, S3 Tables, Gravitino and SeaweedFS.
 *
 * The server owns metadata files and the pointer swap; `commitTable` sends `{requirements,
 * updates}` and the server applies them atomically. JSON goes through lossless-json both ways so
 * 64-bit snapshot ids never pass through `number`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { parse as losslessParse, stringify as losslessStringify } from 'lossless-json';
import { IcebergError } from '../errors';
import type { IcebergErrorKind } from '../errors';
import { parseIcebergJson, parseTableMetadata, stringifyIcebergJson } from '../spec/metadata';
import { FORMAT_VERSION } from '../spec/table-properties';
import type { LoadedTable, TableIdentifier, TableMetadata } from '../spec/types';
import type { TableRequirement, TableUpdate } from './updates';
import type { Catalog } from './catalog';
import { identToString } from './catalog';
import { configSecrets, redactError, redactSecrets } from './redact';
import type { SigV4Options } from './sigv4';
import { signRequest } from './sigv4';

export interface RestCatalogOptions {
  /** Base URI, e.g. http://127.0.0.1:8181 (the client appends /v1/...). */
  uri: string;
  /** Catalog name reported by `name` (default 'rest'). */
  name?: string;
  /** Sent as `?warehouse=` to GET /v1/config; servers answer with the `prefix` to use. */
  warehouse?: string;
  /** Bearer token for `Authorization`. */
  token?: string;
  /**
   * OAuth2 client credentials `client_id:client_secret` (PyIceberg's `credential`): exchanged at
   * the token endpoint for a bearer token, refreshed before it expires and after a 401.
   */
  credential?: string;
  /** Token endpoint for `credential` (default `${uri}/v1/oauth/tokens`, the protocol's). */
  oauthServerUri?: string;
  /** OAuth2 scope (default 'catalog'). */
  scope?: string;
  /** Extra properties sent to /v1/config and merged like Java's RESTSessionCatalog. */
  properties?: Record<string, string>;
  /** Per-request timeout, ms (default 30 s). */
  timeoutMs?: number;
  /** Extra attempts for idempotent reads (GET/HEAD) on network errors and 5xx (default 2). */
  readRetries?: number;
  /**
   * Sent as `X-Iceberg-Access-Delegation` on every request (default 'vended-credentials', as
   * Java's client does): servers like Polaris then return per-table storage credentials in each
   * LoadTableResult's `config`. '' sends no header.
   */
  accessDelegation?: string;
  /** Extra HTTP headers (Java's and PyIceberg's `header.*` catalog properties). */
  headers?: Record<string, string>;
  /** Sign every request with AWS SigV4 (Glue's and S3 Tables' Iceberg REST endpoints). */
  sigv4?: SigV4Options;
  /**
   * Told about every LoadTableResult (load, create, commit, credential refresh): the table's
   * location, its `config` and its `storage-credentials`, from which its FileIO is built.
   */
  onTableConfig?: (event: TableStorageConfig) => void;
  /** The clock for token expiry (tests). */
  now?: () => number;
  fetch?: typeof fetch;
}

/** A storage credential of a LoadTableResult / LoadCredentialsResponse: `config` applies below `prefix`. */
export interface StorageCredential {
  prefix: string;
  config: Record<string, string>;
}

export interface TableStorageConfig {
  id: TableIdentifier;
  location: string;
  config: Record<string, string>;
  storageCredentials: StorageCredential[];
}

/** The REST route for refreshing a table's vended credentials (spec: loadCredentials). */
const CREDENTIALS_ENDPOINT = 'GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials';
/** Table config key naming where to refresh its credentials (Java's VendedCredentialsProvider). */
const REFRESH_CREDENTIALS_ENDPOINT = 'client.refresh-credentials-endpoint';

/** Property keys of a table config whose values are secrets (masked in errors). */
const SECRET_CONFIG_KEY = /secret|session-token|token$|password|sas\.|key$/i;

/** Namespace levels in a path segment are joined by the unit separator (0x1F), then %-encoded. */
export const encodeNamespace = (ns: string[]): string => encodeURIComponent(ns.join('\x1f'));

interface RestErrorBody {
  error?: { message?: string; type?: string; code?: number };
}

/**
 * The bearer token a failed request carried (a 401 discards it only if it is still current). Kept
 * beside the error, not on it: anything on an error reaches logs through util.inspect.
 */
const sentTokens = new WeakMap<Error, string>();

class HttpStatusError extends Error {
  constructor(
    readonly status: number,
    readonly body: RestErrorBody,
    message: string,
  ) {
    super(message);
  }
}

const parseStorageCredentials = (raw: unknown): StorageCredential[] =>
  Array.isArray(raw)
    ? raw.flatMap((c: { prefix?: unknown; config?: unknown }) =>
        typeof c?.prefix === 'string' && c.config !== null && typeof c.config === 'object'
          ? [{ prefix: c.prefix, config: c.config as Record<string, string> }]
          : [],
      )
    : [];

/** Extracts `metadata` / `metadata-location` from a LoadTableResult / CommitTableResponse. */
const parseLoadResult = (
  id: TableIdentifier,
  text: string,
): LoadedTable & { config: Record<string, string>; storageCredentials: StorageCredential[] } => {
  const raw = losslessParse(text) as Record<string, unknown>;
  const metadataLocation = raw['metadata-location'];
  if (typeof metadataLocation !== 'string' || raw['metadata'] === undefined) {
    throw new IcebergError('DataInvalid', `REST response for ${identToString(id)} lacks "metadata-location" or "metadata"`, {
      retryable: false,
    });
  }
  // Re-stringify the raw (LosslessNumber-preserving) subtree, so the metadata parser decides
  // which fields are 64-bit exactly as it does for files.
  const metadata = parseTableMetadata(losslessStringify(raw['metadata']) ?? 'null');
  const config = (raw['config'] as Record<string, string> | undefined) ?? {};
  return { identifier: id, metadataLocation, metadata, config, storageCredentials: parseStorageCredentials(raw['storage-credentials']) };
};

export class RestCatalog implements Catalog {
  readonly name: string;
  private readonly baseUri: string;
  private readonly opts: RestCatalogOptions;
  private readonly doFetch: typeof fetch;
  private configured: Promise<void> | undefined;
  private bearer: { token: string; expiresAtMs: number | undefined; lifetimeMs: number } | undefined;
  private fetchingToken: Promise<string> | undefined;
  /** Routes the server lists in /v1/config `endpoints` (undefined: it lists none, so assume the basic set). */
  private endpoints: Set<string> | undefined;
  /** Secret values of vended table configs: masked in errors like the configured ones. */
  private readonly vendedSecrets = new Set<string>();
  /** Token, client secret and URI password: masked in every error this catalog throws (redact.ts). */
  private readonly secrets: string[];
  private prefix = '';
  /** Server config merged as defaults < client properties < overrides. */
  properties: Record<string, string> = {};
  /** The `config` of the last LoadTableResult per table (vended storage credentials, endpoints). */
  readonly tableConfig = new Map<string, Record<string, string>>();

  constructor(opts: RestCatalogOptions) {
    if (!/^https?:\/\//.test(opts.uri)) {
      throw IcebergError.mismatch('DataInvalid', 'REST catalog "uri"', 'http(s)://host:port', redactSecrets(opts.uri), false);
    }
    this.opts = opts;
    this.secrets = configSecrets({ uri: opts.uri, token: opts.token, credential: opts.credential });
    this.name = opts.name ?? 'rest';
    this.baseUri = opts.uri.replace(/\/+$/, '');
    this.doFetch = opts.fetch ?? fetch;
  }

  /** GET /v1/config once: learns the path prefix (and overrides) for this warehouse. */
  init(): Promise<void> {
    this.configured ??= (async () => {
      const q = this.opts.warehouse ? `?warehouse=${encodeURIComponent(this.opts.warehouse)}` : '';
      const res = parseIcebergJson(await this.request('GET', `/v1/config${q}`, 'load catalog config')) as {
        defaults?: Record<string, string>;
        overrides?: Record<string, string>;
        endpoints?: string[];
      };
      this.endpoints = Array.isArray(res.endpoints) ? new Set(res.endpoints) : undefined;
      this.properties = { ...(res.defaults ?? {}), ...(this.opts.properties ?? {}), ...(res.overrides ?? {}) };
      const prefix = this.properties['prefix'];
      this.prefix = prefix ? `/${prefix.replace(/^\/+|\/+$/g, '')}` : '';
    })().catch((e: unknown) => {
      this.configured = undefined;
      throw e;
    });
    return this.configured;
  }

  /** Paths below are relative to `/v1/{prefix}`, which is known only after `init`. */
  private url(rel: string): string {
    return `/v1${this.prefix}${rel}`;
  }

  private tablePath(id: TableIdentifier): string {
    return `/namespaces/${encodeNamespace(id.namespace)}/tables/${encodeURIComponent(id.name)}`;
  }

  private now(): number {
    return this.opts.now?.() ?? Date.now();
  }

  /** OAuth2 client_credentials grant; concurrent callers share one request. */
  private fetchToken(): Promise<string> {
    this.fetchingToken ??= this.fetchTokenOnce().finally(() => {
      this.fetchingToken = undefined;
    });
    return this.fetchingToken;
  }

  /** OAuth2 client_credentials grant (REST spec: POST /v1/oauth/tokens, form-encoded). */
  private async fetchTokenOnce(): Promise<string> {
    const cred = this.opts.credential!;
    const sep = cred.indexOf(':');
    const form = new URLSearchParams({ grant_type: 'client_credentials', scope: this.opts.scope ?? 'catalog' });
    if (sep >= 0) {
      form.set('client_id', cred.slice(0, sep));
      form.set('client_secret', cred.slice(sep + 1));
    } else {
      form.set('client_secret', cred);
    }
    const url = this.opts.oauthServerUri ?? `${this.baseUri}/v1/oauth/tokens`;
    let res: Response, text: string;
    try {
      res = await this.doFetch(url, {
        method: 'POST',
        body: form.toString(),
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' },
        signal: AbortSignal.timeout(this.opts.timeoutMs ?? 30_000),
      });
      text = await res.text();
    } catch (e) {
      throw this.redactError(e);
    }
    if (!res.ok) {
      throw new IcebergError(
        'Io',
        this.redact(`REST catalog ${this.name}: OAuth2 token request to ${url} failed: HTTP ${res.status}: ${text.slice(0, 300)}`),
        {
          retryable: res.status >= 500,
          context: { status: res.status },
        },
      );
    }
    let body: { access_token?: string; expires_in?: number };
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      body = {};
    }
    if (!body.access_token)
      throw new IcebergError('Io', this.redact(`REST catalog ${this.name}: OAuth2 response from ${url} has no access_token`), {
        retryable: false,
      });
    // Like Java's OAuth2Util: expires_in, else the JWT's own `exp`; neither means it is refreshed
    // only when the server answers 401.
    const now = this.now();
    const expiresAtMs =
      typeof body.expires_in === 'number' && body.expires_in > 0 ? now + body.expires_in * 1000 : jwtExpiryMs(body.access_token);
    this.bearer = { token: body.access_token, expiresAtMs, lifetimeMs: expiresAtMs === undefined ? 0 : expiresAtMs - now };
    return body.access_token;
  }

  private async authorization(): Promise<string | undefined> {
    if (this.opts.token) return `Bearer ${this.opts.token}`;
    if (!this.opts.credential) return undefined;
    // Refresh before expiry: a minute early, or a tenth of the lifetime for short-lived tokens, so
    // a token never expires between here and the server.
    const b = this.bearer;
    if (!b || (b.expiresAtMs !== undefined && b.expiresAtMs - this.now() < Math.min(60_000, b.lifetimeMs / 10))) await this.fetchToken();
    return `Bearer ${this.bearer!.token}`;
  }

  /** One HTTP exchange; resolves with the body text for 2xx, throws HttpStatusError otherwise. */
  private async request(method: string, path: string, what: string, body?: unknown): Promise<string> {
    const idempotent = method === 'GET' || method === 'HEAD';
    const attempts = 1 + (idempotent ? (this.opts.readRetries ?? 2) : 0);
    let refreshed = false;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.requestOnce(method, path, what, body);
      } catch (e) {
        // A 401 means the token was rejected before anything ran: refetch once and resend.
        if (e instanceof HttpStatusError && e.status === 401 && this.opts.credential && !refreshed) {
          refreshed = true;
          if (this.bearer?.token === sentTokens.get(e)) this.bearer = undefined;
          attempt--;
          continue;
        }
        const transient = !(e instanceof HttpStatusError) || e.status >= 500 || e.status === 429;
        if (!transient || attempt >= attempts) throw e;
        await sleep(100 * 2 ** attempt);
      }
    }
  }

  private async requestOnce(method: string, path: string, what: string, body?: unknown): Promise<string> {
    let headers: Record<string, string> = { Accept: 'application/json', 'X-Client-Version': 'floe', ...(this.opts.headers ?? {}) };
    const delegation = this.opts.accessDelegation ?? 'vended-credentials';
    if (delegation) headers['X-Iceberg-Access-Delegation'] = delegation;
    const auth = await this.authorization();
    if (auth) headers['Authorization'] = auth;
    const payload = body === undefined ? undefined : stringifyIcebergJson(body);
    if (payload !== undefined) headers['Content-Type'] = 'application/json';
    const url = `${this.baseUri}${path}`;
    let res: Response, text: string;
    try {
      if (this.opts.sigv4) headers = await signRequest(this.opts.sigv4, method, url, headers, payload);
      res = await this.doFetch(url, {
        method,
        headers,
        body: payload,
        signal: AbortSignal.timeout(this.opts.timeoutMs ?? 30_000),
      });
      text = method === 'HEAD' ? '' : await res.text();
    } catch (e) {
      // fetch quotes the URL (with any userinfo) in its errors; keep `cause.code` for the callers.
      throw this.redactError(e);
    }
    if (res.ok) return text;
    let parsed: RestErrorBody = {};
    try {
      parsed = JSON.parse(text) as RestErrorBody;
    } catch {
      /* not JSON: keep the text */
    }
    const msg = parsed.error?.message ?? (text.slice(0, 300) || res.statusText);
    const error = new HttpStatusError(
      res.status,
      parsed,
      this.redact(`${what}: HTTP ${res.status}${parsed.error?.type ? ` ${parsed.error.type}` : ''}: ${msg}`),
    );
    if (auth) sentTokens.set(error, auth.slice('Bearer '.length));
    throw error;
  }

  private allSecrets(): (string | undefined)[] {
    return [...this.secrets, this.bearer?.token, ...this.vendedSecrets];
  }

  private redact(text: string): string {
    return redactSecrets(text, this.allSecrets());
  }

  private redactError(e: unknown): Error {
    return redactError(e, this.allSecrets());
  }

  /** Maps protocol errors to kinds for everything but commits (which need their own rules). */
  private mapError(e: unknown, what: string, on404: IcebergErrorKind = 'NotFound'): IcebergError {
    if (e instanceof IcebergError) return e;
    if (e instanceof HttpStatusError) {
      const s = e.status;
      const kind: IcebergErrorKind =
        s === 404
          ? on404
          : s === 409
            ? 'AlreadyExists'
            : s === 400 || s === 422
              ? 'DataInvalid'
              : s === 501 || s === 406
                ? 'FeatureUnsupported'
                : 'Io';
      return new IcebergError(kind, `REST catalog ${this.name}: ${e.message}`, {
        retryable: kind === 'Io' && (s >= 500 || s === 429),
        context: { status: s, type: e.body.error?.type },
        cause: e,
      });
    }
    return new IcebergError('Io', this.redact(`REST catalog ${this.name}: ${what} failed: ${(e as Error).message}`), {
      cause: this.redactError(e),
    });
  }

  private async call(method: string, rel: string, what: string, body?: unknown, on404?: IcebergErrorKind): Promise<string> {
    await this.init();
    try {
      return await this.request(method, this.url(rel), what, body);
    } catch (e) {
      throw this.mapError(e, what, on404);
    }
  }

  /** HEAD for existence; servers without HEAD (405/501) get a GET. */
  private async exists(rel: string, what: string): Promise<boolean> {
    await this.init();
    for (const method of ['HEAD', 'GET']) {
      try {
        await this.request(method, this.url(rel), what);
        return true;
      } catch (e) {
        if (e instanceof HttpStatusError && e.status === 404) return false;
        if (method === 'HEAD' && e instanceof HttpStatusError && (e.status === 405 || e.status === 501)) continue;
        throw this.mapError(e, what);
      }
    }
    return false;
  }

  // ---------------- namespaces ----------------

  private async paged<T>(path: string, key: string, what: string): Promise<T[]> {
    const out: T[] = [];
    let token: string | undefined;
    do {
      const sep = path.includes('?') ? '&' : '?';
      const page = parseIcebergJson(
        await this.call('GET', token ? `${path}${sep}pageToken=${encodeURIComponent(token)}` : path, what),
      ) as Record<string, unknown>;
      out.push(...((page[key] as T[] | undefined) ?? []));
      const next = page['next-page-token'];
      token = typeof next === 'string' && next.length > 0 ? next : undefined;
    } while (token);
    return out;
  }

  async listNamespaces(parent: string[] = []): Promise<string[][]> {
    const q = parent.length > 0 ? `?parent=${encodeNamespace(parent)}` : '';
    return this.paged<string[]>(`/namespaces${q}`, 'namespaces', 'list namespaces');
  }

  async createNamespace(namespace: string[], properties: Record<string, string> = {}): Promise<void> {
    await this.call('POST', '/namespaces', `create namespace ${namespace.join('.')}`, { namespace, properties });
  }

  namespaceExists(namespace: string[]): Promise<boolean> {
    return this.exists(`/namespaces/${encodeNamespace(namespace)}`, `namespace ${namespace.join('.')} exists`);
  }

  async loadNamespaceProperties(namespace: string[]): Promise<Record<string, string>> {
    const res = parseIcebergJson(
      await this.call('GET', `/namespaces/${encodeNamespace(namespace)}`, `load namespace ${namespace.join('.')}`),
    ) as {
      properties?: Record<string, string>;
    };
    return res.properties ?? {};
  }

  async dropNamespace(namespace: string[]): Promise<void> {
    // 409 here means "not empty", not "already exists".
    try {
      await this.call('DELETE', `/namespaces/${encodeNamespace(namespace)}`, `drop namespace ${namespace.join('.')}`);
    } catch (e) {
      if (e instanceof IcebergError && e.context['status'] === 409) {
        throw new IcebergError('DataInvalid', `cannot drop namespace ${namespace.join('.')}: it is not empty (${e.message})`, {
          retryable: false,
          cause: e,
        });
      }
      throw e;
    }
  }

  // ---------------- tables ----------------

  async listTables(namespace: string[]): Promise<TableIdentifier[]> {
    const ids = await this.paged<{ namespace: string[]; name: string }>(
      `/namespaces/${encodeNamespace(namespace)}/tables`,
      'identifiers',
      `list tables in ${namespace.join('.')}`,
    );
    return ids.map((i) => ({ namespace: i.namespace, name: i.name }));
  }

  tableExists(id: TableIdentifier): Promise<boolean> {
    return this.exists(this.tablePath(id), `table ${identToString(id)} exists`);
  }

  /**
   * POST /namespaces/{ns}/tables with the schema, spec, sort order, properties (and location,
   * when set) of `metadata`. The server assigns the uuid and may re-assign ids: the returned
   * metadata is authoritative.
   */
  async createTable(id: TableIdentifier, metadata: TableMetadata): Promise<LoadedTable> {
    const schema = metadata.schemas.find((s) => s['schema-id'] === metadata['current-schema-id']);
    const spec = metadata['partition-specs'].find((s) => s['spec-id'] === metadata['default-spec-id']);
    const order = metadata['sort-orders'].find((s) => s['order-id'] === metadata['default-sort-order-id']);
    const body: Record<string, unknown> = {
      name: id.name,
      schema,
      'partition-spec': spec,
      'write-order': order,
      'stage-create': false,
      properties: { ...metadata.properties, [FORMAT_VERSION]: String(metadata['format-version']) },
    };
    if (metadata.location) body['location'] = metadata.location;
    const text = await this.call('POST', `/namespaces/${encodeNamespace(id.namespace)}/tables`, `create table ${identToString(id)}`, body);
    return this.loaded(id, text);
  }

  private loaded(id: TableIdentifier, text: string): LoadedTable {
    const { config, storageCredentials, ...table } = parseLoadResult(id, text);
    this.tableConfig.set(identToString(id), config);
    this.tableStorage(id, table.metadata.location, config, storageCredentials);
    return table;
  }

  /** Remembers a table's vended secrets for redaction and tells the FileIO (onTableConfig). */
  private tableStorage(id: TableIdentifier, location: string, config: Record<string, string>, creds: StorageCredential[]): void {
    for (const c of [config, ...creds.map((x) => x.config)]) {
      for (const [k, v] of Object.entries(c)) if (SECRET_CONFIG_KEY.test(k) && typeof v === 'string' && v) this.vendedSecrets.add(v);
    }
    this.locations.set(identToString(id), location);
    this.opts.onTableConfig?.({ id, location, config, storageCredentials: creds });
  }
  private readonly locations = new Map<string, string>();

  /**
   * Fresh vended credentials for a table whose credentials are about to expire, from the
   * table's `client.refresh-credentials-endpoint`, else the spec's credentials route when the
   * server lists it, else by loading the table again. Reported through onTableConfig.
   */
  async refreshCredentials(id: TableIdentifier): Promise<void> {
    await this.init();
    const key = identToString(id);
    const endpoint = this.tableConfig.get(key)?.[REFRESH_CREDENTIALS_ENDPOINT];
    const listed = this.endpoints?.has(CREDENTIALS_ENDPOINT) ?? false;
    const location = this.locations.get(key);
    if ((endpoint === undefined && !listed) || location === undefined) {
      await this.loadTable(id);
      return;
    }
    const path = endpoint !== undefined ? `/${endpoint.replace(/^\/+/, '')}` : this.url(`${this.tablePath(id)}/credentials`);
    const what = `load credentials of ${key}`;
    let text: string;
    try {
      text = await this.request('GET', path, what);
    } catch (e) {
      throw this.mapError(e, what);
    }
    const creds = parseStorageCredentials((losslessParse(text) as Record<string, unknown>)['storage-credentials']);
    this.tableStorage(id, location, this.tableConfig.get(key) ?? {}, creds);
  }

  async loadTable(id: TableIdentifier): Promise<LoadedTable> {
    return this.loaded(id, await this.call('GET', this.tablePath(id), `load table ${identToString(id)}`));
  }

  async dropTable(id: TableIdentifier, opts: { purge?: boolean } = {}): Promise<void> {
    const q = opts.purge ? '?purgeRequested=true' : '';
    await this.call('DELETE', `${this.tablePath(id)}${q}`, `drop table ${identToString(id)}`);
  }

  /**
   * POST /namespaces/{ns}/tables/{t} {identifier, requirements, updates}. The server checks and
   * swaps atomically. 409 => 'CommitConflict' (retryable); 500/502/503/504, timeouts and lost
   * connections => 'CommitStateUnknown' (the server may have applied it); 404 => 'NotFound'.
   */
  async commitTable(id: TableIdentifier, requirements: TableRequirement[], updates: TableUpdate[]): Promise<LoadedTable> {
    await this.init();
    const what = `commit to ${identToString(id)}`;
    let text: string;
    try {
      text = await this.request('POST', this.url(this.tablePath(id)), what, {
        identifier: { namespace: id.namespace, name: id.name },
        requirements,
        updates,
      });
    } catch (e) {
      if (e instanceof HttpStatusError) {
        if (e.status === 409) {
          throw new IcebergError('CommitConflict', `REST catalog ${this.name}: ${e.message}`, {
            retryable: true,
            context: { status: 409 },
            cause: e,
          });
        }
        if (e.status >= 500) {
          throw new IcebergError(
            'CommitStateUnknown',
            `REST catalog ${this.name}: ${e.message}; the commit may or may not have been applied`,
            {
              retryable: false,
              context: { status: e.status },
              cause: e,
            },
          );
        }
        throw this.mapError(e, what);
      }
      const cause = (e as { cause?: { code?: string } }).cause;
      if (cause?.code === 'ECONNREFUSED' || cause?.code === 'ENOTFOUND') {
        // Never connected, so the server never saw the request.
        throw new IcebergError('Io', `REST catalog ${this.name}: ${what}: cannot connect (${cause.code})`, { retryable: true, cause: e });
      }
      // Connection reset, timeout: the request may have reached the server.
      throw new IcebergError(
        'CommitStateUnknown',
        this.redact(`REST catalog ${this.name}: ${what}: ${(e as Error).message}; the commit may or may not have been applied`),
        {
          retryable: false,
          cause: this.redactError(e),
        },
      );
    }
    return this.loaded(id, text);
  }

  async close(): Promise<void> {
    // fetch keeps no per-catalog connections to release.
  }
}

/** The `exp` claim of a JWT access token, as epoch ms; undefined for opaque tokens. */
function jwtExpiryMs(token: string): number | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as { exp?: unknown };
    return typeof claims.exp === 'number' ? claims.exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}
