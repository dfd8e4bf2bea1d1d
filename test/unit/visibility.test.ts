/**
 * What floe shows in the Temporal UI and how `floe setup` talks about Temporal Cloud: the ingest's
 * current details, the search attribute pairs, Cloud endpoint detection and the tcld instructions.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { currentDetails, initialStatus } from '../../workflows/ingest-state';
import { floeSearchAttributes } from '../../workflows/search-attributes';
import { isTemporalCloud } from '../../client/connection';
import { cloudInstructions } from '../../cli/setup';
import { SEARCH_ATTRIBUTES } from '../../contract';

void test('current details: state, cursor, lag and the last commit', () => {
  const s = initialStatus({ table: 'db.orders', ingestId: 'main' });
  assert.match(
    currentDetails(s),
    /^\*\*running\*\* · db\.orders · ingest id main\n- cursor: none\n- lag: 0 records \(none\)\n- last commit: no commit yet\n/,
  );
  Object.assign(s, {
    cursor: { '10': '7', '2': '500' },
    lag: { '2': '40', '10': '3' },
    lastCommitId: 'c-1',
    lastSnapshotId: '123',
    lastCommitTimeMs: Date.UTC(2026, 0, 2, 3, 4, 5),
    commits: 4,
    totalRows: 507,
  });
  const d = currentDetails(s, 'draining');
  assert.match(d, /^\*\*draining\*\*/);
  assert.match(d, /- cursor: 2:500 10:7\n/);
  assert.match(d, /- lag: 43 records \(2:40 10:3\)\n/);
  assert.match(d, /- last commit: 2026-01-02T03:04:05\.000Z, snapshot 123, commit id c-1\n/);
  assert.match(d, /- 4 commits, 507 rows, 0 dead letters/);
});

void test('search attribute pairs name the table, the kind and (for ingests) the ingest id', () => {
  const pairs = floeSearchAttributes('db.orders', 'ingest', 'main').map((p) => [p.key.name, p.key.type, p.value]);
  assert.deepEqual(pairs, [
    ['FloeTable', 'KEYWORD', 'db.orders'],
    ['FloeKind', 'KEYWORD', 'ingest'],
    ['FloeIngestId', 'KEYWORD', 'main'],
  ]);
  assert.equal(floeSearchAttributes('db.orders', 'compact').length, 2);
  assert.deepEqual(Object.keys(SEARCH_ATTRIBUTES), ['FloeTable', 'FloeKind', 'FloeIngestId']);
});

void test('floe setup recognises Temporal Cloud and says how to add the attributes there', () => {
  assert.ok(isTemporalCloud('orders.a1b2c.tmprl.cloud:7233'));
  assert.ok(isTemporalCloud('us-east-1.aws.api.temporal.io:7233'));
  assert.ok(!isTemporalCloud('127.0.0.1:7233'));
  assert.ok(!isTemporalCloud('temporal.internal.example.com:7233'));
  const text = cloudInstructions('orders.a1b2c', ['FloeKind', 'FloeIngestId']);
  assert.match(
    text,
    /tcld namespace search-attributes add --namespace orders\.a1b2c --search-attribute "FloeKind=Keyword" --search-attribute "FloeIngestId=Keyword"/,
  );
  assert.match(text, /Cloud UI/);
});
