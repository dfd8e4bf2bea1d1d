/**
 * Typed API for table maintenance: run compaction / expiry / orphan removal / maintain now through
 * Temporal (with a progress callback fed by the workflow's query), manage the per-table Temporal
 * Schedules, and inspect a table's data files. The CLI (cli/maintenance.ts) is a thin layer over it.
 *
 * Concurrency: every run has a deterministic workflow id `floe-<kind>/<table>/<window>`; starting
 * the same window twice fails with "already started" instead of running twice.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
  WorkflowIdReusePolicy,
  type ScheduleOptionsAction,
  type ScheduleSpec,
  type WorkflowHandle,
} from '@temporalio/client';
import type { FloeConfig, TableConfig } from '../config';
import { entryTables, findTable } from '../config';
import { openTables } from '../table/tables';
import {
  fileStats,
  liveDataFiles,
  toLiveFiles,
  type CompactOptions,
  type CompactProgress,
  type CompactResult,
  type ExpireResult,
  type FileStats,
  type OrphansResult,
  type Progress,
} from '../maintenance/index';
import {
  compactProgressQuery,
  compactWorkflow,
  expireProgressQuery,
  expireWorkflow,
  maintainWorkflow,
  maintenanceScheduleId,
  maintenanceWorkflowId,
  orphansProgressQuery,
  orphansWorkflow,
  scheduledMaintenanceWorkflow,
  windowOf,
  floeSearchAttributes,
  type ExpireInput,
  type MaintainInput,
  type MaintainResult,
  type MaintenanceWorkflowKind,
  type OrphansWorkflowInput,
} from '../workflows';
import type { FloeClient } from './index';
import { parseOptionalWindow } from '../maintenance/window';

export type ProgressCallback = (p: { phase: string; done: number; total: number; unit: string }) => void;

/** Awaits a workflow result while polling its progress query (every 500 ms) for `onProgress`. */
async function follow<R>(
  handle: WorkflowHandle,
  poll: () => Promise<{ phase: string; done: number; total: number; unit: string }>,
  onProgress?: ProgressCallback,
): Promise<R> {
  let finished = false;
  const result = handle.result().finally(() => {
    finished = true;
  }) as Promise<R>;
  // The poller is awaited before returning: a query still in flight when the caller closes the
  // connection fails with "Channel has been shut down".
  const poller = onProgress
    ? (async () => {
        while (!finished) {
          try {
            onProgress(await poll());
          } catch {
            /* not started yet, or just finished */
          }
          if (!finished) await Promise.race([sleep(500), result.catch(() => undefined)]);
        }
      })()
    : Promise.resolve();
  try {
    return await result;
  } finally {
    await poller;
  }
}

/**
 * Workflow id of a run: deterministic per window when one is given (a second start of the same
 * window is refused), unique per invocation for runs started by hand without a window.
 */
const runId = (kind: MaintenanceWorkflowKind, table: string, window: string | undefined): string =>
  window
    ? maintenanceWorkflowId(kind, table, window)
    : maintenanceWorkflowId(kind, table, `manual-${new Date().toISOString()}-${randomBytes(3).toString('hex')}`);

const startOpts = (fc: FloeClient, workflowId: string, kind: MaintenanceWorkflowKind, table: string) => ({
  taskQueue: fc.cfg.temporal.taskQueue,
  workflowId,
  workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
  typedSearchAttributes: floeSearchAttributes(table, kind),
  staticSummary: `${kind} ${table} (started by hand)`,
});

const tableName = (fc: FloeClient, table: string): string => {
  try {
    return findTable(fc.cfg, table).table;
  } catch {
    return table; // any table of the catalog may be maintained, configured or not
  }
};

export interface RunOptions {
  onProgress?: ProgressCallback;
  window?: string;
}

/**
 * Refuses an unparsable or future window before anything starts (InvalidWindowError): it would
 * become the workflow id and, for expiry and orphan removal, the time cutoffs count back from.
 */
function checkWindow(window: string | null | undefined): string | undefined {
  parseOptionalWindow(window, Date.now());
  return window ?? undefined;
}

/** Compacts a table now (Spark rewrite_data_files). Returns the result table. */
export async function compactTable(
  fc: FloeClient,
  table: string,
  options: Partial<CompactOptions> = {},
  run: RunOptions = {},
): Promise<CompactResult> {
  checkWindow(run.window);
  const t = tableName(fc, table);
  const handle = await fc.client.workflow.start(compactWorkflow, {
    ...startOpts(fc, runId('compact', t, run.window), 'compact', t),
    args: [{ table: t, options, window: run.window ?? null }],
  });
  return follow<CompactResult>(
    handle,
    async () => {
      const p: CompactProgress = await handle.query(compactProgressQuery);
      return p.phase === 'rewriting' || p.phase === 'committing'
        ? { phase: p.phase, done: p.bytesDone, total: p.bytesTotal, unit: 'bytes' }
        : { phase: p.phase, done: p.groupsDone, total: p.groupsTotal, unit: 'groups' };
    },
    run.onProgress,
  );
}

