/**
 * The REST catalog's keys in floe's config: OAuth2 client credentials and tokens only by reference
 * (an inline client secret is refused by name), Iceberg catalog properties passed through, and
 * REST-only keys refused on a SQL catalog, each error naming the key.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseConfig } from '../../config';

const rest = (extra: Record<string, unknown>) => ({
  catalog: { type: 'rest', uri: 'https://polaris.example/api/catalog', warehouse: 's3://b/wh', ...extra },
});

test('credentialEnv / credentialFile / tokenFile and properties are read; nothing secret is in the parsed config', () => {
  const cfg = parseConfig(
    rest({
      credentialEnv: 'POLARIS_CREDENTIAL',
      properties: { 'oauth2-server-uri': 'https://idp.example/token', scope: 'PRINCIPAL_ROLE:ALL', 'rest.sigv4-enabled': 'false' },
    }),
  );
  assert.deepEqual(cfg.catalog.credential, { env: 'POLARIS_CREDENTIAL' });
  assert.equal(cfg.catalog.properties?.['scope'], 'PRINCIPAL_ROLE:ALL');
  assert.deepEqual(parseConfig(rest({ credentialFile: '/run/secrets/catalog' })).catalog.credential, { file: '/run/secrets/catalog' });
  assert.deepEqual(parseConfig(rest({ tokenFile: '/run/secrets/token' })).catalog.tokenRef, { file: '/run/secrets/token' });
});

test('bad REST catalog auth fails at load naming the key', () => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [rest({ credential: 'id:secret' }), /config catalog\.credential: a client secret is never written in the config/],
    [rest({ credentialEnv: 'A', credentialFile: '/f' }), /config catalog\.credentialFile: give either credentialFile or credentialEnv/],
    [rest({ credentialEnv: 'A', tokenEnv: 'B' }), /config catalog\.credentialEnv: one way to authenticate/],
    [rest({ credentialEnv: 'not a name' }), /config catalog\.credentialEnv: expected the name of an environment variable/],
    [rest({ properties: { credential: 'id:secret' } }), /config catalog\.properties\.credential: no secret in properties/],
    [rest({ properties: { 'rest.sigv4-enabled': 'yes' } }), /config catalog\.properties\.rest\.sigv4-enabled: expected "true" or "false"/],
    [{ catalog: { type: 'sql', credentialEnv: 'A' } }, /config catalog\.credentialEnv: only for a catalog of type rest/],
  ];
  for (const [raw, re] of cases) assert.throws(() => parseConfig(raw), re, JSON.stringify(raw));
  // The refused inline secret is never echoed back.
  assert.throws(
    () => parseConfig(rest({ credential: 'id:hunter2' })),
    (e: Error) => !e.message.includes('hunter2'),
  );
});
