/**
 * Compaction activities: plan file groups from the live files, rewrite one group with bounded
 * memory (row group by row group in, files rolled at the target size out), and commit finished
 * groups as one Iceberg `replace` snapshot.
 *
 * Concurrency: planning and rewriting only read; the commit is optimistic (RewriteFiles checks on
 * every CAS attempt that each replaced file is still live), so concurrent ingest appends never
 * fail it and a group whose inputs vanished (concurrent compaction, expiry) is dropped from the
 * commit and reported instead of failing the others.
 *
 * History stays small whatever the plan's size (table/staged-files.ts): given the run id,
 * the planner stages each group's file list as `<location>/metadata/floe-staged/<runId>-plan-a<attempt>-g<index>.json`
 * (after marking `<runId>-` pending) and returns group summaries; a rewrite reads its group from
 * there and stages its outputs beside it (`...-g<index>-out-a<attempt>.json`); the commit gets
 * only (group index, rewrite attempt) pairs and reads both back: ~160 bytes of history per group
 * in the plan and ~30 in a commit, instead of ~110 bytes per input file (plan, rewrite and commit
 * inputs) plus ~800 per output (rewrite result, commit input). 30,000 files: 26 KB, not ~3.4 MB.
 */
import { DETACHED_RUN, nonRetryable, StepCancelled, type StepRun } from '../contract';
import { findTable, type TableConfig } from '../config';
import {
  parseIdentifier,
  isIcebergError,
  parquetWriteOptionsFromProperties,
  readParquetBatches,
  RollingParquetWriter,
  dataFileFromWire,
  dataFileToWire,
  currentSchema,
  currentSnapshot,
  withRowLineageFields,
  specById,
  tableProperty,
  WRITE_TARGET_FILE_SIZE_BYTES,
  partitionPath,
  locationProvider,
  rewriteFiles,
  mapConcurrent,
  planTasks,
  readTaskBatches,
  deletedPositions,
  readPositionDeletes,
  deletedPositionCounts,
  referencedDataFile,
  PositionDeleteCache,
  DataFileContent,
  type DataFile,
  type FileIO,
  type TableMetadata,
} from '../iceberg';
import { findCommit, SUMMARY_COMMIT_ID } from '../table/cursor';
import { crashPoint } from '../table/crash-points';
import type { Tables } from '../table/tables';
import { markPending } from '../table/pending';
import { deleteStaged, isNotFound, readStagedJson, stagedLocation, writeStagedJson } from '../table/staged-files';
import { fileStats, lookbackWindow, planFileGroups, transformTimeRange, type LiveFile } from './plan';
import { PrefetchingFileIO } from './prefetch';
import { absPath, liveDataFiles, liveDeleteFiles, reachableFiles, relPath } from './reachable';
import { parseOptionalWindow } from './window';
import {
  compactDefaults,
  type CommitRewriteInput,
  type CommitRewriteResult,
  type CompactOptions,
  type CompactionPlan,
  type FileGroup,
  type FileStats,
  type PlanCompactionInput,
  type RewriteGroupInput,
  type RewriteGroupResult,
} from './types';
import type { WireDataFile } from '../table/wire';

/** Where group `index` of a staged plan keeps its file list (`staged`: CompactionPlan.staged). */
const stagedGroupLocation = (staged: string, index: number): string => `${staged}-g${index}.json`;
/** Where the rewrite attempt of group `index` of a staged plan lists its outputs. */
const stagedOutputsLocation = (staged: string, index: number, attempt: number): string => `${staged}-g${index}-out-a${attempt}.json`;

/** Summary of a group in a staged plan: everything but the file list. */
const groupSummary = (g: FileGroup): FileGroup => ({ ...g, files: [], fileCount: g.files.length });

/** The full group `summary` stands for, read from the stage (checked against the summary). */
async function readStagedGroup(tables: Tables, staged: string, summary: Pick<FileGroup, 'index'> & Partial<FileGroup>): Promise<FileGroup> {
  const location = stagedGroupLocation(staged, summary.index);
  const g = await readStagedJson<FileGroup>(tables.io, location);
  const count = summary.fileCount ?? g.files.length;
  if (g.index !== summary.index || g.files.length !== count || (summary.records !== undefined && g.records !== summary.records)) {
    throw nonRetryable(
      'DataInvalid',
      `staged plan ${location}: expected group ${summary.index} of ${count} files and ${summary.records} records, found group ${g.index} of ${g.files.length} files and ${g.records} records`,
    );
  }
  return g;
}

