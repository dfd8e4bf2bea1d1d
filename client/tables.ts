/**
 * Table inspection for the CLI and programmatic users: commit history and column reads, straight
 * from the catalog and object store (no Temporal involved).
 */
import { entryTables, type FloeConfig } from '../config';
import { effectiveCursor, listedRouteTables, minimumOffsets, readRouteCursor } from '../ingest/route';
import { openTables, type Tables } from '../table/tables';
import { PositionDeleteCache, ancestors, planTasks, readTaskBatches } from '../iceberg';
import { readCursor } from '../table/cursor';
import type { IngestStatus } from '../workflows';

/** One row per snapshot on main, oldest first: what `floe table commits` prints. */
export async function tableCommitRows(cfg: FloeConfig, table: string): Promise<Record<string, string>[]> {
  const tables = await openTables(cfg);
  try {
    const { metadata } = await tables.load(table);
    return [...ancestors(metadata)].reverse().map((s) => ({
      time: new Date(Number(s['timestamp-ms'])).toISOString(),
      snapshot_id: s['snapshot-id'].toString(),
      operation: s.summary.operation,
      rows: s.summary['added-records'] ?? '0',
      files: s.summary['added-data-files'] ?? '0',
      removed_files: s.summary['deleted-data-files'] ?? '0',
      total_rows: s.summary['total-records'] ?? '',
      total_files: s.summary['total-data-files'] ?? '',
      commit_id: s.summary['floe.commit-id'] ?? '',
    }));
  } finally {
    await tables.close();
  }
}

/**
 * Every value of one column in the table's current snapshot, read through floe's Parquet reader
 * with position deletes applied (deleted rows are left out).
 */
export async function readColumnValues(tables: Tables, table: string, column: string): Promise<unknown[]> {
  const loaded = await tables.load(table);
  const tasks = await planTasks(loaded.metadata, tables.io);
  const cache = new PositionDeleteCache(tables.io);
  const out: unknown[] = [];
  for (const task of tasks) {
    for await (const batch of readTaskBatches(tables.io, task, { columns: [column], cache })) {
      const col = batch.getChild(column);
      if (!col) throw new Error(`${task.file.filePath}: no column ${column}`);
      for (const v of col) out.push(v);
    }
  }
  return out;
}

/** What the table itself says about an ingest id (its cursor and last commit), for ingests that no longer run. */
export async function tableIngestStatus(cfg: FloeConfig, table: string, ingestId: string): Promise<IngestStatus> {
  const tables = await openTables(cfg);
  try {
    const { metadata } = await tables.load(table).catch(() => ({ metadata: undefined }));
    const c = metadata ? readCursor(metadata, ingestId) : undefined;
    const snap = c?.snapshotId ? metadata!.snapshots.find((s) => s['snapshot-id'].toString() === c.snapshotId) : undefined;
    // A route: every table's effective cursor, its own raised to the route cursor (the entry's is
    // their minimum, where its next poll starts).
    const entry = cfg.tables.find((t) => t.table === table);
    let routed: IngestStatus['tables'];
    if (entry?.route && metadata) {
      const names = [...entryTables(entry), ...listedRouteTables(metadata.properties)];
      const route = readRouteCursor(metadata.properties, ingestId);
      const cursors = await Promise.all(
        names.map(async (n) => {
          const m = n === table ? metadata : (await tables.load(n).catch(() => undefined))?.metadata;
          return m ? readCursor(m, ingestId) : undefined;
        }),
      );
      routed = Object.fromEntries(
        names.map((n, i) => [
          n,
          {
            cursor: effectiveCursor(cursors[i]?.offsets ?? {}, route),
            rows: 0,
            commits: 0,
            lastSnapshotId: cursors[i]?.snapshotId ?? null,
          },
        ]),
      );
    }
    const cursor = routed
      ? minimumOffsets(
          Object.values(routed).map((r) => r.cursor),
          [...new Set(Object.values(routed).flatMap((r) => Object.keys(r.cursor)))],
        )
      : (c?.offsets ?? {});
    return {
      table,
      ingestId,
      state: 'stopped',
      cursor,
      ...(routed ? { tables: routed } : {}),
      lag: {},
      lastCommitId: c?.commitId ?? null,
      lastSnapshotId: c?.snapshotId ?? null,
      lastCommitTimeMs: snap ? Number(snap['timestamp-ms']) : null,
      cycles: 0,
      commits: 0,
      fencedCommits: 0,
      totalRows: 0,
      totalDeadLetters: 0,
      rowsPerSecond: 0,
      filesPerCommit: 0,
    };
  } finally {
    await tables.close();
  }
}
