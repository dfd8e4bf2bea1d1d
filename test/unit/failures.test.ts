/**
 * Errors reach Temporal only through activities/failures.ts `toFailure`: domain failures are
 * FloeFailures (typed by the contract's failure types) and become ApplicationFailures of that
 * type. Before, TableDriftError and DecoderConfigError reached Temporal by their class `name`
 * (a plain Error's failure type), which only matched the non-retryable lists by coincidence.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { serviceTrouble, toFailure } from '../../activities/failures';
import { IcebergError } from '../../iceberg';
import { FailureType, FloeFailure, INGEST_NON_RETRYABLE } from '../../contract';
import { DecoderConfigError } from '../../ingest/formats/errors';
import { TableDriftError } from '../../ingest/drift';

void test('DecoderConfigError and TableDriftError become non-retryable ApplicationFailures of their contract type', () => {
  for (const [e, type] of [
    [new DecoderConfigError('column x: bad'), FailureType.ConfigError],
    [new TableDriftError(['column x: retyped']), FailureType.TableDrift],
  ] as const) {
    assert.ok(e instanceof FloeFailure);
    const f = toFailure(e);
    assert.ok(f instanceof ApplicationFailure, `${e.name} maps to an ApplicationFailure`);
    assert.equal(f.type, type);
    assert.equal(f.nonRetryable, true);
    assert.ok(INGEST_NON_RETRYABLE.includes(type));
    assert.equal(f.message, e.message);
  }
});

const ROOT = resolve(__dirname, '../..');
const DOMAIN = ['contract', 'config', 'table', 'ingest', 'maintenance', 'iceberg', 'activities', 'client', 'workers'];
const sources = (dir: string): string[] =>
  readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });

void test('no error class outside FloeFailure is named after a failure type (that would bypass toFailure)', () => {
  const types = new Set<string>(Object.values(FailureType));
  const bad: string[] = [];
  for (const f of DOMAIN.flatMap((d) => sources(join(ROOT, d)))) {
    const text = readFileSync(f, 'utf8');
    for (const m of text.matchAll(/class (\w+) extends (\w+)[^{]*\{([\s\S]*?)\n\}/g)) {
      const [, name, base, body] = m;
      if (base === 'FloeFailure' || name === 'FloeFailure') continue;
      for (const n of body!.matchAll(/name\s*=\s*(?:FailureType\.(\w+)|'(\w+)')/g)) {
        const t = n[1] ?? n[2]!;
        if (types.has(t)) bad.push(`${relative(ROOT, f)}: class ${name} extends ${base} is named ${t}`);
      }
    }
  }
  assert.deepEqual(bad, []);
});

void test("serviceTrouble: a service's trouble (retried, stalled) apart from the records' (isolated), through wrapped causes", () => {
  const withCode = (code: string) => Object.assign(new Error(`connect ${code}`), { code });
  const aws = (name: string, status: number) => Object.assign(new Error(name), { name, $metadata: { httpStatusCode: status } });
  const io = (cause: unknown) => new IcebergError('Io', 'write failed', { cause });
  // Services: unreachable, overloaded, refusing credentials; kafkajs giving up; a fetch that failed to connect.
  for (const e of [
    withCode('ECONNREFUSED'),
    io(withCode('ETIMEDOUT')),
    Object.assign(new Error('Connection error'), { name: 'KafkaJSConnectionError' }),
    Object.assign(new Error('retries exceeded'), { name: 'KafkaJSNumberOfRetriesExceeded', cause: withCode('ECONNRESET') }),
    io(aws('SlowDown', 503)),
    io(aws('AccessDenied', 403)),
    io(aws('InternalError', 500)),
    Object.assign(new TypeError('fetch failed'), { cause: withCode('UND_ERR_CONNECT_TIMEOUT') }),
    new IcebergError('Io', 'REST catalog: 503', { context: { status: 503 } }),
  ])
    assert.ok(serviceTrouble(e), `${(e as Error).name}: ${(e as Error).message} is a service's trouble`);
  // The records' (or floe's): a path too long, a key too long, a plain bug, a 400 for the request's content.
  for (const e of [
    io(withCode('ENAMETOOLONG')),
    io(aws('KeyTooLongError', 400)),
    new TypeError('x is undefined'),
    new RangeError('Invalid array length'),
  ])
    assert.equal(serviceTrouble(e), undefined, `${(e as Error).message} is not a service's trouble`);
  // toFailure types them: ServiceUnavailable (retryable), or as before.
  const f = toFailure(io(withCode('ECONNREFUSED'))) as ApplicationFailure;
  assert.equal(f.type, FailureType.ServiceUnavailable);
  assert.equal(f.nonRetryable, false);
  assert.equal((toFailure(io(withCode('ENAMETOOLONG'))) as ApplicationFailure).type, 'Io');
  // A domain failure keeps its type even when a socket error caused it.
  assert.equal(
    (toFailure(new IcebergError('CommitConflict', 'lost the race', { cause: withCode('ECONNRESET') })) as ApplicationFailure).type,
    'CommitConflict',
  );
});
