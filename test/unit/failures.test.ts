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
import { toFailure } from '../../activities/failures';
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
