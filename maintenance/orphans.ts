/**
 * Orphan removal (Spark remove_orphan_files): list everything under the table location, subtract
 * what the current metadata reaches (every retained snapshot's manifest list, manifests and
 * files, statistics, the current metadata.json and its metadata log), and delete what is left if
 * it is older than the grace period. Never deleted, whatever their age:
 * - files a pending commit announced (table/pending.ts markers), and the markers themselves;
 * - anything under another table's location (a table nested inside this one's location).
 *
 * Concurrency: a commit in flight writes files before its CAS makes them reachable. Writers that
 * may outlive the grace period mark their file prefix first; the markers are read *before* the
 * metadata is loaded and the location listed, so a file is either still marked when we look, or
 * its commit landed before we loaded the metadata (then it is reachable), or its run ended without
 * a commit (then it is an orphan). Files written after we read the markers are younger than the
 * cutoff, which counts back from the earlier of the window and the start of this sweep.
 */
import { parseIdentifier, locationContains, normalizeLocation, tableLocations, mapConcurrent } from '../iceberg';
import { isPendingMarker, isProtected, listPending } from '../table/pending';
import type { Tables } from '../table/tables';
import { reachableFiles, reachableSize } from './reachable';
import { checkAsOf } from './window';
import { DETACHED_RUN, FailureType, gracePeriodProblem, nonRetryable, type StepRun } from '../contract';
import type { OrphansInput, OrphansResult } from './types';

const UNSAFE_GRACE = FailureType.UnsafeGracePeriod;

/** A pending marker older than this is reported as stale (its owner probably died before clearing it). */
const STALE_PENDING_MS = 7 * 24 * 60 * 60 * 1000;

function checkGrace(olderThanMs: number, force: boolean): void {
  const problem = gracePeriodProblem(olderThanMs, force);
  if (problem) throw nonRetryable(UNSAFE_GRACE, problem);
}

export async function removeOrphanFiles(
  tables: Tables,
  input: OrphansInput,
  run: StepRun = DETACHED_RUN,
): Promise<Omit<OrphansResult, 'window' | 'durationMs'>> {
  checkGrace(input.olderThanMs, input.force);
  checkAsOf(input.asOfMs, Date.now(), 'orphan removal asOf');
  const startedMs = Date.now();
  const id = parseIdentifier(input.table);
  const location = normalizeLocation((await tables.load(input.table)).metadata.location);

  // 1. Pending markers first (see the header: the order is what makes them safe).
  const pending = await listPending(tables.io, location);
  // 2. Tables nested inside this location own their files.
  const nestedTables = (await tableLocations(tables.catalog, { exclude: id })).filter((t) => locationContains(location, t.location));
  const nested = nestedTables.map((t) => `${normalizeLocation(t.location)}/`);
  // 3. Then what the metadata reaches, then the listing.
  const loaded = await tables.load(input.table);
  const m = loaded.metadata;
  const reachable = await reachableFiles(tables.io, m, loaded.metadataLocation);
  // Compared in normalized form: another engine names the same file differently (Spark's
  // HadoopFileIO writes `file:/p` into a table at `file:///p`, Hadoop writes `s3a://`), and a
  // reachable file missed here would be deleted.
  const reachableForms = new Set(
    [reachable.dataFiles, reachable.manifests, reachable.manifestLists, reachable.metadataFiles, reachable.other].flatMap((s) =>
      [...s].map(normalizeLocation),
    ),
  );
  const isReachable = (l: string) => reachableForms.has(normalizeLocation(l));
  const cutoffMs = Math.min(input.asOfMs, startedMs) - input.olderThanMs;
  const orphans: Array<{ location: string; size: number }> = [];
  let listed = 0,
    young = 0,
    keptByPending = 0,
    keptByOtherTables = 0,
    markers = 0;
  // Trailing slash: `warehouse/ns/orders` must not list its sibling `warehouse/ns/orders_dead_letters`.
  for await (const f of tables.io.list(`${location}/`)) {
    listed++;
    if (listed % 1000 === 0) run.heartbeat({ listed });
    if (isPendingMarker(f.location, location)) {
      markers++;
      continue;
    }
    const l = normalizeLocation(f.location);
    if (nested.some((n) => l.startsWith(n))) {
      keptByOtherTables++;
      continue;
    }
    if (isReachable(f.location)) continue;
    if (isProtected(f.location, pending)) {
      keptByPending++;
      continue;
    }
    if (f.lastModified >= cutoffMs) young++;
    else orphans.push({ location: f.location, size: f.size });
  }
  let deleted = 0;
  if (!input.dryRun) {
    await mapConcurrent(orphans, 16, async (f) => {
      await tables.io.delete(f.location);
      if (++deleted % 100 === 0) run.heartbeat({ listed, deleted, total: orphans.length });
    });
  }
  return {
    table: input.table,
    cutoffMs,
    filesListed: listed,
    reachableFiles: reachableSize(reachable),
    orphans: orphans.length,
    orphanBytes: orphans.reduce((a, f) => a + f.size, 0),
    keptByGracePeriod: young,
    deleted,
    dryRun: input.dryRun,
    keptByPending,
    pendingMarkers: markers,
    stalePendingOwners: [...new Set(pending.filter((p) => startedMs - p.lastModified > STALE_PENDING_MS).map((p) => p.owner))],
    keptByOtherTables,
    nestedTables: nestedTables.map((t) => t.name),
    sample: orphans.slice(0, 1000).map((f) => f.location),
  };
}
