/**
 * One poll step of an ingest cycle: polls a partition group from the given offsets, decodes each
 * record (a record that cannot be decoded becomes a dead letter with its reason) and writes
 * Parquet data files (one per table partition, rolled at the target size) plus dead-letter files.
 * Idempotent by construction: a retry re-reads the same offsets and writes new files named by its
 * attempt; the dead attempt's files are orphans. No Temporal here (activities/index.ts binds it).
 */
import { FailureType, StepCancelled, nonRetryable, type StepRun } from '../contract';
import { markPending } from '../table/pending';
import { INLINE_FILE_LIST_BUDGET_BYTES, fileListForHistory } from '../table/staged-files';
import type { Offsets } from '../table/cursor';
import { crashPoint, failPoint } from '../table/crash-points';
import { deadLetterRow, type KafkaRecord, type Row } from './decode';
import { DecodeError, DecoderConfigError } from './formats/errors';
import { TableSink, type SinkDeletes } from './table-sink';
import { dataFileToWire, writeDeletionVectors, writePositionDeleteFiles, type DeletionVectorTarget } from '../iceberg';
import { RoutedWriters, bulkRoutedLists, routedFileLists } from './route-write';
import { ingestTableConfig, pendingOwner, tableLocation, type Deps } from './deps';
import { ingestWatermarks } from './watermarks';
import type { PollInput, PollResult, UpsertPollResult } from './types';
import type { TableConfig } from '../config';

export async function pollAndWrite(deps: Deps, input: PollInput, run: StepRun): Promise<PollResult> {
  const t = ingestTableConfig(deps.cfg, input.table, input.topic);
  const attempt = run.attempt;
  // Beating: a topic deleted meanwhile costs the client's retries and maybe a new admin client.
  const asking = setInterval(() => run.heartbeat({ phase: 'watermarks' }), 2000);
  // The cycle was planned on this topic: missing now, it was deleted.
  const wm = await ingestWatermarks(deps, t.topic, 'deleted').finally(() => clearInterval(asking));
  const allPartitions = Object.keys(wm.high).map(Number);
  const deadRows: Row[] = [];
  const prefix = `${input.commitId}-g${input.groupIndex}-a${attempt}`;
  const { router, sink } = await openWriters(deps, t, input, prefix, run);
  // Isolation found this one record fails its cycle alone (workflows/isolation.ts): it is written as
  // a dead letter with that failure, not decoded again.
  const isolated = input.deadLetterReason;
  const add = (rec: KafkaRecord): void | Promise<void> => {
    if (isolated !== undefined)
      return deadLetter(rec, new DecodeError(`isolated: the record failed its cycle alone on every attempt: ${isolated}`));
    failPoint(rec.value);
    return router ? router.add(rec, deadLetter) : sink!.add(rec, deadLetter);
  };
  // A record that cannot be a row (no route, a value that does not decode) is a dead letter.
  const deadLetter = (rec: KafkaRecord, e: unknown): void => {
    if (e instanceof DecoderConfigError) throw nonRetryable(FailureType.ConfigError, `table ${t.table}: ${e.message}`);
    deadRows.push(deadLetterRow(t.topic, rec, e));
  };
  let outcome,
    seen = 0;
  try {
    // The worker's kept reader of this ingest's partition group (ingest/kafka.ts ConsumerPool): its
    // group join (3 s on a stock broker) is paid once per worker, not once per cycle.
    outcome = await deps.consumers.poll(
      `${t.table}|${input.ingestId}`,
      t.topic,
      input.partitions,
      input.startOffsets,
      {
        maxWaitMs: input.maxWaitMs,
        maxRecords: input.maxRecords,
        maxBytes: input.maxBytes,
        // A retried attempt (its worker died) stops once it has caught up with what was there when it
        // started, instead of waiting out a whole interval: rows are visible again sooner after a crash.
        stopAt: input.stopAt ?? (input.untilCaughtUp || run.attempt > 1 ? wm.high : undefined),
        limit: input.limit,
        signal: run.signal,
      },
      (rec) => {
        if (++seen === 1) crashPoint('poll');
        return add(rec);
      },
      // Progress in every heartbeat: a hung poll (no progress, still beating) is visible in the UI.
      (o) => run.heartbeat({ phase: 'poll', records: o.records, bytes: o.bytes }),
    );
  } catch (e) {
    sink?.abort();
    router?.abort();
    throw e;
  }
  // Cancelled (workflow cancelled or timed out): stop here; nothing to undo (written files are orphans).
  if (run.signal?.aborted) {
    sink?.abort();
    router?.abort();
    throw new StepCancelled('pollAndWrite cancelled');
  }
  await checkTopicIdUnchanged(deps, t, input);
  // Dead letters below the dead-letter cursor were recorded by an earlier batch whose main commit
  // did not land (fenced, or its worker died): recording them again would duplicate them.
  const freshDeadRows = aboveFloor(deadRows, input.deadLetterFloor ?? {});
  if (freshDeadRows.length > 0)
    await markPending(
      deps.tables.io,
      await tableLocation(deps.tables, t.deadLetterTable),
      pendingOwner(input.ingestId),
      `${input.commitId}-`,
    );
  // Finishing a large cycle's files takes a while: keep heartbeating so only a dead worker times out.
  const beat = setInterval(() => run.heartbeat({ phase: 'write', records: outcome.records, bytes: outcome.bytes }), 2000);
  let files, deadLetterFiles, routed;
  try {
    files = sink ? await sink.close() : [];
    routed = await router?.close();
    deadLetterFiles =
      freshDeadRows.length === 0 ? [] : await deps.tables.writeDataFiles(t.deadLetterTable, freshDeadRows, prefix, t.targetFileSizeBytes);
  } finally {
    clearInterval(beat);
  }
  if (files.length > 0 || routed?.some((r) => r.files.length > 0)) crashPoint('after-write');
  const upsert = sink?.deletes ? await writeDeletes(deps, t, input, prefix, sink.deletes) : undefined;
  const highWatermarks: Offsets = {};
  for (const p of input.partitions) highWatermarks[String(p)] = wm.high[String(p)] ?? '0';
  // A list past its group's share of the inline budget (thousands of files: a wide partition
  // spec, a backlog) would not fit Temporal's payload limit: it is staged as a manifest named
  // `<prefix>.avro` (marked pending above) and history carries the reference (table/staged-files.ts).
  const budget = Math.floor(INLINE_FILE_LIST_BUDGET_BYTES / Math.max(1, Math.min(t.parallelism, allPartitions.length)));
  const stage = (table: string) => ({ metadata: async () => (await deps.tables.load(table)).metadata, baseName: prefix });
  const lists = routed ? await routedForHistory(deps, t, input, routed, budget, prefix, stage) : undefined;
  return {
    groupIndex: input.groupIndex,
    // A route's own tables' lists share the group's inline budget (`files` stays empty).
    files: routed ? [] : await fileListForHistory(deps.tables.io, files, budget, stage(t.table)),
    deadLetterFiles: await fileListForHistory(deps.tables.io, deadLetterFiles, budget, stage(t.deadLetterTable)),
    endOffsets: outcome.next,
    highWatermarks,
    records: routed ? routed.reduce((n, r) => n + r.rows, 0) : sink!.rows,
    deadLetters: freshDeadRows.length,
    bytes: outcome.bytes,
    ...lists,
    ...(upsert ? { upsert } : {}),
  };
}

