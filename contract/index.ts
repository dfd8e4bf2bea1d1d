/**
 * The contract between workflows, activities and clients: failure types, limits and id builders.
 * Pure values with no imports, so workflow code may import them as values (Temporal replays
 * workflows; everything here is deterministic), after safe-message-handlers/src/types.ts in
 * temporalio/samples-typescript.
 */

/**
 * Application failure types. Temporal matches `nonRetryableErrorTypes` against these strings, so
 * every activity throws through them (activities/failures.ts maps library errors onto them).
 */
export const FailureType = {
  /** The batch's base cursor is no longer the table's: another writer moved it. Reload and re-poll. */
  StaleCursor: 'StaleCursor',
  /** A file the commit would reference is gone (swept, lost). Reload and re-poll / re-plan. */
  FilesMissing: 'FilesMissing',
  /**
   * An upsert cycle's deletes no longer fit the table: a data file they name was rewritten
   * (compaction), or rows were added since its key index's snapshot by another writer. Reload and re-poll.
   */
  DeleteConflict: 'DeleteConflict',
  /** A value or file violates the spec or the table's schema; retrying cannot help. */
  DataInvalid: 'DataInvalid',
  /** Valid Iceberg that floe does not implement. */
  FeatureUnsupported: 'FeatureUnsupported',
  /** The config is wrong for this operation (unknown table, bad option). */
  ConfigError: 'ConfigError',
  /** The configured columns no longer match the table (another engine changed it). */
  TableDrift: 'TableDrift',
  /** A record's schema (from the Schema Registry) cannot evolve the table: a changed type, a new required field. */
  SchemaIncompatible: 'SchemaIncompatible',
  /** The table's cursor for this ingest id was written for another topic. */
  CursorTopicMismatch: 'CursorTopicMismatch',
  /** The cursor is beyond the topic's end: the topic was recreated or failed over. */
  CursorAheadOfTopic: 'CursorAheadOfTopic',
  /** The topic's Kafka id is not the cursor's: it was deleted and created again under its name. */
  TopicRecreated: 'TopicRecreated',
  /** A second live ingest id would load a topic the table already holds (needs force). */
  IngestOverlap: 'IngestOverlap',
  /** The topic of one topic's ingest (an entry of several topics) was deleted: that ingest ends, stopped. */
  TopicGone: 'TopicGone',
  BackfillOverlap: 'BackfillOverlap',
  BadBackfillRange: 'BadBackfillRange',
  UnsafeGracePeriod: 'UnsafeGracePeriod',
  InvalidWindow: 'InvalidWindow',
  InputsVanished: 'InputsVanished',
  MetadataGone: 'MetadataGone',
  /**
   * A service floe needs (Kafka, storage, the catalog, a registry) is unreachable, overloaded or
   * refuses floe's credentials: retried with backoff for as long as it lasts (the ingest shows
   * `stalled`), never blamed on records (activities/failures.ts serviceTrouble decides).
   */
  ServiceUnavailable: 'ServiceUnavailable',
} as const;
export type FailureType = (typeof FailureType)[keyof typeof FailureType];

/** Failures no ingest activity retry can fix: the workflow fails visibly (or reloads, for the first two). */
export const INGEST_NON_RETRYABLE: string[] = [
  FailureType.StaleCursor,
  FailureType.FilesMissing,
  FailureType.DeleteConflict,
  FailureType.DataInvalid,
  FailureType.FeatureUnsupported,
  FailureType.ConfigError,
  FailureType.TableDrift,
  FailureType.SchemaIncompatible,
  FailureType.CursorTopicMismatch,
  FailureType.CursorAheadOfTopic,
  FailureType.TopicRecreated,
  FailureType.IngestOverlap,
  FailureType.TopicGone,
];

/** Failures after which the ingest loop reloads the cursor from the table and starts the cycle over. */
export const INGEST_RELOAD: string[] = [FailureType.StaleCursor, FailureType.FilesMissing, FailureType.DeleteConflict];

