/**
 * `floe status`: one row per configured table with its ingest (state, lag, last commit, rows/s,
 * failure), its data files (count, small files, from the current snapshot's manifests) and its
 * maintenance Schedules (last run and its outcome, next run). Every table, and every source of a
 * table, is asked in parallel; a source that fails shows its error in that table's row instead of
 * failing the whole screen. Read-only.
 */
import { ScheduleNotFoundError, type Client } from '@temporalio/client';
import type { TableConfig } from '../config';
import { maintenanceScheduleId } from '../workflows';
import { ingestStatus, rootCause, type FloeClient, type IngestStatusView } from './ingest-status';
import type { Tables } from '../table/tables';

const MAINTENANCE_KINDS = ['compact', 'expire', 'orphans'] as const;
type MaintenanceKind = (typeof MAINTENANCE_KINDS)[number];

interface IngestOverview {
  /** `unknown`: the status could not be read (the error says why) */
  state: IngestStatusView['state'] | 'not-started' | 'unknown';
  /** records behind the topic's high watermark, over all partitions (as of the last cycle's start) */
  lag: number | null;
  lastCommitTimeMs: number | null;
  lastCommitAgeMs: number | null;
  rowsPerSecond: number | null;
  commits: number | null;
  totalRows: number | null;
  error?: string;
  warning?: string;
}

interface FilesOverview {
  snapshotId: string | null;
  dataFiles: number;
  bytes: number;
  /** live data files smaller than compaction's minimum file size (`smallFileBytes`) */
  smallFiles: number;
  smallFileBytes: number;
}

interface MaintenanceRun {
  kind: MaintenanceKind;
  scheduleId: string;
  paused: boolean;
  /** the most recent action the Schedule took */
  lastRunAtMs: number | null;
  lastRunWorkflowId: string | null;
  lastRunStatus: string | null;
  lastRunError?: string;
  nextRunAtMs: number | null;
}

export interface TableOverview {
  table: string;
  topic: string;
  ingest: IngestOverview;
  files: FilesOverview | { error: string };
  maintenance: MaintenanceRun[] | { error: string };
  /** one line per failure: a failed ingest, a failed last maintenance run, a source that could not be read */
  failures: string[];
}

export interface Overview {
  generatedAtMs: number;
  elapsedMs: number;
  tables: TableOverview[];
}

const message = (e: unknown) => {
  const c = rootCause(e);
  return c.name && c.name !== 'Error' ? `${c.name}: ${c.message}` : c.message;
};

function ingestOverview(s: IngestStatusView | null, nowMs: number): IngestOverview {
  if (!s)
    return {
      state: 'not-started',
      lag: null,
      lastCommitTimeMs: null,
      lastCommitAgeMs: null,
      rowsPerSecond: null,
      commits: null,
      totalRows: null,
    };
  const lag = Object.values(s.lag).reduce((a, v) => a + Number(v), 0);
  return {
    state: s.state,
    lag: Object.keys(s.lag).length ? lag : null,
    lastCommitTimeMs: s.lastCommitTimeMs,
    lastCommitAgeMs: s.lastCommitTimeMs === null ? null : Math.max(0, nowMs - s.lastCommitTimeMs),
    rowsPerSecond: s.rowsPerSecond,
    commits: s.commits,
    totalRows: s.totalRows,
    ...(s.error ? { error: s.error } : {}),
    ...(s.warning ? { warning: s.warning } : {}),
  };
}

/** Data files of the current snapshot: the count from its summary's manifests, small ones by compaction's threshold. */
async function filesOverview(tables: Tables, t: TableConfig): Promise<FilesOverview> {
  const [{ liveDataFiles }, { compactOptionsFor }, { tableProperty, WRITE_TARGET_FILE_SIZE_BYTES }] = await Promise.all([
    import('../maintenance/reachable'),
    import('../maintenance/compact'),
    import('../iceberg'),
  ]);
  const loaded = await tables.load(t.table).catch((e: unknown) => {
    // Not created yet (the ingest's first cycle creates it): no files, not a failure.
    if ((e as { kind?: string }).kind === 'NotFound') return null;
    throw e;
  });
  if (!loaded) return { snapshotId: null, dataFiles: 0, bytes: 0, smallFiles: 0, smallFileBytes: 0 };
  const { metadata } = loaded;
  const smallFileBytes = compactOptionsFor(
    t,
    {},
    tableProperty.int(metadata.properties, WRITE_TARGET_FILE_SIZE_BYTES, 128 * 1024 * 1024),
  ).minFileSizeBytes;
  const files = await liveDataFiles(tables.io, metadata);
  const sizes = files.map((f) => Number(f.dataFile.fileSizeInBytes));
  return {
    snapshotId: metadata['current-snapshot-id']?.toString() ?? null,
    dataFiles: sizes.length,
    bytes: sizes.reduce((a, b) => a + b, 0),
    smallFiles: sizes.filter((n) => n < smallFileBytes).length,
    smallFileBytes,
  };
}