/** Snapshot summary keys of a compaction commit (no `floe.ingest-id`: cursors skip it). */
const SUMMARY_COMPACT_GROUPS = 'floe.compact.groups';
const INPUTS_VANISHED = 'InputsVanished';

export function compactOptionsFor(
  t: TableConfig | undefined,
  overrides: Partial<CompactOptions> = {},
  targetFallback = 128 * 1024 * 1024,
): CompactOptions {
  const target = overrides.targetFileSizeBytes ?? t?.maintenance.compact.targetFileSizeBytes ?? targetFallback;
  const base = compactDefaults(target);
  if (t) base.minInputFiles = t.maintenance.compact.minInputFiles;
  const o = { ...base };
  for (const [k, v] of Object.entries(overrides)) if (v !== undefined) (o as Record<string, unknown>)[k] = v;
  // min/max sizes follow an overridden target unless given explicitly
  if (overrides.targetFileSizeBytes !== undefined) {
    if (overrides.minFileSizeBytes === undefined) o.minFileSizeBytes = Math.floor(target * 0.75);
    if (overrides.maxFileSizeBytes === undefined) o.maxFileSizeBytes = Math.floor(target * 1.8);
  }
  return o;
}

/** Live data files as planner input: partition path and time range from the file's spec. */
export function toLiveFiles(m: TableMetadata, files: DataFile[]): LiveFile[] {
  const schema = currentSchema(m);
  return files.map((f) => {
    const spec = specById(m, f.specId);
    let range: [number, number] | null = null;
    for (const pf of spec.fields) {
      const r = transformTimeRange(pf.transform, f.partition[pf.name]);
      if (r) range = range ? [Math.max(range[0], r[0]), Math.min(range[1], r[1])] : r;
    }
    return {
      path: relPath(m.location, f.filePath),
      size: f.fileSizeInBytes,
      records: f.recordCount,
      specId: f.specId,
      partitionPath: spec.fields.length ? partitionPath(spec, schema, f.partition) : '',
      timeRange: range,
    };
  });
}

/**
 * Live data files count / bytes of a table. From the current snapshot's summary totals when it
 * has them (spec "Snapshot Summary": every floe, PyIceberg, Java commit keeps them) and no delete
 * files: decoding every manifest entry (all column metrics) of a 10,000-file table only to count
 * them took ~110 MB of worker heap at the end of a compaction. Otherwise from the manifests.
 */
export async function tableFileStats(tables: Tables, table: string): Promise<FileStats> {
  const { metadata } = await tables.load(table);
  return (
    summaryFileStats(metadata) ??
    fileStats((await liveDataFiles(tables.io, metadata, { metrics: false })).map((f) => ({ size: f.dataFile.fileSizeInBytes })))
  );
}

/** FileStats from the current snapshot's `total-*` summary keys; null when any is missing or delete files exist. */
export function summaryFileStats(m: TableMetadata): FileStats | null {
  const snap = currentSnapshot(m);
  if (!snap) return fileStats([]);
  const s = snap.summary as Record<string, string | undefined>;
  const count = (k: string): number | null => (/^\d+$/.test(s[k] ?? '') ? Number(s[k]) : null);
  const files = count('total-data-files'),
    bytes = count('total-files-size'),
    deletes = count('total-delete-files');
  if (files === null || bytes === null || deletes !== 0) return null;
  return { files, bytes, avgFileSizeBytes: files ? Math.round(bytes / files) : 0 };
}

/**
 * Compaction applies position deletes: a rewritten file holds no deleted row, and the commit
 * checks that no delete landed on its inputs since (RewriteFiles with `deletes`). Equality deletes
 * (another engine's merge-on-read with equality deletes) are refused at planning and again when
 * the commit starts: floe cannot apply them (its scans refuse them too).
 */
