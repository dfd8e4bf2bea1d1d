/**
 * An ingest's status and its drain-and-stop, through Temporal only (the status query, the run's
 * outcome): no catalog, S3 or Parquet module is loaded on these paths, so `floe ingest status`
 * answers in a fraction of a second. Only a run that no longer answers (failed, or no worker)
 * reads what the table says, and loads the catalog modules for that.
 */
import { WorkflowNotFoundError, type Client, type WorkflowHandle } from '@temporalio/client';
import { findTable, topicIngestId, type FloeConfig, type TableConfig } from '../config';
import {
  drainAndStopSignal,
  ingestWorkflowId,
  statusQuery,
  topicIngestWorkflowId,
  topicsQuery,
  type IngestStatus,
  type IngestTopicsStatus,
  type ingestTopicsWorkflow,
  type ingestWorkflow,
} from '../workflows';
import { windowRowsPerSecond } from '../workflows/ingest-state';

/** What these functions need of a FloeClient (client/index.ts), named here so the two modules do not import each other. */
export interface FloeClient {
  client: Client;
  cfg: FloeConfig;
}

/** An ingest's status as clients show it. */
export interface IngestStatusView extends IngestStatus {
  /** Set when the status could not come from the workflow itself (no worker answered its query). */
  warning?: string;
  /**
   * An entry of several topics: each topic's ingest, by topic. The entry's own fields sum them;
   * its cursor and lag are keyed `<topic>/<partition>`.
   */
  topics?: Record<string, IngestStatusView>;
  /** An entry of several topics: listed topics the cluster did not have at the last refresh. */
  missingTopics?: string[];
  /** An entry of several topics: topics deleted after their ingest started (each ended, stopped; still in `topics`). */
  goneTopics?: string[];
}

/** How long a status query may wait for a worker before the status falls back to the table. */
const STATUS_QUERY_TIMEOUT_MS = 5000;
/** The same for a run that failed (replayed by a worker, if one polls its task queue). */
const CLOSED_QUERY_TIMEOUT_MS = 2000;

/** rows/s over the last minute as of `nowMs` (running) or of the last commit (finished). */
export function withWindowRate(s: IngestStatus, nowMs: number): IngestStatus {
  const end =
    s.state === 'running' || s.state === 'paused' || s.state === 'draining' || s.state === 'stalled'
      ? nowMs
      : (s.lastCommitTimeMs ?? nowMs);
  const r = windowRowsPerSecond(s.recentCommits ?? [], end);
  return r === null ? s : { ...s, rowsPerSecond: r };
}

/** Workflow failures nest (workflow -> child -> activity -> application); users want the innermost reason. */
export function rootCause(e: unknown): Error {
  let cur = e as Error & { cause?: unknown };
  while (cur && cur.cause instanceof Error) cur = cur.cause as Error & { cause?: unknown };
  if (cur === e) return e as Error;
  const err = new Error(cur.message, { cause: e });
  err.name = (cur as { type?: string }).type ?? cur.name;
  return err;
}

function ingestHandle(fc: FloeClient, table: string): { handle: WorkflowHandle<typeof ingestWorkflow>; table: string; ingestId: string } {
  const t = findTable(fc.cfg, table);
  return { handle: fc.client.workflow.getHandle(ingestWorkflowId(t.table, t.ingestId)), table: t.table, ingestId: t.ingestId };
}

async function fromTable(fc: FloeClient, table: string, ingestId: string): Promise<IngestStatus> {
  const { tableIngestStatus } = await import('./tables');
  return tableIngestStatus(fc.cfg, table, ingestId);
}

/**
 * The ingest's status, or null if it was never started. Running: the workflow's own status query
 * (rows/s over the last minute as of now). Completed: its result. Failed, terminated, timed out:
 * state `failed`, `error` = `Type: message` of the innermost failure, and the status as the run
 * left it (its query, answered by a worker replaying it; without a worker, the table's cursor and
 * last commit with zero counters). Read-only.
 */
