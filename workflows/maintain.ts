/**
 * Maintenance entry points:
 * - `maintainWorkflow`: compact -> expire -> orphans for one table, each a child workflow.
 * - `scheduledMaintenanceWorkflow`: what Temporal Schedules start. It takes its window from the
 *   scheduled start time (search attribute TemporalScheduledStartTime, set by the Schedule, also
 *   on backfills) and runs the work as a child with the id `floe-<kind>/<table>/<window>`, which
 *   the server accepts once per window (a failed window may run again). A second run of the same
 *   window, from a repeated `temporal schedule backfill`, is therefore a no-op.
 */
import { defineSearchAttributeKey, SearchAttributeType, WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { executeChild, log, ParentClosePolicy, WorkflowIdReusePolicy, workflowInfo } from '@temporalio/workflow';
import type { CompactOptions, CompactResult, ExpireResult, OrphansResult } from '../maintenance/types';
import { compactWorkflow } from './compact';
import { expireWorkflow } from './expire';
import { orphansWorkflow, workflowWindowMs } from './orphans';
import { floeSearchAttributes } from './search-attributes';

export type MaintenanceWorkflowKind = 'compact' | 'expire' | 'orphans' | 'maintain';

/** Deterministic id of the run of `kind` for `table` and `window` (one run per window). */
export const maintenanceWorkflowId = (kind: MaintenanceWorkflowKind, table: string, window: string): string =>
  `floe-${kind}/${table}/${window}`;
/** Schedule id per table and kind (`floe schedules apply`). */
export const maintenanceScheduleId = (kind: MaintenanceWorkflowKind, table: string): string => `floe-schedule-${kind}/${table}`;

export const SCHEDULED_START_TIME = defineSearchAttributeKey('TemporalScheduledStartTime', SearchAttributeType.DATETIME);

/** Windows are whole seconds in UTC: the same scheduled time always gives the same id. */
export const windowOf = (d: Date): string => `${new Date(Math.floor(d.getTime() / 1000) * 1000).toISOString().replace('.000Z', 'Z')}`;

export interface MaintainInput {
  table: string;
  window?: string | null;
  compact?: Partial<CompactOptions>;
  skip?: Array<'compact' | 'expire' | 'orphans'>;
  /** Orphans/expire dry run. */
  dryRun?: boolean;
}

export interface MaintainResult {
  table: string;
  window: string | null;
  compact: CompactResult | null;
  expire: ExpireResult | null;
  orphans: OrphansResult | null;
}

export async function maintainWorkflow(input: MaintainInput): Promise<MaintainResult> {
  const window = input.window ?? null;
  // Refused here, before compaction runs, not only when the expire/orphans children get to it.
  workflowWindowMs(window);
  const skip = new Set(input.skip ?? []);
  const base = workflowInfo().workflowId;
  const child = {
    parentClosePolicy: ParentClosePolicy.TERMINATE,
    workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
  };
  // A re-run of a window whose last run failed finds the steps that completed then: their ids
  // refuse a second start (ALLOW_DUPLICATE_FAILED_ONLY), which means "done in this window".
  const once = async <T>(start: () => Promise<T>): Promise<T | null> => {
    try {
      return await start();
    } catch (e) {
      if (!(e instanceof WorkflowExecutionAlreadyStartedError)) throw e;
      log.info('maintenance step already completed in this window', { workflowId: e.workflowId });
      return null;
    }
  };
  // In order: compaction first, so expiry can drop the snapshots it superseded once they age.
  const compact = skip.has('compact')
    ? null
    : await once(() =>
        executeChild(compactWorkflow, {
          ...child,
          workflowId: `${base}/compact`,
          typedSearchAttributes: floeSearchAttributes(input.table, 'compact'),
          staticSummary: `compact ${input.table}${window ? ` (window ${window})` : ''}`,
          args: [{ table: input.table, window, options: input.compact }],
        }),
      );
  const expire = skip.has('expire')
    ? null
    : await once(() =>
        executeChild(expireWorkflow, {
          ...child,
          workflowId: `${base}/expire`,
          typedSearchAttributes: floeSearchAttributes(input.table, 'expire'),
          staticSummary: `expire ${input.table}${window ? ` (window ${window})` : ''}`,
          args: [{ table: input.table, window, dryRun: input.dryRun }],
        }),
      );
  const orphans = skip.has('orphans')
    ? null
    : await once(() =>
        executeChild(orphansWorkflow, {
          ...child,
          workflowId: `${base}/orphans`,
          typedSearchAttributes: floeSearchAttributes(input.table, 'orphans'),
          staticSummary: `orphans ${input.table}${window ? ` (window ${window})` : ''}`,
          args: [{ table: input.table, window, dryRun: input.dryRun }],
        }),
      );
  return { table: input.table, window, compact, expire, orphans };
}

export interface ScheduledInput {
  table: string;
  kind: MaintenanceWorkflowKind;
}

export interface ScheduledResult {
  table: string;
  kind: MaintenanceWorkflowKind;
  window: string;
  workflowId: string;
  /** false when this window already ran (a repeated backfill): nothing was done */
  ran: boolean;
  result: CompactResult | ExpireResult | OrphansResult | MaintainResult | null;
}

export async function scheduledMaintenanceWorkflow(input: ScheduledInput): Promise<ScheduledResult> {
  const info = workflowInfo();
  const scheduled = info.typedSearchAttributes.get(SCHEDULED_START_TIME);
  // Started by hand (not by a Schedule): the window is the start time.
  const window = windowOf(scheduled ?? new Date(info.startTime));
  const workflowId = maintenanceWorkflowId(input.kind, input.table, window);
  const opts = {
    workflowId,
    parentClosePolicy: ParentClosePolicy.TERMINATE,
    workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
    typedSearchAttributes: floeSearchAttributes(input.table, input.kind),
    staticSummary: `scheduled ${input.kind} of ${input.table} (window ${window})`,
  };
  try {
    let result: ScheduledResult['result'];
    switch (input.kind) {
      case 'compact':
        result = await executeChild(compactWorkflow, { ...opts, args: [{ table: input.table, window }] });
        break;
      case 'expire':
        result = await executeChild(expireWorkflow, { ...opts, args: [{ table: input.table, window }] });
        break;
      case 'orphans':
        result = await executeChild(orphansWorkflow, { ...opts, args: [{ table: input.table, window }] });
        break;
      case 'maintain':
        result = await executeChild(maintainWorkflow, { ...opts, args: [{ table: input.table, window }] });
        break;
    }
    return { table: input.table, kind: input.kind, window, workflowId, ran: true, result };
  } catch (e) {
    if (e instanceof WorkflowExecutionAlreadyStartedError) {
      log.info('window already ran; nothing to do', { workflowId });
      return { table: input.table, kind: input.kind, window, workflowId, ran: false, result: null };
    }
    throw e;
  }
}
