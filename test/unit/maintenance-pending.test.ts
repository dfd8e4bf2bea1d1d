/**
 * A pending commit's files are never orphans; one table's sweep never touches another table's
 * files; a garbage or future window never becomes a cutoff. Memory catalog + memory FileIO, with
 * files back-dated past the grace period, the sweep run as an activity (MockActivityEnvironment).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { toFailure } from '../../activities/failures';
import { MockActivityEnvironment } from '@temporalio/testing';
import { removeOrphanFiles } from '../../maintenance/orphans';
import { expireSnapshotsCommit } from '../../maintenance/expire';
import type { Tables } from '../../table/tables';
import { MemoryCatalog, MemoryFileIO, newTableMetadata, type Schema } from '../../iceberg';
import { clearPending, escapeSegment, isProtected, listPending, markPending, pendingDir, unescapeSegment } from '../../table/pending';
import { InvalidWindowError, parseOptionalWindow, parseWindow, WINDOW_MAX_SKEW_MS } from '../../maintenance/window';

const schema: Schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'id', required: true, type: 'long' }] };
const HOUR = 3_600_000;

async function fixture(): Promise<{ io: MemoryFileIO; catalog: MemoryCatalog; tables: Tables }> {
  const io = new MemoryFileIO();
  const catalog = new MemoryCatalog('m', io);
  await catalog.createNamespace(['a']);
  await catalog.createNamespace(['a', 'b']);
  const tables = {
    catalog,
    io,
    load: (t: string) => {
      const p = t.split('.');
      return catalog.loadTable({ namespace: p.slice(0, -1), name: p.at(-1)! });
    },
  } as unknown as Tables;
  return { io, catalog, tables };
}

const create = (catalog: MemoryCatalog, ns: string[], name: string, location: string) =>
  catalog.createTable({ namespace: ns, name }, newTableMetadata({ location, schema, tableUuid: randomUUID() }));

/** Writes `location` with its last-modified time `ageMs` ago. */
async function old(io: MemoryFileIO, location: string, ageMs: number): Promise<void> {
  await io.write(location, new TextEncoder().encode('x'));
  io.setLastModified(location, Date.now() - ageMs);
}

const sweep = (tables: Tables, table: string, o: { olderThanMs?: number; asOfMs?: number; force?: boolean; dryRun?: boolean } = {}) =>
  asActivity(() =>
    removeOrphanFiles(tables, {
      table,
      olderThanMs: o.olderThanMs ?? HOUR,
      asOfMs: o.asOfMs ?? Date.now(),
      dryRun: o.dryRun ?? false,
      force: o.force ?? false,
    }),
  );

/** Runs domain code as its activity adapter would: in an activity context, failures mapped to Temporal's. */
const asActivity = <T>(fn: () => Promise<T>): Promise<T> =>
  new MockActivityEnvironment().run(fn).catch((e: unknown) => {
    throw toFailure(e);
  }) as Promise<T>;

void test('isProtected matches file base names by prefix, never directories or other prefixes', () => {
  const pending = [{ filePrefix: 'commit-123-a1-' }];
  assert.ok(isProtected('s3://b/wh/t/data/day=1/commit-123-a1-00000.parquet', pending));
  assert.ok(!isProtected('s3://b/wh/t/data/day=1/commit-123-a2-00000.parquet', pending));
  assert.ok(!isProtected('s3://b/wh/t/data/commit-123-a1-/x.parquet', pending), 'a directory named like the prefix protects nothing');
  assert.ok(!isProtected('s3://b/wh/t/data/x.parquet', []));
});

void test('marker names survive any owner (workflow ids have slashes) and round-trip', async () => {
  for (const s of ['floe-ingest/demo.orders/main', 'ü ~%/?', 'compact-1b2c']) assert.equal(unescapeSegment(escapeSegment(s)), s);
  assert.match(escapeSegment('floe-ingest/demo.orders/main'), /^[A-Za-z0-9._~-]+$/);
  const io = new MemoryFileIO();
  await markPending(io, 'memory://wh/t/', 'floe-ingest/demo.t/main', 'c1-a1-');
  await markPending(io, 'memory://wh/t', 'floe-ingest/demo.t/main', 'c1-a2-');
  await markPending(io, 'memory://wh/t', 'compact-r1', 'compact-r1-');
  assert.ok(io.locations().every((l) => l.startsWith(pendingDir('memory://wh/t'))));
  assert.deepEqual((await listPending(io, 'memory://wh/t')).map((p) => `${p.owner}|${p.filePrefix}`).sort(), [
    'compact-r1|compact-r1-',
    'floe-ingest/demo.t/main|c1-a1-',
    'floe-ingest/demo.t/main|c1-a2-',
  ]);
  await clearPending(io, 'memory://wh/t', 'floe-ingest/demo.t/main');
  await clearPending(io, 'memory://wh/t', 'floe-ingest/demo.t/main'); // idempotent
  assert.deepEqual(
    (await listPending(io, 'memory://wh/t')).map((p) => p.owner),
    ['compact-r1'],
  );
  await assert.rejects(markPending(io, 'memory://wh/t', 'o', ''), /non-empty file-name prefix/);
});