export async function ingestStatus(fc: FloeClient, table: string, nowMs = Date.now()): Promise<IngestStatusView | null> {
  const t = findTable(fc.cfg, table);
  if (t.topics) return topicSetStatus(fc, t, nowMs);
  const { handle, table: name, ingestId } = ingestHandle(fc, table);
  return handleStatus(fc, handle, name, ingestId, nowMs);
}

async function handleStatus(
  fc: FloeClient,
  handle: WorkflowHandle<typeof ingestWorkflow>,
  name: string,
  ingestId: string,
  nowMs: number,
): Promise<IngestStatusView | null> {
  try {
    const desc = await handle.describe();
    if (desc.status.name === 'RUNNING') {
      const deadline = Date.now() + STATUS_QUERY_TIMEOUT_MS;
      try {
        const s = await fc.client.connection.withDeadline(deadline, () => handle.query(statusQuery));
        return withWindowRate(s, nowMs);
      } catch (e) {
        // gRPC reports the deadline as DEADLINE_EXCEEDED, or as CANCELLED when it fired while the call was queued.
        if (!isDeadline(e) && Date.now() < deadline - 100) throw e;
        return {
          ...(await fromTable(fc, name, ingestId)),
          state: 'running',
          warning: `no worker answered the status query within ${STATUS_QUERY_TIMEOUT_MS / 1000} s (is a worker polling task queue ${desc.taskQueue}?); cursor and last commit from the table`,
        };
      }
    }
    if (desc.status.name === 'COMPLETED') return withWindowRate({ ...(await handle.result()), state: 'stopped' }, nowMs);
    const error = await handle.result().then(
      () => null,
      (e: unknown) => rootCause(e),
    );
    // The run's counters as they were when it failed: a closed workflow still answers queries (a
    // worker replays its history), else the table's cursor and last commit.
    let last = await fc.client.connection
      .withDeadline(Date.now() + CLOSED_QUERY_TIMEOUT_MS, () => handle.query(statusQuery))
      .catch(() => fromTable(fc, name, ingestId));
    // A run that failed before its first cycle planned (a cursor ahead of its topic, a drifted
    // table) never learned its cursor: show the one the table holds.
    if (Object.keys(last.cursor ?? {}).length === 0) {
      const held = await fromTable(fc, name, ingestId).catch(() => undefined);
      if (held) last = { ...last, cursor: held.cursor };
    }
    return {
      ...withWindowRate({ ...last, state: 'failed' }, nowMs),
      state: 'failed',
      error: error ? `${error.name}: ${error.message}` : desc.status.name,
    };
  } catch (e) {
    if (e instanceof WorkflowNotFoundError) return null;
    throw e;
  }
}

function isDeadline(e: unknown): boolean {
  // gRPC DEADLINE_EXCEEDED (4), possibly wrapped by the SDK.
  for (let c = e as { code?: unknown; cause?: unknown } | undefined, i = 0; c && i < 5; c = c.cause as typeof c, i++)
    if (c.code === 4) return true;
  return false;
}

/** A drain that did not finish within its timeout; carries the status at that moment. */
export class DrainTimeoutError extends Error {
  constructor(
    readonly timeoutMs: number,
    readonly status: IngestStatusView | null,
  ) {
    super(`the ingest did not finish draining within ${timeoutMs / 1000} s (state ${status?.state ?? 'unknown'}); it keeps draining`);
    this.name = 'DrainTimeoutError';
  }
}

/**
 * Signals drain-and-stop; with `wait`, resolves only when the run has completed (everything the
 * topic held at the signal committed) with its final status, rejects with the innermost failure if
 * the run failed, or with DrainTimeoutError after `timeoutMs` (the drain goes on). Idempotent: a
 * second stop of a draining ingest waits for the same drain.
 */
