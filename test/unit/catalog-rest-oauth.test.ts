/**
 * REST catalog auth and vended credentials, with a scripted fetch and a fixed clock: the OAuth2
 * client-credentials exchange (form, scope, oauth2-server-uri), refresh before expiry (expires_in
 * or the JWT's exp), one re-fetch on 401, no secret in errors; X-Iceberg-Access-Delegation, the
 * LoadTableResult's config and storage-credentials reported per table, credential refresh routes;
 * ScopedFileIO picking each location's FileIO and refreshing expiring keys.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  RestCatalog,
  ScopedFileIO,
  newTableMetadata,
  serializeTableMetadata,
  type TableStorageConfig,
  type S3FileIO,
  type Schema,
} from '../../iceberg';

const schema: Schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'id', required: true, type: 'long' }] };
const table = newTableMetadata({ location: 's3://b/wh/db/t', schema, tableUuid: '11111111-2222-3333-4444-555555555555' });
const SECRET = 'client-secret-987654';

interface Call {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string;
}

/** A scripted server: `route` answers each call; tokens are tok-1, tok-2, ... */
function scripted(route: (c: Call, n: { tokens: number }) => { status?: number; body: unknown } | undefined) {
  const calls: Call[] = [];
  const n = { tokens: 0 };
  const fetchStub = (async (input: string | URL, init?: RequestInit) => {
    const c: Call = {
      url: String(input),
      method: init?.method ?? 'GET',
      headers: (init?.headers ?? {}) as Record<string, string>,
      body: String(init?.body ?? ''),
    };
    calls.push(c);
    const r = route(c, n) ?? { status: 500, body: { error: { message: `unscripted ${c.method} ${c.url}` } } };
    const text = typeof r.body === 'string' ? r.body : JSON.stringify(r.body);
    return new Response(text, { status: r.status ?? 200, headers: { 'Content-Type': 'application/json' } });
  }) as typeof fetch;
  return { calls, fetch: fetchStub, n };
}

const loadResult = (config: Record<string, string>, creds?: unknown) =>
  `{"metadata-location":"s3://b/wh/db/t/metadata/1.json","metadata":${serializeTableMetadata(table)},"config":${JSON.stringify(config)}${
    creds ? `,"storage-credentials":${JSON.stringify(creds)}` : ''
  }}`;

test('OAuth2: client_credentials form with the default scope; the token is reused, refreshed before expires_in, fetched once for concurrent calls', async () => {
  let now = 1_000_000;
  const s = scripted((c, n) => {
    if (c.url.endsWith('/v1/oauth/tokens')) return { body: { access_token: `tok-${++n.tokens}`, token_type: 'bearer', expires_in: 100 } };
    if (c.url.includes('/v1/config')) return { body: { defaults: {}, overrides: {} } };
    if (c.url.endsWith('/v1/namespaces')) return { body: { namespaces: [] } };
    return undefined;
  });
  const catalog = new RestCatalog({ uri: 'http://cat', credential: `my-client:${SECRET}`, fetch: s.fetch, now: () => now });
  await Promise.all([catalog.listNamespaces(), catalog.listNamespaces(), catalog.listNamespaces()]);
  const tokenCalls = () => s.calls.filter((c) => c.url.endsWith('/v1/oauth/tokens'));
  assert.equal(tokenCalls().length, 1, 'concurrent calls share one token request');
  const form = new URLSearchParams(tokenCalls()[0]!.body);
  assert.deepEqual(Object.fromEntries(form), {
    grant_type: 'client_credentials',
    scope: 'catalog',
    client_id: 'my-client',
    client_secret: SECRET,
  });
  assert.equal(tokenCalls()[0]!.headers['Content-Type'], 'application/x-www-form-urlencoded');
  now += 85_000; // 15 s left of 100: still good (refresh within the last tenth)
  await catalog.listNamespaces();
  assert.equal(tokenCalls().length, 1);
  now += 6_000; // 9 s left: refreshed before it expires
  await catalog.listNamespaces();
  assert.equal(tokenCalls().length, 2);
  assert.equal(s.calls.at(-1)!.headers['Authorization'], 'Bearer tok-2');
});

