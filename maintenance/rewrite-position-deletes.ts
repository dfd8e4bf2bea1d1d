/**
 * `floe table rewrite-position-deletes`: merges each partition's position delete files into one
 * and drops the positions of data files that are no longer live (Spark's
 * `rewrite_position_delete_files`). An upsert table gets a delete file per partition and cycle;
 * readers open every one that may apply, so many small ones slow every scan. No row changes: the
 * new files delete exactly the live rows the old ones did, committed in one `replace` snapshot
 * (the library's ReplaceDeleteFiles). A direct catalog commit, not a Temporal workflow: a crash
 * leaves at most unreferenced delete files for the orphan sweep.
 *
 * Concurrency: optimistic CAS with retries; concurrent ingest commits (new data, new deletes) are
 * kept; a delete file rewritten here that vanished meanwhile (another rewrite, a compaction that
 * removed it as dangling) fails the run (CommitFailed), and running it again plans afresh.
 * Equality delete files are left as they are. A v3 table's deletion vectors are one per data file
 * by construction: there it drops dangling DVs and turns v2 position delete files (from before an
 * upgrade) into DVs.
 */
import { randomUUID } from 'node:crypto';
import {
  DataFileContent,
  ReplaceDeleteFiles,
  Transaction,
  mapConcurrent,
  parseIdentifier,
  partitionKey,
  readPositionDeletes,
  writePositionDeleteFiles,
  isDeletionVector,
  readDeletionVector,
  referencedDataFile,
  writeDeletionVectors,
  type LoadedTable,
  type DataFile,
  type DataFilePositionDelete,
} from '../iceberg';
import type { Tables } from '../table/tables';
import { liveDataFiles, liveDeleteFiles } from './reachable';

interface PositionDeleteRewriteResult {
  table: string;
  /** live position delete files, and the positions they hold, before and after */
  deleteFilesBefore: number;
  deleteFilesAfter: number;
  positionsBefore: number;
  positionsAfter: number;
  /** positions of data files no longer live, dropped */
  danglingDropped: number;
  /** partitions whose delete files were rewritten */
  partitions: number;
  /** the new snapshot (decimal string), null when nothing was worth rewriting */
  snapshotId: string | null;
}

/** Rewrites `table`'s position delete files: one per partition, without dangling positions. */
export async function rewritePositionDeletes(tables: Tables, table: string): Promise<PositionDeleteRewriteResult> {
  const loaded = await tables.load(table);
  const m = loaded.metadata;
  const deletes = (await liveDeleteFiles(tables.io, m)).filter((f) => f.content === DataFileContent.PositionDeletes);
  const live = new Map((await liveDataFiles(tables.io, m, { metrics: false })).map((f) => [f.dataFile.filePath, f.dataFile]));
  const positionsBefore = deletes.reduce((a, f) => a + f.recordCount, 0);
  const result = (r: Partial<PositionDeleteRewriteResult>): PositionDeleteRewriteResult => ({
    table,
    deleteFilesBefore: deletes.length,
    deleteFilesAfter: deletes.length,
    positionsBefore,
    positionsAfter: positionsBefore,
    danglingDropped: 0,
    partitions: 0,
    snapshotId: null,
    ...r,
  });
  // Per partition: its delete files and what they name.
  const byPartition = new Map<string, DataFile[]>();
  for (const f of deletes) {
    const k = `${f.specId}:${partitionKey(f.partition)}`;
    let l = byPartition.get(k);
    if (!l) byPartition.set(k, (l = []));
    l.push(f);
  }
  if (m['format-version'] >= 3) return rewriteToDeletionVectors(tables, table, loaded, deletes, live, result);
  const read = await mapConcurrent(deletes, 8, (f) => readPositionDeletes(tables.io, f));
  const named = new Map(deletes.map((f, i) => [f.filePath, read[i]!]));
  const removed: DataFile[] = [];
  const kept: DataFilePositionDelete[] = [];
  let dangling = 0,
    partitions = 0;
  for (const files of byPartition.values()) {
    const stale = files.some((f) => [...named.get(f.filePath)!.keys()].some((p) => !live.has(p)));
    if (files.length < 2 && !stale) continue; // one file naming live files only: nothing to gain
    partitions++;
    removed.push(...files);
    const positions = new Map<string, Set<bigint>>();
    for (const f of files)
      for (const [path, ps] of named.get(f.filePath)!) {
        if (!live.has(path)) {
          dangling += ps.length;
          continue;
        }
        let set = positions.get(path);
        if (!set) positions.set(path, (set = new Set()));
        for (const p of ps) set.add(p);
      }
    for (const [path, set] of positions) for (const pos of set) kept.push({ dataFile: live.get(path)!, pos });
  }
  if (removed.length === 0) return result({});
  const prefix = `rewrite-deletes-${randomUUID()}`;
  const written =
    kept.length === 0 ? { deleteFiles: [] } : await writePositionDeleteFiles(tables.io, m, kept, (n) => `${prefix}-${n}.parquet`);
  const action = new ReplaceDeleteFiles(removed, written.deleteFiles, { 'floe.rewrite-position-deletes': String(removed.length) });
  const tx = new Transaction(parseIdentifier(table)).add(action);
  await tx.commit(tables.catalog, tables.io, { table: loaded });
  const positionsAfter = positionsBefore - removed.reduce((a, f) => a + f.recordCount, 0) + kept.length;
  return result({
    deleteFilesAfter: deletes.length - removed.length + written.deleteFiles.length,
    positionsAfter,
    danglingDropped: dangling,
    partitions,
    snapshotId: action.snapshotId.toString(),
  });
}

