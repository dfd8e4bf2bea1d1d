/**
 * Commits one ingest cycle: dead letters first, then the data with the new cursor, each keyed by
 * the workflow-made commit id. Idempotent (a retry finds its commit id and returns that snapshot)
 * and fenced (lands only if this ingest's cursor is still the one the cycle started from).
 * Concurrency: CAS on the catalog; concurrent compaction/other ingests cause a reload + retry.
 * No Temporal here (activities/index.ts binds it).
 */
import { FailureType, nonRetryable } from '../contract';
import { randomUUID } from 'node:crypto';
import {
  dataFileFromWire,
  isIcebergError,
  mapConcurrent,
  mergeDeletionVectors,
  readDeleteFile,
  ALREADY_COMMITTED,
  type DataFile,
  type TableMetadata,
} from '../iceberg';
import type { TableConfig } from '../config';
import { clearPending } from '../table/pending';
import { deleteStaged, expandFileList, stagedLocations } from '../table/staged-files';
import { crashPoint } from '../table/crash-points';
import {
  SUMMARY_COMMIT_ID,
  SUMMARY_DEAD_LETTERS,
  SUMMARY_INGEST_ID,
  SUMMARY_OFFSETS,
  SUMMARY_RANGE,
  SUMMARY_TOPIC,
  SUMMARY_TOPIC_ID,
  cursorProperty,
  deadLetterCursorProperty,
  formatOffsets,
  landedCommit,
  maxOffsets,
  readCursor,
  SUMMARY_SKIPPED,
  readDeadLetterCursor,
  type Cursor,
  type Offsets,
} from '../table/cursor';
import { ingestTableConfig, pendingOwner, tableLocation, type Deps } from './deps';
import { mirrorOffsets } from './mirror';
import { routeCursorProperty } from './route';
import type { CommitInput, CommitResult } from './types';

/** What a commit reports; the snapshot may already be expired when a retry finds its commit via the cursor. */
function commitResult(m: TableMetadata, snapshotId: string, alreadyCommitted: boolean): CommitResult {
  const snap = m.snapshots.find((s) => s['snapshot-id'].toString() === snapshotId);
  return {
    snapshotId,
    alreadyCommitted,
    committedAtMs: snap ? Number(snap['timestamp-ms']) : Number(m['last-updated-ms']),
    totalRecords: (snap ?? m.snapshots.at(-1))?.summary['total-records'] ?? '0',
  };
}

/** Every path must exist; a missing one fails the cycle as FilesMissing (the loop re-reads). */
async function requireFilesExist(deps: Deps, paths: string[], what: string): Promise<void> {
  const exists = await mapConcurrent(paths, 16, (p) => deps.tables.io.exists(p));
  const missing = paths.filter((_, i) => !exists[i]);
  if (missing.length > 0) {
    throw nonRetryable(
      FailureType.FilesMissing,
      `${what}: ${missing.length} of ${paths.length} files written for it no longer exist (e.g. ${missing[0]}); the cycle will re-read its offsets`,
    );
  }
}

/**
 * The cycle's data and dead-letter files, staged lists read back. Large cycles staged their file
 * lists (pollAndWrite); one swept while the cycle waited is missing files like any other, as is a
 * data file: FilesMissing, and the loop reloads and re-reads the same offsets.
 */
async function readFileLists(deps: Deps, input: CommitInput, table: string): Promise<{ files: DataFile[]; deadLetterFiles: DataFile[] }> {
  let files: DataFile[], deadLetterFiles: DataFile[];
  try {
    [files, deadLetterFiles] = await Promise.all([
      expandFileList(deps.tables.io, input.files),
      expandFileList(deps.tables.io, input.deadLetterFiles),
    ]);
  } catch (e) {
    if (!isIcebergError(e, 'NotFound')) throw e;
    throw nonRetryable(
      FailureType.FilesMissing,
      `${table} commit ${input.commitId}: a staged file list written for it no longer exists (${(e as Error).message}); the cycle will re-read its offsets`,
    );
  }

  // A cycle that waited long (a stuck group, a paused worker) may find its files swept; never
  // commit a dangling reference: the loop reloads and re-reads the same offsets instead.
  await requireFilesExist(
    deps,
    [...files, ...deadLetterFiles].map((f) => f.filePath),
    `${table} commit ${input.commitId}`,
  );
  return { files, deadLetterFiles };
}

