/**
 * The one place a kafkajs client is built from the config: TLS (CA, client certificate and key) and
 * SASL (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER through a token command, AWS MSK IAM through AWS's
 * signer). The config only names where secrets are (`kafka.sasl.passwordEnv`, `kafka.ssl.caFile`, …);
 * they are read here, in the worker (or CLI) process that builds the client, so they never enter
 * workflow inputs, history, errors or logs.
 *
 * `connectKafka` checks the security of the first reachable broker once with no retries: a wrong
 * password or an untrusted certificate fails in seconds with an error naming the broker and the
 * cause, instead of the client's retry loop (kafkajs retries TLS failures like any connection error).
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import { Kafka, logLevel, type KafkaConfig as KafkajsConfig, type OauthbearerProviderResponse, type SASLOptions } from 'kafkajs';
import { ConfigError } from '../config';
import { log, logLevel as floeLogLevel } from '../observability/log';
import { kafkaLogCreator, kafkaLogLevel } from '../observability/log-adapters';
import type { KafkaConfig, KafkaSaslConfig, KafkaSslConfig, SecretRef } from '../config';

/** A broker refused the client's credentials or certificate, or the client refused the broker's. */
export class KafkaSecurityError extends Error {
  constructor(
    readonly broker: string,
    readonly kind: 'tls' | 'sasl',
    message: string,
  ) {
    super(`Kafka broker ${broker}: ${message}`);
    this.name = 'KafkaSecurityError';
  }
}

/** `kafka.ssl.caFile` / `kafka.ssl.caEnv`: the config key a reference came from. */
const refKey = (section: string, base: string, ref: SecretRef) => `kafka.${section}.${base}${'file' in ref ? 'File' : 'Env'}`;

