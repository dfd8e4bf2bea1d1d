/**
 * How the config's `s3` and `temporal` sections become connection settings: which S3 credentials
 * source applies (local stack, keys by reference, the AWS chain) and the Temporal precedence
 * (floe config / FLOE_TEMPORAL_* > TEMPORAL_* env > the Temporal CLI's profile > local stack),
 * with TLS and API key from the CLI's environment and TOML profile. No network.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../../config';
import { resolveTemporalTarget } from '../../client/connection';
import { s3Options, storageCredentialsRequired } from '../../table/storage';
import { S3FileIO } from '../../iceberg';

const dir = mkdtempSync(join(tmpdir(), 'floe-conn-'));
const file = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

/** parseConfig with `env` as the whole process environment (load.ts reads process.env). */
function withEnv<T>(env: Record<string, string>, fn: () => T): T {
  const saved = { ...process.env };
  for (const k of Object.keys(process.env)) if (/^(FLOE_|TEMPORAL_|AWS_)/.test(k)) delete process.env[k];
  Object.assign(process.env, env);
  try {
    return fn();
  } finally {
    for (const k of Object.keys(process.env)) delete process.env[k];
    Object.assign(process.env, saved);
  }
}

/** parseConfig with no FLOE_*, TEMPORAL_* or AWS_* variable of the runner's environment. */
const parse = (raw: unknown) => withEnv({}, () => parseConfig(raw));

describe('s3 credentials', () => {
  it("no s3 section is the local stack: its endpoint and keys (FLOE_S3_* overrides, else the stack's defaults)", () => {
    const cfg = withEnv({}, () => parseConfig({}));
    assert.deepEqual(cfg.s3.credentials, { source: 'local-stack' });
    assert.deepEqual(s3Options(cfg.s3, {}), {
      endpoint: 'http://127.0.0.1:8333',
      region: 'us-east-1',
      forcePathStyle: true,
      accessKeyId: 'floe',
      secretAccessKey: 'floe-secret',
    });
    const o = s3Options(cfg.s3, { FLOE_S3_ACCESS_KEY: 'k', FLOE_S3_SECRET_KEY: 's' });
    assert.equal(o.accessKeyId, 'k');
    assert.equal(o.secretAccessKey, 's');
  });

  it('an s3 section without keys is the AWS chain: no endpoint, region or keys of the local stack, never FLOE_S3_*', () => {
    const cfg = withEnv({ FLOE_S3_ENDPOINT: 'http://stack:8333', FLOE_S3_ACCESS_KEY: 'k', FLOE_S3_SECRET_KEY: 's' }, () =>
      parseConfig({ s3: { region: 'eu-west-1' } }),
    );
    assert.deepEqual(cfg.s3, { region: 'eu-west-1', forcePathStyle: false, credentials: { source: 'chain' } });
    assert.deepEqual(s3Options(cfg.s3, { FLOE_S3_ACCESS_KEY: 'k', FLOE_S3_SECRET_KEY: 's' }), {
      region: 'eu-west-1',
      forcePathStyle: false,
    });
    const withProfile = parse({ s3: { endpoint: 'http://minio:9000', profile: 'prod' } });
    assert.deepEqual(s3Options(withProfile.s3, {}), { endpoint: 'http://minio:9000', forcePathStyle: true, profile: 'prod' });
    const io = new S3FileIO(s3Options(withProfile.s3, {}));
    assert.equal(io.credentialSource, 'chain');
    io.client.destroy();
  });

  it('keys by reference are read when the options are built, and a missing one names the key and the variable, not a value', () => {
    const secretFile = file('s3-secret', 'from-a-file\n');
    const cfg = parse({
      s3: { endpoint: 'https://s3.example', accessKeyIdEnv: 'MY_KEY', secretAccessKeyFile: secretFile, sessionTokenEnv: 'MY_TOKEN' },
    });
    assert.deepEqual(cfg.s3.credentials, {
      source: 'keys',
      accessKeyId: { env: 'MY_KEY' },
      secretAccessKey: { file: secretFile },
      sessionToken: { env: 'MY_TOKEN' },
    });
    assert.ok(!JSON.stringify(cfg).includes('from-a-file'), 'the parsed config holds the reference, not the secret');
    const o = s3Options(cfg.s3, { MY_KEY: 'AKIA1', MY_TOKEN: 'tok' });
    assert.equal(o.accessKeyId, 'AKIA1');
    assert.equal(o.secretAccessKey, 'from-a-file');
    assert.equal(o.sessionToken, 'tok');
    assert.equal(new S3FileIO(o).credentialSource, 'static');
    assert.throws(
      () => s3Options(cfg.s3, { MY_TOKEN: 'tok' }),
      /^SecretError: config s3\.accessKeyIdEnv: environment variable MY_KEY is not set$/,
    );
    const gone = parse({ s3: { accessKeyIdEnv: 'MY_KEY', secretAccessKeyFile: join(dir, 'nope') } });
    assert.throws(() => s3Options(gone.s3, { MY_KEY: 'AKIA1' }), /config s3\.secretAccessKeyFile: cannot read .*nope: ENOENT/);
  });

  it('withOptions keeps the store and swaps the credentials (a table with its own keys)', () => {
    const base = new S3FileIO({
      endpoint: 'http://127.0.0.1:8333',
      forcePathStyle: true,
      accessKeyId: 'a',
      secretAccessKey: 'b',
      maxAttempts: 2,
    });
    const vended = base.withOptions({
      credentials: async () => ({ accessKeyId: 'v', secretAccessKey: 'w', expiration: new Date(Date.now() + 3600_000) }),
    });
    assert.equal(vended.credentialSource, 'provider');
    assert.equal(base.withOptions({ accessKeyId: 'x', secretAccessKey: 'y' }).credentialSource, 'static');
    base.client.destroy();
    vended.client.destroy();
  });

  it('which configs must hold S3 credentials of their own at worker start', () => {
    const rest = (properties: Record<string, string>, extra: Record<string, unknown> = {}) =>
      parse({
        s3: { region: 'eu-west-1' },
        catalog: { type: 'rest', uri: 'https://cat.example', warehouse: 'lake', properties, ...extra },
      });
    // Glue / S3 Tables: the catalog places tables, and SigV4 signs with the same AWS credentials.
    assert.equal(storageCredentialsRequired(rest({ 'rest.sigv4-enabled': 'true', 'rest.signing-name': 'glue' })), true);
    // An OAuth2 catalog that places tables may vend each table's keys: none required of the process.
    assert.equal(storageCredentialsRequired(rest({ scope: 'PRINCIPAL_ROLE:ALL' })), false);
    // A location base on S3: every write needs them.
    assert.equal(storageCredentialsRequired(rest({}, { location: 's3://lake/tables' })), true);
    assert.equal(
      storageCredentialsRequired(parse({ s3: {}, catalog: { type: 'sql', uri: 'sqlite:///x.db', warehouse: 's3://b/w' } })),
      true,
    );
    assert.equal(storageCredentialsRequired(parse({ catalog: { type: 'sql', uri: 'sqlite:///x.db', warehouse: 'file:///tmp/w' } })), false);
    // Keys named in the config are read at start whatever the catalog (a missing variable fails there).
    const keyed = parse({
      s3: { accessKeyIdEnv: 'MY_KEY', secretAccessKeyEnv: 'MY_SECRET' },
      catalog: { type: 'rest', uri: 'https://cat.example', warehouse: 'lake' },
    });
    assert.equal(storageCredentialsRequired(keyed), true);
  });
});