async function refuseEqualityDeletes(
  tables: Tables,
  table: string,
  deleteFiles: readonly DataFile[],
  beforeRefusing: () => Promise<void> = async () => undefined,
): Promise<void> {
  const eq = deleteFiles.filter((f) => f.content === DataFileContent.EqualityDeletes);
  if (eq.length > 0) {
    await beforeRefusing();
    throw nonRetryable(
      'FeatureUnsupported',
      `${table}: compaction of tables with equality delete files is not supported (found ${eq.length}, e.g. ${eq[0]!.filePath}); rewriting their data files would bring deleted rows back`,
    );
  }
}

export async function planCompaction(
  tables: Tables,
  cfgTable: TableConfig | undefined,
  input: PlanCompactionInput,
  run: StepRun = DETACHED_RUN,
): Promise<CompactionPlan> {
  const { metadata } = await tables.load(input.table);
  const options = compactOptionsFor(
    cfgTable,
    input.options ?? {},
    // floe's compaction default is 128 MiB (smaller than the library's 512 MiB: streaming tables).
    tableProperty.int(metadata.properties, WRITE_TARGET_FILE_SIZE_BYTES, 128 * 1024 * 1024),
  );
  const snap = currentSnapshot(metadata);
  await refuseEqualityDeletes(tables, input.table, await liveDeleteFiles(tables.io, metadata));
  // A scheduled run compacts the `lookbackPartitions` time partitions ending at its window.
  const lookback = cfgTable?.maintenance.compact.lookbackPartitions;
  const windowMs = parseOptionalWindow(input.window, Date.now(), 'compaction window');
  if (windowMs !== null && lookback && !options.partitionFilter) {
    const timeField = metadata['partition-specs']
      .find((s) => s['spec-id'] === metadata['default-spec-id'])
      ?.fields.find((f) => ['hour', 'day', 'month', 'year'].includes(f.transform));
    const w = timeField ? lookbackWindow(timeField.transform, windowMs, lookback) : null;
    if (w) options.partitionFilter = w;
  }
  const live = (await liveDataFiles(tables.io, metadata, { metrics: false })).map((f) => f.dataFile);
  const { groups, partitionsScanned } = planFileGroups(toLiveFiles(metadata, live), options);
  const plan: CompactionPlan = {
    table: input.table,
    location: metadata.location,
    snapshotId: snap ? snap['snapshot-id'].toString() : null,
    groups,
    before: fileStats(live.map((f) => ({ size: f.fileSizeInBytes }))),
    partitionsScanned,
    options,
  };
  // No groups: the run ends here without marking, so nothing may be staged either.
  if (!input.runId || groups.length === 0) return plan;
  // Stage the file lists. The marker first (the workflow marks the same prefix for the same owner
  // next): the sweep never sees an unmarked staged plan. Named by attempt: a timed-out attempt
  // still writing can never overwrite the lists of the attempt whose result the workflow got.
  await markPending(tables.io, metadata.location, input.runId, `${input.runId}-`);
  const staged = stagedLocation(metadata.location, `${input.runId}-plan-a${run.attempt}`);
  await mapConcurrent(groups, 16, async (g) => {
    await writeStagedJson(tables.io, stagedGroupLocation(staged, g.index), g);
    run.heartbeat();
  });
  return { ...plan, groups: groups.map(groupSummary), staged };
}

/**
 * Rows of Arrow data a rewrite buffers before handing them to the encoder. Compaction's input
 * comes as thousands of tiny batches (one per small file), each with its own Arrow objects, so
 * 16Ki rows (not the writer's 64Ki default) keep that JS heap and the IPC copy in wasm small;
 * per-hand-over overhead stays negligible next to reading the files.
 */
const REWRITE_COALESCE_ROWS = 16_384;
/** Input files fetched ahead of the one being decoded, and at most this many bytes of them. */
const REWRITE_READ_AHEAD_FILES = 8;
export const REWRITE_READ_AHEAD_BYTES = 16 * 1024 * 1024;

/**
 * What a group's rewrite is expected to hold at its peak: the read-ahead, plus the output's
 * in-progress row group (parquet-rs keeps it encoded in wasm until it is flushed) and the encoded
 * file awaiting upload, both growing with the group's data up to the target file size. Measured:
 * 250,000 rows from 5,000 files (24 MB of input) peaked at ~30 MB of wasm and ~40 MB of JS.
 */