export async function stopIngest(
  fc: FloeClient,
  table: string,
  opts: { wait?: boolean; timeoutMs?: number } = {},
): Promise<IngestStatusView | null> {
  const { handle } = ingestHandle(fc, table);
  await handle.signal(drainAndStopSignal);
  if (!opts.wait) return null;
  const t = findTable(fc.cfg, table);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    if (opts.timeoutMs === undefined) return;
    timer = setTimeout(() => {
      ingestStatus(fc, table).then(
        (s) => reject(new DrainTimeoutError(opts.timeoutMs!, s)),
        () => reject(new DrainTimeoutError(opts.timeoutMs!, null)),
      );
    }, opts.timeoutMs);
  });
  try {
    if (t.topics) return await Promise.race([topicSetResult(fc, t), timeout]);
    const final = await Promise.race([handle.result(), timeout]);
    return withWindowRate({ ...final, state: 'stopped' }, Date.now());
  } catch (e) {
    if (e instanceof DrainTimeoutError) throw e;
    throw rootCause(e);
  } finally {
    clearTimeout(timer);
  }
}

/** Every topic an entry's workflow started: those it still runs, and those deleted since (their ingests ended). */
const entryTopics = (set: IngestTopicsStatus): string[] => [...set.topics, ...(set.gone ?? [])];

/**
 * An entry of several topics (ingestTopicsWorkflow under the entry's workflow id): the topics it
 * started, each topic's ingest status, combined (`combineTopicStatuses`). Read-only.
 */
async function topicSetStatus(fc: FloeClient, t: TableConfig, nowMs: number): Promise<IngestStatusView | null> {
  const handle = fc.client.workflow.getHandle<typeof ingestTopicsWorkflow>(ingestWorkflowId(t.table, t.ingestId));
  let set: IngestTopicsStatus | undefined;
  let error: string | undefined;
  let warning: string | undefined;
  try {
    const desc = await handle.describe();
    if (desc.status.name === 'COMPLETED') set = await handle.result();
    else {
      if (desc.status.name !== 'RUNNING')
        error = await handle.result().then(
          () => desc.status.name,
          (e: unknown) => {
            const c = rootCause(e);
            return `${c.name}: ${c.message}`;
          },
        );
      set = await fc.client.connection
        .withDeadline(Date.now() + STATUS_QUERY_TIMEOUT_MS, () => handle.query(topicsQuery))
        .catch((e: unknown) => {
          warning = `the topics of ${t.table} are unknown: its workflow did not answer (${(e as Error).message}); is a worker polling task queue ${desc.taskQueue}?`;
          return undefined;
        });
    }
  } catch (e) {
    if (e instanceof WorkflowNotFoundError) return null;
    throw e;
  }
  const byTopic: Record<string, IngestStatusView> = {};
  for (const topic of set ? entryTopics(set) : []) {
    const child = fc.client.workflow.getHandle<typeof ingestWorkflow>(topicIngestWorkflowId(t.table, t.ingestId, topic));
    const s = await handleStatus(fc, child, t.table, topicIngestId(t.ingestId, topic), nowMs);
    if (s) byTopic[topic] = s;
  }
  const combined = combineTopicStatuses(t.table, t.ingestId, error ? 'failed' : (set?.state ?? 'running'), byTopic);
  return {
    ...combined,
    ...(error ? { error: combined.error ? `${error}; ${combined.error}` : error } : {}),
    ...(warning ? { warning } : {}),
    ...(set?.missing.length ? { missingTopics: set.missing } : {}),
    ...(set?.gone?.length ? { goneTopics: set.gone } : {}),
  };
}

