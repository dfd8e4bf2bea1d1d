/**
 * Kafka security without a broker: `kafka.ssl` / `kafka.sasl` parsing (every bad key fails naming
 * it; secrets only by reference), reading the references, the token providers (command, caching,
 * MSK IAM through AWS's signer) and the classification of TLS / SASL failures.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../../config';
import {
  awsMskToken,
  cachingTokenProvider,
  commandToken,
  kafkaClientConfig,
  kafkaSaslOptions,
  kafkaTlsOptions,
  readSecret,
  securityCause,
} from '../../ingest/kafka-security';

const kafka = (k: Record<string, unknown>) => parseConfig({ kafka: { brokers: ['b1:9096'], ...k } }).kafka;
const CERT = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
const KEY = '-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n';

describe('kafka.ssl / kafka.sasl config', () => {
  it('reads ssl: true, every ssl key, and each mechanism, keeping secrets as references', () => {
    assert.deepEqual(kafka({ ssl: true }).ssl, { rejectUnauthorized: true });
    assert.equal(kafka({ ssl: false }).ssl, undefined);
    assert.equal(kafka({}).sasl, undefined);
    assert.deepEqual(
      kafka({ ssl: { caFile: '/ca.pem', certEnv: 'CERT', keyEnv: 'KEY', rejectUnauthorized: false, servername: 'kafka.internal' } }).ssl,
      { ca: { file: '/ca.pem' }, cert: { env: 'CERT' }, key: { env: 'KEY' }, rejectUnauthorized: false, servername: 'kafka.internal' },
    );
    assert.deepEqual(kafka({ sasl: { mechanism: 'SCRAM-SHA-512', username: 'floe', passwordEnv: 'KAFKA_PASSWORD' } }).sasl, {
      mechanism: 'scram-sha-512',
      username: 'floe',
      password: { env: 'KAFKA_PASSWORD' },
    });
    assert.deepEqual(kafka({ sasl: { mechanism: 'plain', usernameEnv: 'CC_KEY', passwordFile: '/run/secrets/cc' } }).sasl, {
      mechanism: 'plain',
      username: { env: 'CC_KEY' },
      password: { file: '/run/secrets/cc' },
    });
    assert.deepEqual(kafka({ sasl: { mechanism: 'oauthbearer', tokenCommand: ['get-token', '--audience', 'kafka'] } }).sasl, {
      mechanism: 'oauthbearer',
      tokenCommand: ['get-token', '--audience', 'kafka'],
    });
    assert.deepEqual(kafka({ sasl: { mechanism: 'oauthbearer', tokenCommand: '/bin/token' } }).sasl?.tokenCommand, ['/bin/token']);
    assert.deepEqual(kafka({ sasl: { mechanism: 'aws', region: 'eu-west-1' } }).sasl, { mechanism: 'aws', region: 'eu-west-1' });
    assert.deepEqual(kafka({ sasl: { mechanism: 'aws' } }).sasl, { mechanism: 'aws' });
  });

  const bad: Array<[string, Record<string, unknown>, RegExp]> = [
    [
      'inline password',
      { sasl: { mechanism: 'plain', username: 'u', password: 'hunter2' } },
      /^config kafka\.sasl\.password: a password is never written in the config/,
    ],
    [
      'no password',
      { sasl: { mechanism: 'scram-sha-256', username: 'u' } },
      /^config kafka\.sasl\.passwordEnv: mechanism scram-sha-256 needs a password/,
    ],
    ['no username', { sasl: { mechanism: 'plain', passwordEnv: 'P' } }, /^config kafka\.sasl\.username: expected a non-empty string/],
    [
      'two usernames',
      { sasl: { mechanism: 'plain', username: 'u', usernameEnv: 'U', passwordEnv: 'P' } },
      /^config kafka\.sasl\.username: give one of/,
    ],
    [
      'both password refs',
      { sasl: { mechanism: 'plain', username: 'u', passwordEnv: 'P', passwordFile: '/p' } },
      /^config kafka\.sasl\.passwordFile: give either passwordFile or passwordEnv/,
    ],
    [
      'bad env name',
      { sasl: { mechanism: 'plain', username: 'u', passwordEnv: 'my password' } },
      /^config kafka\.sasl\.passwordEnv: expected the name of an environment variable/,
    ],
    [
      'unknown mechanism',
      { sasl: { mechanism: 'gssapi' } },
      /^config kafka\.sasl\.mechanism: expected plain, scram-sha-256, scram-sha-512, oauthbearer, aws, found "gssapi"/,
    ],
    ['no mechanism', { sasl: { username: 'u' } }, /^config kafka\.sasl\.mechanism: expected a non-empty string/],
    [
      'typo in sasl',
      { sasl: { mechanism: 'plain', username: 'u', paswordEnv: 'P' } },
      /^config kafka\.sasl\.paswordEnv: unknown key; did you mean "passwordEnv"\?$/,
    ],
    ['sasl not a mapping', { sasl: 'scram' }, /^config kafka\.sasl: expected a mapping/],
    [
      'token for scram',
      { sasl: { mechanism: 'scram-sha-512', username: 'u', passwordEnv: 'P', tokenCommand: ['t'] } },
      /^config kafka\.sasl\.tokenCommand: only for mechanism oauthbearer, not scram-sha-512/,
    ],
    [
      'password for oauth',
      { sasl: { mechanism: 'oauthbearer', tokenCommand: ['t'], passwordEnv: 'P' } },
      /^config kafka\.sasl\.passwordEnv: only for mechanism plain/,
    ],
    [
      'oauth without provider',
      { sasl: { mechanism: 'oauthbearer' } },
      /^config kafka\.sasl\.tokenCommand: mechanism oauthbearer needs a token provider/,
    ],
    [
      'empty command',
      { sasl: { mechanism: 'oauthbearer', tokenCommand: [] } },
      /^config kafka\.sasl\.tokenCommand: expected a command as a list of strings/,
    ],
    [
      'region for plain',
      { sasl: { mechanism: 'plain', username: 'u', passwordEnv: 'P', region: 'x' } },
      /^config kafka\.sasl\.region: only for mechanism aws/,
    ],
    ['ssl a string', { ssl: 'yes' }, /^config kafka\.ssl: expected true, false or a mapping, found "yes"/],
    ['typo in ssl', { ssl: { cafile: '/ca.pem' } }, /^config kafka\.ssl\.cafile: unknown key; did you mean "caFile"\?$/],
    [
      'inline ca',
      { ssl: { ca: CERT } },
      /^config kafka\.ssl\.ca: PEM is not written in the config: name a file \(caFile\) or an environment variable holding it \(caEnv\)$/,
    ],
    ['both ca refs', { ssl: { caFile: '/a', caEnv: 'B' } }, /^config kafka\.ssl\.caFile: give either caFile or caEnv, not both/],
    ['cert without key', { ssl: { certFile: '/c' } }, /^config kafka\.ssl\.keyFile: a client certificate needs its key/],
    ['key without cert', { ssl: { keyEnv: 'K' } }, /^config kafka\.ssl\.certFile: a client certificate needs its key/],
    [
      'rejectUnauthorized not a boolean',
      { ssl: { rejectUnauthorized: 'no' } },
      /^config kafka\.ssl\.rejectUnauthorized: expected true or false/,
    ],
    ['unknown kafka key', { security: {} }, /^config kafka\.security: unknown key/],
  ];
  for (const [what, k, re] of bad) {
    it(`refuses ${what}, naming the key`, () => {
      assert.throws(
        () => kafka(k),
        (e: Error) => e.name === 'ConfigError' && re.test(e.message) && !e.message.includes('hunter2'),
      );
    });
  }
});

describe('reading kafka secrets (in the worker process)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'floe-ksec-unit-'));
  const file = (name: string, text: string) => {
    writeFileSync(join(dir, name), text);
    return join(dir, name);
  };

  it('reads env and files; a missing variable or file fails naming the key, never a value', () => {
    assert.equal(readSecret({ env: 'X' }, 'kafka.sasl.passwordEnv', { X: 's3cret' }), 's3cret');
    assert.throws(
      () => readSecret({ env: 'X' }, 'kafka.sasl.passwordEnv', {}),
      /config kafka\.sasl\.passwordEnv: environment variable X is not set/,
    );
    assert.throws(
      () => readSecret({ file: join(dir, 'nope') }, 'kafka.sasl.passwordFile', {}),
      /config kafka\.sasl\.passwordFile: cannot read .*nope \(ENOENT\)/,
    );
    const sasl = kafka({ sasl: { mechanism: 'scram-sha-256', username: 'u', passwordFile: file('pw', 's3cret\n') } }).sasl!;
    assert.deepEqual(kafkaSaslOptions(sasl, {}), { mechanism: 'scram-sha-256', username: 'u', password: 's3cret' });
    const viaEnv = kafka({ sasl: { mechanism: 'plain', usernameEnv: 'U', passwordEnv: 'P' } }).sasl!;
    assert.deepEqual(kafkaSaslOptions(viaEnv, { U: 'key', P: 'secret' }), { mechanism: 'plain', username: 'key', password: 'secret' });
  });

  it('checks PEM shape without echoing the content', () => {
    const ssl = kafka({ ssl: { caFile: file('ca.pem', CERT), certEnv: 'C', keyEnv: 'K' } }).ssl!;
    assert.deepEqual(kafkaTlsOptions(ssl, { C: CERT, K: KEY }), { rejectUnauthorized: true, ca: [CERT], cert: CERT, key: KEY });
    assert.throws(
      () => kafkaTlsOptions(ssl, { C: CERT, K: 'hunter2' }),
      (e: Error) => /^config kafka\.ssl\.keyEnv: expected PEM/.test(e.message) && !e.message.includes('hunter2'),
    );
    const cfg = kafkaClientConfig(kafka({ ssl: true, sasl: { mechanism: 'plain', username: 'u', passwordEnv: 'P' } }), { env: { P: 'x' } });
    assert.deepEqual(cfg.ssl, { rejectUnauthorized: true });
    assert.deepEqual(cfg.brokers, ['b1:9096']);
    assert.deepEqual(cfg.sasl, { mechanism: 'plain', username: 'u', password: 'x' });
    rmSync(dir, { recursive: true, force: true });
  });
});

describe('OAUTHBEARER token providers', () => {
  it('a token command prints the token, or JSON with its expiry; failures name the command, not output', async () => {
    assert.deepEqual(await commandToken([process.execPath, '-e', 'console.log("tok123")']), { value: 'tok123' });
    assert.deepEqual(await commandToken([process.execPath, '-e', 'console.log(JSON.stringify({token: "t", expiresAt: 5000}))']), {
      value: 't',
      expiresAtMs: 5000,
    });
    const j = await commandToken([process.execPath, '-e', 'console.log(JSON.stringify({access_token: "a", expires_in: 60}))']);
    assert.equal(j.value, 'a');
    assert.ok(j.expiresAtMs! > Date.now() + 50_000);
    await assert.rejects(commandToken([process.execPath, '-e', 'process.exit(3)']), /kafka\.sasl\.tokenCommand \(.*\) failed \(3\)/);
    await assert.rejects(commandToken([process.execPath, '-e', '']), /printed no token/);
    await assert.rejects(
      commandToken(['/nonexistent/token-helper']),
      /kafka\.sasl\.tokenCommand \(\/nonexistent\/token-helper\) failed \(ENOENT\)/,
    );
    await assert.rejects(
      commandToken([process.execPath, '-e', 'console.log("{\\"secret\\": \\"hunter2\\"")']),
      (e: Error) => /starts like JSON but is not|without a "token"/.test(e.message) && !e.message.includes('hunter2'),
    );
  });

  it('caches a token until a minute before it expires (JWT exp or the given expiry); one fetch at a time', async () => {
    let now = 1_000_000;
    let fetches = 0;
    const jwt = (expS: number) =>
      `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ exp: expS })).toString('base64url')}.`;
    const provider = cachingTokenProvider(
      async () => {
        fetches++;
        return { value: jwt((now + 600_000) / 1000) };
      },
      () => now,
    );
    const [a, b] = await Promise.all([provider(), provider()]);
    assert.equal(fetches, 1);
    assert.equal(a.value, b.value);
    now += 500_000;
    await provider();
    assert.equal(fetches, 1, 'reused while more than a minute is left');
    now += 50_000;
    await provider();
    assert.equal(fetches, 2, 'refreshed within the last minute');
    let opaque = 0;
    const noExpiry = cachingTokenProvider(
      async () => ({ value: `opaque-${opaque++}` }),
      () => now,
    );
    await noExpiry();
    await noExpiry();
    assert.equal(opaque, 2, 'a token of unknown lifetime is not reused');
  });

  it("aws: an MSK IAM token signed by AWS's signer from the default credential chain (env keys here)", async () => {
    const saved = { ...process.env };
    Object.assign(process.env, { AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE', AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' });
    delete process.env.AWS_PROFILE;
    delete process.env.AWS_SESSION_TOKEN;
    try {
      const t = await awsMskToken('eu-west-1', {});
      const url = new URL(Buffer.from(t.value, 'base64url').toString('utf8'));
      assert.equal(url.host, 'kafka.eu-west-1.amazonaws.com');
      assert.equal(url.searchParams.get('Action'), 'kafka-cluster:Connect');
      assert.match(url.searchParams.get('X-Amz-Credential') ?? '', /^AKIDEXAMPLE\/\d{8}\/eu-west-1\/kafka-cluster\/aws4_request$/);
      assert.match(url.searchParams.get('X-Amz-Signature') ?? '', /^[0-9a-f]{64}$/);
      assert.ok(!t.value.includes('wJalrXUtnFEMI') && !url.toString().includes('wJalrXUtnFEMI'), 'the secret key is not in the token');
      assert.ok(t.expiresAtMs! > Date.now());
      await assert.rejects(awsMskToken(undefined, {}), /config kafka\.sasl\.region: mechanism aws needs the cluster region/);
    } finally {
      for (const k of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY']) delete process.env[k];
      Object.assign(process.env, saved);
    }
  });
});

describe('classifying Kafka security failures', () => {
  const k = kafka({ ssl: { caFile: '/etc/kafka/ca.pem' }, sasl: { mechanism: 'scram-sha-512', username: 'floe', passwordEnv: 'P' } });
  const connErr = (code: string, message: string) =>
    Object.assign(new Error(`Connection error: ${message}`), { name: 'KafkaJSConnectionError', code });

  it('an untrusted broker certificate, a refused handshake, a SASL refusal; a broker that is down is not one', () => {
    const untrusted = securityCause(connErr('SELF_SIGNED_CERT_IN_CHAIN', 'self-signed certificate in certificate chain'), k);
    assert.equal(untrusted?.kind, 'tls');
    assert.match(
      untrusted!.message,
      /^TLS: the broker's certificate is not trusted \(checked against kafka\.ssl\.caFile \/etc\/kafka\/ca\.pem\): SELF_SIGNED_CERT_IN_CHAIN/,
    );
    const alert = securityCause(connErr('ERR_SSL_SSL/TLS_ALERT_BAD_CERTIFICATE', 'alert bad certificate'), k);
    assert.match(alert!.message, /^TLS handshake refused by the broker/);
    // kafkajs wraps the last error of its retries.
    const wrapped = Object.assign(new Error('Connection error'), {
      name: 'KafkaJSNumberOfRetriesExceeded',
      cause: connErr('UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'x'),
    });
    assert.equal(securityCause(wrapped, k)?.kind, 'tls');
    const sasl = Object.assign(new Error('SASL SCRAM SHA512 authentication failed: invalid credentials'), {
      name: 'KafkaJSSASLAuthenticationError',
    });
    assert.match(securityCause(sasl, k)!.message, /^SCRAM-SHA-512 authentication as user "floe" failed: SASL SCRAM SHA512/);
    assert.equal(securityCause(connErr('ECONNREFUSED', 'connect ECONNREFUSED'), k), undefined);
    assert.equal(securityCause(Object.assign(new Error('Connection timeout'), { name: 'KafkaJSConnectionError' }), k), undefined);
  });
});