/** The value a reference names; a missing variable or unreadable file fails naming the key (never the value). */
export function readSecret(ref: SecretRef, key: string, env: NodeJS.ProcessEnv = process.env): string {
  if ('env' in ref) {
    const v = env[ref.env];
    if (v === undefined || v.trim() === '') throw ConfigError.problem(key, `environment variable ${ref.env} is not set (or empty)`);
    return v;
  }
  try {
    const v = readFileSync(ref.file, 'utf8');
    if (v.trim() === '') throw ConfigError.problem(key, `${ref.file} is empty`);
    return v;
  } catch (e) {
    if (e instanceof ConfigError) throw e;
    throw ConfigError.problem(key, `cannot read ${ref.file} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
}

function pem(ref: SecretRef, base: string, what: RegExp, expected: string, env: NodeJS.ProcessEnv): string {
  const key = refKey('ssl', base, ref);
  const v = readSecret(ref, key, env);
  if (!what.test(v))
    throw ConfigError.problem(key, `expected PEM (${expected}); what ${'file' in ref ? 'the file' : 'the variable'} holds is not`);
  return v;
}

const CERT = /-----BEGIN CERTIFICATE-----/;

/** Node TLS options for kafkajs `ssl`. */
export function kafkaTlsOptions(ssl: KafkaSslConfig, env: NodeJS.ProcessEnv = process.env): ConnectionOptions {
  return {
    rejectUnauthorized: ssl.rejectUnauthorized,
    ...(ssl.ca ? { ca: [pem(ssl.ca, 'ca', CERT, '-----BEGIN CERTIFICATE-----', env)] } : {}),
    ...(ssl.cert ? { cert: pem(ssl.cert, 'cert', CERT, '-----BEGIN CERTIFICATE-----', env) } : {}),
    ...(ssl.key ? { key: pem(ssl.key, 'key', /-----BEGIN [A-Z ]*PRIVATE KEY-----/, '-----BEGIN PRIVATE KEY-----', env) } : {}),
    ...(ssl.servername ? { servername: ssl.servername } : {}),
  };
}

/** A token and when it stops being valid (ms since the epoch), when known. */
interface BearerToken {
  value: string;
  expiresAtMs?: number;
}

/** `exp` of a JWT, in ms, or undefined for a token that is not one. */
function jwtExpiry(token: string): number | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  try {
    const exp = (JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as { exp?: unknown }).exp;
    return typeof exp === 'number' ? exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A provider that reuses its token until a minute before it expires (kafkajs asks on every new
 * connection and leaves caching to the provider); a token without a known expiry is not reused.
 */
export function cachingTokenProvider(fetch: () => Promise<BearerToken>, now = Date.now): () => Promise<OauthbearerProviderResponse> {
  let cached: { value: string; refreshAtMs: number } | undefined;
  let inFlight: Promise<OauthbearerProviderResponse> | undefined;
  return async () => {
    if (cached && now() < cached.refreshAtMs) return { value: cached.value };
    inFlight ??= (async () => {
      try {
        const t = await fetch();
        const expires = t.expiresAtMs ?? jwtExpiry(t.value);
        cached = expires === undefined ? undefined : { value: t.value, refreshAtMs: expires - Math.min(60_000, (expires - now()) / 5) };
        return { value: t.value };
      } finally {
        inFlight = undefined;
      }
    })();
    return inFlight;
  };
}

/**
 * Runs `kafka.sasl.tokenCommand` (no shell) and reads its stdout: the token itself, or JSON with
 * `token`, `value` or `access_token`, and optionally `expiresAt` (ms since the epoch or an ISO
 * time) or `expires_in` (seconds). A failure names the command and its exit, never a token.
 */
export function commandToken(argv: string[], env: NodeJS.ProcessEnv = process.env, timeoutMs = 30_000): Promise<BearerToken> {
  const [cmd, ...args] = argv;
  const what = `kafka.sasl.tokenCommand (${cmd})`;
  return new Promise((resolve, reject) => {
    execFile(cmd!, args, { env, timeout: timeoutMs, maxBuffer: 1 << 20, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err) {
        const how = err.killed ? `timed out after ${timeoutMs} ms` : `failed (${err.code ?? err.message})`;
        const last = stderr.trim().split('\n').at(-1)?.slice(0, 200);
        return reject(new Error(`${what} ${how}${last ? `: ${last}` : ''}`));
      }
      const out = stdout.trim();
      if (out === '') return reject(new Error(`${what} printed no token`));
      if (!out.startsWith('{')) return resolve({ value: out });
      try {
        const j = JSON.parse(out) as Record<string, unknown>;
        const value = [j.token, j.value, j.access_token].find((v): v is string => typeof v === 'string' && v.length > 0);
        if (value === undefined) return reject(new Error(`${what} printed JSON without a "token", "value" or "access_token" string`));
        const at = j.expiresAt;
        const expiresAtMs =
          typeof at === 'number'
            ? at
            : typeof at === 'string'
              ? Date.parse(at)
              : typeof j.expires_in === 'number'
                ? Date.now() + j.expires_in * 1000
                : undefined;
        resolve({ value, ...(expiresAtMs !== undefined && Number.isFinite(expiresAtMs) ? { expiresAtMs } : {}) });
      } catch {
        reject(new Error(`${what} printed something that starts like JSON but is not`));
      }
    });
  });
}

/** An MSK IAM token (a presigned kafka-cluster:Connect URL) from the AWS default credential chain. */
export async function awsMskToken(region: string | undefined, env: NodeJS.ProcessEnv = process.env): Promise<BearerToken> {
  const r = region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION;
  if (!r) throw ConfigError.problem('kafka.sasl.region', 'mechanism aws needs the cluster region: set it here or AWS_REGION');
  const { generateAuthToken } = await import('aws-msk-iam-sasl-signer-js');
  try {
    const t = await generateAuthToken({ region: r });
    return { value: t.token, expiresAtMs: t.expiryTime };
  } catch (e) {
    throw new Error(`kafka.sasl mechanism aws: no AWS credentials for an MSK IAM token (${(e as Error).message})`);
  }
}

/** kafkajs `sasl` options; secrets are read now. */
export function kafkaSaslOptions(sasl: KafkaSaslConfig, env: NodeJS.ProcessEnv = process.env): SASLOptions {
  switch (sasl.mechanism) {
    case 'plain':
    case 'scram-sha-256':
    case 'scram-sha-512': {
      const u = sasl.username!;
      const username = typeof u === 'string' ? u : readSecret(u, refKey('sasl', 'username', u), env).trim();
      const password = readSecret(sasl.password!, refKey('sasl', 'password', sasl.password!), env).replace(/\r?\n$/, '');
      return { mechanism: sasl.mechanism, username, password };
    }
    case 'oauthbearer': {
      const argv = sasl.tokenCommand!;
      return { mechanism: 'oauthbearer', oauthBearerProvider: cachingTokenProvider(() => commandToken(argv, env)) };
    }
    case 'aws':
      return { mechanism: 'oauthbearer', oauthBearerProvider: cachingTokenProvider(() => awsMskToken(sasl.region, env)) };
  }
}

interface KafkaClientOptions {
  /** kafkajs client retries (default 8: a broker restart is waited out). */
  retries?: number;
  connectionTimeoutMs?: number;
  env?: NodeJS.ProcessEnv;
}

/** The kafkajs config for `k`, with its secrets read. */
export function kafkaClientConfig(k: KafkaConfig, o: KafkaClientOptions = {}): KafkajsConfig {
  const env = o.env ?? process.env;
  return {
    clientId: k.clientId,
    brokers: k.brokers,
    // kafkajs through floe's logger: warnings and errors by default (FLOE_LOG_LEVEL), as JSON or text.
    logLevel: kafkaLogLevel(floeLogLevel(env)),
    logCreator: kafkaLogCreator(log),
    retry: { retries: o.retries ?? 8 },
    ...(o.connectionTimeoutMs ? { connectionTimeout: o.connectionTimeoutMs } : {}),
    ...(k.ssl ? { ssl: kafkaTlsOptions(k.ssl, env) } : {}),
    ...(k.sasl ? { sasl: kafkaSaslOptions(k.sasl, env), authenticationTimeout: 10_000 } : {}),
  };
}

/** Every place floe talks to Kafka builds its client here (ingest, backfill, admin, lag mirroring, CLI). */
export function createKafkaClient(k: KafkaConfig, o: KafkaClientOptions = {}): Kafka {
  return new Kafka(kafkaClientConfig(k, o));
}

// Node's codes for a broker certificate it cannot verify, and OpenSSL's for a TLS alert or handshake
// failure (the broker refusing the client's certificate or lack of one, or a listener without TLS).
const UNTRUSTED = /^(UNABLE_TO_|SELF_SIGNED_|DEPTH_ZERO_|CERT_|ERR_TLS_CERT_ALTNAME_INVALID|HOSTNAME_MISMATCH)/;
const HANDSHAKE = /^(ERR_SSL_|EPROTO$|ERR_TLS_)/;

/** What went wrong, in words, when it is a security failure (else undefined: the broker may just be down). */
export function securityCause(e: unknown, k: KafkaConfig): { kind: 'tls' | 'sasl'; message: string } | undefined {
  // kafkajs wraps the last error of its retries in KafkaJSNumberOfRetriesExceeded (as `cause`).
  let err = e as { name?: string; message?: string; code?: string; cause?: unknown };
  while (err.name === 'KafkaJSNumberOfRetriesExceeded' && err.cause && err.cause !== err) err = err.cause as typeof err;
  const message = err.message ?? String(e);
  if (err.name === 'KafkaJSSASLAuthenticationError' || /^kafka\.sasl/.test(message) || /SASL/.test(message)) {
    const user = k.sasl && typeof k.sasl.username === 'string' ? ` as user "${k.sasl.username}"` : '';
    const mech = k.sasl ? k.sasl.mechanism.toUpperCase() : 'SASL';
    return { kind: 'sasl', message: `${mech} authentication${user} failed: ${message}` };
  }
  if (err.name === 'KafkaJSConnectionError' && typeof err.code === 'string' && (UNTRUSTED.test(err.code) || HANDSHAKE.test(err.code))) {
    const detail = `${err.code}: ${message.replace(/^Connection error: /, '').trim()}`;
    if (UNTRUSTED.test(err.code)) {
      const ca = k.ssl?.ca;
      const against = ca
        ? `checked against ${'file' in ca ? `kafka.ssl.caFile ${ca.file}` : `kafka.ssl.caEnv ${ca.env}`}`
        : "checked against Node's default CAs; set kafka.ssl.caFile or caEnv for a private CA";
      return { kind: 'tls', message: `TLS: the broker's certificate is not trusted (${against}): ${detail}` };
    }
    const client = k.ssl?.cert
      ? 'it refused the client certificate (kafka.ssl.certFile/certEnv)'
      : 'it may require a client certificate (kafka.ssl.certFile and keyFile)';
    return { kind: 'tls', message: `TLS handshake refused by the broker (${client}, or the listener does not speak TLS): ${detail}` };
  }
  return undefined;
}