export async function expireTable(
  fc: FloeClient,
  table: string,
  options: Omit<ExpireInput, 'table'> = {},
  run: RunOptions = {},
): Promise<ExpireResult> {
  checkWindow(run.window ?? options.window);
  const t = tableName(fc, table);
  const handle = await fc.client.workflow.start(expireWorkflow, {
    ...startOpts(fc, runId('expire', t, run.window ?? options.window ?? undefined), 'expire', t),
    args: [{ ...options, table: t, window: run.window ?? options.window ?? null }],
  });
  return follow<ExpireResult>(handle, () => handle.query(expireProgressQuery) as Promise<Progress>, run.onProgress);
}

export async function removeOrphans(
  fc: FloeClient,
  table: string,
  options: Omit<OrphansWorkflowInput, 'table'> = {},
  run: RunOptions = {},
): Promise<OrphansResult> {
  checkWindow(run.window ?? options.window);
  const t = tableName(fc, table);
  const handle = await fc.client.workflow.start(orphansWorkflow, {
    ...startOpts(fc, runId('orphans', t, run.window ?? options.window ?? undefined), 'orphans', t),
    args: [{ ...options, table: t, window: run.window ?? options.window ?? null }],
  });
  return follow<OrphansResult>(handle, () => handle.query(orphansProgressQuery) as Promise<Progress>, run.onProgress);
}

/** compact -> expire -> orphans; one run per (table, window). */
export async function maintainTable(fc: FloeClient, table: string, input: Omit<MaintainInput, 'table'> = {}): Promise<MaintainResult> {
  const t = tableName(fc, table);
  const window = checkWindow(input.window) ?? windowOf(new Date());
  return fc.client.workflow.execute(maintainWorkflow, {
    ...startOpts(fc, maintenanceWorkflowId('maintain', t, window), 'maintain', t),
    args: [{ ...input, table: t, window }],
  });
}

// ---------- schedules ----------

export type ScheduleKind = 'compact' | 'expire' | 'orphans';
export const SCHEDULE_KINDS: ScheduleKind[] = ['compact', 'expire', 'orphans'];

export interface AppliedSchedule {
  scheduleId: string;
  table: string;
  kind: ScheduleKind;
  cron: string;
  paused: boolean;
  action: 'created' | 'updated';
}

function scheduleParts(
  fc: FloeClient,
  t: TableConfig,
  kind: ScheduleKind,
): { spec: ScheduleSpec; action: ScheduleOptionsAction; cron: string; paused: boolean } {
  const m = t.maintenance[kind];
  return {
    cron: m.cron,
    paused: m.paused,
    spec: { cronExpressions: [m.cron] },
    action: {
      type: 'startWorkflow',
      workflowType: scheduledMaintenanceWorkflow,
      args: [{ table: t.table, kind }],
      taskQueue: fc.cfg.temporal.taskQueue,
      // The server appends the scheduled time to this id; the child id carries table+kind+window.
      workflowId: `floe-scheduled-${kind}/${t.table}`,
      typedSearchAttributes: floeSearchAttributes(t.table, kind),
      staticSummary: `scheduled ${kind} of ${t.table} (${m.cron})`,
    },
  };
}

/**
 * Creates or updates one Schedule per (table, kind) from the config: overlap SKIP (a run still
 * going when the next is due makes the next one skip), catch-up window 1 day, paused as configured.
 */