async function maintenanceRun(client: Client, table: string, kind: MaintenanceKind): Promise<MaintenanceRun | null> {
  const scheduleId = maintenanceScheduleId(kind, table);
  let d;
  try {
    d = await client.schedule.getHandle(scheduleId).describe();
  } catch (e) {
    if (e instanceof ScheduleNotFoundError) return null;
    throw e;
  }
  const last = d.info.recentActions.at(-1);
  const run: MaintenanceRun = {
    kind,
    scheduleId,
    paused: d.state.paused,
    lastRunAtMs: last ? last.takenAt.getTime() : null,
    lastRunWorkflowId: null,
    lastRunStatus: null,
    nextRunAtMs: d.info.nextActionTimes[0]?.getTime() ?? null,
  };
  if (last?.action.type === 'startWorkflow') {
    const { workflowId, firstExecutionRunId } = last.action.workflow;
    run.lastRunWorkflowId = workflowId;
    const h = client.workflow.getHandle(workflowId, undefined, { firstExecutionRunId });
    const wd = await h.describe();
    run.lastRunStatus = wd.status.name;
    if (wd.status.name === 'FAILED') run.lastRunError = await h.result().then(() => 'failed', message);
  }
  return run;
}

async function maintenanceOverview(client: Client, table: string): Promise<MaintenanceRun[]> {
  const runs = await Promise.all(MAINTENANCE_KINDS.map((k) => maintenanceRun(client, table, k)));
  return runs.filter((r): r is MaintenanceRun => r !== null);
}

const settle = <T>(p: Promise<T>): Promise<T | { error: string }> => p.catch((e: unknown) => ({ error: message(e) }));

/** The overview of `tables` (default: every configured table). `tables` opens the catalog once for all. */
export async function statusOverview(fc: FloeClient, tables: Tables, names?: string[], nowMs = Date.now()): Promise<Overview> {
  const t0 = Date.now();
  const chosen = names?.length ? fc.cfg.tables.filter((t) => names.includes(t.table)) : fc.cfg.tables;
  const rows = await Promise.all(
    chosen.map(async (t): Promise<TableOverview> => {
      const [ingest, files, maintenance] = await Promise.all([
        settle(ingestStatus(fc, t.table, nowMs)),
        settle(filesOverview(tables, t)),
        settle(maintenanceOverview(fc.client, t.table)),
      ]);
      const failures: string[] = [];
      let ing: IngestOverview;
      if (ingest && 'error' in ingest && !('state' in ingest)) {
        failures.push(`ingest status: ${ingest.error}`);
        ing = { ...ingestOverview(null, nowMs), state: 'unknown', error: ingest.error };
      } else {
        ing = ingestOverview(ingest as IngestStatusView | null, nowMs);
        if (ing.state === 'failed') failures.push(`ingest failed: ${ing.error ?? 'unknown'}`);
        const f = (ingest as IngestStatusView | null)?.failing;
        if (ing.state === 'stalled' && f)
          failures.push(`ingest stalled since ${new Date(f.sinceMs).toISOString()}, ${f.attempts} attempts: ${f.error}`);
      }
      if ('error' in files) failures.push(`files: ${files.error}`);
      if ('error' in maintenance) failures.push(`maintenance schedules: ${maintenance.error}`);
      else for (const m of maintenance) if (m.lastRunError) failures.push(`last ${m.kind} failed: ${m.lastRunError}`);
      return { table: t.table, topic: t.topic, ingest: ing, files, maintenance, failures };
    }),
  );
  return { generatedAtMs: nowMs, elapsedMs: Date.now() - t0, tables: rows };
}
