/**
 * S3FileIO: `s3://bucket/key` (and Hadoop's `s3a://`, `s3n://`) on any S3-compatible store (AWS, SeaweedFS,
 * MinIO). Retries with exponential backoff are the SDK's (`maxAttempts`); errors come out as
 * IcebergError 'NotFound' (404 / NoSuchKey) or 'Io' (retryable) so callers never see SDK types.
 *
 * Credentials, first that is given: `credentials` / `credentialProvider` (static keys or a
 * provider, e.g. a table's vended credentials that refresh), `accessKeyId` + `secretAccessKey`,
 * else the AWS SDK's default chain for Node (env, SSO, shared config/credentials files for
 * `profile` / AWS_PROFILE, process, web identity / IRSA, container and instance metadata). `checkCredentials()` resolves them now, so a
 * process fails at start, naming every source the chain tried, instead of at its first write.
 */
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import type { S3ClientConfig } from '@aws-sdk/client-s3';
import { fromNodeProviderChain } from '@aws-sdk/credential-providers';
import { Upload } from '@aws-sdk/lib-storage';
import { IcebergError } from '../errors';
import type { FileInfo, FileIO } from './file-io';

export interface S3Options {
  endpoint?: string;
  region?: string;
  /** Path-style URLs (`http://host/bucket/key`): required by SeaweedFS and MinIO. */
  forcePathStyle?: boolean;
  /** Static keys; omit them (and `credentials`) to use the SDK's default chain (env, profile, IMDS, ...). */
  accessKeyId?: string;
  secretAccessKey?: string;
  sessionToken?: string;
  /**
   * Explicit credentials, winning over everything else: static, or a provider the SDK calls again
   * when what it returned nears its `expiration` (per-table vended credentials, an assumed role).
   */
  credentials?: S3Credentials;
  /** Profile of the shared AWS config/credentials files for the default chain and the region (default: AWS_PROFILE, then "default"). */
  profile?: string;
  /**
   * Asked for keys instead of the three above; the SDK caches them until 5 minutes before
   * `expiration`, then asks again. REST catalogs' vended credentials (iceberg/io/resolve.ts).
   */
  credentialProvider?: () => Promise<{ accessKeyId: string; secretAccessKey: string; sessionToken?: string; expiration?: Date }>;
  /** Total attempts per request, including the first (SDK standard retry with backoff). */
  maxAttempts?: number;
  /** Bodies larger than this go through multipart upload. */
  multipartThresholdBytes?: number;
  /** Part size for multipart upload (S3 minimum is 5 MiB). */
  partSizeBytes?: number;
  /** Keys per ListObjectsV2 page (S3 caps it at 1000; small values exercise pagination). */
  listPageSize?: number;
}

/** What the SDK takes as `credentials`: static keys or a (refreshing) provider. */
export type S3Credentials = NonNullable<S3ClientConfig['credentials']>;

export const DEFAULT_MULTIPART_THRESHOLD = 16 * 1024 * 1024;
const DEFAULT_PART_SIZE = 8 * 1024 * 1024;

/**
 * Reads S3 settings from Iceberg FileIO properties (the keys PyIceberg and REST catalogs use,
 * e.g. a REST catalog's `config` response): s3.endpoint, s3.region, s3.access-key-id,
 * s3.secret-access-key, s3.session-token, s3.path-style-access.
 */
export function s3OptionsFromProperties(props: Record<string, string | undefined>): S3Options {
  const o: S3Options = {};
  if (props['s3.endpoint']) o.endpoint = props['s3.endpoint'];
  const region = props['s3.region'] ?? props['client.region'];
  if (region) o.region = region;
  if (props['s3.access-key-id']) o.accessKeyId = props['s3.access-key-id'];
  if (props['s3.secret-access-key']) o.secretAccessKey = props['s3.secret-access-key'];
  if (props['s3.session-token']) o.sessionToken = props['s3.session-token'];
  if (props['s3.path-style-access'] !== undefined) o.forcePathStyle = props['s3.path-style-access'] === 'true';
  return o;
}

export const parseS3Location = (location: string): { bucket: string; key: string } => {
  const m = /^s3[an]?:\/\/([^/]+)\/?(.*)$/i.exec(location);
  if (!m) throw IcebergError.mismatch('DataInvalid', 'S3 location', 's3://bucket/key', location, false);
  return { bucket: m[1]!, key: m[2]! };
};