/**
 * An upsert or CDC poll's deletes as position delete files, one per partition of the rows they
 * delete, protected like its data files until the cycle commits. Few files (a partition's
 * deletes of a poll are one file): always inline in history.
 */
async function writeDeletes(deps: Deps, t: TableConfig, input: PollInput, prefix: string, d: SinkDeletes): Promise<UpsertPollResult> {
  const base = { referencedDataFiles: [] as string[], indexSnapshotId: d.indexSnapshotId, deletedKeys: d.deletedKeys, deletedRows: 0 };
  if (d.deletes.length === 0) return { deleteFiles: [], ...base };
  const { metadata } = await deps.tables.load(t.table);
  await markPending(deps.tables.io, metadata.location, pendingOwner(input.ingestId), `${input.commitId}-`);
  if (metadata['format-version'] >= 3) {
    // A v3 table: this poll's positions as deletion vectors in one Puffin file; the commit merges
    // them with the other polls' and the table's live ones (commit-cycle.ts deletesToCommit).
    const targets = new Map<string, DeletionVectorTarget & { positions: bigint[] }>();
    for (const x of d.deletes) {
      let g = targets.get(x.dataFile.filePath);
      if (!g) targets.set(x.dataFile.filePath, (g = { dataFile: x.dataFile, positions: [] }));
      g.positions.push(x.pos);
    }
    const dvs = await writeDeletionVectors(deps.tables.io, metadata, [...targets.values()], `${prefix}-deletes.puffin`);
    crashPoint('after-delete-write');
    return { ...base, deleteFiles: dvs.map(dataFileToWire), referencedDataFiles: [...targets.keys()], deletedRows: d.deletes.length };
  }
  const written = await writePositionDeleteFiles(
    deps.tables.io,
    metadata,
    d.deletes,
    (n) => `${prefix}-deletes-${String(n).padStart(5, '0')}.parquet`,
  );
  crashPoint('after-delete-write');
  return {
    ...base,
    deleteFiles: written.deleteFiles.map(dataFileToWire),
    referencedDataFiles: written.referencedDataFiles,
    deletedRows: d.deletes.length,
  };
}