export const rewriteMemoryEstimate = (groupBytes: number, targetFileSizeBytes: number): number =>
  REWRITE_READ_AHEAD_BYTES + 3 * Math.min(groupBytes, targetFileSizeBytes);

/**
 * Group rewrites of one worker process share a memory budget: a rewrite waits (heartbeating)
 * until its estimate fits beside those running, so the workflow's concurrent groups overlap when
 * small and take turns when large. One rewrite always runs, whatever its estimate. wasm memory
 * never shrinks, so two large rewrites at once would leave their summed high-water mark behind.
 */
export class RewriteMemoryBudget {
  private used = 0;
  private readonly waiting = new Set<() => void>();

  constructor(public capacityBytes: number) {}

  get usedBytes(): number {
    return this.used;
  }

  /** Waits until `bytes` fit (or nothing holds the budget); resolves to the release function. */
  async acquire(bytes: number, run: StepRun = DETACHED_RUN, heartbeat?: unknown): Promise<() => void> {
    const want = Math.min(bytes, this.capacityBytes);
    while (this.used > 0 && this.used + want > this.capacityBytes) {
      if (run.signal?.aborted) throw new StepCancelled('cancelled while waiting for rewrite memory');
      run.heartbeat(heartbeat);
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.waiting.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, 1000); // heartbeat and re-check the cancellation
        this.waiting.add(wake);
      });
    }
    this.used += want;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.used -= want;
      for (const wake of [...this.waiting]) wake();
    };
  }
}

/** The worker process's budget for concurrent group rewrites. */
const rewriteMemoryBudget = new RewriteMemoryBudget(128 * 1024 * 1024);

/**
 * Rewrites one group. Memory: the read-ahead (REWRITE_READ_AHEAD_BYTES), one input row group,
 * up to REWRITE_COALESCE_ROWS rows of Arrow data waiting for the encoder, the output's
 * in-progress row group and the encoded bytes of the output file being filled (bounded by the
 * target size); concurrent rewrites in one process share rewriteMemoryBudget. Outputs are named
 * `<runId>-g<group>-a<attempt>-<n>` so a retried attempt never overwrites; a killed attempt's
 * outputs are orphans.
 */
export async function rewriteFileGroup(tables: Tables, input: RewriteGroupInput, run: StepRun = DETACHED_RUN): Promise<RewriteGroupResult> {
  const started = Date.now();
  let peakRss = process.memoryUsage().rss;
  const { metadata } = await tables.load(input.table);
  const g = input.staged ? await readStagedGroupOrVanished(tables, input.staged, input.group) : input.group;
  const release = await rewriteMemoryBudget.acquire(rewriteMemoryEstimate(g.bytes, input.targetFileSizeBytes), run, {
    filesDone: 0,
    files: g.files.length,
    rows: 0,
    bytesRead: 0,
  });
  try {
    return await rewriteGroupFiles(tables, input, g, metadata, run, started, (rss) => (peakRss = Math.max(peakRss, rss)));
  } finally {
    release();
  }
}