/**
 * A v3 table: deletion vectors are one per data file already, so nothing merges; DVs of data
 * files no longer live are dropped, and v2 position delete files left from before an upgrade to v3
 * become DVs (each data file's positions, with its live DV's, in one new DV that replaces it).
 */
async function rewriteToDeletionVectors(
  tables: Tables,
  table: string,
  loaded: LoadedTable,
  deletes: DataFile[],
  live: Map<string, DataFile>,
  result: (r: Partial<PositionDeleteRewriteResult>) => PositionDeleteRewriteResult,
): Promise<PositionDeleteRewriteResult> {
  const dvs = new Map<string, DataFile>();
  const removed: DataFile[] = [];
  let dangling = 0;
  for (const f of deletes.filter(isDeletionVector)) {
    const ref = referencedDataFile(f)!;
    if (live.has(ref)) dvs.set(ref, f);
    else {
      removed.push(f);
      dangling += f.recordCount;
    }
  }
  const v2 = deletes.filter((f) => !isDeletionVector(f));
  const positions = new Map<string, Set<bigint>>();
  const read = await mapConcurrent(v2, 8, (f) => readPositionDeletes(tables.io, f));
  for (const named of read)
    for (const [path, ps] of named) {
      if (!live.has(path)) {
        dangling += ps.length;
        continue;
      }
      let set = positions.get(path);
      if (!set) positions.set(path, (set = new Set()));
      for (const p of ps) set.add(p);
    }
  removed.push(...v2);
  if (removed.length === 0) return result({});
  for (const [path, set] of positions) {
    const dv = dvs.get(path);
    if (!dv) continue;
    for (const p of await readDeletionVector(tables.io, dv)) set.add(p);
    removed.push(dv);
  }
  const targets = [...positions].map(([path, set]) => ({ dataFile: live.get(path)!, positions: set }));
  const written =
    targets.length === 0 ? [] : await writeDeletionVectors(tables.io, loaded.metadata, targets, `rewrite-deletes-${randomUUID()}.puffin`);
  const action = new ReplaceDeleteFiles(removed, written, { 'floe.rewrite-position-deletes': String(removed.length) });
  await new Transaction(parseIdentifier(table)).add(action).commit(tables.catalog, tables.io, { table: loaded });
  const before = deletes.reduce((a, f) => a + f.recordCount, 0);
  const after = before - removed.reduce((a, f) => a + f.recordCount, 0) + written.reduce((a, f) => a + f.recordCount, 0);
  return result({
    deleteFilesAfter: deletes.length - removed.length + written.length,
    positionsAfter: after,
    danglingDropped: dangling,
    partitions: new Set(targets.map((t) => `${t.dataFile.specId}:${partitionKey(t.dataFile.partition)}`)).size,
    snapshotId: action.snapshotId.toString(),
  });
}