test('OAuth2: oauth2-server-uri and scope; a JWT without expires_in refreshes at its exp; one 401 re-fetches once, a second 401 fails', async () => {
  let now = Date.UTC(2026, 6, 1);
  const jwt = (exp: number) => `h.${Buffer.from(JSON.stringify({ exp: exp / 1000 })).toString('base64url')}.s`;
  let reject = 0;
  const s = scripted((c, n) => {
    if (c.url === 'https://idp.example/token') {
      n.tokens++;
      return { body: { access_token: jwt(now + 3_600_000 + n.tokens), token_type: 'bearer' } };
    }
    if (c.url.includes('/v1/config')) return { body: {} };
    if (reject > 0) {
      reject--;
      return { status: 401, body: { error: { code: 401, type: 'NotAuthorizedException', message: 'expired' } } };
    }
    return { body: { namespaces: [] } };
  });
  const catalog = new RestCatalog({
    uri: 'http://cat',
    credential: `c:${SECRET}`,
    oauthServerUri: 'https://idp.example/token',
    scope: 'PRINCIPAL_ROLE:ALL',
    fetch: s.fetch,
    now: () => now,
  });
  await catalog.listNamespaces();
  assert.equal(new URLSearchParams(s.calls[0]!.body).get('scope'), 'PRINCIPAL_ROLE:ALL');
  assert.equal(s.n.tokens, 1);
  now += 3_600_000 - 30_000; // within a minute of the JWT's exp
  await catalog.listNamespaces();
  assert.equal(s.n.tokens, 2, 'refreshed from the JWT exp');
  reject = 1;
  await catalog.listNamespaces();
  assert.equal(s.n.tokens, 3, 'one 401: a new token, the call repeated');
  reject = 2;
  await assert.rejects(catalog.listNamespaces(), (e: Error) => /HTTP 401/.test(e.message) && !e.message.includes(SECRET));
  assert.equal(s.n.tokens, 4, 'a second 401 is not retried again');
});

test('OAuth2: a refused token request names the endpoint and status, never the secret', async () => {
  const s = scripted((c) =>
    c.url.endsWith('/v1/oauth/tokens')
      ? { status: 401, body: `{"error":"invalid_client","error_description":"bad ${SECRET}"}` }
      : undefined,
  );
  const catalog = new RestCatalog({ uri: 'http://cat', credential: `c:${SECRET}`, fetch: s.fetch });
  await assert.rejects(catalog.listNamespaces(), (e: Error) => {
    assert.match(e.message, /OAuth2 token request to http:\/\/cat\/v1\/oauth\/tokens failed: HTTP 401/);
    assert.ok(!e.message.includes(SECRET), e.message);
    return true;
  });
});

test('vended credentials: delegation header; config and storage-credentials reported per table; vended secrets masked in errors', async () => {
  const events: TableStorageConfig[] = [];
  const vended = {
    's3.access-key-id': 'AKIAVENDED',
    's3.secret-access-key': 'vended-secret-abcdef',
    's3.session-token': 'vended-session-xyz123',
  };
  const s = scripted((c) => {
    if (c.url.includes('/v1/config')) return { body: { overrides: { prefix: 'p' } } };
    if (c.url.endsWith('/tables/t'))
      return { body: loadResult(vended, [{ prefix: 's3://b/wh/db/t/data', config: { 's3.access-key-id': 'AKIADATA' } }]) };
    if (c.url.endsWith('/tables/bad')) return { status: 500, body: { error: { message: 'leaked vended-secret-abcdef' } } };
    return undefined;
  });
  const catalog = new RestCatalog({ uri: 'http://cat', fetch: s.fetch, onTableConfig: (e) => events.push(e) });
  await catalog.loadTable({ namespace: ['db'], name: 't' });
  assert.ok(s.calls.every((c) => c.headers['X-Iceberg-Access-Delegation'] === 'vended-credentials'));
  assert.equal(events.length, 1);
  assert.equal(events[0]!.location, 's3://b/wh/db/t');
  assert.deepEqual(events[0]!.config, vended);
  assert.deepEqual(events[0]!.storageCredentials, [{ prefix: 's3://b/wh/db/t/data', config: { 's3.access-key-id': 'AKIADATA' } }]);
  await assert.rejects(catalog.loadTable({ namespace: ['db'], name: 'bad' }), (e: Error) => !e.message.includes('vended-secret-abcdef'));

  const none = scripted((c) => (c.url.includes('/v1/config') ? { body: {} } : { body: { namespaces: [] } }));
  await new RestCatalog({ uri: 'http://cat', fetch: none.fetch, accessDelegation: '' }).listNamespaces();
  assert.ok(none.calls.every((c) => c.headers['X-Iceberg-Access-Delegation'] === undefined));
});