async function rewriteGroupFiles(
  tables: Tables,
  input: RewriteGroupInput,
  g: FileGroup,
  metadata: TableMetadata,
  run: StepRun,
  started: number,
  sampleRss: (rss: number) => number,
): Promise<RewriteGroupResult> {
  // v3: the rows keep their lineage (spec "Row Lineage", as Spark's rewrite_data_files): the
  // outputs materialize _row_id and _last_updated_sequence_number, read from the inputs as
  // materialized or inherited.
  const lineage = metadata['format-version'] >= 3;
  const schema = lineage ? withRowLineageFields(currentSchema(metadata)) : currentSchema(metadata);
  const locations = locationProvider(metadata);
  const prefix = `${input.runId}-g${g.index}-a${run.attempt}`;
  const writer = new RollingParquetWriter({
    schema,
    io: tables.io,
    targetFileSizeBytes: input.targetFileSizeBytes,
    ...parquetWriteOptionsFromProperties(schema, metadata.properties),
    coalesceRows: REWRITE_COALESCE_ROWS,
    location: (i) => locations.newDataLocation(`${prefix}-${String(i).padStart(5, '0')}.parquet`, g.partitionPath),
  });
  let rows = 0,
    bytesRead = 0,
    deletedRows = 0;
  const reader = new PrefetchingFileIO(tables.io, { budgetBytes: REWRITE_READ_AHEAD_BYTES });
  // A table with position deletes: each input is read without its deleted rows, as of now (the
  // commit checks no delete landed on the inputs since).
  const deletes = await liveDeleteFiles(tables.io, metadata);
  await refuseEqualityDeletes(tables, input.table, deletes);
  const tasks =
    deletes.length > 0 || lineage ? new Map((await planTasks(metadata, tables.io)).map((t) => [t.file.filePath, t])) : undefined;
  const cache = new PositionDeleteCache(tables.io);
  const at = (j: number) => ({ location: absPath(input.location, g.files[j]!.path), size: g.files[j]!.size });
  try {
    for (const [i, f] of g.files.entries()) {
      const location = absPath(input.location, f.path);
      reader.prefetch(g.files.slice(i, i + REWRITE_READ_AHEAD_FILES).map((_, k) => at(i + k)));
      const task = tasks?.get(location);
      if (tasks && !task) throw nonRetryable(INPUTS_VANISHED, `group ${g.index}: input ${location} is no longer live`);
      if (task && task.deletes.length > 0) deletedRows += (await deletedPositions(tables.io, task, cache)).length;
      const batches =
        task && (task.deletes.length > 0 || lineage)
          ? readTaskBatches(reader, task, { cache, ...(lineage ? { rowLineage: true } : {}) })
          : readParquetBatches(reader, location, { fileSize: f.size });
      try {
        for await (const batch of batches) {
          await writer.writeBatch(batch);
          rows += batch.numRows;
          sampleRss(process.memoryUsage().rss);
          run.heartbeat({ filesDone: i, files: g.files.length, rows, bytesRead }); // the SDK throttles these
        }
      } catch (e) {
        if (isIcebergError(e, 'NotFound') || /NoSuchKey|not found|ENOENT/i.test(String((e as Error).message))) {
          // Expiry or another compaction already removed it: this group cannot be committed.
          throw nonRetryable(INPUTS_VANISHED, `group ${g.index}: input ${location} no longer exists`);
        }
        throw e;
      } finally {
        reader.release(location);
      }
      bytesRead += f.size;
      run.heartbeat({ filesDone: i + 1, files: g.files.length, rows, bytesRead });
    }
  } catch (e) {
    writer.abort(); // frees the encoder of the unfinished file (wasm memory is not GC-managed)
    throw e;
  }
  const outputs = await writer.close();
  const peakRss = sampleRss(process.memoryUsage().rss);
  // Chaos tests kill here: outputs written, nothing reported -> they must end up as orphans.
  crashPoint('compact-rewrite');
  const written = outputs.reduce((a, f) => a + f.recordCount, 0);
  if (written !== g.records - deletedRows || rows !== written) {
    throw nonRetryable(
      'DataInvalid',
      `group ${g.index}: record count mismatch: expected ${g.records} (manifests) minus ${deletedRows} deleted, read ${rows}, wrote ${written}`,
    );
  }
  const wire = outputs.map((f) => dataFileToWire({ ...f, specId: g.specId, partition: {} }));
  const outputBytes = outputs.reduce((a, f) => a + f.fileSizeInBytes, 0);
  if (input.staged) {
    // Staged plan: the outputs' stats stay out of history (the commit reads them from here).
    await writeStagedJson(tables.io, stagedOutputsLocation(input.staged, g.index, run.attempt), wire);
    return {
      index: g.index,
      outputs: [],
      outputCount: wire.length,
      attempt: run.attempt,
      inputBytes: g.bytes,
      outputBytes,
      records: written,
      durationMs: Date.now() - started,
      peakRssBytes: peakRss,
    };
  }
  return {
    index: g.index,
    outputs: wire,
    inputBytes: g.bytes,
    outputBytes,
    records: written,
    durationMs: Date.now() - started,
    peakRssBytes: peakRss,
  };
}

/**
 * The groups that may commit: every input still live (a group with a replaced file that is gone
 * is skipped) and every output present at its size. Never commit a dangling reference: a sweep, a
 * lifecycle rule or a lost write may have removed an output since the rewrite; such a group is
 * left out and its inputs stay live, so the next run rewrites it. Each skipped group is added to
 * `skipped` with the reason.
 */