describe('temporal connection', () => {
  const toml = file(
    'temporal.toml',
    `[profile.default]
address = "default.example:7233"
namespace = "from-default-profile"

[profile.cloud]
address = "ns.acct.tmprl.cloud:7233"
namespace = "ns.acct"
api_key = "profile-api-key"

[profile.mtls]
address = "127.0.0.1:7243"
[profile.mtls.tls]
server_ca_cert_path = "${file('ca.pem', 'CA PEM')}"
client_cert_path = "${file('client.pem', 'CERT PEM')}"
client_key_path = "${file('client-key.pem', 'KEY PEM')}"
server_name = "localhost"
`,
  );

  it('without any setting: the local stack, plaintext', () => {
    const cfg = withEnv({}, () => parseConfig({}));
    const t = resolveTemporalTarget(cfg.temporal, { TEMPORAL_CONFIG_FILE: join(dir, 'absent.toml') });
    assert.equal(t.address, '127.0.0.1:7233');
    assert.equal(t.namespace, 'default');
    assert.equal(t.tls, undefined);
    assert.match(t.describe, /plaintext/);
  });

  it('precedence: floe config > FLOE_TEMPORAL_* > TEMPORAL_* > the CLI profile > default', () => {
    const env = { TEMPORAL_CONFIG_FILE: toml };
    assert.equal(resolveTemporalTarget(parse({}).temporal, env).address, 'default.example:7233');
    assert.equal(resolveTemporalTarget(parse({}).temporal, { ...env, TEMPORAL_ADDRESS: 'env:1' }).address, 'env:1');
    const fromFloeEnv = withEnv({ FLOE_TEMPORAL_ADDRESS: 'floe-env:1' }, () => parseConfig({}));
    assert.equal(resolveTemporalTarget(fromFloeEnv.temporal, { ...env, TEMPORAL_ADDRESS: 'env:1' }).address, 'floe-env:1');
    const explicit = withEnv({ FLOE_TEMPORAL_ADDRESS: 'floe-env:1' }, () => parse({ temporal: { address: 'cfg:1', namespace: 'cfg-ns' } }));
    const t = resolveTemporalTarget(explicit.temporal, { ...env, TEMPORAL_ADDRESS: 'env:1', TEMPORAL_NAMESPACE: 'env-ns' });
    assert.equal(t.address, 'cfg:1');
    assert.equal(t.namespace, 'cfg-ns');
    assert.equal(resolveTemporalTarget(parse({}).temporal, { ...env, TEMPORAL_NAMESPACE: 'env-ns' }).namespace, 'env-ns');
  });

  it('a profile by TEMPORAL_PROFILE or temporal.profile: API key means TLS with system roots; the key never in describe', () => {
    const byEnv = resolveTemporalTarget(parse({}).temporal, { TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'cloud' });
    const byKey = resolveTemporalTarget(parse({ temporal: { profile: 'cloud' } }).temporal, { TEMPORAL_CONFIG_FILE: toml });
    for (const t of [byEnv, byKey]) {
      assert.equal(t.address, 'ns.acct.tmprl.cloud:7233');
      assert.equal(t.namespace, 'ns.acct');
      assert.equal(t.apiKey, 'profile-api-key');
      assert.equal(t.tls, true);
      assert.ok(!t.describe.includes('profile-api-key'), t.describe);
      assert.match(t.describe, /API key \(profile "cloud"/);
    }
    const envKey = resolveTemporalTarget(parse({}).temporal, { TEMPORAL_CONFIG_FILE: toml, TEMPORAL_API_KEY: 'env-secret-key' });
    assert.equal(envKey.apiKey, 'env-secret-key');
    assert.match(envKey.describe, /TLS \(system roots\), API key \(TEMPORAL_API_KEY\)/);
    assert.ok(!envKey.describe.includes('env-secret-key'));
  });

  it('mTLS from a profile and from TEMPORAL_TLS_* (env wins per field); files named, contents never shown', () => {
    const t = resolveTemporalTarget(parse({}).temporal, { TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'mtls' });
    assert.ok(t.tls && t.tls !== true);
    assert.equal(t.tls.serverNameOverride, 'localhost');
    assert.equal(t.tls.serverRootCACertificate?.toString(), 'CA PEM');
    assert.equal(t.tls.clientCertPair?.key.toString(), 'KEY PEM');
    assert.ok(!t.describe.includes('KEY PEM'));
    const otherKey = file('other-key.pem', 'OTHER KEY');
    const e = resolveTemporalTarget(parse({}).temporal, {
      TEMPORAL_CONFIG_FILE: toml,
      TEMPORAL_PROFILE: 'mtls',
      TEMPORAL_TLS_CLIENT_KEY_PATH: otherKey,
    });
    assert.ok(e.tls && e.tls !== true);
    assert.equal(e.tls.clientCertPair?.key.toString(), 'OTHER KEY');
    assert.match(e.describe, /client certificate .*client\.pem/);
    const data = resolveTemporalTarget(parse({}).temporal, {
      TEMPORAL_CONFIG_FILE: join(dir, 'absent.toml'),
      TEMPORAL_ADDRESS: 'h:1',
      TEMPORAL_TLS_SERVER_CA_CERT_DATA: 'CA FROM ENV',
    });
    assert.ok(data.tls && data.tls !== true);
    assert.equal(data.tls.serverRootCACertificate?.toString(), 'CA FROM ENV');
    assert.match(data.describe, /server CA TEMPORAL_TLS_SERVER_CA_CERT_DATA/);
    assert.ok(!data.describe.includes('CA FROM ENV'));
  });

  it('fails naming what is wrong: an absent profile, an unreadable certificate, a certificate without its key', () => {
    assert.throws(
      () => resolveTemporalTarget(parse({ temporal: { profile: 'nope' } }).temporal, { TEMPORAL_CONFIG_FILE: toml }),
      /temporal: cannot load the Temporal CLI profile "nope" of .*temporal\.toml \(config temporal\.profile\): Profile 'nope' not found/,
    );
    assert.throws(
      () =>
        resolveTemporalTarget(parse({}).temporal, {
          TEMPORAL_CONFIG_FILE: toml,
          TEMPORAL_PROFILE: 'mtls',
          TEMPORAL_TLS_SERVER_CA_CERT_PATH: join(dir, 'gone.pem'),
        }),
      /temporal TLS: cannot read the server CA certificate TEMPORAL_TLS_SERVER_CA_CERT_PATH=.*gone\.pem: ENOENT/,
    );
    assert.throws(
      () =>
        resolveTemporalTarget(parse({}).temporal, {
          TEMPORAL_CONFIG_FILE: join(dir, 'absent.toml'),
          TEMPORAL_TLS_CLIENT_CERT_PATH: join(dir, 'client.pem'),
        }),
      /a client certificate needs its key/,
    );
  });
});
