/**
 * Backfill a bounded range of a topic into a table, exactly once: resolve + validate the range
 * (refusing overlap with what the table holds unless forced), then run the ingest loop as a child
 * with an ingest id derived from the range. Re-running the same backfill finds the range loaded
 * (or resumes it) and adds nothing.
 */
import { executeChild, proxyActivities } from '@temporalio/workflow';
import type { createActivities } from '../activities';
import type { BackfillBound, PreparedBackfill } from '../ingest/backfill';
import { FailureType } from '../contract';
import { ingestWorkflow, ingestWorkflowId, type IngestStatus } from './ingest';
import { floeSearchAttributes } from './search-attributes';

type Activities = ReturnType<typeof createActivities>;
const { prepareBackfill } = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: {
    maximumInterval: '10s',
    nonRetryableErrorTypes: [FailureType.BackfillOverlap, FailureType.BadBackfillRange, FailureType.ConfigError],
  },
});

export interface BackfillInput {
  table: string;
  from: BackfillBound;
  to: BackfillBound;
  force?: boolean;
}
export interface BackfillResult {
  prepared: PreparedBackfill;
  status: IngestStatus;
}

export const backfillWorkflowId = (table: string, from: BackfillBound, to: BackfillBound): string =>
  `floe-backfill/${table}/${JSON.stringify(from)}..${JSON.stringify(to)}`;

export async function backfillWorkflow(input: BackfillInput): Promise<BackfillResult> {
  const prepared = await prepareBackfill({ table: input.table, from: input.from, to: input.to, force: input.force ?? false });
  const status = await executeChild(ingestWorkflow, {
    workflowId: ingestWorkflowId(input.table, prepared.ingestId),
    args: [{ table: input.table, ingestId: prepared.ingestId, range: prepared.range }],
    typedSearchAttributes: floeSearchAttributes(input.table, 'backfill', prepared.ingestId),
    staticSummary: `backfill of ${input.table} (ingest id ${prepared.ingestId})`,
  });
  return { prepared, status };
}