/**
 * Dead letters have their own fenced cursor in the dead-letter table: offsets below it are
 * recorded. It lands before the main commit; a batch that re-reads those offsets later (after the
 * main commit was fenced or the worker died) skips them at poll time.
 */
async function commitDeadLetters(deps: Deps, t: TableConfig, input: CommitInput, deadLetterFiles: DataFile[]): Promise<void> {
  await deps.tables.appendOnce(t.deadLetterTable, {
    files: deadLetterFiles,
    summary: { [SUMMARY_COMMIT_ID]: input.commitId, [SUMMARY_TOPIC]: t.topic, [SUMMARY_INGEST_ID + '.source']: input.ingestId },
    properties: () =>
      deadLetterCursorProperty(input.ingestId, t.topic, {
        offsets: maxOffsets(input.deadLetterFloor, input.endOffsets),
        commitId: input.commitId,
      }),
    validate: (m) => {
      const dl = readDeadLetterCursor(m, input.ingestId);
      if (dl.commitId === input.commitId) return ALREADY_COMMITTED;
      if (dl.commitId !== input.deadLetterBaseCommitId) {
        throw nonRetryable(
          FailureType.StaleCursor,
          `stale dead-letter cursor for ${t.deadLetterTable}/${input.ingestId}: expected commit ${input.deadLetterBaseCommitId ?? 'none'}, found ${dl.commitId ?? 'none'}`,
        );
      }
    },
  });
}

export async function commitCycle(deps: Deps, input: CommitInput): Promise<CommitResult> {
  return (await commitCycleTo(deps, input)).result;
}