/**
 * Checks once, with no retries, that the first broker that answers accepts this client's TLS and
 * SASL; a refusal throws a KafkaSecurityError naming the broker and the cause. Brokers that do not
 * answer at all are left to the caller's retrying client (a cluster still starting is not a
 * security problem). A config without ssl or sasl is not checked.
 */
async function checkKafkaSecurity(k: KafkaConfig, o: KafkaClientOptions = {}): Promise<void> {
  if (!k.ssl && !k.sasl) return;
  const probe = kafkaClientConfig(k, { ...o, retries: 0, connectionTimeoutMs: o.connectionTimeoutMs ?? 10_000 });
  const password = probe.sasl && 'password' in probe.sasl ? probe.sasl.password : undefined;
  // kafkajs' messages hold no password; this keeps it that way whatever the broker answers.
  const redact = (m: string) => (password ? m.split(password).join('***') : m);
  for (const broker of k.brokers) {
    // The probe's own refusals become the error below, not log lines.
    const admin = new Kafka({ ...probe, brokers: [broker], logLevel: logLevel.NOTHING }).admin();
    try {
      await admin.connect();
      return;
    } catch (e) {
      const cause = securityCause(e, k);
      if (cause) throw new KafkaSecurityError(broker, cause.kind, redact(cause.message));
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  }
}

/** A client for `k` after checking its security once (fails fast on a wrong password or an untrusted certificate). */
export async function connectKafka(k: KafkaConfig, o: KafkaClientOptions = {}): Promise<Kafka> {
  await checkKafkaSecurity(k, o);
  return createKafkaClient(k, o);
}