export async function applySchedules(fc: FloeClient, tables?: string[]): Promise<AppliedSchedule[]> {
  const entries = tables?.length ? tables.map((n) => findTable(fc.cfg, n)) : fc.cfg.tables;
  // A route's static tables are maintained like its base table (its dynamic ones: by hand for now).
  const chosen = entries.flatMap((e) => entryTables(e).map((table) => ({ ...e, table })));
  const out: AppliedSchedule[] = [];
  for (const t of chosen) {
    for (const kind of SCHEDULE_KINDS) {
      const scheduleId = maintenanceScheduleId(kind, t.table);
      const { spec, action, cron, paused } = scheduleParts(fc, t, kind);
      const policies = { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 day' as const };
      try {
        await fc.client.schedule.create({
          scheduleId,
          spec,
          action,
          policies,
          state: { paused, note: paused ? 'paused in config' : undefined },
          memo: { table: t.table, kind, cron },
          // The Schedule itself is found by table too (schedule list --query, the UI).
          typedSearchAttributes: floeSearchAttributes(t.table, kind),
        });
        out.push({ scheduleId, table: t.table, kind, cron, paused, action: 'created' });
      } catch (e) {
        if (!(e instanceof ScheduleAlreadyRunning)) throw e;
        const h = fc.client.schedule.getHandle(scheduleId);
        await h.update((prev) => ({
          ...prev,
          spec,
          action,
          policies: { ...prev.policies, ...policies },
          typedSearchAttributes: floeSearchAttributes(t.table, kind),
        }));
        const d = await h.describe();
        if (d.state.paused !== paused) await (paused ? h.pause('paused in config') : h.unpause('unpaused in config'));
        out.push({ scheduleId, table: t.table, kind, cron, paused, action: 'updated' });
      }
    }
  }
  return out;
}

export async function setSchedulesPaused(
  fc: FloeClient,
  table: string,
  paused: boolean,
  kind?: ScheduleKind,
  note?: string,
): Promise<string[]> {
  const t = tableName(fc, table);
  const done: string[] = [];
  for (const k of kind ? [kind] : SCHEDULE_KINDS) {
    const h = fc.client.schedule.getHandle(maintenanceScheduleId(k, t));
    try {
      await (paused ? h.pause(note ?? 'paused by floe') : h.unpause(note ?? 'unpaused by floe'));
      done.push(maintenanceScheduleId(k, t));
    } catch (e) {
      if (!(e instanceof ScheduleNotFoundError)) throw e;
    }
  }
  if (done.length === 0)
    throw new Error(`no schedule for ${t}${kind ? ` (${kind})` : ''}: expected one made by \`floe schedules apply\`, found none`);
  return done;
}

/**
 * Re-runs the windows of [start, end] of a table's schedule (as `temporal schedule backfill`).
 * Every window runs at most once: windows that already ran are no-ops.
 */
export async function backfillSchedule(
  fc: FloeClient,
  table: string,
  kind: ScheduleKind | 'maintain',
  start: Date,
  end: Date,
): Promise<void> {
  const h = fc.client.schedule.getHandle(maintenanceScheduleId(kind, tableName(fc, table)));
  // All windows run (one after another); the schedule's SKIP would drop the ones that overlap.
  await h.backfill({ start, end, overlap: ScheduleOverlapPolicy.BUFFER_ALL });
}

export interface ScheduleRow {
  scheduleId: string;
  table: string;
  kind: string;
  cron: string;
  paused: boolean;
  nextRun: string;
  recentRuns: number;
}

export async function listSchedules(fc: FloeClient): Promise<ScheduleRow[]> {
  const rows: ScheduleRow[] = [];
  for await (const s of fc.client.schedule.list()) {
    if (!s.scheduleId.startsWith('floe-schedule-')) continue;
    const [kindPart, ...rest] = s.scheduleId.slice('floe-schedule-'.length).split('/');
    rows.push({
      scheduleId: s.scheduleId,
      table: rest.join('/'),
      kind: kindPart ?? '',
      cron: s.memo?.cron ? String(s.memo.cron) : '',
      paused: s.state.paused,
      nextRun: s.info.nextActionTimes[0]?.toISOString() ?? '',
      recentRuns: s.info.recentActions.length,
    });
  }
  return rows;
}

export { maintenanceScheduleId, maintenanceWorkflowId, windowOf, type MaintenanceWorkflowKind };

// ---------- files ----------

export interface PartitionFiles extends FileStats {
  partition: string;
}
export interface TableFiles {
  table: string;
  snapshotId: string | null;
  overall: FileStats;
  partitions: PartitionFiles[];
}

/** Count and average size of the live data files, overall and per partition (like engines' `.files`). Read-only. */
export async function tableFiles(cfg: FloeConfig, table: string): Promise<TableFiles> {
  const tables = await openTables(cfg);
  try {
    const { metadata } = await tables.load(table);
    const files = toLiveFiles(
      metadata,
      (await liveDataFiles(tables.io, metadata)).map((f) => f.dataFile),
    );
    const by = new Map<string, typeof files>();
    for (const f of files) {
      let l = by.get(f.partitionPath);
      if (!l) by.set(f.partitionPath, (l = []));
      l.push(f);
    }
    return {
      table,
      snapshotId: metadata['current-snapshot-id']?.toString() ?? null,
      overall: fileStats(files),
      partitions: [...by.keys()].sort().map((p) => ({ partition: p || '(unpartitioned)', ...fileStats(by.get(p)!) })),
    };
  } finally {
    await tables.close();
  }
}
