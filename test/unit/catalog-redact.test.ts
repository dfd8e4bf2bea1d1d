/**
 * Secrets never in errors: a catalog URI's password (and REST tokens/credentials) must not appear
 * in an error's message, stack or cause chain, i.e. in anything a logger prints for it.
 */
import assert from 'node:assert/strict';
import { inspect } from 'node:util';
import { test } from 'node:test';
import {
  catalogFromConfig,
  validateCatalogConfig,
  configSecrets,
  redactError,
  redactSecrets,
  SqlCatalog,
  PostgresDialect,
  RestCatalog,
  MemoryFileIO,
} from '../../iceberg';

const PW = 'Sup3r-Secret-pw';

/** Everything a logger could print for `e`: message, stack, own properties, the whole cause chain. */
const printed = (e: unknown): string =>
  `${String((e as Error)?.message)}\n${String((e as Error)?.stack)}\n${inspect(e, { depth: 20, showHidden: true })}`;

void test('redactSecrets masks URI passwords (also with @ in them), key=value secrets and bearer tokens, and keeps the rest', () => {
  assert.equal(redactSecrets(`postgresql://floe:${PW}@127.0.0.1:5433/floe`), 'postgresql://floe:***@127.0.0.1:5433/floe');
  assert.equal(redactSecrets(`postgresql+psycopg2://u:p@ss@h/db and more`), 'postgresql+psycopg2://u:***@h/db and more');
  assert.equal(redactSecrets(`http://h/x?user=u&password=${PW}&sslmode=require`), 'http://h/x?user=u&password=***&sslmode=require');
  assert.equal(redactSecrets('Authorization: Bearer abc.def-ghi'), 'Authorization: Bearer ***');
  assert.equal(redactSecrets(`failed for ${PW} here`, [PW]), 'failed for *** here');
  assert.equal(redactSecrets('catalog "floe" of floe', ['floe']), 'catalog "floe" of floe', 'short secrets are masked only inside URIs');
  assert.equal(redactSecrets('sqlite:////home/u/.cache/floe/catalog.db'), 'sqlite:////home/u/.cache/floe/catalog.db');
  assert.deepEqual(configSecrets({ uri: `postgresql://u:${encodeURIComponent('p@ss/wd')}@h/db`, credential: 'id:s3cr3t', token: 'tok' }), [
    'p%40ss%2Fwd',
    'p@ss/wd',
    'tok',
    'id:s3cr3t',
    's3cr3t',
  ]);
});

void test('redactError copies message, stack and causes redacted, keeps error codes, never mutates the original', () => {
  const inner = Object.assign(new TypeError(`Invalid URL postgresql://u:${PW}@x`), {
    code: 'ERR_INVALID_URL',
    input: `postgresql://u:${PW}@x`,
  });
  const outer = new Error(`connect failed: ${PW}`, { cause: inner });
  const safe = redactError(outer, [PW]);
  assert.ok(!printed(safe).includes(PW), printed(safe));
  assert.equal((safe.cause as { code?: string }).code, 'ERR_INVALID_URL');
  assert.ok(inner.message.includes(PW), 'the original is untouched');
});

void test('a failing Postgres connect with a password in the URI: the error names the URI without the password', async () => {
  // Nothing listens on port 1: the connect fails before any authentication.
  const uri = `postgresql://floe:${PW}@127.0.0.1:1/floe`;
  await assert.rejects(catalogFromConfig({ type: 'sql', name: 'c', uri, warehouse: 'file:///w' }), (e: Error) => {
    assert.match(e.message, /postgresql:\/\/floe:\*\*\*@127\.0\.0\.1:1\/floe/);
    assert.match(e.message, /ECONNREFUSED/);
    assert.ok(!printed(e).includes(PW), printed(e));
    return true;
  });
  // The SqlCatalog's own errors (what activities and logs see), with and without the secret list.
  for (const secrets of [[PW], undefined]) {
    const cat = new SqlCatalog({
      name: 'c',
      dialect: new PostgresDialect({ connectionString: uri, connectTimeoutMs: 2000 }),
      io: new MemoryFileIO(),
      secrets,
    });
    await assert.rejects(cat.listNamespaces(), (e: Error) => {
      assert.ok(!printed(e).includes(PW), printed(e));
      return true;
    });
    await cat.close();
  }
});

void test('a Postgres URI node-postgres cannot parse: no password in the error or its causes', async () => {
  for (const uri of [`postgresql://u:${PW}@[bad/db`, `postgresql://u:${PW}@127.0.0.1:notaport/db`]) {
    await assert.rejects(catalogFromConfig({ type: 'sql', name: 'c', uri, warehouse: 'file:///w' }), (e: Error) => {
      assert.ok(!printed(e).includes(PW), printed(e));
      return true;
    });
  }
});

void test('a mistyped catalog URI is quoted back without its password', () => {
  assert.throws(
    () => validateCatalogConfig({ type: 'sql', name: 'c', uri: `mysql://u:${PW}@h/db`, warehouse: 'file:///w' }),
    (e: Error) => {
      assert.match(e.message, /"uri"/);
      assert.match(e.message, /mysql:\/\/u:\*\*\*@h\/db/);
      assert.ok(!printed(e).includes(PW));
      return true;
    },
  );
  assert.throws(
    () => new RestCatalog({ uri: `ftp://u:${PW}@h` }),
    (e: Error) => !printed(e).includes(PW),
  );
});

void test('REST catalog: credentials in the URI, a token and a client secret never reach the error', async () => {
  await assert.rejects(catalogFromConfig({ type: 'rest', uri: `http://u:${PW}@127.0.0.1:1` }), (e: Error) => {
    assert.ok(!printed(e).includes(PW), printed(e));
    return true;
  });
  // A server that echoes what it got (a misconfigured proxy): token and client secret masked.
  const echo: typeof fetch = async (_url, init) =>
    new Response(`rejected ${String(init?.body ?? '')} ${JSON.stringify(init?.headers ?? {})}`, { status: 403 });
  for (const opts of [{ token: `tok-${PW}` }, { credential: `client:${PW}` }]) {
    const cat = new RestCatalog({ uri: 'http://127.0.0.1:1', fetch: echo, ...opts });
    await assert.rejects(cat.listNamespaces(), (e: Error) => {
      assert.match(e.message, /403|rejected/);
      assert.ok(!printed(e).includes(PW), printed(e));
      return true;
    });
  }
});
