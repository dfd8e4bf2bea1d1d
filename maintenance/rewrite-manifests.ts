/**
 * `floe table rewrite-manifests`: rewrites a table's data manifests clustered by partition, in
 * one `replace` snapshot that changes no rows (Spark's `rewrite_manifests`; the commit is the
 * library's RewriteManifests). A direct catalog commit, not a Temporal workflow: it reads and
 * writes only metadata (a few MB even for large tables), and a crash leaves at most unreferenced
 * manifests for the orphan sweep.
 *
 * Concurrency: optimistic CAS with the table's `commit.retry.*` retries; concurrent appends are
 * kept; a planned manifest that vanished meanwhile fails the run (CommitFailed), and running it
 * again plans afresh.
 */
import {
  parseIdentifier,
  readManifestList,
  currentSnapshot,
  ManifestContent,
  RewriteManifests,
  Transaction,
  type FileIO,
  type RewriteManifestsNoop,
  type TableMetadata,
} from '../iceberg';
import type { Tables } from '../table/tables';

interface ManifestRewriteOptions {
  /** split output manifests at this size; default table `commit.manifest.target-size-bytes` (8 MB) */
  targetSizeBytes?: number;
}

export interface ManifestRewriteResult {
  table: string;
  /** data manifests in the snapshot the rewrite planned against */
  manifestsBefore: number;
  /** data manifests in the table's current snapshot afterwards (including concurrent appends') */
  manifestsAfter: number;
  /** live data file entries rewritten (0 for a no-op) */
  entries: number;
  /** distinct partitions (per spec) of those entries */
  partitions: number;
  /** the most data manifests one partition was spread over, before */
  maxManifestsPerPartition: number;
  /** the new snapshot (decimal string: a 64-bit id), null when nothing was committed */
  snapshotId: string | null;
  /** why nothing was committed: no live data files, or one manifest per partition already */
  noop: RewriteManifestsNoop | null;
}

async function dataManifestCount(io: FileIO, m: TableMetadata): Promise<number> {
  const s = currentSnapshot(m);
  if (!s) return 0;
  return (await readManifestList(io, s['manifest-list'])).filter((x) => x.content === ManifestContent.Data).length;
}

/** Rewrites `table`'s data manifests clustered by partition; a no-op (no snapshot) when already clustered or empty. */
export async function rewriteManifests(tables: Tables, table: string, opts: ManifestRewriteOptions = {}): Promise<ManifestRewriteResult> {
  const id = parseIdentifier(table);
  const loaded = await tables.load(table);
  const tx = new Transaction(id);
  const action = new RewriteManifests(opts.targetSizeBytes === undefined ? {} : { targetSizeBytes: opts.targetSizeBytes });
  tx.add(action);
  const r = await tx.commit(tables.catalog, tables.io, { table: loaded });
  const plan = action.plan!;
  const noop = plan.noop ?? null;
  return {
    table,
    manifestsBefore: plan.dataManifests,
    manifestsAfter: noop ? plan.dataManifests : await dataManifestCount(tables.io, r.table.metadata),
    entries: noop ? 0 : plan.entries,
    partitions: plan.partitions,
    maxManifestsPerPartition: plan.maxManifestsPerPartition,
    snapshotId: noop ? null : action.snapshotId.toString(),
    noop,
  };
}
