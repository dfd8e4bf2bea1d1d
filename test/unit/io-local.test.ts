import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { isIcebergError, LocalFileIO, memoryFileIO, ResolvingFileIO, resolveFileIO, schemeOf, S3FileIO } from '../../iceberg';

const dir = mkdtempSync(join(tmpdir(), 'floe-io-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const url = (p: string): string => pathToFileURL(join(dir, p)).href;
const io = new LocalFileIO();
const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);

void test('write creates parent directories; read, readRange, stat, exists round-trip', async () => {
  const loc = url('a/b/c/file.bin');
  await io.write(loc, bytes('0123456789'));
  assert.deepEqual(await io.read(loc), bytes('0123456789'));
  assert.deepEqual(await io.readRange(loc, 3, 4), bytes('3456'));
  const st = await io.stat(loc);
  assert.equal(st.size, 10);
  assert.equal(st.location, loc);
  assert.ok(Math.abs(st.lastModified - Date.now()) < 60_000, `lastModified ${st.lastModified} is near now`);
  assert.equal(await io.exists(loc), true);
  assert.equal(await io.exists(url('a/b/c/missing')), false);
  // a directory is not a file
  assert.equal(await io.exists(url('a/b')), false);
});

void test('write replaces atomically and leaves no temp files behind', async () => {
  const loc = url('atomic/x.json');
  await io.write(loc, bytes('first'));
  await io.write(loc, bytes('second, longer'));
  assert.equal(new TextDecoder().decode(await io.read(loc)), 'second, longer');
  assert.deepEqual(readdirSync(join(dir, 'atomic')), ['x.json']);
});

void test('missing files: read/stat/readRange throw NotFound, delete is idempotent', async () => {
  const loc = url('nope/missing.bin');
  for (const op of [() => io.read(loc), () => io.stat(loc), () => io.readRange(loc, 0, 1)]) {
    await assert.rejects(op(), (e: unknown) => isIcebergError(e, 'NotFound') && e.message.includes(loc));
  }
  await io.delete(loc);
  await io.delete(loc);
  const real = url('del/me');
  await io.write(real, bytes('x'));
  await io.delete(real);
  assert.equal(await io.exists(real), false);
});

void test('readRange past the end is a short-read Io error naming expected vs found', async () => {
  const loc = url('short.bin');
  await io.write(loc, bytes('abc'));
  await assert.rejects(
    io.readRange(loc, 1, 10),
    (e: unknown) => isIcebergError(e, 'Io') && /expected 10 bytes, found 2 bytes/.test(e.message),
  );
});

void test('list is recursive, treats the prefix as a directory, hides temp files, returns file:// URIs', async () => {
  await io.write(url('tbl/data/p=1/a.parquet'), bytes('aa'));
  await io.write(url('tbl/data/p=2/b.parquet'), bytes('bbb'));
  await io.write(url('tbl/metadata/v1.json'), bytes('{}'));
  await io.write(url('tbl2/data/other.parquet'), bytes('o'));
  writeFileSync(join(dir, 'tbl', 'data', 'c.parquet.floe-tmp-abc'), 'partial');
  const found = [];
  for await (const f of io.list(url('tbl'))) found.push(f);
  assert.deepEqual(found.map((f) => f.location).sort(), [
    url('tbl/data/p=1/a.parquet'),
    url('tbl/data/p=2/b.parquet'),
    url('tbl/metadata/v1.json'),
  ]);
  assert.deepEqual(found.map((f) => f.size).sort(), [2, 2, 3]);
  const none = [];
  for await (const f of io.list(url('does-not-exist'))) none.push(f);
  assert.equal(none.length, 0);
});

void test('plain absolute paths work; relative paths are rejected', async () => {
  const p = join(dir, 'plain', 'f.txt');
  await io.write(p, bytes('plain'));
  assert.equal(new TextDecoder().decode(await io.read(p)), 'plain');
  await assert.rejects(io.read('relative/path'), (e: unknown) => isIcebergError(e, 'DataInvalid'));
});

void test('resolveFileIO dispatches by scheme; unknown schemes fail naming the scheme', async () => {
  assert.ok(resolveFileIO(url('x')) instanceof LocalFileIO);
  assert.ok(resolveFileIO('s3://bucket/key', { s3: { region: 'us-east-1' } }) instanceof S3FileIO);
  assert.ok(resolveFileIO('s3a://bucket/key') instanceof S3FileIO);
  assert.equal(resolveFileIO('memory://x/y'), memoryFileIO, 'memory:// shares the process-wide store');
  assert.equal(schemeOf('/abs/path'), 'file');
  assert.throws(
    () => schemeOf('gs://bucket/x'),
    (e: unknown) => isIcebergError(e, 'FeatureUnsupported') && /found gs/.test(e.message),
  );
  assert.throws(
    () => schemeOf('bucket/x'),
    (e: unknown) => isIcebergError(e, 'DataInvalid'),
  );
  const r = new ResolvingFileIO();
  await r.write(url('resolving/r.txt'), bytes('r'));
  assert.equal(await r.exists(url('resolving/r.txt')), true);
});