interface SdkError {
  name?: string;
  Code?: string;
  $metadata?: { httpStatusCode?: number };
  message?: string;
}

const mapError = (e: unknown, op: string, location: string): IcebergError => {
  if (e instanceof IcebergError) return e;
  const err = e as SdkError;
  const status = err.$metadata?.httpStatusCode;
  const name = err.name ?? err.Code;
  if (status === 404 || name === 'NoSuchKey' || name === 'NotFound' || name === 'NoSuchBucket') {
    return new IcebergError('NotFound', `${op} ${location}: not found (${name ?? status})`, {
      retryable: false,
      context: { location, status, name },
      cause: e,
    });
  }
  // 4xx other than throttling cannot be fixed by retrying the same request.
  const retryable = status === undefined || status >= 500 || status === 429 || status === 408;
  return new IcebergError(
    'Io',
    `${op} ${location} failed: ${name ?? 'error'}${status ? ` (HTTP ${status})` : ''}: ${err.message ?? String(e)}`,
    {
      retryable,
      context: { location, status, name },
      cause: e,
    },
  );
};

export class S3FileIO implements FileIO {
  readonly client: S3Client;
  private readonly threshold: number;
  private readonly partSize: number;
  private readonly listPageSize: number | undefined;
  /** Set when the SDK's default chain supplies the credentials: what each of its sources said. */
  private readonly chainLog: ChainLog | undefined;

  constructor(
    private readonly opts: S3Options = {},
    client?: S3Client,
  ) {
    const config: S3ClientConfig = {
      region: opts.region ?? process.env['AWS_REGION'] ?? process.env['AWS_DEFAULT_REGION'] ?? profileRegionOrDefault(opts.profile),
      maxAttempts: opts.maxAttempts ?? 5,
      retryMode: 'standard',
    };
    if (opts.profile) config.profile = opts.profile;
    if (opts.endpoint) config.endpoint = opts.endpoint;
    // AWS itself (no endpoint): a bucket in another region than the one guessed answers 301, and
    // the SDK retries it there instead of failing.
    else config.followRegionRedirects = true;
    if (opts.forcePathStyle !== undefined) config.forcePathStyle = opts.forcePathStyle;
    const given = opts.credentials ?? opts.credentialProvider;
    if (given) {
      config.credentials = given;
    } else if (opts.accessKeyId && opts.secretAccessKey) {
      config.credentials = {
        accessKeyId: opts.accessKeyId,
        secretAccessKey: opts.secretAccessKey,
        ...(opts.sessionToken ? { sessionToken: opts.sessionToken } : {}),
      };
    } else if (!client) {
      this.chainLog = new ChainLog();
      config.credentials = fromNodeProviderChain({ ...(opts.profile ? { profile: opts.profile } : {}), logger: this.chainLog });
    }
    this.client = client ?? new S3Client(config);
    this.threshold = opts.multipartThresholdBytes ?? DEFAULT_MULTIPART_THRESHOLD;
    this.partSize = Math.max(5 * 1024 * 1024, opts.partSizeBytes ?? DEFAULT_PART_SIZE);
    this.listPageSize = opts.listPageSize;
  }

  /**
   * Another S3FileIO on the same store (endpoint, region, retries, part sizes) with `overrides`,
   * e.g. `withOptions({credentials})` or `withOptions({accessKeyId, secretAccessKey})` for
   * one table's vended credentials (given credentials replace this FileIO's).
   */
  withOptions(overrides: S3Options): S3FileIO {
    const base: S3Options = { ...this.opts };
    if (overrides.credentials || overrides.credentialProvider || overrides.accessKeyId) {
      delete base.accessKeyId;
      delete base.secretAccessKey;
      delete base.sessionToken;
      delete base.credentials;
      delete base.credentialProvider;
    }
    return new S3FileIO({ ...base, ...definedOnly(overrides) });
  }

  /** Where the credentials come from: given (`static` keys or a `provider`) or the SDK's default `chain`. */
  get credentialSource(): 'static' | 'provider' | 'chain' {
    if (this.chainLog) return 'chain';
    const given = this.opts.credentials ?? this.opts.credentialProvider;
    return typeof given === 'function' ? 'provider' : 'static';
  }

