/**
 * SigV4-signed REST catalog requests (Glue, S3 Tables: `rest.sigv4-enabled`), verified against
 * the AWS SDK's own signer (@smithy/signature-v4) on the requests floe actually sent, recorded by a
 * real HTTP server, with a fixed clock and fixed keys: the server re-signs each request from what
 * arrived on the wire (method, path, query, the signed headers, the body) and must get the same
 * Authorization header. Also checks the relocation of an OAuth2 bearer to Original-Authorization,
 * the session token, and the signing name/region from catalog properties.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';
import { RestCatalog, catalogFromConfig, newTableMetadata, serializeTableMetadata, type Schema } from '../../iceberg';

const KEYS = {
  accessKeyId: 'AKIDEXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
  sessionToken: 'session-token-example',
};
const CLOCK = new Date('2026-07-01T12:34:56Z');

interface Recorded {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}
const recorded: Recorded[] = [];
let server: Server;
let uri = '';

const schema: Schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'id', required: true, type: 'long' }] };
const table = newTableMetadata({ location: 's3://b/wh/a/b/t', schema, tableUuid: '11111111-2222-3333-4444-555555555555' });

before(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      recorded.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      res.writeHead(200, { 'Content-Type': 'application/json' });
      if (req.url!.startsWith('/v1/config'))
        return res.end(JSON.stringify({ defaults: {}, overrides: { prefix: 'catalogs/s3tablescatalog' } }));
      if (req.url!.includes('/tables/'))
        return res.end(`{"metadata-location":"s3://b/wh/a/b/t/metadata/1.json","metadata":${serializeTableMetadata(table)}}`);
      res.end(JSON.stringify({ namespaces: [] }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  uri = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => new Promise<void>((r) => server.close(() => r())));

/** The SDK signer's Authorization for a request exactly as it arrived (only the headers it says it signed). */
async function expectedAuthorization(r: Recorded, region: string, service: string): Promise<string> {
  const auth = String(r.headers['authorization']);
  const signedHeaders = /SignedHeaders=([^,]+)/.exec(auth)![1]!.split(';');
  const headers: Record<string, string> = {};
  for (const h of signedHeaders) headers[h] = String(r.headers[h]);
  const u = new URL(r.url, uri);
  const query: Record<string, string> = {};
  for (const [k, v] of u.searchParams) query[k] = v;
  const signer = new SignatureV4({ credentials: KEYS, region, service, sha256: Sha256 });
  const signed = await signer.sign(
    {
      method: r.method,
      protocol: 'http:',
      hostname: u.hostname,
      port: Number(u.port),
      path: u.pathname,
      query,
      headers,
      body: r.body === '' ? undefined : r.body,
    },
    { signingDate: CLOCK },
  );
  return signed.headers['authorization']!;
}

test('every request is SigV4-signed as the AWS SDK signer signs what arrived: GET with query, 0x1F namespace, POST with a body', async () => {
  recorded.length = 0;
  const catalog = new RestCatalog({
    uri,
    warehouse: 'arn:aws:s3tables:us-west-2:111122223333:bucket/floe',
    sigv4: { region: 'us-west-2', service: 's3tables', credentials: KEYS, now: () => CLOCK },
  });
  await catalog.listNamespaces(['a']);
  await catalog.loadTable({ namespace: ['a', 'b'], name: 't' });
  await catalog.commitTable({ namespace: ['a', 'b'], name: 't' }, [{ type: 'assert-table-uuid', uuid: table['table-uuid'] }], []);
  assert.deepEqual(
    recorded.map((r) => `${r.method} ${r.url}`),
    [
      'GET /v1/config?warehouse=arn%3Aaws%3As3tables%3Aus-west-2%3A111122223333%3Abucket%2Ffloe',
      'GET /v1/catalogs/s3tablescatalog/namespaces?parent=a',
      'GET /v1/catalogs/s3tablescatalog/namespaces/a%1Fb/tables/t',
      'POST /v1/catalogs/s3tablescatalog/namespaces/a%1Fb/tables/t',
    ],
  );
  for (const r of recorded) {
    const auth = String(r.headers['authorization']);
    assert.match(auth, /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/20260701\/us-west-2\/s3tables\/aws4_request, SignedHeaders=/);
    assert.equal(r.headers['x-amz-date'], '20260701T123456Z');
    assert.equal(r.headers['x-amz-security-token'], KEYS.sessionToken);
    assert.match(String(r.headers['x-amz-content-sha256']), /^[0-9a-f]{64}$/);
    assert.equal(auth, await expectedAuthorization(r, 'us-west-2', 's3tables'), `${r.method} ${r.url}`);
  }
  // The body is signed too: its hash is a signed header and matches the bytes that arrived.
  for (const r of recorded) {
    assert.match(String(r.headers['authorization']), /SignedHeaders=[^,]*x-amz-content-sha256/);
    assert.equal(r.headers['x-amz-content-sha256'], createHash('sha256').update(r.body).digest('hex'));
  }
  assert.ok(recorded[3]!.body.includes('assert-table-uuid'));
});

test('an OAuth2 bearer beside SigV4 moves to Original-Authorization; default signing name execute-api', async () => {
  recorded.length = 0;
  const catalog = new RestCatalog({
    uri,
    token: 'bearer-token-123456',
    sigv4: { region: 'eu-west-1', credentials: KEYS, now: () => CLOCK },
  });
  await catalog.listNamespaces();
  for (const r of recorded) {
    assert.equal(r.headers['original-authorization'], 'Bearer bearer-token-123456');
    assert.match(String(r.headers['authorization']), /\/eu-west-1\/execute-api\/aws4_request/);
    assert.equal(String(r.headers['authorization']), await expectedAuthorization(r, 'eu-west-1', 'execute-api'));
  }
});

test('catalogFromConfig: rest.sigv4-enabled, rest.signing-region, rest.signing-name from properties (Glue)', async () => {
  recorded.length = 0;
  const prev = { id: process.env['AWS_ACCESS_KEY_ID'], secret: process.env['AWS_SECRET_ACCESS_KEY'] };
  // The default chain: keys from the environment, as on a machine with a role they would come from IMDS.
  process.env['AWS_ACCESS_KEY_ID'] = KEYS.accessKeyId;
  process.env['AWS_SECRET_ACCESS_KEY'] = KEYS.secretAccessKey;
  try {
    const { catalog } = await catalogFromConfig({
      type: 'rest',
      uri,
      properties: { 'rest.sigv4-enabled': 'true', 'rest.signing-region': 'us-east-2', 'rest.signing-name': 'glue' },
    });
    await catalog.close();
  } finally {
    if (prev.id === undefined) delete process.env['AWS_ACCESS_KEY_ID'];
    else process.env['AWS_ACCESS_KEY_ID'] = prev.id;
    if (prev.secret === undefined) delete process.env['AWS_SECRET_ACCESS_KEY'];
    else process.env['AWS_SECRET_ACCESS_KEY'] = prev.secret;
  }
  assert.match(
    String(recorded[0]!.headers['authorization']),
    /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/us-east-2\/glue\/aws4_request/,
  );
  await assert.rejects(
    catalogFromConfig({ type: 'rest', uri, properties: { 'rest.sigv4-enabled': 'yes' } }),
    /catalog config "properties.rest.sigv4-enabled"/,
  );
});
