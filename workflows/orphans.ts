/**
 * Orphan file removal of one table (Spark remove_orphan_files): everything under the table
 * location that no retained metadata reaches and that is older than the grace period goes.
 * The grace period counts back from the run's window (scheduled start time), so a re-run of a
 * past window is never more aggressive than the original run.
 */
import { FailureType, ORPHANS_DEFAULT_GRACE_MS, gracePeriodProblem } from '../contract';
import { ApplicationFailure, defineQuery, proxyActivities, setHandler } from '@temporalio/workflow';
import type { createActivities } from '../activities';
import type { OrphansResult, Progress } from '../maintenance/types';
import { INVALID_WINDOW, InvalidWindowError, parseOptionalWindow } from '../maintenance/window';

type Activities = ReturnType<typeof createActivities>;

const { maintenanceSettings } = proxyActivities<Activities>({ startToCloseTimeout: '1 minute' });
const { removeOrphanFiles } = proxyActivities<Activities>({
  startToCloseTimeout: '2 hours',
  heartbeatTimeout: '2 minutes',
  retry: {
    initialInterval: '2s',
    maximumInterval: '1 minute',
    maximumAttempts: 10,
    nonRetryableErrorTypes: [FailureType.UnsafeGracePeriod, INVALID_WINDOW],
  },
});

/**
 * The run's reference time from its window (null: none given, use now), refused with a
 * non-retryable `InvalidWindow` failure when it does not parse or lies in the future: a NaN
 * cutoff would count every unreachable file as an orphan. Shared by the maintenance workflows.
 */
export function workflowWindowMs(window: string | null | undefined): number | null {
  try {
    return parseOptionalWindow(window, Date.now());
  } catch (e) {
    if (e instanceof InvalidWindowError) throw ApplicationFailure.nonRetryable(e.message, INVALID_WINDOW);
    throw e;
  }
}

export interface OrphansWorkflowInput {
  table: string;
  /** Grace period; default the table's maintenance.orphans.olderThan (3 days). */
  olderThanMs?: number;
  dryRun?: boolean;
  /** Accept a grace period below the 1 hour safety floor. */
  force?: boolean;
  window?: string | null;
}

export const orphansProgressQuery = defineQuery<Progress>('orphansProgress');

export async function orphansWorkflow(input: OrphansWorkflowInput): Promise<OrphansResult> {
  const started = Date.now();
  const progress: Progress = { phase: 'listing', done: 0, total: 1, unit: 'steps' };
  setHandler(orphansProgressQuery, () => progress);
  const windowMs = workflowWindowMs(input.window);
  let olderThanMs = input.olderThanMs;
  if (olderThanMs === undefined)
    olderThanMs = (await maintenanceSettings({ table: input.table }))?.orphans.olderThanMs ?? ORPHANS_DEFAULT_GRACE_MS;
  const graceProblem = gracePeriodProblem(olderThanMs, input.force);
  if (graceProblem) throw ApplicationFailure.nonRetryable(graceProblem, FailureType.UnsafeGracePeriod);
  const asOfMs = windowMs ?? Date.now();
  const r = await removeOrphanFiles({
    table: input.table,
    olderThanMs,
    asOfMs,
    dryRun: input.dryRun ?? false,
    force: input.force ?? false,
  });
  progress.phase = 'done';
  progress.done = 1;
  return { ...r, window: input.window ?? null, durationMs: Date.now() - started };
}
