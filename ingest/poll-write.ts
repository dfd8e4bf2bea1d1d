/**
 * One poll step of an ingest cycle: polls a partition group from the given offsets, decodes each
 * record (a record that cannot be decoded becomes a dead letter with its reason) and writes
 * Parquet data files (one per table partition, rolled at the target size) plus dead-letter files.
 * Idempotent by construction: a retry re-reads the same offsets and writes new files named by its
 * attempt; the dead attempt's files are orphans. No Temporal here (activities/index.ts binds it).
 */
import { FailureType, StepCancelled, nonRetryable, type StepRun } from '../contract';
import { markPending } from '../maintenance/pending';
import { INLINE_FILE_LIST_BUDGET_BYTES, fileListForHistory } from '../maintenance/staged-files';
import type { Offsets } from './cursor';
import { crashPoint } from './crash-points';
import { parseIdentifier } from '../iceberg/catalog/catalog';
import type { DataFile } from '../iceberg/spec/types';
import { Transaction } from '../iceberg/transaction';
import { DecoderConfigError, deadLetterRow, decodeRecord, type KafkaRecord, type Row } from './decode';
import { RoutedWriters, routedFileLists } from './route-write';
import type { Derived } from './formats/convert';
import { FormatReader, SchemaIncompatibleStop } from './formats/reader';
import { EvolveToSchema, SchemaIncompatibleError } from './formats/union';
import { ingestTableConfig, pendingOwner, tableLocation, type Deps } from './deps';
import { pollPartitions, topicWatermarks } from './kafka';
import type { PollInput, PollResult } from './types';