  /**
   * Resolves the credentials now (no request to S3). Throws a non-retryable IcebergError that
   * names every source the default chain tried and why each gave nothing; never a key.
   */
  async checkCredentials(): Promise<void> {
    this.chainLog?.clear();
    try {
      const provider = this.client.config.credentials as unknown as () => Promise<{ accessKeyId?: string }>;
      const c = await provider();
      if (!c?.accessKeyId) throw new Error('the provider returned no access key id');
    } catch (e) {
      const where = this.opts.endpoint ? `S3 at ${this.opts.endpoint}` : 'AWS S3';
      const tried = this.chainLog?.describe();
      const message = tried
        ? `no credentials for ${where}: the AWS default credential chain found none. Tried, in order: ${tried}. ` +
          'Give keys by reference (s3.accessKeyIdEnv/File + s3.secretAccessKeyEnv/File), a profile (s3.profile or AWS_PROFILE), ' +
          'or run where a role is attached (web identity / IRSA, ECS task role, EC2 instance profile)'
        : `no credentials for ${where}: ${(e as Error).message}`;
      throw new IcebergError('Io', message, { retryable: false, context: { endpoint: this.opts.endpoint }, cause: e });
    }
  }

  async read(location: string): Promise<Uint8Array> {
    const { bucket, key } = parseS3Location(location);
    try {
      const res = await this.client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      if (!res.Body) throw new IcebergError('Io', `read ${location}: response has no body`);
      return await res.Body.transformToByteArray();
    } catch (e) {
      throw mapError(e, 'read', location);
    }
  }

  async readRange(location: string, offset: number, length: number): Promise<Uint8Array> {
    if (length === 0) return new Uint8Array(0);
    const { bucket, key } = parseS3Location(location);
    try {
      const res = await this.client.send(
        new GetObjectCommand({
          Bucket: bucket,
          Key: key,
          Range: `bytes=${offset}-${offset + length - 1}`,
        }),
      );
      if (!res.Body) throw new IcebergError('Io', `readRange ${location}: response has no body`);
      const bytes = await res.Body.transformToByteArray();
      // A store that ignores Range returns the whole object (200): slice rather than misread.
      if (res.ContentRange === undefined && bytes.length > length) return bytes.subarray(offset, offset + length);
      if (bytes.length !== length) {
        throw IcebergError.mismatch(
          'Io',
          `readRange ${location} at ${offset}: short read`,
          `${length} bytes`,
          `${bytes.length} bytes`,
          false,
        );
      }
      return bytes;
    } catch (e) {
      throw mapError(e, 'readRange', location);
    }
  }

  async write(location: string, data: Uint8Array): Promise<void> {
    const { bucket, key } = parseS3Location(location);
    try {
      if (data.length <= this.threshold) {
        await this.client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: data, ContentLength: data.length }));
        return;
      }
      // Multipart: parts upload in parallel and are retried one by one; a failed upload is
      // aborted by lib-storage (leavePartsOnError=false) so no invisible parts linger.
      const upload = new Upload({
        client: this.client,
        params: { Bucket: bucket, Key: key, Body: data },
        partSize: this.partSize,
        queueSize: 4,
        leavePartsOnError: false,
      });
      await upload.done();
    } catch (e) {
      throw mapError(e, 'write', location);
    }
  }

  async delete(location: string): Promise<void> {
    const { bucket, key } = parseS3Location(location);
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    } catch (e) {
      const err = mapError(e, 'delete', location);
      if (err.kind !== 'NotFound' || (e as SdkError).name === 'NoSuchBucket') throw err;
    }
  }

  async exists(location: string): Promise<boolean> {
    try {
      await this.stat(location);
      return true;
    } catch (e) {
      if (e instanceof IcebergError && e.kind === 'NotFound') return false;
      throw e;
    }
  }

  async stat(location: string): Promise<FileInfo> {
    const { bucket, key } = parseS3Location(location);
    try {
      const res = await this.client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
      return { location, size: Number(res.ContentLength ?? 0), lastModified: res.LastModified?.getTime() ?? 0 };
    } catch (e) {
      throw mapError(e, 'stat', location);
    }
  }

  /**
   * Every object under the *directory* `prefix`: a "/" is appended when missing, so listing
   * `s3://b/db/t` never returns `s3://b/db/t2/...` (orphan removal deletes what it lists).
   */
  async *list(prefix: string): AsyncIterable<FileInfo> {
    const { bucket, key } = parseS3Location(prefix);
    // Listed locations keep the prefix's scheme (Hadoop's s3a:// and s3n:// name the same objects).
    const scheme = /^s3[an]?(?=:)/i.exec(prefix)![0];
    const dirKey = key === '' || key.endsWith('/') ? key : `${key}/`;
    let token: string | undefined;
    do {
      let res;
      try {
        res = await this.client.send(
          new ListObjectsV2Command({
            Bucket: bucket,
            Prefix: dirKey,
            ContinuationToken: token,
            MaxKeys: this.listPageSize,
          }),
        );
      } catch (e) {
        throw mapError(e, 'list', prefix);
      }
      for (const o of res.Contents ?? []) {
        if (o.Key === undefined || o.Key.endsWith('/')) continue; // directory markers some stores create
        yield { location: `${scheme}://${bucket}/${o.Key}`, size: Number(o.Size ?? 0), lastModified: o.LastModified?.getTime() ?? 0 };
      }
      token = res.IsTruncated ? res.NextContinuationToken : undefined;
    } while (token);
  }
}