/** Waits for a drained entry of several topics: its workflow, then each topic's ingest; the combined final status. */
async function topicSetResult(fc: FloeClient, t: TableConfig): Promise<IngestStatusView> {
  const set = await fc.client.workflow.getHandle<typeof ingestTopicsWorkflow>(ingestWorkflowId(t.table, t.ingestId)).result();
  const byTopic: Record<string, IngestStatusView> = {};
  for (const topic of entryTopics(set)) {
    const final = await fc.client.workflow.getHandle<typeof ingestWorkflow>(topicIngestWorkflowId(t.table, t.ingestId, topic)).result();
    byTopic[topic] = withWindowRate({ ...final, state: 'stopped' }, Date.now());
  }
  return {
    ...combineTopicStatuses(t.table, t.ingestId, 'stopped', byTopic),
    ...(set.missing.length ? { missingTopics: set.missing } : {}),
    ...(set.gone?.length ? { goneTopics: set.gone } : {}),
  };
}

export { topicSetResult as waitForTopicSet };

/**
 * One status for an entry of several topics: counters summed over its topics, cursor and lag
 * keyed `<topic>/<partition>`, each route table's cursor likewise, the newest commit, and the
 * state: failed if a topic's ingest failed (its error named), draining while a stopped entry's
 * topics still drain, else the entry workflow's own.
 */
export function combineTopicStatuses(
  table: string,
  ingestId: string,
  state: IngestStatus['state'],
  byTopic: Record<string, IngestStatusView>,
): IngestStatusView {
  const out: IngestStatusView = {
    table,
    ingestId,
    state,
    cursor: {},
    lag: {},
    lastCommitId: null,
    lastSnapshotId: null,
    lastCommitTimeMs: null,
    cycles: 0,
    commits: 0,
    fencedCommits: 0,
    totalRows: 0,
    totalDeadLetters: 0,
    rowsPerSecond: 0,
    filesPerCommit: 0,
    topics: byTopic,
  };
  const errors: string[] = [];
  let files = 0;
  for (const topic of Object.keys(byTopic).sort()) {
    const s = byTopic[topic]!;
    for (const [p, o] of Object.entries(s.cursor)) out.cursor[`${topic}/${p}`] = o;
    for (const [p, o] of Object.entries(s.lag)) out.lag[`${topic}/${p}`] = o;
    out.cycles += s.cycles;
    out.commits += s.commits;
    out.fencedCommits += s.fencedCommits;
    out.totalRows += s.totalRows;
    out.totalDeadLetters += s.totalDeadLetters;
    out.rowsPerSecond += s.rowsPerSecond;
    files += s.filesPerCommit * s.commits;
    if (s.lastCommitTimeMs !== null && (out.lastCommitTimeMs === null || s.lastCommitTimeMs > out.lastCommitTimeMs)) {
      out.lastCommitTimeMs = s.lastCommitTimeMs;
      out.lastCommitId = s.lastCommitId;
      out.lastSnapshotId = s.lastSnapshotId;
    }
    if (s.state === 'failed') errors.push(`topic ${topic}: ${s.error ?? 'failed'}`);
    else if (s.state === 'stalled') {
      // One stalled topic stalls the entry: shown with the oldest stall.
      out.state = 'stalled';
      if (s.failing && (!out.failing || s.failing.sinceMs < out.failing.sinceMs))
        out.failing = { ...s.failing, error: `topic ${topic}: ${s.failing.error}` };
    } else if (state === 'stopped' && s.state !== 'stopped') out.state = 'draining';
    for (const [name, r] of Object.entries(s.tables ?? {})) {
      const into = ((out.tables ??= {})[name] ??= { cursor: {}, rows: 0, commits: 0, lastSnapshotId: null });
      for (const [p, o] of Object.entries(r.cursor)) into.cursor[`${topic}/${p}`] = o;
      into.rows += r.rows;
      into.commits += r.commits;
      into.lastSnapshotId = r.lastSnapshotId ?? into.lastSnapshotId;
    }
  }
  out.rowsPerSecond = Math.round(out.rowsPerSecond * 10) / 10;
  out.filesPerCommit = out.commits > 0 ? Math.round((files / out.commits) * 10) / 10 : 0;
  if (errors.length > 0) {
    out.state = 'failed';
    out.error = errors.join('; ');
  }
  return out;
}
