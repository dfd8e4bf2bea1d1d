/**
 * Every location form the Java and Python implementations write parses, and names the same object
 * as its floe form (issue 29 item 14): Java's Hadoop Path writes `file:/p` (Spark's HadoopFileIO
 * turns a table at `file:///p` into `file:/p/data/...`), PyIceberg and floe `file:///p`,
 * `file://localhost/p` is the same local file, and Hadoop's S3 connectors write `s3a://` / `s3n://`.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LOCATION_URI } from '../../config/schema';
import { isIcebergError, localPath, locationContains, normalizeLocation, parseS3Location, schemeOf } from '../../iceberg';

const LOCAL_FORMS = ['file:/wh/db/t/data/a.parquet', 'file:///wh/db/t/data/a.parquet', 'file://localhost/wh/db/t/data/a.parquet'];
const S3_FORMS = ['s3://b/wh/db/t/data/a.parquet', 's3a://b/wh/db/t/data/a.parquet', 's3n://b/wh/db/t/data/a.parquet'];

void test('local forms: file:/p, file:///p and file://localhost/p are the same file', () => {
  for (const l of LOCAL_FORMS) {
    assert.equal(schemeOf(l), 'file', l);
    assert.equal(localPath(l), '/wh/db/t/data/a.parquet', l);
    assert.equal(normalizeLocation(l), 'file:///wh/db/t/data/a.parquet', l);
    assert.ok(LOCATION_URI.test(l.replace(/\/data\/a\.parquet$/, '')), l);
  }
  // a table at file:///wh/db/t contains Spark's file:/wh/db/t/data/... (and not its sibling t2)
  assert.ok(locationContains('file:///wh/db/t', 'file:/wh/db/t/data/a.parquet'));
  assert.ok(locationContains('file:/wh/db/t/', 'file://localhost/wh/db/t/metadata/v1.metadata.json'));
  assert.ok(!locationContains('file:///wh/db/t', 'file:/wh/db/t2/data/a.parquet'));
});

void test('S3 forms: s3://, s3a:// and s3n:// are the same object', () => {
  for (const l of S3_FORMS) {
    assert.equal(schemeOf(l), 's3', l);
    assert.deepEqual(parseS3Location(l), { bucket: 'b', key: 'wh/db/t/data/a.parquet' }, l);
    assert.equal(normalizeLocation(l), 's3://b/wh/db/t/data/a.parquet', l);
    assert.ok(LOCATION_URI.test(l), l);
  }
  assert.deepEqual(parseS3Location('S3A://b/k'), { bucket: 'b', key: 'k' });
});

void test('what is not a local or S3 location is refused, naming what was found', () => {
  // another host's file is not on this machine
  assert.throws(
    () => localPath('file://otherhost/wh/a.parquet'),
    (e) => isIcebergError(e) && /file:\/\/otherhost\/wh\/a\.parquet/.test(e.message),
  );
  assert.throws(
    () => schemeOf('wh/db/t'),
    (e) => isIcebergError(e) && /expected a URI like .* found wh\/db\/t/.test(e.message),
  );
  assert.throws(
    () => schemeOf('gs://b/k'),
    (e) => isIcebergError(e) && /gs/.test(e.message),
  );
  assert.ok(!LOCATION_URI.test('gs://b/wh'));
  assert.ok(!LOCATION_URI.test('file:wh'));
  // four slashes is not a form anyone writes: left as it is, so it never equals a real file's form
  assert.equal(normalizeLocation('file:////wh/a'), 'file:////wh/a');
});