/** A routed poll's lists for history: staged as one object for a bulk route, else per table (as recorded histories have them). */
async function routedForHistory(
  deps: Deps,
  t: TableConfig,
  input: PollInput,
  routed: Awaited<ReturnType<RoutedWriters['close']>>,
  budget: number,
  prefix: string,
  stage: Parameters<typeof routedFileLists>[3],
): Promise<Pick<PollResult, 'routed' | 'routedStaged'>> {
  if (!input.route?.bulk) return { routed: await routedFileLists(deps.tables.io, routed, budget, stage) };
  const location = await tableLocation(deps.tables, t.table);
  return bulkRoutedLists(deps.tables.io, routed, budget, {
    location,
    baseName: prefix,
    mark: () => markPending(deps.tables.io, location, pendingOwner(input.ingestId), `${input.commitId}-`),
  });
}

/**
 * The poll's writers: a route's (each table from its own cursor, ingest/route.ts) or the table's
 * own sink, which decodes (JSON or a schema format, evolving the table first when a record's schema
 * needs it) and writes.
 */
async function openWriters(
  deps: Deps,
  t: TableConfig,
  input: PollInput,
  prefix: string,
  run: StepRun,
): Promise<{ router: RoutedWriters | undefined; sink: TableSink | undefined }> {
  // Rows are encoded while the poll goes on (on the encoder threads when the worker has them).
  // Until this cycle commits, its files are unreachable: a marker written before the first of them
  // keeps the orphan sweep off them however long the cycle takes (another group stuck, a paused
  // worker). The commit clears it.
  const openTableWriter = (name: string, p: string) =>
    deps.tables.openRowWriter(name, p, {
      targetFileSizeBytes: t.targetFileSizeBytes,
      ...(deps.encoders ? { encoder: deps.encoders.open } : {}),
      beforeFirstFile: async () =>
        markPending(deps.tables.io, await tableLocation(deps.tables, name), pendingOwner(input.ingestId), `${input.commitId}-`),
    });
  // A route writes the tables its records go to, each from its own cursor (ingest/route.ts).
  const router = input.route
    ? new RoutedWriters(
        deps,
        t,
        { ...input, route: input.route },
        (name, suffix = '') => openTableWriter(name, `${prefix}${suffix}`),
        (msg) => run.warn(msg),
      )
    : undefined;
  // A table's own poll: one sink decodes (JSON or a schema format, evolving the table first
  // when a record's schema needs it) and writes.
  const sink = router
    ? undefined
    : await TableSink.open(
        deps,
        t,
        (suffix) => openTableWriter(t.table, `${prefix}${suffix}`),
        (msg) => run.warn(msg),
      );
  return { router, sink };
}

/** Dead letters at or past the dead-letter cursor: those below it an earlier batch already recorded. */
function aboveFloor(rows: Row[], floor: Offsets): Row[] {
  return rows.filter((r) => floor[String(r.partition)] === undefined || (r.offset as bigint) >= BigInt(floor[String(r.partition)]!));
}

/**
 * The plan bound the cycle to its topic's Kafka id (plan-cycle.ts): a topic deleted and created
 * again while the poll read may have handed over records of the new one. Asked after the reads,
 * so a recreation before any of them is seen; the cycle then fails as its next plan would.
 */
async function checkTopicIdUnchanged(deps: Deps, t: TableConfig, input: PollInput): Promise<void> {
  if (input.topicId === undefined || !deps.topicIds) return;
  const now = await deps.topicIds.of(t.topic);
  if (now !== null && now !== input.topicId)
    throw nonRetryable(
      FailureType.TopicRecreated,
      `table ${t.table}: topic ${t.topic} was deleted and created again during the poll of ingest id "${input.ingestId}" (id ${input.topicId}, now ${now}); nothing of the poll is kept; move the cursor with: floe ingest reset ${t.table} --to earliest|latest|<time>|<p:offset,...>`,
    );
}
