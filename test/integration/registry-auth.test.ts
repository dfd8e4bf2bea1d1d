/**
 * Schema Registry credentials (real stack): the stack's Apicurio Registry behind an HTTP proxy
 * that demands basic auth or a bearer token, as a hosted registry does. floe's client reads the
 * password or token by reference (env), fetches a schema registered through the proxy, and a wrong
 * credential fails naming the registry's answer, never the secret.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ensureStack } from '../../stack/stack';
import { stackEnv } from '../../stack/env';
import { SchemaRegistryClient } from '../../ingest/formats/registry';

const SCHEMA = JSON.stringify({ type: 'record', name: 'AuthProbe', namespace: 'floe.test', fields: [{ name: 'n', type: 'long' }] });

describe('Schema Registry authentication (real registry behind an auth proxy)', () => {
  let server: http.Server;
  let base: string;
  let expected = '';
  const seen: string[] = [];

  before(async () => {
    await ensureStack(['schema-registry']);
    const upstream = new URL(stackEnv().schemaRegistry.url);
    server = http.createServer((req, res) => {
      seen.push(req.headers.authorization ?? '');
      if (req.headers.authorization !== expected) {
        res.writeHead(401, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error_code: 40101, message: 'Unauthorized' }));
        return;
      }
      const fwd = http.request(
        {
          host: upstream.hostname,
          port: upstream.port,
          path: req.url,
          method: req.method,
          headers: { ...req.headers, host: upstream.host },
        },
        (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        },
      );
      req.pipe(fwd);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}${upstream.pathname}`;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  async function register(auth: string): Promise<number> {
    expected = auth;
    const subject = `auth-probe-${Date.now().toString(36)}-value`;
    const r = await fetch(`${base}/subjects/${subject}/versions`, {
      method: 'POST',
      headers: { 'content-type': 'application/vnd.schemaregistry.v1+json', authorization: auth },
      body: JSON.stringify({ schema: SCHEMA }),
    });
    assert.equal(r.status, 200, await r.clone().text());
    return ((await r.json()) as { id: number }).id;
  }

  it('basic auth: the password comes from the environment and never shows in an error', async () => {
    const password = 'sr-secret-p4ss';
    const id = await register(`Basic ${Buffer.from(`floe:${password}`).toString('base64')}`);
    process.env.FLOE_TEST_SR_PASSWORD = password;
    const ok = new SchemaRegistryClient({ url: base, basic: { username: { value: 'floe' }, password: { env: 'FLOE_TEST_SR_PASSWORD' } } });
    const w = ok.writerOf({ id, indexes: [], payload: Buffer.alloc(0) }, 'avro');
    assert.ok(w instanceof Promise, 'first sight of the id fetches it');
    await w;
    const got = ok.writerOf({ id, indexes: [], payload: Buffer.alloc(0) }, 'avro');
    assert.ok(typeof got === 'object' && !(got instanceof Promise) && !(got.derived instanceof Error));
    assert.deepEqual(
      (got as { derived: Array<{ name: string }> }).derived.map((d) => d.name),
      ['n'],
    );

    process.env.FLOE_TEST_SR_PASSWORD = 'wrong-password';
    const bad = new SchemaRegistryClient({ url: base, basic: { username: { value: 'floe' }, password: { env: 'FLOE_TEST_SR_PASSWORD' } } });
    const err = await (bad.writerOf({ id, indexes: [], payload: Buffer.alloc(0) }, 'avro') as Promise<unknown>).then(
      () => undefined,
      (e: Error) => e,
    );
    assert.ok(err instanceof Error);
    assert.match(err.message, /fetching schema id \d+ failed: .*Unauthorized/);
    assert.doesNotMatch(err.message, /wrong-password|sr-secret/);
    delete process.env.FLOE_TEST_SR_PASSWORD;
  });

  it('bearer token: sent as Authorization: Bearer, read from the environment', async () => {
    const id = await register('Bearer tok-123');
    process.env.FLOE_TEST_SR_TOKEN = 'tok-123';
    const c = new SchemaRegistryClient({ url: base, token: { env: 'FLOE_TEST_SR_TOKEN' } });
    await (c.writerOf({ id, indexes: [], payload: Buffer.alloc(0) }, 'avro') as Promise<unknown>);
    assert.equal(seen.at(-1), 'Bearer tok-123');
    const latest = await c.latest('does-not-exist-value', 'avro');
    assert.equal(latest, undefined, 'a missing subject is undefined, not an error');
    delete process.env.FLOE_TEST_SR_TOKEN;
  });
});