/** Orphan removal below this grace period needs `force`: files of in-flight commits look like orphans. */
const ORPHANS_MIN_GRACE_MS = 60 * 60 * 1000;
export const ORPHANS_DEFAULT_GRACE_MS = 3 * 24 * 60 * 60 * 1000;

/** Why an orphan grace period is refused (failure type UnsafeGracePeriod), or null. One check for workflow and activity. */
export function gracePeriodProblem(olderThanMs: unknown, force: boolean | undefined): string | null {
  if (typeof olderThanMs !== 'number' || !Number.isFinite(olderThanMs) || olderThanMs < 0) {
    return `orphan grace period: expected a non-negative number of milliseconds, found ${String(olderThanMs)}`;
  }
  if (olderThanMs < ORPHANS_MIN_GRACE_MS && !force) {
    return `orphan grace period: expected at least ${ORPHANS_MIN_GRACE_MS / 60_000} minutes (files of in-flight commits look like orphans), found ${Math.round(olderThanMs / 1000)} s; pass force to override`;
  }
  return null;
}

/**
 * The ingest id topic `topic` of an entry of several topics is ingested under (config/topics.ts).
 * `@` cannot occur in a configured ingest id, so a derived id never collides with one.
 */
export const topicIngestId = (ingestId: string, topic: string): string => `${ingestId}@${topic}`;

/** One ingest per (table, ingest id): the workflow id is derived from both. */
export const ingestWorkflowId = (table: string, ingestId: string): string => `floe-ingest/${table}/${ingestId}`;

/**
 * floe's custom search attributes (Temporal visibility, all Keyword): registered by `floe stack up`
 * and `floe setup`, set on every workflow floe starts and every Schedule, so the UI and
 * `temporal workflow list --query "FloeTable = 'db.orders'"` find a table's runs.
 */
export const SEARCH_ATTRIBUTES = { FloeTable: 'Keyword', FloeKind: 'Keyword', FloeIngestId: 'Keyword' } as const;
/** FloeKind: which job a workflow is. */
export type FloeKind = 'ingest' | 'backfill' | 'compact' | 'expire' | 'orphans' | 'maintain';

/** Table property holding an ingest id's cursor (see table/cursor.ts). */
export const CURSOR_PROPERTY_PREFIX = 'floe.cursor.';
/** Dead-letter table property: offsets below which this ingest id's dead letters are recorded. */
export const DEAD_LETTER_CURSOR_PROPERTY_PREFIX = 'floe.dead-letter-cursor.';

/**
 * A failure raised by domain code (ingest/, maintenance/), which never imports Temporal: the
 * activity adapters turn it into an ApplicationFailure of `type` (activities/failures.ts),
 * non-retryable unless `retryable`.
 */
export class FloeFailure extends Error {
  constructor(
    readonly type: FailureType,
    message: string,
    readonly retryable = false,
  ) {
    super(message);
    this.name = 'FloeFailure';
  }
}

/** A failure no retry of the same step can fix. */
export const nonRetryable = (type: FailureType, message: string): FloeFailure => new FloeFailure(type, message);

/**
 * What domain code needs from the activity attempt it runs in, without importing Temporal: the
 * attempt number (names files so a retry never overwrites a dead attempt's), a heartbeat with
 * progress details, and cancellation. The adapters build it from the activity context.
 */
export interface StepRun {
  readonly attempt: number;
  heartbeat(details?: unknown): void;
  /** Something an operator should see in the worker log. */
  warn(message: string): void;
  readonly signal?: AbortSignal;
}

/** A step run outside any activity (tests, tools): attempt 1, heartbeats go nowhere. */
export const DETACHED_RUN: StepRun = { attempt: 1, heartbeat: () => undefined, warn: (m) => console.warn(m) };

/** A step stopped because its activity was cancelled (the adapter reports it as a cancellation). */
export class StepCancelled extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StepCancelled';
  }
}
