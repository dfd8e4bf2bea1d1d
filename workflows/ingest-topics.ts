/**
 * The ingest of an entry of several topics (config `topics` / `topicPattern`): asks the cluster
 * for the entry's topics every `topicRefresh` and starts, once per topic, the ingest workflow of
 * that topic (ingest id `<ingestId>@<topic>`, config/topics.ts). Each topic's ingest is the
 * one-topic protocol unchanged (its own cursor in every table, fenced, idempotent), so this
 * workflow holds no offsets and commits nothing: it only discovers and forwards.
 *
 * The topic ingests are children with parent-close policy ABANDON: they outlive this workflow's
 * continue-as-new (and its termination). pause/resume/drainAndStop sent here are forwarded to
 * every topic's ingest, and to those started later; drainAndStop ends discovery, and the client
 * waits for each topic's ingest to finish (client/ingest-status.ts).
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  ParentClosePolicy,
  condition,
  continueAsNew,
  defineQuery,
  getExternalWorkflowHandle,
  log,
  proxyActivities,
  setHandler,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import type { createActivities } from '../activities';
import { INGEST_NON_RETRYABLE, ingestWorkflowId, topicIngestId } from '../contract';
import { drainAndStopSignal, ingestWorkflow, pauseSignal, resumeSignal } from './ingest';
import { floeSearchAttributes } from './search-attributes';

type Activities = ReturnType<typeof createActivities>;

const { listEntryTopics } = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1s', maximumInterval: '30s', nonRetryableErrorTypes: INGEST_NON_RETRYABLE },
});

export interface IngestTopicsInput {
  table: string;
  ingestId: string;
  force?: boolean;
  /** carried across continueAsNew: the topics whose ingest was started, those deleted since, and whether paused. */
  started?: string[];
  gone?: string[];
  paused?: boolean;
  /**
   * Also carried: a drain-and-stop, and pause/resume signals not yet forwarded to the topics'
   * ingests, that arrived while the last run was refreshing. Dropped, `ingest stop --wait` hung and
   * a topic's ingest missed a pause.
   */
  draining?: boolean;
  forwards?: Forward[];
  /** Refreshes per run before continue-as-new (default 500; tests make it small). */
  refreshesPerRun?: number;
}

export interface IngestTopicsStatus {
  table: string;
  ingestId: string;
  state: 'running' | 'paused' | 'stopped';
  /** Topics whose ingest this entry started (each is workflow `topicIngestWorkflowId`), sorted. */
  topics: string[];
  /** Topics the config lists that the cluster did not have at the last refresh. */
  missing: string[];
  /**
   * Topics deleted after their ingest started (absent at a refresh): each ingest ends by itself,
   * stopped (TopicGone), its rows and cursor kept. Found again (recreated), a topic is started again.
   */
  gone?: string[];
}

/** The ingest workflow of topic `topic` of entry (table, ingestId). */
export const topicIngestWorkflowId = (table: string, ingestId: string, topic: string): string =>
  ingestWorkflowId(table, topicIngestId(ingestId, topic));

export const topicsQuery = defineQuery<IngestTopicsStatus>('topics');

/** Refreshes per run before continue-as-new (a refresh is ~6 history events). */
const REFRESHES_PER_RUN = 500;

export type Forward = 'pause' | 'resume' | 'stop';

export async function ingestTopicsWorkflow(input: IngestTopicsInput): Promise<IngestTopicsStatus> {
  const started = new Set(input.started ?? []);
  const gone = new Set(input.gone ?? []);
  let paused = input.paused ?? false;
  let draining = input.draining ?? false;
  let missing: string[] = [];
  const pending: Forward[] = [...(input.forwards ?? [])];
  setHandler(pauseSignal, () => {
    paused = true;
    pending.push('pause');
  });
  setHandler(resumeSignal, () => {
    paused = false;
    pending.push('resume');
  });
  setHandler(drainAndStopSignal, () => {
    draining = true;
  });
  const status = (state: IngestTopicsStatus['state']): IngestTopicsStatus => ({
    table: input.table,
    ingestId: input.ingestId,
    state,
    topics: [...started].sort(),
    missing,
    ...(gone.size > 0 ? { gone: [...gone].sort() } : {}),
  });
  setHandler(topicsQuery, () => status(draining ? 'stopped' : paused ? 'paused' : 'running'));

  const childId = (topic: string) => topicIngestWorkflowId(input.table, input.ingestId, topic);
  /** Signals every started topic's ingest; one that already ended (stopped, failed) is skipped. */
  const forward = async (what: Forward) => {
    const def = { pause: pauseSignal, resume: resumeSignal, stop: drainAndStopSignal }[what];
    await Promise.all(
      [...started].sort().map((topic) =>
        getExternalWorkflowHandle(childId(topic))
          .signal(def)
          .catch((e: unknown) => log.warn('topic ingest not signalled', { topic, signal: what, error: String(e) })),
      ),
    );
  };

  for (let refreshes = 0; ; refreshes++) {
    while (pending.length > 0 && !draining) await forward(pending.shift()!);
    if (draining) {
      await forward('stop');
      return status('stopped');
    }
    const found = await listEntryTopics({ table: input.table });
    missing = found.missing;
    // A started topic the cluster no longer has was deleted: its ingest ends by itself (TopicGone)
    // and takes no more signals from here; if it comes back, it is started again (below).
    const present = new Set(found.topics);
    for (const topic of [...started].sort())
      if (!present.has(topic)) {
        started.delete(topic);
        gone.add(topic);
        log.info('topic deleted', { table: input.table, topic });
      }
    for (const topic of found.topics) {
      if (started.has(topic)) continue;
      gone.delete(topic);
      const topicId = topicIngestId(input.ingestId, topic);
      try {
        await startChild(ingestWorkflow, {
          workflowId: childId(topic),
          args: [{ table: input.table, ingestId: topicId, topic, ...(input.force ? { force: true } : {}) }],
          parentClosePolicy: ParentClosePolicy.ABANDON,
          typedSearchAttributes: floeSearchAttributes(input.table, 'ingest', topicId),
          staticSummary: `ingest ${topic} → ${input.table}`,
        });
        log.info('topic ingest started', { table: input.table, topic, ingestId: topicId });
      } catch (e) {
        // Already running (this entry started it in a run whose record was lost, or by hand).
        if (!(e instanceof WorkflowExecutionAlreadyStartedError)) throw e;
      }
      started.add(topic);
      // A topic found while paused starts paused, as the others are.
      if (paused)
        await getExternalWorkflowHandle(childId(topic))
          .signal(pauseSignal)
          .catch(() => undefined);
    }
    if (refreshes + 1 >= (input.refreshesPerRun ?? REFRESHES_PER_RUN) || workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof ingestTopicsWorkflow>({
        ...input,
        started: [...started].sort(),
        // Explicitly unset when empty: `...input` would carry the last run's values over.
        gone: gone.size > 0 ? [...gone].sort() : undefined,
        paused,
        draining: draining || undefined,
        forwards: pending.length > 0 ? [...pending] : undefined,
      });
    }
    await condition(() => pending.length > 0 || draining, found.refreshMs);
  }
}
