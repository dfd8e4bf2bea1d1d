/**
 * Orphan removal (Spark remove_orphan_files): list everything under the table location, subtract
 * what the current metadata reaches (every retained snapshot's manifest list, manifests and
 * files, statistics, the current metadata.json and its metadata log), and delete what is left if
 * it is older than the grace period.
 *
 * Concurrency: a commit in flight writes files before its CAS makes them reachable; the grace
 * period (default 3 days, never below the safety floor unless forced) keeps them. The listing is
 * taken after the metadata is loaded, so a file committed in between is young and kept too.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Tables } from '../tables';
import { pool, reachableFiles, reachableSize } from './reachable';
import { ORPHANS_MIN_GRACE_MS, type OrphansInput, type OrphansResult } from './types';

export const UNSAFE_GRACE = 'UnsafeGracePeriod';

export function checkGrace(olderThanMs: number, force: boolean): void {
  if (olderThanMs < ORPHANS_MIN_GRACE_MS && !force) {
    throw ApplicationFailure.nonRetryable(
      `orphan grace period: expected at least ${ORPHANS_MIN_GRACE_MS / 60_000} minutes (files of in-flight commits look like orphans), found ${Math.round(olderThanMs / 1000)} s; pass force to override`,
      UNSAFE_GRACE);
  }
}

export async function removeOrphanFiles(tables: Tables, input: OrphansInput): Promise<Omit<OrphansResult, 'window' | 'durationMs'>> {
  checkGrace(input.olderThanMs, input.force);
  const ctx = Context.current();
  const loaded = await tables.load(input.table);
  const m = loaded.metadata;
  const reachable = await reachableFiles(tables.io, m, loaded.metadataLocation);
  const isReachable = (l: string) => reachable.dataFiles.has(l) || reachable.manifests.has(l) || reachable.manifestLists.has(l)
    || reachable.metadataFiles.has(l) || reachable.other.has(l);
  const cutoffMs = input.asOfMs - input.olderThanMs;
  const orphans: Array<{ location: string; size: number }> = [];
  let listed = 0, young = 0;
  // Trailing slash: `warehouse/ns/orders` must not list its sibling `warehouse/ns/orders_dead_letters`.
  for await (const f of tables.io.list(`${m.location.replace(/\/+$/, '')}/`)) {
    listed++;
    if (listed % 1000 === 0) ctx.heartbeat({ listed });
    if (isReachable(f.location)) continue;
    if (f.lastModified >= cutoffMs) young++;
    else orphans.push({ location: f.location, size: f.size });
  }
  let deleted = 0;
  if (!input.dryRun) {
    await pool(orphans, 16, async (f) => {
      await tables.io.delete(f.location);
      if (++deleted % 100 === 0) ctx.heartbeat({ listed, deleted, total: orphans.length });
    });
  }
  return {
    table: input.table, cutoffMs, filesListed: listed, reachableFiles: reachableSize(reachable), orphans: orphans.length,
    orphanBytes: orphans.reduce((a, f) => a + f.size, 0), keptByGracePeriod: young, deleted, dryRun: input.dryRun,
    sample: orphans.slice(0, 1000).map((f) => f.location),
  };
}