/** commitCycle, with the table's metadata after it (a route's commit decides on its expiry from it). */
export async function commitCycleTo(deps: Deps, input: CommitInput): Promise<{ result: CommitResult; metadata: TableMetadata }> {
  const t = ingestTableConfig(deps.cfg, input.table, input.topic);
  // A route commits each of its tables in turn, all with the cycle's commit id and end offsets.
  const table = input.routeTable ?? t.table;
  // Chaos tests: every table of the cycle but the last has committed (the widest gap between cursors).
  if (input.routeCount !== undefined && input.routeCount > 1 && input.routeIndex === input.routeCount - 1)
    crashPoint('between-table-commits');
  const staged = [...stagedLocations(input.files), ...stagedLocations(input.deadLetterFiles)];
  const before = await deps.tables.load(table);
  const landed = landedCommit(before.metadata, input.ingestId, input.commitId);
  if (landed !== null) {
    await deleteStaged(deps.tables.io, staged);
    return { result: commitResult(before.metadata, landed, true), metadata: before.metadata };
  }
  const { files, deadLetterFiles } = await readFileLists(deps, input, table);
  const deleteFiles = (input.upsert?.deleteFiles ?? []).map((w) => dataFileFromWire(w));
  if (deleteFiles.length > 0)
    await requireFilesExist(
      deps,
      deleteFiles.map((f) => f.filePath),
      `${table} commit ${input.commitId}`,
    );
  const fence = (m: TableMetadata) => fenceCursor(table, input.ingestId, input.baseSnapshotId, readCursor(m, input.ingestId));
  // Dead letters first, under the same commit id: a retry after a crash between the two finds them.
  if (deadLetterFiles.length > 0) await commitDeadLetters(deps, t, input, deadLetterFiles);
  // Records Kafka deleted before the table got them (the plan started past the cursor): never
  // rows, never dead letters (there are no bytes left), so recorded where an auditor looks.
  // A route's table that got nothing for a while is as far as the route cursor, not only its own.
  const current = readCursor(before.metadata, input.ingestId);
  const skipped = skippedPast(maxOffsets(current.offsets, input.routeFloor ?? {}), input.startOffsets);
  // The id of the topic the plan read (checked against the cursor's there); a cycle planned before
  // topic ids keeps the cursor's.
  const topicId = input.topicId ?? current.topicId ?? null;
  const summary = {
    ...(skipped.text ? { [SUMMARY_SKIPPED]: skipped.text } : {}),
    [SUMMARY_INGEST_ID]: input.ingestId,
    [SUMMARY_OFFSETS]: formatOffsets(input.endOffsets),
    [SUMMARY_COMMIT_ID]: input.commitId,
    [SUMMARY_TOPIC]: t.topic,
    ...(topicId ? { [SUMMARY_TOPIC_ID]: topicId } : {}),
    [SUMMARY_DEAD_LETTERS]: String(input.deadLetters),
    ...(input.range ? { [SUMMARY_RANGE]: JSON.stringify(input.range) } : {}),
  };
  const deletes = input.upsert
    ? await deletesToCommit(deps, before.metadata, deleteFiles, input.upsert.referencedDataFiles, input.commitId)
    : undefined;
  const res = await deps.tables
    .appendOnce(table, {
      files,
      summary,
      base: before,
      ...(deletes ? { deletes } : {}),
      // The cursor is a table property written in the same atomic commit: it survives any expiry.
      properties: (snapshotId) => ({
        ...cursorProperty(input.ingestId, {
          snapshotId: snapshotId.toString(),
          commitId: input.commitId,
          offsets: input.endOffsets,
          topic: t.topic,
          topicId,
          ...(input.range ? { range: input.range } : {}),
        }),
        // A route's base table, committed after every other table of the cycle that got rows.
        ...(input.routeCursor ? routeCursorProperty(input.ingestId, input.routeCursor) : {}),
      }),
      validate: (m) => {
        if (landedCommit(m, input.ingestId, input.commitId) !== null) return ALREADY_COMMITTED;
        fence(m);
        if (input.upsert) checkNoRowsAddedSince(table, m, input.upsert.indexSnapshotIds);
      },
    })
    .catch((e: unknown) => {
      // RowDelta: a data file the deletes name was rewritten meanwhile (compaction). The cycle's
      // positions no longer name its keys' rows: it starts over from a fresh key index.
      if (input.upsert && isIcebergError(e, 'CommitFailed'))
        throw nonRetryable(
          FailureType.DeleteConflict,
          `${table} commit ${input.commitId}: ${(e as Error).message}; the cycle will re-read its offsets`,
        );
      throw e;
    });
  crashPoint('after-cas');
  // Every earlier cycle of this ingest is now either committed or abandoned (fenced): its files
  // are referenced or true orphans, so none needs protecting any more.
  await Promise.all(
    [table, t.deadLetterTable].map(async (n) =>
      clearPending(deps.tables.io, await tableLocation(deps.tables, n), pendingOwner(input.ingestId)),
    ),
  );
  await deleteStaged(deps.tables.io, staged); // read, committed: not needed any more (best effort)
  // a v3 table's polls' deletion vectors, merged into the committed ones: not referenced (best effort)
  if (deletes?.merged) await deleteStaged(deps.tables.io, deletes.merged);
  const snapshotId = res.snapshotId ?? landedCommit(res.metadata, input.ingestId, input.commitId);
  if (snapshotId === null) throw new Error(`commit ${input.commitId} of ${table} reported landed but the table does not name it`);
  if (!res.alreadyCommitted && table === t.table) {
    // For lag tooling only, and never on the commit path's critical result: best effort. (A
    // route mirrors its base table's cursor, committed first: the others follow within the cycle.)
    mirrorOffsets(deps.admin, t, input.endOffsets);
  }
  const out = commitResult(res.metadata, snapshotId, res.alreadyCommitted);
  return {
    result: skipped.records > 0n && !res.alreadyCommitted ? { ...out, skippedRecords: skipped.records.toString() } : out,
    metadata: res.metadata,
  };
}

/**
 * What an upsert cycle's commit adds and removes to delete its keys' old rows. On a v2 table, the
 * polls' position delete files as they are. On a v3 table one deletion vector per data file: each
 * poll wrote its own (two polls may delete rows of one compacted file), and the table may have
 * one already (an earlier cycle's): they are merged into one new DV per data file, written here
 * under the cycle's commit id (protected by its pending marker until the commit), and the live
 * DVs it replaces are removed in the same snapshot. The merge reads the table as loaded before the
 * commit; a DV another writer adds for one of these files meanwhile fails the commit (RowDelta's
 * one-DV-per-file check: DeleteConflict, the cycle starts over). A table upgraded to v3 between
 * the polls and the commit has its polls' position delete files converted the same way.
 */
