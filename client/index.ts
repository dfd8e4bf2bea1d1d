/**
 * The typed programmatic API. The CLI is a thin layer over these functions.
 * Starting an ingest is idempotent: the workflow id is deterministic per (table, ingest id) and an
 * already-running ingest is reused, never duplicated.
 */
import { Client, WorkflowIdConflictPolicy } from '@temporalio/client';
import type { FloeConfig, TableConfig } from '../config';
import { findTable, topicSetLabel } from '../config';
import type { BackfillBound } from '../ingest/backfill';
import { connectTemporal } from './connection';
import { checkIngestTablesDrift, TableDriftError } from '../ingest/drift';
import { rootCause, waitForTopicSet, withWindowRate } from './ingest-status';
import {
  backfillWorkflow,
  backfillWorkflowId,
  type BackfillResult,
  drainAndStopSignal,
  ingestTopicsWorkflow,
  ingestWorkflow,
  ingestWorkflowId,
  pauseSignal,
  resumeSignal,
  floeSearchAttributes,
  type IngestStatus,
} from '../workflows';

export { TableDriftError };
export {
  combineTopicStatuses,
  DrainTimeoutError,
  ingestStatus,
  rootCause,
  stopIngest,
  withWindowRate,
  type IngestStatusView,
} from './ingest-status';

export interface FloeClient {
  client: Client;
  cfg: FloeConfig;
  close(): Promise<void>;
}

/**
 * Connects as the `temporal` CLI would (client/connection.ts: the config's address / namespace,
 * else the CLI's TEMPORAL_* environment and profile, with TLS, mTLS and API key from them).
 */
export async function connectClient(cfg: FloeConfig): Promise<FloeClient> {
  const { connection, target } = await connectTemporal(cfg.temporal);
  const client = new Client({ connection, namespace: target.namespace });
  return { client, cfg, close: () => connection.close() };
}

/**
 * How the table and its dead-letter table drifted from the config (ingest/drift.ts); empty when an
 * ingest can write. A table that does not exist yet cannot drift: the first cycle creates it.
 */
export async function ingestTableDrift(cfg: FloeConfig, t: TableConfig): Promise<string[]> {
  // Loaded here, not at the top: the catalog, S3 and Parquet modules cost ~0.5 s, and the status,
  // signal and stop paths of the CLI never need them (only Temporal).
  const { openTables } = await import('../table/tables');
  const { deadLetterColumns } = await import('../ingest/tables');
  const { parseIdentifier } = await import('../iceberg');
  const tables = await openTables(cfg);
  try {
    const metadata = async (id: string) =>
      (await tables.catalog.tableExists(parseIdentifier(id))) ? (await tables.load(id)).metadata : null;
    return checkIngestTablesDrift(t, await metadata(t.table), await metadata(t.deadLetterTable), deadLetterColumns);
  } finally {
    await tables.close();
  }
}

/**
 * Starts (or attaches to) the table's ingest. Refuses with a TableDriftError, before touching
 * Temporal, when the table no longer matches the configured columns (another engine changed it).
 */
