/**
 * The typed programmatic API. The CLI is a thin layer over these functions.
 * Starting an ingest is idempotent: the workflow id is deterministic per (table, ingest id) and an
 * already-running ingest is reused, never duplicated.
 */
import { Client, Connection, WorkflowIdConflictPolicy, WorkflowNotFoundError } from '@temporalio/client';
import type { FloeConfig } from '../config';
import { findTable } from '../config';
import {
  drainAndStopSignal, ingestWorkflow, ingestWorkflowId, pauseSignal, resumeSignal, statusQuery,
  type IngestStatus,
} from '../workflows';

export interface FloeClient {
  client: Client;
  cfg: FloeConfig;
  close(): Promise<void>;
}

export async function connectClient(cfg: FloeConfig): Promise<FloeClient> {
  const connection = await Connection.connect({ address: cfg.temporal.address });
  const client = new Client({ connection, namespace: cfg.temporal.namespace });
  return { client, cfg, close: () => connection.close() };
}

export async function startIngest(fc: FloeClient, table: string): Promise<{ workflowId: string; runId: string }> {
  const t = findTable(fc.cfg, table);
  const workflowId = ingestWorkflowId(t.table, t.ingestId);
  const handle = await fc.client.workflow.start(ingestWorkflow, {
    taskQueue: fc.cfg.temporal.taskQueue,
    workflowId,
    args: [{ table: t.table, ingestId: t.ingestId }],
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
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

export async function ingestStatus(fc: FloeClient, table: string): Promise<IngestStatus | null> {
  const t = findTable(fc.cfg, table);
  const handle = fc.client.workflow.getHandle(ingestWorkflowId(t.table, t.ingestId));
  try {
    const desc = await handle.describe();
    if (desc.status.name !== 'RUNNING') return { ...(await handle.result().catch(() => null) as IngestStatus), state: 'stopped' };
    return await handle.query(statusQuery);
  } catch (e) {
    if (e instanceof WorkflowNotFoundError) return null;
    throw e;
  }
}

/** Waits for a drained ingest to finish; returns its final status. */
export async function waitForIngest(fc: FloeClient, table: string): Promise<IngestStatus> {
  const t = findTable(fc.cfg, table);
  return fc.client.workflow.getHandle<typeof ingestWorkflow>(ingestWorkflowId(t.table, t.ingestId)).result();
}