async function deletesToCommit(
  deps: Deps,
  m: TableMetadata,
  files: DataFile[],
  referencedDataFiles: string[],
  commitId: string,
): Promise<{ files: DataFile[]; referencedDataFiles: string[]; removeDeleteFiles?: DataFile[]; merged?: string[] }> {
  if (files.length === 0 || m['format-version'] < 3) return { files, referencedDataFiles };
  const io = deps.tables.io;
  const targets = new Map<string, { dataFile: Pick<DataFile, 'filePath' | 'specId' | 'partition'>; positions: bigint[] }>();
  const add = (dataFile: Pick<DataFile, 'filePath' | 'specId' | 'partition'>, positions: Iterable<bigint>) => {
    let t = targets.get(dataFile.filePath);
    if (!t) targets.set(dataFile.filePath, (t = { dataFile, positions: [] }));
    for (const p of positions) t.positions.push(p);
  };
  await mapConcurrent(files, 4, async (f) => {
    for (const [path, positions] of await readDeleteFile(io, f))
      add({ filePath: path, specId: f.specId, partition: f.partition }, positions);
  });
  const merged = await mergeDeletionVectors(io, m, [...targets.values()], `${commitId}-dv-${randomUUID()}.puffin`);
  return {
    files: merged.deleteFiles,
    referencedDataFiles: [...new Set([...referencedDataFiles, ...merged.referencedDataFiles])],
    removeDeleteFiles: merged.removeDeleteFiles,
    merged: files.map((f) => f.filePath),
  };
}

/**
 * An upsert cycle found its keys' rows in key indexes at these snapshots: a snapshot since then
 * that added data files (other than a compaction's `replace`, which moves rows without changing
 * keys, and which RowDelta checks against the deletes' files) may hold rows of the cycle's keys
 * the deletes do not name. Then the cycle is refused and starts over (DeleteConflict).
 */
export function checkNoRowsAddedSince(table: string, m: TableMetadata, indexSnapshotIds: readonly string[]): void {
  const byId = new Map(m.snapshots.map((s) => [s['snapshot-id'].toString(), s]));
  for (const since of indexSnapshotIds) {
    let s =
      m['current-snapshot-id'] === undefined || m['current-snapshot-id'] === null
        ? undefined
        : byId.get(m['current-snapshot-id'].toString());
    while (s && s['snapshot-id'].toString() !== since) {
      const added = Number(s.summary['added-data-files'] ?? '0');
      if (s.summary.operation !== 'replace' && added > 0)
        throw nonRetryable(
          FailureType.DeleteConflict,
          `${table}: snapshot ${s['snapshot-id']} (${s.summary.operation}) added ${added} data files after the key index's snapshot ${since || 'none'}; their rows may hold keys this cycle changes; the cycle will re-read its offsets`,
        );
      s =
        s['parent-snapshot-id'] === undefined || s['parent-snapshot-id'] === null
          ? undefined
          : byId.get(s['parent-snapshot-id'].toString());
    }
    if (!s && since !== '')
      throw nonRetryable(
        FailureType.DeleteConflict,
        `${table}: the key index's snapshot ${since} is no longer an ancestor of the current snapshot; the cycle will re-read its offsets`,
      );
  }
}

/** The offsets a cycle starting at `start` skips past `cursor`, as `<p>:<from>-<to> ...`, and how many. */
function skippedPast(cursor: Offsets, start: Offsets): { text: string; records: bigint } {
  const parts: string[] = [];
  let records = 0n;
  for (const p of Object.keys(start).sort((a, b) => Number(a) - Number(b))) {
    const from = cursor[p];
    if (from === undefined || BigInt(start[p]!) <= BigInt(from)) continue;
    parts.push(`${p}:${from}-${start[p]}`);
    records += BigInt(start[p]!) - BigInt(from);
  }
  return { text: parts.join(' '), records };
}

/**
 * The fence of every ingest commit (protocol step 5): it lands only if the table's cursor of its
 * ingest id is still the one the cycle started from, named by its snapshot id; otherwise the cycle
 * is stale (another writer, or a reset, moved the cursor) and fails for good.
 */
export function fenceCursor(
  table: string,
  ingestId: string,
  baseSnapshotId: string | null,
  cursor: Pick<Cursor, 'snapshotId' | 'offsets'>,
): void {
  if (cursor.snapshotId !== baseSnapshotId) {
    throw nonRetryable(
      FailureType.StaleCursor,
      `stale cursor for ${table}/${ingestId}: expected cursor snapshot ${baseSnapshotId ?? 'none'}, found ${cursor.snapshotId ?? 'none'} (${formatOffsets(cursor.offsets)})`,
    );
  }
}