void test("the sweep keeps a pending commit's old files and the markers, deletes an unprotected file of the same age; cleared, they go", async () => {
  const { io, catalog, tables } = await fixture();
  await create(catalog, ['a'], 't', 'memory://wh/a/t');
  await markPending(io, 'memory://wh/a/t', 'floe-ingest/a.t/main', 'commit-42-a1-');
  const protectedFile = 'memory://wh/a/t/data/commit-42-a1-00000.parquet';
  const orphan = 'memory://wh/a/t/data/commit-41-a1-00000.parquet';
  await old(io, protectedFile, 5 * HOUR);
  await old(io, orphan, 5 * HOUR);
  for (const l of io.locations().filter((x) => x.includes('floe-pending'))) io.setLastModified(l, Date.now() - 5 * HOUR);

  const r = await sweep(tables, 'a.t');
  assert.equal(r.deleted, 1);
  assert.deepEqual(r.sample, [orphan]);
  assert.equal(r.keptByPending, 1);
  assert.equal(r.pendingMarkers, 1);
  assert.ok(await io.exists(protectedFile));
  assert.equal((await listPending(io, 'memory://wh/a/t')).length, 1, 'the marker itself is never swept');

  await clearPending(io, 'memory://wh/a/t', 'floe-ingest/a.t/main');
  const r2 = await sweep(tables, 'a.t');
  assert.deepEqual(r2.sample, [protectedFile]);
  assert.ok(!(await io.exists(protectedFile)));
});

void test("sweeping a.b never touches a.b.c, whose location lies inside a.b's", async () => {
  const { io, catalog, tables } = await fixture();
  await create(catalog, ['a'], 'b', 'memory://wh/a/b');
  await create(catalog, ['a', 'b'], 'c', 'memory://wh/a/b/c');
  const inner = ['memory://wh/a/b/c/data/x.parquet', 'memory://wh/a/b/c/metadata/old.metadata.json'];
  for (const l of inner) await old(io, l, 5 * HOUR);
  await old(io, 'memory://wh/a/b/data/stray.parquet', 5 * HOUR);
  for (const l of io.locations()) io.setLastModified(l, Date.now() - 5 * HOUR);
  const r = await sweep(tables, 'a.b');
  assert.deepEqual(r.sample, ['memory://wh/a/b/data/stray.parquet']);
  assert.deepEqual(r.nestedTables, ['a.b.c']);
  for (const l of inner) assert.ok(await io.exists(l), `${l} is a.b.c's`);
  await catalog.loadTable({ namespace: ['a', 'b'], name: 'c' }); // a.b.c's metadata is intact
});

void test('window parsing: garbage, impossible dates, zone-less times and future windows are refused', () => {
  const now = Date.parse('2026-07-01T12:00:00Z');
  assert.equal(parseWindow('2026-07-01T03:00:00Z', now), Date.parse('2026-07-01T03:00:00Z'));
  assert.equal(parseWindow('2026-07-01', now), Date.parse('2026-07-01T00:00:00Z'));
  assert.equal(parseWindow('2026-07-01T14:00:00+02:00', now), Date.parse('2026-07-01T12:00:00Z'));
  assert.equal(parseOptionalWindow(null, now), null);
  for (const bad of ['garbage', '', 'July 1, 2026', '2026-02-30T00:00:00Z', '2026-07-01T03:00:00', '2026-07-01T25:00:00Z']) {
    assert.throws(
      () => parseWindow(bad, now),
      (e: unknown) => e instanceof InvalidWindowError && /expected an ISO 8601 time/.test(e.message),
      bad,
    );
  }
  assert.throws(
    () => parseWindow('2026-07-02T00:00:00Z', now),
    (e: unknown) => e instanceof InvalidWindowError && /not in the future/.test(e.message),
  );
  assert.equal(parseWindow(new Date(now + WINDOW_MAX_SKEW_MS).toISOString(), now), now + WINDOW_MAX_SKEW_MS, 'clock skew allowance');
});

void test('the activities refuse a NaN or future asOf with a non-retryable InvalidWindow (every file an orphan otherwise)', async () => {
  const { io, catalog, tables } = await fixture();
  await create(catalog, ['a'], 't', 'memory://wh/a/t');
  await old(io, 'memory://wh/a/t/data/x.parquet', 5 * HOUR);
  for (const asOfMs of [NaN, Date.now() + 86_400_000]) {
    await assert.rejects(
      sweep(tables, 'a.t', { asOfMs }),
      (e: unknown) => e instanceof ApplicationFailure && e.type === 'InvalidWindow' && e.nonRetryable,
    );
    await assert.rejects(
      asActivity(() => expireSnapshotsCommit(tables, { table: 'a.t', expireId: 'x', olderThanMs: HOUR, retainLast: 1, asOfMs })),
      (e: unknown) => e instanceof ApplicationFailure && e.type === 'InvalidWindow',
    );
  }
  await assert.rejects(
    sweep(tables, 'a.t', { olderThanMs: NaN, force: true }),
    (e: unknown) => e instanceof ApplicationFailure && e.type === 'UnsafeGracePeriod',
  );
  assert.ok(await io.exists('memory://wh/a/t/data/x.parquet'));
});
