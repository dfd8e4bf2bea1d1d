/**
 * The Temporal connection, resolved as the `temporal` CLI resolves it (`@temporalio/envconfig`):
 * a profile of the CLI's TOML file (TEMPORAL_CONFIG_FILE, else ~/.config/temporalio/temporal.toml;
 * profile `temporal.profile`, else TEMPORAL_PROFILE, else "default") overlaid with TEMPORAL_ADDRESS,
 * TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS, TEMPORAL_TLS_* and TEMPORAL_GRPC_META_*.
 * floe's own `temporal.address` / `temporal.namespace` (or FLOE_TEMPORAL_ADDRESS / FLOE_TEMPORAL_NAMESPACE) win over both, as the
 * CLI's flags do; the local stack's 127.0.0.1:7233 / default fill what nothing sets. The worker,
 * the client, the CLI and schedule setup all connect through here.
 *
 * Secrets (API key, client key) stay in the connection options: errors and `describe` say where
 * they came from, never what they are, and nothing here reaches workflow inputs or history.
 */
import { readFileSync } from 'node:fs';
import { checkServerIdentity, connect as tlsConnect, type ConnectionOptions as TlsOptions } from 'node:tls';
import { Connection, type ConnectionOptions } from '@temporalio/client';
import { loadClientConfigProfile, type ClientConfigProfile, type ConfigDataSource } from '@temporalio/envconfig';
// Type only: loading @temporalio/worker (the Rust core bridge, ~0.5 s) is for workers, not for every CLI call.
import type { NativeConnection } from '@temporalio/worker';
import type { TemporalConfig } from '../config';
import { PORTS } from '../config/local-stack';
import { SEARCH_ATTRIBUTES } from '../contract';

const DEFAULT_TEMPORAL_ADDRESS = `127.0.0.1:${PORTS.temporal}`;

export interface TemporalTarget {
  address: string;
  namespace: string;
  /** TLS as the SDK takes it; undefined: plaintext. */
  tls?: { serverNameOverride?: string; serverRootCACertificate?: Buffer; clientCertPair?: { crt: Buffer; key: Buffer } } | true;
  apiKey?: string;
  metadata?: Record<string, string>;
  /** Where each setting came from, safe to log: `127.0.0.1:7243 (TEMPORAL_ADDRESS), namespace default, TLS (...)`. */
  describe: string;
}

/** Where a profile comes from, for messages. */
function profileSource(name: string | undefined, env: NodeJS.ProcessEnv): string {
  const profile = name ?? env.TEMPORAL_PROFILE ?? 'default';
  const file = env.TEMPORAL_CONFIG_FILE ?? '~/.config/temporalio/temporal.toml';
  return `profile "${profile}"${name === undefined && env.TEMPORAL_PROFILE ? ' (TEMPORAL_PROFILE)' : ''} of ${file}`;
}

/**
 * The CLI's profile with the TEMPORAL_* environment applied (a missing file is an empty profile;
 * a profile named but absent, or a file that is not TOML, fails naming both).
 */
function loadTemporalProfile(name: string | undefined, env: NodeJS.ProcessEnv = process.env): ClientConfigProfile {
  try {
    return loadClientConfigProfile({ ...(name !== undefined ? { profile: name } : {}), overrideEnvVars: env as Record<string, string> });
  } catch (e) {
    throw new Error(
      `temporal: cannot load the Temporal CLI ${profileSource(name, env)}${name !== undefined ? ' (config temporal.profile)' : ''}: ${(e as Error).message}`,
    );
  }
}

/** Which variable or profile key gave a TLS file or value (names only). */
function sourceName(src: ConfigDataSource | undefined, envPath: string, envData: string, env: NodeJS.ProcessEnv): string | undefined {
  if (src === undefined) return undefined;
  if ('path' in src) return env[envPath] === src.path ? `${envPath}=${src.path}` : src.path;
  return env[envData] !== undefined ? envData : 'profile data';
}