test('refreshCredentials: the table config endpoint, else the listed credentials route, else a reload', async () => {
  const events: TableStorageConfig[] = [];
  const listed: { endpoints?: string[] } = {};
  let config: Record<string, string> = {};
  const s = scripted((c) => {
    if (c.url.includes('/v1/config')) return { body: { endpoints: listed.endpoints } };
    if (c.url.endsWith('/tables/t')) return { body: loadResult(config) };
    if (c.url.endsWith('/credentials'))
      return { body: { 'storage-credentials': [{ prefix: 's3://b/wh/db/t', config: { 's3.access-key-id': 'NEW' } }] } };
    return undefined;
  });
  const id = { namespace: ['db'], name: 't' };
  const paths = () => s.calls.filter((c) => !c.url.includes('/v1/config')).map((c) => new URL(c.url).pathname);

  let catalog = new RestCatalog({ uri: 'http://cat', fetch: s.fetch, onTableConfig: (e) => events.push(e) });
  await catalog.loadTable(id);
  await catalog.refreshCredentials(id);
  assert.deepEqual(paths(), ['/v1/namespaces/db/tables/t', '/v1/namespaces/db/tables/t'], 'no route listed: reload');

  s.calls.length = 0;
  listed.endpoints = ['GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials'];
  catalog = new RestCatalog({ uri: 'http://cat', fetch: s.fetch, onTableConfig: (e) => events.push(e) });
  await catalog.loadTable(id);
  await catalog.refreshCredentials(id);
  assert.deepEqual(paths(), ['/v1/namespaces/db/tables/t', '/v1/namespaces/db/tables/t/credentials']);
  assert.deepEqual(events.at(-1)!.storageCredentials, [{ prefix: 's3://b/wh/db/t', config: { 's3.access-key-id': 'NEW' } }]);

  s.calls.length = 0;
  config = { 'client.refresh-credentials-endpoint': 'v1/custom/db/t/credentials' };
  catalog = new RestCatalog({ uri: 'http://cat', fetch: s.fetch });
  await catalog.loadTable(id);
  await catalog.refreshCredentials(id);
  assert.deepEqual(paths(), ['/v1/namespaces/db/tables/t', '/v1/custom/db/t/credentials']);
});

const keysOf = async (io: ScopedFileIO, location: string) => {
  const s3 = io.io(location) as S3FileIO;
  const provider = s3.client.config.credentials as unknown as () => Promise<{ accessKeyId: string; sessionToken?: string }>;
  return (await provider()).accessKeyId;
};

test('ScopedFileIO: the longest prefix wins, s3a is s3, vended keys beat configured ones, other locations keep the configured keys', async () => {
  const io = new ScopedFileIO({
    s3: { endpoint: 'http://127.0.0.1:1', region: 'us-east-1', accessKeyId: 'CONFIGURED', secretAccessKey: 'x' },
  });
  io.setScope('s3://b/wh/db/t', { 's3.access-key-id': 'TABLE', 's3.secret-access-key': 'y' });
  io.setScope('s3://b/wh/db/t/data', { 's3.access-key-id': 'DATA', 's3.secret-access-key': 'z' });
  io.setScope('s3://b/wh/db/t2', { 's3.endpoint': 'http://127.0.0.1:2' });
  assert.equal(io.scopeOf('s3a://b/wh/db/t/metadata/1.json'), 's3://b/wh/db/t');
  assert.equal(io.scopeOf('s3://b/wh/db/t/data/f.parquet'), 's3://b/wh/db/t/data');
  assert.equal(io.scopeOf('s3://b/wh/db/t2x/f'), undefined, 'a sibling with a longer name is not inside');
  assert.equal(await keysOf(io, 's3://b/wh/db/t/metadata/1.json'), 'TABLE');
  assert.equal(await keysOf(io, 's3://b/wh/db/t/data/f.parquet'), 'DATA');
  assert.equal(await keysOf(io, 's3://b/wh/db/t2/f'), 'CONFIGURED', 'a scope without keys keeps the configured ones');
  assert.equal(await keysOf(io, 's3://b/elsewhere/f'), 'CONFIGURED');
  // Static keys that change (a re-load vended others): a new client.
  const before = io.io('s3://b/wh/db/t/x');
  io.setScope('s3://b/wh/db/t', { 's3.access-key-id': 'TABLE2', 's3.secret-access-key': 'y' });
  assert.notEqual(io.io('s3://b/wh/db/t/x'), before);
  assert.equal(await keysOf(io, 's3://b/wh/db/t/x'), 'TABLE2');
});

test('ScopedFileIO: expiring keys are refreshed through the scope within the margin, once for concurrent callers, on the same client', async () => {
  let now = 1_000_000;
  const io = new ScopedFileIO({ s3: { endpoint: 'http://127.0.0.1:1' } }, 60_000, () => now);
  let refreshes = 0;
  const vend = (n: number) => ({
    's3.access-key-id': `K${n}`,
    's3.secret-access-key': 's',
    's3.session-token': `t${n}`,
    's3.session-token-expires-at-ms': String(now + 600_000),
  });
  const refresh = async () => {
    refreshes++;
    io.setScope('s3://b/t', vend(refreshes + 1));
  };
  io.setScope('s3://b/t', vend(1), refresh);
  const client = io.io('s3://b/t/f');
  const provider = (client as S3FileIO).client.config.credentials as unknown as () => Promise<{ accessKeyId: string; expiration?: Date }>;
  assert.equal((await provider()).accessKeyId, 'K1');
  assert.equal((await provider()).expiration?.getTime(), now + 600_000);
  now += 590_000; // 10 s before expiry, inside the 60 s margin
  const [a, b] = await Promise.all([provider(), provider()]);
  assert.equal(refreshes, 1, 'one refresh for both');
  assert.equal(a.accessKeyId, 'K2');
  assert.equal(b.accessKeyId, 'K2');
  assert.equal(io.io('s3://b/t/f'), client, 'expiring keys change without a new client');
});