/** `o` without its undefined entries, so spreading it never erases a value with `undefined`. */
function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * The region of the profile in the shared config file (what the SDK resolves when no region is
 * given), else us-east-1: S3 signs with some region, and AWS redirects to the bucket's own.
 */
function profileRegionOrDefault(profile: string | undefined): () => Promise<string> {
  let region: Promise<string> | undefined;
  return () =>
    (region ??= (async () => {
      const probe = new S3Client(profile ? { profile } : {});
      try {
        return await probe.config.region();
      } catch {
        return 'us-east-1';
      } finally {
        probe.destroy();
      }
    })());
}

const CHAIN_SOURCES: Record<string, string> = {
  fromEnv: 'environment (AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY)',
  fromSSO: 'SSO',
  fromIni: 'shared config/credentials files',
  fromProcess: 'credential_process',
  fromTokenFile: 'web identity token (AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN, e.g. EKS IRSA)',
  remoteProvider: 'container metadata (AWS_CONTAINER_CREDENTIALS_*) / EC2 instance metadata (IMDS)',
};

/**
 * The default chain's debug log, kept to say which sources were tried: each source logs
 * `defaultProvider::<source>` when it starts and `@smithy/property-provider -> <why>` when it
 * gives nothing (messages only, never credentials). Bounded: refreshes append to it for the
 * life of the process.
 */
class ChainLog {
  private steps: { source: string; why: string[] }[] = [];

  clear(): void {
    this.steps = [];
  }

  private line(msg: string): void {
    const source = /defaultProvider::(\w+)/.exec(msg)?.[1];
    if (source) {
      if (this.steps.length > 50) this.steps.splice(0, this.steps.length - 25);
      this.steps.push({ source, why: [] });
      return;
    }
    const why = /^@smithy\/property-provider (?:->|\(!\)) (.*)$/s.exec(msg)?.[1];
    if (why === undefined || why.startsWith('Could not load credentials from any providers')) return;
    // fromEnv is skipped before it logs its own start when AWS_PROFILE is set.
    if (this.steps.length === 0) this.steps.push({ source: 'fromEnv', why: [] });
    this.steps[this.steps.length - 1]!.why.push(why.trim().replace(/\.$/, ''));
  }

  describe(): string | undefined {
    if (this.steps.length === 0) return undefined;
    const files = `${process.env['AWS_CONFIG_FILE'] ?? '~/.aws/config'}, ${process.env['AWS_SHARED_CREDENTIALS_FILE'] ?? '~/.aws/credentials'}`;
    return this.steps
      .map(({ source, why }) => {
        const name = source === 'fromIni' ? `${CHAIN_SOURCES[source]} (${files})` : (CHAIN_SOURCES[source] ?? source);
        // The config loaders log each place they look ("X not set in env, checking config file next"): not a reason.
        const reasons = why.filter((w) => !/not set in env, checking/.test(w));
        const none = source === 'remoteProvider' ? 'no metadata endpoint answered (not on ECS/EC2, or unreachable)' : 'nothing found';
        return `${name}: ${reasons.length > 0 ? reasons.join('; ') : none}`;
      })
      .join('; ');
  }

  debug = (...args: unknown[]): void => this.line(args.map(String).join(' '));
  info = (): void => {};
  warn = (...args: unknown[]): void => console.warn(...args);
  error = (): void => {};
}