export async function startIngest(
  fc: FloeClient,
  table: string,
  opts: { force?: boolean } = {},
): Promise<{ workflowId: string; runId: string }> {
  const t = findTable(fc.cfg, table);
  const workflowId = ingestWorkflowId(t.table, t.ingestId);
  if (t.topics) {
    // Several topics: the entry's workflow starts one ingest per topic, each checking the table
    // (drift included) in its first cycle, as this check would, with its topic's schema.
    const handle = await fc.client.workflow.start(ingestTopicsWorkflow, {
      taskQueue: fc.cfg.temporal.taskQueue,
      workflowId,
      args: [{ table: t.table, ingestId: t.ingestId, ...(opts.force ? { force: true } : {}) }],
      workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
      typedSearchAttributes: floeSearchAttributes(t.table, 'ingest', t.ingestId),
      staticSummary: `ingest ${topicSetLabel(t)} → ${t.table}`,
      staticDetails: `Kafka ${topicSetLabel(t)} into Iceberg table \`${t.table}\` exactly once, one ingest per topic (ingest ids \`${t.ingestId}@<topic>\`, dead letters in \`${t.deadLetterTable}\`, a commit every ${t.commitIntervalMs / 1000} s, topics looked for every ${t.topics.refreshMs / 1000} s).`,
    });
    return { workflowId, runId: handle.firstExecutionRunId };
  }
  const drift = await ingestTableDrift(fc.cfg, t);
  if (drift.length > 0) throw new TableDriftError(drift);
  const handle = await fc.client.workflow.start(ingestWorkflow, {
    taskQueue: fc.cfg.temporal.taskQueue,
    workflowId,
    // force: start even if another live ingest id already holds the table's topic (checked by the first cycle).
    args: [{ table: t.table, ingestId: t.ingestId, ...(opts.force ? { force: true } : {}) }],
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
    // The UI's table status page: find it by FloeTable, read what it loads at a glance.
    typedSearchAttributes: floeSearchAttributes(t.table, 'ingest', t.ingestId),
    staticSummary: `ingest ${t.topic} → ${t.table}`,
    staticDetails: `Kafka topic \`${t.topic}\` into Iceberg table \`${t.table}\` exactly once (ingest id \`${t.ingestId}\`, dead letters in \`${t.deadLetterTable}\`, a commit every ${t.commitIntervalMs / 1000} s).`,
  });
  return { workflowId, runId: handle.firstExecutionRunId };
}

export type IngestSignal = 'pause' | 'resume' | 'stop';

export async function signalIngest(fc: FloeClient, table: string, signal: IngestSignal): Promise<void> {
  const t = findTable(fc.cfg, table);
  const handle = fc.client.workflow.getHandle(ingestWorkflowId(t.table, t.ingestId));
  const def = { pause: pauseSignal, resume: resumeSignal, stop: drainAndStopSignal }[signal];
  await handle.signal(def);
}

/** Waits for a drained ingest to finish; returns its final status. */
export async function waitForIngest(fc: FloeClient, table: string): Promise<IngestStatus> {
  const t = findTable(fc.cfg, table);
  if (t.topics) return waitForTopicSet(fc, t);
  const final = await fc.client.workflow.getHandle<typeof ingestWorkflow>(ingestWorkflowId(t.table, t.ingestId)).result();
  return withWindowRate(final, Date.now());
}

/** Parses a backfill bound: an ISO time, `p:offset,p:offset`, or one offset for every partition. */
export function parseBackfillBound(s: string, flag: string): BackfillBound {
  if (/^\d+$/.test(s)) return { offset: s };
  if (/^\d+:\d+(,\d+:\d+)*$/.test(s)) return { offsets: Object.fromEntries(s.split(',').map((kv) => kv.split(':') as [string, string])) };
  if (!Number.isNaN(Date.parse(s)) && /^\d{4}-\d{2}-\d{2}/.test(s)) return { time: new Date(Date.parse(s)).toISOString() };
  throw new Error(`${flag}: expected an ISO time (2026-07-01T00:00:00Z), offsets "0:100,1:250" or one offset, found ${JSON.stringify(s)}`);
}

/**
 * Loads [from, to) of the table's topic exactly once. Idempotent: the same arguments map to the same
 * workflow id and ingest id, so a re-run adds nothing. Overlap with what the table holds is refused
 * unless `force`. Resolves when the backfill is complete.
 */
export async function runBackfill(
  fc: FloeClient,
  table: string,
  from: BackfillBound,
  to: BackfillBound,
  force = false,
): Promise<BackfillResult> {
  findTable(fc.cfg, table);
  const handle = await fc.client.workflow.start(backfillWorkflow, {
    taskQueue: fc.cfg.temporal.taskQueue,
    workflowId: backfillWorkflowId(table, from, to),
    args: [{ table, from, to, force }],
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
    typedSearchAttributes: floeSearchAttributes(table, 'backfill'),
    staticSummary: `backfill ${table} [${JSON.stringify(from)}, ${JSON.stringify(to)})`,
  });
  try {
    return await handle.result();
  } catch (e) {
    throw rootCause(e);
  }
}