function readData(src: ConfigDataSource | undefined, what: string, from: string | undefined): Buffer | undefined {
  if (src === undefined) return undefined;
  if ('data' in src) return Buffer.from(src.data);
  try {
    return readFileSync(src.path);
  } catch (e) {
    throw new Error(
      `temporal TLS: cannot read the ${what} ${from ?? src.path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
    );
  }
}

/** Resolves address, namespace, TLS, API key and gRPC metadata (reads certificate files now). */
export function resolveTemporalTarget(t: TemporalConfig, env: NodeJS.ProcessEnv = process.env): TemporalTarget {
  const profile = loadTemporalProfile(t.profile, env);
  const src = profileSource(t.profile, env);
  const address = t.address ?? profile.address ?? DEFAULT_TEMPORAL_ADDRESS;
  const namespace = t.namespace ?? profile.namespace ?? 'default';
  const from = (own: string | undefined, envName: string, prof: string | undefined) =>
    own !== undefined
      ? 'floe config or FLOE_TEMPORAL_ADDRESS/NAMESPACE'
      : env[envName] !== undefined
        ? envName
        : prof !== undefined
          ? src
          : 'default';
  const parts = [
    `${address} (${from(t.address, 'TEMPORAL_ADDRESS', profile.address)})`,
    `namespace ${namespace} (${from(t.namespace, 'TEMPORAL_NAMESPACE', profile.namespace)})`,
  ];
  const target: TemporalTarget = { address, namespace, describe: '' };

  const tls = profile.tls;
  // As the CLI: TLS when the profile or TEMPORAL_TLS* configure it, or when an API key is set.
  if (tls !== undefined && tls.disabled !== true) {
    const caFrom = sourceName(tls.serverCACert, 'TEMPORAL_TLS_SERVER_CA_CERT_PATH', 'TEMPORAL_TLS_SERVER_CA_CERT_DATA', env);
    const certFrom = sourceName(tls.clientCert, 'TEMPORAL_TLS_CLIENT_CERT_PATH', 'TEMPORAL_TLS_CLIENT_CERT_DATA', env);
    const keyFrom = sourceName(tls.clientKey, 'TEMPORAL_TLS_CLIENT_KEY_PATH', 'TEMPORAL_TLS_CLIENT_KEY_DATA', env);
    if ((tls.clientCert === undefined) !== (tls.clientKey === undefined)) {
      throw new Error(
        `temporal TLS: a client certificate needs its key and a key its certificate; ${src} and TEMPORAL_TLS_* give only the ${tls.clientCert ? 'certificate' : 'key'}`,
      );
    }
    const ca = readData(tls.serverCACert, 'server CA certificate', caFrom);
    const crt = readData(tls.clientCert, 'client certificate', certFrom);
    const key = readData(tls.clientKey, 'client key', keyFrom);
    target.tls = {
      ...(tls.serverName ? { serverNameOverride: tls.serverName } : {}),
      ...(ca ? { serverRootCACertificate: ca } : {}),
      ...(crt && key ? { clientCertPair: { crt, key } } : {}),
    };
    parts.push(
      `TLS (server CA ${caFrom ?? 'system roots'}${crt ? `, client certificate ${certFrom}` : ''}${tls.serverName ? `, server name ${tls.serverName}` : ''})`,
    );
  } else if (profile.apiKey !== undefined && tls?.disabled !== true) {
    target.tls = true;
    parts.push('TLS (system roots)');
  } else {
    parts.push('plaintext');
  }
  if (profile.apiKey !== undefined) {
    target.apiKey = profile.apiKey;
    parts.push(`API key (${env.TEMPORAL_API_KEY !== undefined ? 'TEMPORAL_API_KEY' : src})`);
  }
  if (profile.grpcMeta && Object.keys(profile.grpcMeta).length > 0) {
    target.metadata = profile.grpcMeta;
    parts.push(`gRPC metadata ${Object.keys(profile.grpcMeta).join(', ')}`);
  }
  target.describe = parts.join(', ');
  return target;
}

const NOT_FROM_CA = ' (the server certificate is not signed by the server CA configured: TEMPORAL_TLS_SERVER_CA_CERT_PATH / _DATA)';
const CERT_HINTS: Record<string, string> = {
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: NOT_FROM_CA,
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: NOT_FROM_CA,
  SELF_SIGNED_CERT_IN_CHAIN: NOT_FROM_CA,
  DEPTH_ZERO_SELF_SIGNED_CERT: NOT_FROM_CA,
  ERR_TLS_CERT_ALTNAME_INVALID: ' (the server certificate is not for this host: set TEMPORAL_TLS_SERVER_NAME to the name it holds)',
  CERT_HAS_EXPIRED: ' (the server certificate has expired)',
};

/**
 * The TLS handshake alone, with the same CA, client certificate and server name, to say why a
 * connection failed: certificate errors from the SDKs arrive as "transport error" or a deadline.
 */
async function tlsHandshakeProblem(target: TemporalTarget, timeoutMs = 5000): Promise<string | undefined> {
  if (!target.tls) return undefined;
  const i = target.address.lastIndexOf(':');
  const host = target.address.slice(0, i).replace(/^\[|\]$/g, '');
  const tls = target.tls === true ? {} : target.tls;
  const opts: TlsOptions = {
    host,
    port: Number(target.address.slice(i + 1)),
    servername: tls.serverNameOverride ?? (/^[\d.]+$|:/.test(host) ? undefined : host),
    ALPNProtocols: ['h2'],
    ...(tls.serverRootCACertificate ? { ca: tls.serverRootCACertificate } : {}),
    ...(tls.clientCertPair ? { cert: tls.clientCertPair.crt, key: tls.clientCertPair.key } : {}),
  };
  if (tls.serverNameOverride) opts.checkServerIdentity = (_h, cert) => checkServerIdentity(tls.serverNameOverride!, cert);
  return new Promise((resolve) => {
    const socket = tlsConnect(opts);
    const done = (problem: string | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(problem);
    };
    const timer = setTimeout(() => done(`no TLS handshake within ${timeoutMs} ms`), timeoutMs);
    socket.once('secureConnect', () => done(undefined));
    socket.once('error', (e: NodeJS.ErrnoException) => {
      // Node 24 suggests --use-system-ca, which cannot help when the CA is configured explicitly.
      const message = tls.serverRootCACertificate ? e.message.replace(/; if the root CA is installed locally.*$/, '') : e.message;
      done(`${e.code ? `${e.code}: ` : ''}${message}${CERT_HINTS[e.code ?? ''] ?? ''}`);
    });
  });
}

const connectFailed = (target: TemporalTarget, why: string, cause?: unknown) =>
  new Error(`cannot connect to Temporal at ${target.describe}: ${why}`, cause === undefined ? undefined : { cause });

/** Temporal connection errors with the target and, for TLS, the handshake's own reason. */
async function connectError(e: unknown, target: TemporalTarget): Promise<Error> {
  const handshake = await tlsHandshakeProblem(target).catch(() => undefined);
  if (handshake) return connectFailed(target, `TLS handshake failed: ${handshake}`, e);
  const noClientCert = target.tls !== undefined && (target.tls === true || !target.tls.clientCertPair);
  const hint = noClientCert
    ? ' (the TLS handshake succeeds: if the server requires a client certificate, set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH)'
    : '';
  return connectFailed(target, `${(e as Error).message}${hint}`, e);
}

/** A client connection (`@temporalio/client`), failing within `connectTimeoutMs` with the reason. */
export async function connectTemporal(
  t: TemporalConfig,
  opts: { connectTimeoutMs?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<{ connection: Connection; target: TemporalTarget }> {
  const target = resolveTemporalTarget(t, opts.env);
  const options: ConnectionOptions = {
    address: target.address,
    connectTimeout: opts.connectTimeoutMs ?? 10_000,
    ...(target.tls ? { tls: target.tls } : {}),
    ...(target.apiKey !== undefined ? { apiKey: target.apiKey } : {}),
    ...(target.metadata ? { metadata: target.metadata } : {}),
  };
  // grpc-js retries a failed TLS handshake until the connect timeout and then reports only the
  // deadline: one handshake first, with the same certificates, fails a wrong CA at once and says why.
  const handshake = await tlsHandshakeProblem(target);
  if (handshake) throw connectFailed(target, `TLS handshake failed: ${handshake}`);
  try {
    return { connection: await Connection.connect(options), target };
  } catch (e) {
    throw await connectError(e, target);
  }
}

/** A worker's connection (`@temporalio/worker`'s NativeConnection, the Rust core). */
export async function connectTemporalNative(
  t: TemporalConfig,
  opts: { env?: NodeJS.ProcessEnv } = {},
): Promise<{ connection: NativeConnection; target: TemporalTarget }> {
  const target = resolveTemporalTarget(t, opts.env);
  const { NativeConnection } = await import('@temporalio/worker');
  try {
    const connection = await NativeConnection.connect({
      address: target.address,
      ...(target.tls ? { tls: target.tls } : {}),
      ...(target.apiKey !== undefined ? { apiKey: target.apiKey } : {}),
      ...(target.metadata ? { metadata: target.metadata } : {}),
    });
    return { connection, target };
  } catch (e) {
    throw await connectError(e, target);
  }
}

// ---------- floe's search attributes (Temporal visibility) ----------

// temporal.api.enums.v1.IndexedValueType (the proto package is not a direct dependency).
const INDEXED_VALUE_TYPE: Record<number, string> = {
  1: 'Text',
  2: 'Keyword',
  3: 'Int',
  4: 'Double',
  5: 'Bool',
  6: 'Datetime',
  7: 'KeywordList',
};
const KEYWORD = 2;
const GRPC_INVALID_ARGUMENT = 3;
const GRPC_ALREADY_EXISTS = 6;

/** Temporal Cloud endpoints (namespace and regional API endpoints). */
export const isTemporalCloud = (address: string): boolean => /\.(tmprl\.cloud|api\.temporal\.io)(:\d+)?$/.test(address);

interface SearchAttributeSetup {
  namespace: string;
  created: string[];
  existing: string[];
}

/**
 * Registers floe's search attributes (contract SEARCH_ATTRIBUTES) in `namespace` through the
 * operator service, as `temporal operator search-attribute create` does. Idempotent: existing ones
 * are left alone; one that exists with another type fails naming it (the server cannot change a type).
 * Temporal Cloud does not serve the operator call: see `floe setup`.
 */
export async function registerSearchAttributes(
  connection: Pick<Connection, 'operatorService'>,
  namespace: string,
): Promise<SearchAttributeSetup> {
  const listed = await connection.operatorService.listSearchAttributes({ namespace });
  const have: Record<string, number> = { ...(listed.systemAttributes ?? {}), ...(listed.customAttributes ?? {}) };
  const created: string[] = [];
  const existing: string[] = [];
  const missing: Record<string, number> = {};
  for (const name of Object.keys(SEARCH_ATTRIBUTES)) {
    const type = have[name];
    if (type === undefined) {
      missing[name] = KEYWORD;
      created.push(name);
    } else if (type !== KEYWORD) {
      throw new Error(
        `search attribute ${name} exists in namespace ${namespace} as ${INDEXED_VALUE_TYPE[type] ?? type}; floe needs Keyword`,
      );
    } else existing.push(name);
  }
  if (created.length > 0) {
    try {
      await connection.operatorService.addSearchAttributes({ namespace, searchAttributes: missing });
    } catch (e) {
      // Another `floe setup` got there first.
      if ((e as { code?: number }).code !== GRPC_ALREADY_EXISTS) throw e;
    }
  }
  return { namespace, created, existing };
}

/**
 * floe's search attributes a visibility query cannot use yet in `namespace` (works on any server,
 * Temporal Cloud included: an unknown attribute makes the query invalid).
 */
export async function missingSearchAttributes(connection: Pick<Connection, 'workflowService'>, namespace: string): Promise<string[]> {
  const missing: string[] = [];
  for (const name of Object.keys(SEARCH_ATTRIBUTES)) {
    try {
      await connection.workflowService.countWorkflowExecutions({ namespace, query: `${name} = 'floe-setup-probe'` });
    } catch (e) {
      if ((e as { code?: number }).code === GRPC_INVALID_ARGUMENT) missing.push(name);
      else throw e;
    }
  }
  return missing;
}