async function committableGroups(
  tables: Tables,
  location: string,
  pending: Pending[],
  live: Map<string, DataFile>,
  skipped: CommitRewriteResult['skippedGroups'],
): Promise<Pending[]> {
  const ready: Pending[] = [];
  for (const p of pending) {
    const missing = p.group.files.map((f) => absPath(location, f.path)).filter((l) => !live.has(l));
    if (missing.length)
      skipped.push({
        index: p.group.index,
        reason: `${missing.length} of ${p.group.files.length} input files are no longer live (e.g. ${missing[0]})`,
      });
    else ready.push(p);
  }
  // Never commit a dangling reference: every output must exist, at its size, right before the
  // commit (a sweep, a lifecycle rule or a lost write may have removed one since the rewrite).
  // A group with a missing output is left out; its inputs stay live, so the next run rewrites it.
  const complete: Pending[] = [];
  for (const p of ready) {
    const problems = (await mapConcurrent(p.outputs, 16, async (o) => outputProblem(tables, o))).filter((x): x is string => x !== null);
    if (problems.length) {
      skipped.push({
        index: p.group.index,
        reason: `${problems.length} of ${p.outputs.length} rewritten output files are missing or incomplete (e.g. ${problems[0]}); not committed, the group is rewritten on the next run`,
      });
    } else {
      complete.push(p);
    }
  }
  return complete;
}

/**
 * Commits finished groups as one `replace` snapshot, exactly once per `commitId`: a retry first
 * looks for its commit id in main's ancestry. Groups with a replaced file that is no longer live
 * are left out (and their outputs deleted: they were never referenced); the rest commit.
 */
