/**
 * AWS SigV4 for REST catalog requests (`rest.sigv4-enabled`): Glue's Iceberg endpoint
 * (signing name `glue`), S3 Tables (`s3tables`) and API Gateway fronted catalogs (`execute-api`,
 * the default, as in Java's RESTSigV4Signer and PyIceberg). Signed by the AWS SDK's own signer
 * (@smithy/signature-v4) with credentials from the SDK's default provider chain unless given.
 *
 * As in Java's signer, a bearer `Authorization` header (OAuth2 beside SigV4) moves to
 * `Original-Authorization`, since SigV4 owns `Authorization`.
 */
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  expiration?: Date;
}

export interface SigV4Options {
  /** `rest.signing-region`; default AWS_REGION / AWS_DEFAULT_REGION. */
  region?: string;
  /** `rest.signing-name` (default 'execute-api'). */
  service?: string;
  /** Default: the SDK's node provider chain (env, profile, web identity, container, instance). */
  credentials?: AwsCredentials | (() => Promise<AwsCredentials>);
  /** The signing time (tests pin it). */
  now?: () => Date;
}

const DEFAULT_SIGNING_NAME = 'execute-api';

const signers = new WeakMap<SigV4Options, SignatureV4>();

function signerFor(opts: SigV4Options): SignatureV4 {
  let s = signers.get(opts);
  if (!s) {
    const region = opts.region ?? process.env['AWS_REGION'] ?? process.env['AWS_DEFAULT_REGION'];
    if (!region) throw new Error('REST catalog SigV4: no signing region: set rest.signing-region or AWS_REGION');
    let credentials = opts.credentials;
    if (credentials === undefined) {
      const { fromNodeProviderChain } = require('@aws-sdk/credential-providers') as typeof import('@aws-sdk/credential-providers');
      credentials = fromNodeProviderChain();
    }
    s = new SignatureV4({ credentials, region, service: opts.service ?? DEFAULT_SIGNING_NAME, sha256: Sha256 });
    signers.set(opts, s);
  }
  return s;
}

/**
 * The headers to send for `method url` with `body`, signed. `host` is signed but not returned
 * (fetch sets it from the URL, to the same value).
 */
export async function signRequest(
  opts: SigV4Options,
  method: string,
  url: string,
  headers: Record<string, string>,
  body: string | undefined,
): Promise<Record<string, string>> {
  const u = new URL(url);
  const h: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (k.toLowerCase() === 'authorization') {
      if (/^bearer /i.test(v)) h['Original-Authorization'] = v;
    } else h[k] = v;
  }
  h['host'] = u.host;
  const query: Record<string, string | string[]> = {};
  for (const [k, v] of u.searchParams) {
    const prev = query[k];
    query[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  const signed = await signerFor(opts).sign(
    {
      method,
      protocol: u.protocol,
      hostname: u.hostname,
      port: u.port ? Number(u.port) : undefined,
      path: u.pathname,
      query,
      headers: h,
      body,
    },
    opts.now ? { signingDate: opts.now() } : {},
  );
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(signed.headers)) if (k.toLowerCase() !== 'host') out[k] = v;
  return out;
}
