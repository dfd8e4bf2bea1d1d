/**
 * S3FileIO against the stack's SeaweedFS S3 gateway (path-style, signed requests).
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { isIcebergError, S3FileIO, type FileInfo } from '../../iceberg';
import { ensureStack } from '../../stack';
import type { StackEnv } from '../../stack';

let env: StackEnv;
let io: S3FileIO;
let base: string;

before(async () => {
  env = await ensureStack(['s3']);
  const s3 = env.s3;
  io = new S3FileIO({
    endpoint: s3.endpoint,
    region: s3.region,
    forcePathStyle: true,
    accessKeyId: s3.accessKeyId,
    secretAccessKey: s3.secretAccessKey,
    maxAttempts: 3,
    multipartThresholdBytes: 6 * 1024 * 1024,
    partSizeBytes: 5 * 1024 * 1024,
    listPageSize: 2,
  });
  base = `s3://${s3.bucket}/test/s3-io-${randomUUID().slice(0, 8)}`;
});
after(async () => {
  if (!io) return;
  for await (const f of io.list(base)) await io.delete(f.location);
  io.client.destroy();
});

const collect = async (it: AsyncIterable<FileInfo>): Promise<FileInfo[]> => {
  const out: FileInfo[] = [];
  for await (const f of it) out.push(f);
  return out;
};

void test('put/get/stat/exists/readRange round-trip', async () => {
  const loc = `${base}/small/obj.bin`;
  const data = new TextEncoder().encode('hello, iceberg on seaweedfs');
  await io.write(loc, data);
  assert.deepEqual(await io.read(loc), data);
  assert.deepEqual(new TextDecoder().decode(await io.readRange(loc, 7, 7)), 'iceberg');
  const st = await io.stat(loc);
  assert.equal(st.size, data.length);
  assert.ok(Math.abs(st.lastModified - Date.now()) < 5 * 60_000, `lastModified ${new Date(st.lastModified).toISOString()} is recent`);
  assert.equal(await io.exists(loc), true);
  assert.equal(await io.exists(`${base}/small/missing.bin`), false);
});

void test('missing objects: NotFound for read/stat/readRange; delete is idempotent', async () => {
  const loc = `${base}/missing/${randomUUID()}`;
  for (const op of [() => io.read(loc), () => io.stat(loc), () => io.readRange(loc, 0, 4)]) {
    await assert.rejects(op(), (e: unknown) => isIcebergError(e, 'NotFound') && !e.retryable && e.message.includes(loc));
  }
  await io.delete(loc);
  const real = `${base}/del/x`;
  await io.write(real, new Uint8Array([1, 2, 3]));
  await io.delete(real);
  await io.delete(real);
  assert.equal(await io.exists(real), false);
});

void test('list: paginates (2 keys per page), recursive, directory semantics, sizes', async () => {
  const dir = `${base}/tbl`;
  const names = ['data/a.parquet', 'data/p=1/b.parquet', 'data/p=2/c.parquet', 'metadata/00000-x.metadata.json', 'metadata/snap.avro'];
  await Promise.all(names.map((n, i) => io.write(`${dir}/${n}`, new Uint8Array(i + 1))));
  await io.write(`${base}/tbl2/other.parquet`, new Uint8Array(1)); // shares the string prefix "tbl"
  const found = await collect(io.list(dir));
  assert.deepEqual(found.map((f) => f.location).sort(), names.map((n) => `${dir}/${n}`).sort());
  assert.deepEqual(found.map((f) => f.size).sort(), [1, 2, 3, 4, 5]);
  assert.ok(found.every((f) => f.lastModified > 0));
  assert.equal((await collect(io.list(`${dir}/data/`))).length, 3);
  assert.equal((await collect(io.list(`${base}/empty-dir`))).length, 0);
});

void test('multipart upload above the threshold; ranged reads across part boundaries', async () => {
  const loc = `${base}/big/blob.bin`;
  const data = randomBytes(11 * 1024 * 1024 + 123); // 3 parts of 5 MiB
  await io.write(loc, data);
  const st = await io.stat(loc);
  assert.equal(st.size, data.length);
  const off = 5 * 1024 * 1024 - 10;
  assert.deepEqual(Buffer.from(await io.readRange(loc, off, 20)), data.subarray(off, off + 20));
  const back = await io.read(loc);
  assert.equal(Buffer.compare(Buffer.from(back), data), 0);
});

void test('bad credentials are a non-retryable Io error, not NotFound', async () => {
  const bad = new S3FileIO({
    endpoint: env.s3.endpoint,
    region: env.s3.region,
    forcePathStyle: true,
    accessKeyId: env.s3.accessKeyId,
    secretAccessKey: 'wrong-secret',
    maxAttempts: 1,
  });
  await assert.rejects(
    bad.write(`${base}/denied`, new Uint8Array(1)),
    (e: unknown) => isIcebergError(e, 'Io') && !e.retryable && /HTTP 403/.test(e.message),
  );
  bad.client.destroy();
});