export async function commitRewrite(tables: Tables, input: CommitRewriteInput): Promise<CommitRewriteResult> {
  const id = parseIdentifier(input.table);
  const skipped: CommitRewriteResult['skippedGroups'] = [];
  // Groups with their outputs; a staged plan's are read after the commit-id check (a retry after
  // the commit landed must not need the staged lists, which the first attempt deleted).
  let pending: Pending[] | undefined = input.staged
    ? undefined
    : input.groups.map(({ group, result }) => ({ group, outputs: result.outputs }));
  let rounds = 0;
  // Never delete a written file unless the table proves it unreferenced: a commit of ours that
  // landed (its response lost) and whose snapshot expiry then removed is invisible to findCommit,
  // yet its outputs are live; so are outputs a retained snapshot still reads.
  const dropOutputs = async (gs: Pending[], m: TableMetadata) => {
    const paths = gs.flatMap((g) => g.outputs.map((o) => String(o.filePath)));
    if (paths.length === 0) return;
    const referenced = (await reachableFiles(tables.io, m)).dataFiles;
    await Promise.all(paths.filter((p) => !referenced.has(p)).map((p) => tables.io.delete(p).catch(() => undefined)));
  };
  const done = async (r: CommitRewriteResult): Promise<CommitRewriteResult> => {
    if (input.staged && r.committedGroups.length > 0) {
      // Committed: their staged lists are not needed any more (best effort; else orphans).
      const committed = new Set(r.committedGroups);
      await deleteStaged(
        tables.io,
        input.staged.groups
          .filter((g) => committed.has(g.index))
          .flatMap((g) => [
            stagedGroupLocation(input.staged!.plan, g.index),
            stagedOutputsLocation(input.staged!.plan, g.index, g.attempt),
          ]),
      );
    }
    return r;
  };
  for (;;) {
    const loaded = await tables.load(input.table);
    const existing = findCommit(loaded.metadata, input.commitId);
    if (existing) {
      const committed = (existing.summary[SUMMARY_COMPACT_GROUPS] ?? '').split(',').filter(Boolean).map(Number);
      return done({
        snapshotId: existing['snapshot-id'].toString(),
        alreadyCommitted: true,
        committedGroups: committed,
        skippedGroups: skipped,
      });
    }
    pending ??= await readStagedGroups(tables, input.staged!, skipped);
    // Partition and spec of the outputs come from the files they replace (same partition by plan).
    const liveFiles = await liveDataFiles(tables.io, loaded.metadata, { metrics: false });
    const live = new Map(liveFiles.map((f) => [f.dataFile.filePath, f.dataFile]));
    // Outputs are named by this commit's rewrite attempts, so only this commit can have made one
    // live: it landed on an earlier attempt, and its snapshot (with the commit id) has since
    // been expired. Nothing is committed again and nothing is dropped.
    const landed = pending.filter((p) => p.outputs.some((o) => live.has(String(o.filePath))));
    if (landed.length > 0) {
      // The snapshot that wrote the manifest now listing an output: ours, unless a later commit
      // rewrote that manifest.
      const output = String(landed[0]!.outputs.find((o) => live.has(String(o.filePath)))!.filePath);
      const writer = liveFiles.find((f) => f.dataFile.filePath === output)!.manifest.addedSnapshotId;
      return done({
        snapshotId: writer.toString(),
        alreadyCommitted: true,
        committedGroups: landed.map((p) => p.group.index),
        skippedGroups: skipped,
      });
    }
    // Not landed (checked above): if refused, nothing references the outputs.
    const deleteFiles = await liveDeleteFiles(tables.io, loaded.metadata);
    await refuseEqualityDeletes(tables, input.table, deleteFiles, () => dropOutputs(pending!, loaded.metadata));
    let complete = await committableGroups(tables, input.location, pending, live, skipped);
    if (deleteFiles.length > 0) complete = await groupsWithTheirDeletes(tables, input.location, complete, deleteFiles, skipped);
    await dropOutputs(
      pending.filter((p) => !complete.includes(p)),
      loaded.metadata,
    );
    pending = complete;
    if (pending.length === 0) return { snapshotId: null, alreadyCommitted: false, committedGroups: [], skippedGroups: skipped };

    const deleted: DataFile[] = [];
    const added: DataFile[] = [];
    for (const { group, outputs } of pending) {
      const inputs = group.files.map((f) => live.get(absPath(input.location, f.path))!);
      deleted.push(...inputs);
      for (const o of outputs) added.push({ ...dataFileFromWire(o), specId: inputs[0]!.specId, partition: inputs[0]!.partition });
    }
    const summary = {
      [SUMMARY_COMMIT_ID]: input.commitId,
      [SUMMARY_COMPACT_GROUPS]: pending.map((p) => p.group.index).join(','),
    };
    // Deletes that name only replaced files would name nothing afterwards: removed with them.
    const replaced = new Set(deleted.map((f) => f.filePath));
    const dangling = deleteFiles.length === 0 ? [] : await danglingDeletes(tables.io, deleteFiles, replaced, new Set(live.keys()));
    crashPoint('compact-before-commit');
    try {
      // Ingest commits every few seconds: a lost CAS is normal, so allow many attempts.
      const r = await rewriteFiles(
        tables.catalog,
        tables.io,
        id,
        deleted,
        added,
        summary,
        {
          maxAttempts: 30,
          minWaitMs: 50,
          maxWaitMs: 2000,
          validate: (t) => {
            if (findCommit(t.metadata, input.commitId)) throw new AlreadyCommitted();
          },
        },
        deleteFiles.length > 0 ? { records: added.reduce((a, f) => a + f.recordCount, 0), remove: dangling } : undefined,
      );
      crashPoint('compact-after-commit');
      const snap = findCommit(r.table.metadata, input.commitId);
      return done({
        snapshotId: snap ? snap['snapshot-id'].toString() : null,
        alreadyCommitted: false,
        committedGroups: pending.map((p) => p.group.index),
        skippedGroups: skipped,
      });
    } catch (e) {
      if (e instanceof AlreadyCommitted) continue; // the loop head returns the existing snapshot
      // A replaced file vanished between our check and the CAS: re-check which groups still hold.
      if (isIcebergError(e, 'CommitFailed') && ++rounds < 10) continue;
      throw e;
    }
  }
}

/**
 * The groups whose outputs hold exactly their inputs' live rows in the current snapshot: a
 * position delete committed on an input since its rewrite read it (an upsert ingest's) would be
 * lost on the rewritten rows. Such a group is skipped (its outputs dropped by the caller's
 * next round); its inputs stay, and the next run rewrites them with the delete.
 */
