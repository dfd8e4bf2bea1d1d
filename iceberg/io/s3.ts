/**
 * S3FileIO: `s3://bucket/key` (and Hadoop's `s3a://`) on any S3-compatible store (AWS, SeaweedFS,
 * MinIO). Retries with exponential backoff are the SDK's (`maxAttempts`); errors come out as
 * IcebergError 'NotFound' (404 / NoSuchKey) or 'Io' (retryable) so callers never see SDK types.
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
import { Upload } from '@aws-sdk/lib-storage';
import { IcebergError } from '../errors';
import type { FileInfo, FileIO } from './file-io';

export interface S3Options {
  endpoint?: string;
  region?: string;
  /** Path-style URLs (`http://host/bucket/key`): required by SeaweedFS and MinIO. */
  forcePathStyle?: boolean;
  /** Omit both to use the SDK's standard credential chain (env, profile, IMDS, ...). */
  accessKeyId?: string;
  secretAccessKey?: string;
  sessionToken?: string;
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
  const m = /^s3a?:\/\/([^/]+)\/?(.*)$/.exec(location);
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

  constructor(opts: S3Options = {}, client?: S3Client) {
    const config: S3ClientConfig = {
      region: opts.region ?? process.env['AWS_REGION'] ?? process.env['AWS_DEFAULT_REGION'] ?? 'us-east-1',
      maxAttempts: opts.maxAttempts ?? 5,
      retryMode: 'standard',
    };
    if (opts.endpoint) config.endpoint = opts.endpoint;
    if (opts.forcePathStyle !== undefined) config.forcePathStyle = opts.forcePathStyle;
    if (opts.accessKeyId && opts.secretAccessKey) {
      config.credentials = {
        accessKeyId: opts.accessKeyId,
        secretAccessKey: opts.secretAccessKey,
        ...(opts.sessionToken ? { sessionToken: opts.sessionToken } : {}),
      };
    }
    if (opts.credentialProvider) config.credentials = opts.credentialProvider;
    this.client = client ?? new S3Client(config);
    this.threshold = opts.multipartThresholdBytes ?? DEFAULT_MULTIPART_THRESHOLD;
    this.partSize = Math.max(5 * 1024 * 1024, opts.partSizeBytes ?? DEFAULT_PART_SIZE);
    this.listPageSize = opts.listPageSize;
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
    const scheme = prefix.startsWith('s3a://') ? 's3a' : 's3';
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
