/**
 * Object storage settings from the config (config/types.ts S3Config): the S3 options every
 * FileIO of this process is built with, and the check a worker runs at start so missing
 * credentials fail there, naming the sources tried, rather than at the first write.
 */
import { tableLocationBase, type FloeConfig, type S3Config } from '../config';
import { readSecret } from '../config/secrets';
import { S3FileIO, schemeOf, type S3Options } from '../iceberg';
import { S3_DEFAULTS } from '../config/local-stack';

/**
 * S3 options for `s3`: the local stack's keys (FLOE_S3_ACCESS_KEY / FLOE_S3_SECRET_KEY, else the
 * stack's defaults) only for the local-stack default; referenced keys read now; otherwise no keys,
 * so the S3 client uses the AWS SDK's default chain (with `profile`). No undefined entries: the
 * options are spread over a REST catalog's `s3.*` properties.
 */
export function s3Options(s3: S3Config, env: NodeJS.ProcessEnv = process.env): S3Options {
  const o: S3Options = { forcePathStyle: s3.forcePathStyle };
  if (s3.endpoint !== undefined) o.endpoint = s3.endpoint;
  if (s3.region !== undefined) o.region = s3.region;
  const c = s3.credentials;
  if (c.source === 'local-stack') {
    o.accessKeyId = env.FLOE_S3_ACCESS_KEY ?? S3_DEFAULTS.accessKeyId;
    o.secretAccessKey = env.FLOE_S3_SECRET_KEY ?? S3_DEFAULTS.secretAccessKey;
  } else if (c.source === 'keys') {
    o.accessKeyId = readSecret(c.accessKeyId, 's3.accessKeyId', env);
    o.secretAccessKey = readSecret(c.secretAccessKey, 's3.secretAccessKey', env);
    if (c.sessionToken) o.sessionToken = readSecret(c.sessionToken, 's3.sessionToken', env);
  } else if (c.profile !== undefined) {
    o.profile = c.profile;
  }
  return o;
}

/**
 * Whether a worker must hold S3 credentials of its own, so they are resolved at start:
 * - the warehouse (or table location base) is on S3: every write uses them;
 * - a REST catalog that places tables itself (no location base) and signs its requests with
 *   SigV4 (Glue, S3 Tables): the same AWS credentials sign and write, so none is fatal;
 * - keys named in the config (`s3.accessKeyId` ...): a missing variable or file fails now.
 * A REST catalog without SigV4 that places tables itself may vend each table's keys
 * (Polaris, Lakekeeper): the process may rightly have none, so nothing is required at start.
 * file:// and memory:// warehouses need none.
 */
export function storageCredentialsRequired(cfg: FloeConfig): boolean {
  if (cfg.s3.credentials.source === 'keys') return true;
  const base = tableLocationBase(cfg.catalog);
  if (base !== undefined) return schemeOf(base) === 's3';
  return cfg.catalog.type === 'rest' && cfg.catalog.properties?.['rest.sigv4-enabled'] === 'true';
}

/**
 * Resolves the configured S3 credentials now when the worker needs its own
 * (storageCredentialsRequired). Throws an IcebergError naming every source the AWS chain tried.
 */
export async function checkStorageCredentials(cfg: FloeConfig): Promise<void> {
  if (!storageCredentialsRequired(cfg)) return;
  const io = new S3FileIO(s3Options(cfg.s3));
  try {
    await io.checkCredentials();
  } finally {
    io.client.destroy();
  }
}