async function groupsWithTheirDeletes(
  tables: Tables,
  location: string,
  groups: Pending[],
  deleteFiles: readonly DataFile[],
  skipped: CommitRewriteResult['skippedGroups'],
): Promise<Pending[]> {
  const paths = new Set(groups.flatMap((p) => p.group.files.map((f) => absPath(location, f.path))));
  const deletedNow = await deletedPositionCounts(tables.io, deleteFiles, paths);
  return groups.filter((p) => {
    const live = p.group.files.reduce((a, f) => a + f.records - (deletedNow.get(absPath(location, f.path)) ?? 0), 0);
    const written = p.outputs.reduce((a, o) => a + Number(o.recordCount), 0);
    if (live === written) return true;
    skipped.push({
      index: p.group.index,
      reason: `its inputs hold ${live} live rows now, its outputs ${written}: position deletes were committed on them since the rewrite; not committed, the group is rewritten on the next run`,
    });
    return false;
  });
}

/** Live position delete files that name no data file that stays live: every file they name is replaced (or gone). */
async function danglingDeletes(
  io: FileIO,
  deleteFiles: readonly DataFile[],
  replaced: ReadonlySet<string>,
  live: ReadonlySet<string>,
): Promise<DataFile[]> {
  const candidates = deleteFiles.filter((d) => {
    const only = referencedDataFile(d);
    return only === undefined || replaced.has(only) || !live.has(only);
  });
  const named = await mapConcurrent(candidates, 8, async (d) => {
    const only = referencedDataFile(d);
    return only !== undefined ? [only] : [...(await readPositionDeletes(io, d)).keys()];
  });
  return candidates.filter((_, i) => named[i]!.every((p) => replaced.has(p) || !live.has(p)));
}

/** A finished group as the commit works on it: its input files and its outputs. */
interface Pending {
  group: FileGroup;
  outputs: WireDataFile[];
}

/** A staged group whose stage vanished fails as its inputs would have: reported, not retried. */
async function readStagedGroupOrVanished(tables: Tables, staged: string, summary: FileGroup): Promise<FileGroup> {
  try {
    return await readStagedGroup(tables, staged, summary);
  } catch (e) {
    if (isNotFound(e))
      throw nonRetryable(
        INPUTS_VANISHED,
        `group ${summary.index}: its staged file list ${stagedGroupLocation(staged, summary.index)} no longer exists`,
      );
    throw e;
  }
}

/**
 * The finished groups of a staged commit input with their files and outputs. A group whose staged
 * lists are gone is skipped (its outputs, unknown now, are left to orphan removal).
 */
async function readStagedGroups(
  tables: Tables,
  staged: NonNullable<CommitRewriteInput['staged']>,
  skipped: CommitRewriteResult['skippedGroups'],
): Promise<Pending[]> {
  const read = await mapConcurrent(staged.groups, 16, async ({ index, attempt }) => {
    try {
      const [group, outputs] = await Promise.all([
        readStagedGroup(tables, staged.plan, { index }),
        readStagedJson<WireDataFile[]>(tables.io, stagedOutputsLocation(staged.plan, index, attempt)),
      ]);
      return { group, outputs };
    } catch (e) {
      if (!isNotFound(e)) throw e;
      skipped.push({
        index,
        reason: `its staged file lists are gone (${(e as Error).message}); not committed, the group is rewritten on the next run`,
      });
      return null;
    }
  });
  return read.filter((p): p is Pending => p !== null);
}

/** Null when output `o` exists with the size the rewrite recorded; else what is wrong with it. */
async function outputProblem(tables: Tables, o: RewriteGroupResult['outputs'][number]): Promise<string | null> {
  const location = String(o.filePath);
  try {
    const info = await tables.io.stat(location);
    const expected = Number(o.fileSizeInBytes);
    return info.size === expected ? null : `${location} has ${info.size} bytes, expected ${expected}`;
  } catch (e) {
    if (isIcebergError(e, 'NotFound') || /NoSuchKey|NotFound|not found|ENOENT/i.test(String((e as Error).message)))
      return `${location} does not exist`;
    throw e;
  }
}

/** Thrown from `validate` when the commit id is already on main (a retried activity). */
class AlreadyCommitted extends Error {}

export const tableConfigOrUndefined = (cfg: Parameters<typeof findTable>[0], table: string): TableConfig | undefined => {
  try {
    return findTable(cfg, table);
  } catch {
    return undefined;
  }
};