export async function pollAndWrite(deps: Deps, input: PollInput, run: StepRun): Promise<PollResult> {
  const t = ingestTableConfig(deps.cfg, input.table);
  const attempt = run.attempt;
  const wm = await topicWatermarks(deps.admin, t.topic);
  const allPartitions = Object.keys(wm.high).map(Number);
  const deadRows: Row[] = [];
  const prefix = `${input.commitId}-g${input.groupIndex}-a${attempt}`;
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
  const openWriter = (p: string) => openTableWriter(t.table, p);
  // A route writes the tables its records go to, each from its own cursor (ingest/route.ts).
  const router = input.route
    ? new RoutedWriters(
        deps,
        t,
        { ...input, route: input.route },
        (name, suffix = '') => openTableWriter(name, `${prefix}${suffix}`),
        t.value.format === 'json' ? undefined : (await deps.tables.load(t.table)).metadata,
        (msg) => run.warn(msg),
      )
    : undefined;
  let table = await openWriter(prefix);
  // A schema format's rows (ingest/formats): a record whose schema needs columns the table lacks
  // evolves the table first; the writer then starts new files under the new schema, and the
  // files written so far (the old schema) stay in this cycle's commit.
  const format =
    t.value.format === 'json' || router
      ? undefined
      : new FormatReader(t, (await deps.tables.load(t.table)).metadata, deps.cfg.schemaRegistry);
  const closedFiles: DataFile[] = [];
  let closedRows = 0,
    evolutions = 0;
  const evolveFor = async (derived: Derived[]) => {
    const action = new EvolveToSchema(derived, new Set(t.columns.map((c) => c.name)));
    let r;
    try {
      r = await new Transaction(parseIdentifier(t.table)).add(action).commit(deps.tables.catalog, deps.tables.io, {});
    } catch (e) {
      if (e instanceof SchemaIncompatibleError) throw new SchemaIncompatibleStop(`table ${t.table}: ${e.message}`);
      throw e;
    }
    if (action.changes.length > 0) run.warn(`table ${t.table}: schema evolved from the record schema: ${action.changes.join(', ')}`);
    crashPoint('after-evolve');
    closedRows += table.rows;
    closedFiles.push(...(await table.close()));
    table = await openWriter(`${prefix}-e${++evolutions}`);
    format!.setTable(r.table.metadata);
  };
  const add = (rec: KafkaRecord): void | Promise<void> => {
    if (router) return router.add(rec, deadLetter);
    let row: Row;
    try {
      if (format) {
        const out = format.read(rec);
        if ('wait' in out) return out.wait.then(() => add(rec));
        if ('evolve' in out) return evolveFor(out.evolve).then(() => add(rec));
        row = out.row;
      } else {
        // compiled once per table config: every row it returns is writable under t's partition spec
        row = decodeRecord(t, rec);
      }
    } catch (e) {
      // A config no record can decode is not this record's fault: fail the cycle, visibly.
      if (e instanceof DecoderConfigError) throw nonRetryable(FailureType.ConfigError, `table ${t.table}: ${e.message}`);
      // A record schema the table cannot take, with onIncompatibleSchema: fail: stop the table.
      if (e instanceof SchemaIncompatibleStop) throw nonRetryable(FailureType.SchemaIncompatible, e.message);
      // Anything else thrown for this one record, even unforeseen, dead-letters it with its reason.
      deadRows.push(deadLetterRow(t.topic, rec, e));
      return;
    }
    table.add(row); // a failure here is the batch's (encoding, storage), not the record's
  };
  // A routed record that cannot be written (no route, a value that does not decode) is a dead letter.
  const deadLetter = (rec: KafkaRecord, e: unknown): void => {
    if (e instanceof DecoderConfigError) throw nonRetryable(FailureType.ConfigError, `table ${t.table}: ${e.message}`);
    deadRows.push(deadLetterRow(t.topic, rec, e));
  };
  let outcome,
    seen = 0;
  try {
    // A reader of its own per poll (the kept ConsumerPool is off until the ingest-restarts failure
    // seen with it after a Kafka restart is understood).
    outcome = await pollPartitions(
      deps.kafka,
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
    table.abort();
    router?.abort();
    throw e;
  }
  // Cancelled (workflow cancelled or timed out): stop here; nothing to undo (written files are orphans).
  if (run.signal?.aborted) {
    table.abort();
    router?.abort();
    throw new StepCancelled('pollAndWrite cancelled');
  }
  // Dead letters below the dead-letter cursor were recorded by an earlier batch whose main commit
  // did not land (fenced, or its worker died): recording them again would duplicate them.
  const floor = input.deadLetterFloor ?? {};
  const freshDeadRows = deadRows.filter(
    (r) => floor[String(r.partition)] === undefined || (r.offset as bigint) >= BigInt(floor[String(r.partition)]!),
  );
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
    files = [...closedFiles, ...(await table.close())];
    routed = await router?.close();
    deadLetterFiles =
      freshDeadRows.length === 0 ? [] : await deps.tables.writeDataFiles(t.deadLetterTable, freshDeadRows, prefix, t.targetFileSizeBytes);
  } finally {
    clearInterval(beat);
  }
  if (files.length > 0 || routed?.some((r) => r.files.length > 0)) crashPoint('after-write');
  const highWatermarks: Offsets = {};
  for (const p of input.partitions) highWatermarks[String(p)] = wm.high[String(p)] ?? '0';
  // A list past its group's share of the inline budget (thousands of files: a wide partition
  // spec, a backlog) would not fit Temporal's payload limit: it is staged as a manifest named
  // `<prefix>.avro` (marked pending above) and history carries the reference (maintenance/staged-files.ts).
  const budget = Math.floor(INLINE_FILE_LIST_BUDGET_BYTES / Math.max(1, Math.min(t.parallelism, allPartitions.length)));
  const stage = (table: string) => ({ metadata: async () => (await deps.tables.load(table)).metadata, baseName: prefix });
  return {
    groupIndex: input.groupIndex,
    // A route's own tables' lists share the group's inline budget (`files` stays empty).
    files: routed ? [] : await fileListForHistory(deps.tables.io, files, budget, stage(t.table)),
    deadLetterFiles: await fileListForHistory(deps.tables.io, deadLetterFiles, budget, stage(t.deadLetterTable)),
    endOffsets: outcome.next,
    highWatermarks,
    records: routed ? routed.reduce((n, r) => n + r.rows, 0) : closedRows + table.rows,
    deadLetters: freshDeadRows.length,
    bytes: outcome.bytes,
    ...(routed ? { routed: await routedFileLists(deps.tables.io, routed, budget, stage) } : {}),
  };
}
