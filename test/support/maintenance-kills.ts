/**
 * Helpers of the tests that SIGKILL a maintenance worker at a crash point (table/crash-points.ts)
 * and watch Temporal retry the activity: where the kill is armed, what the history says about the
 * retried attempts, and which files under the table nothing reaches any more.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { temporal } from '@temporalio/proto';
import type { FloeConfig } from '../../config';
import { openTables } from '../../table/tables';
import { reachableFiles } from '../../maintenance/index';

/** Files under the table location that the current metadata does not reach (metadata.json aside). */
export async function unreachable(cfg: FloeConfig, table: string): Promise<{ files: string[]; metadataLocation: string }> {
  const tables = await openTables(cfg);
  try {
    const t = await tables.load(table);
    const r = await reachableFiles(tables.io, t.metadata, t.metadataLocation);
    const files: string[] = [];
    for await (const f of tables.io.list(`${t.metadata.location}/`)) {
      const reached = [r.dataFiles, r.manifests, r.manifestLists, r.metadataFiles, r.other].some((set) => set.has(f.location));
      if (!reached && !f.location.endsWith('.metadata.json') && !f.location.includes('/metadata/floe-')) files.push(f.location);
    }
    return { files: files.sort(), metadataLocation: t.metadataLocation };
  } finally {
    await tables.close();
  }
}

/** The environment that arms crash point `point` once (the marker file records the kill). */
export function killMarker(point: string): { env: Record<string, string>; marker: string } {
  const marker = join(mkdtempSync(join(tmpdir(), 'floe-kill-')), 'killed');
  return { marker, env: { FLOE_TEST_KILL_AT: point, FLOE_TEST_KILL_MARKER: marker } };
}

/** The retried attempts of `activityType` in a history, with the failure that ended the previous one. */
export function retriedAttempts(
  events: temporal.api.history.v1.IHistoryEvent[],
  activityType: string,
): Array<{ attempt: number; timeoutType: number | null; message: string }> {
  const scheduled = new Set<string>();
  for (const e of events) {
    if (e.activityTaskScheduledEventAttributes?.activityType?.name === activityType) scheduled.add(String(e.eventId));
  }
  const out: Array<{ attempt: number; timeoutType: number | null; message: string }> = [];
  for (const e of events) {
    const a = e.activityTaskStartedEventAttributes;
    if (!a || !scheduled.has(String(a.scheduledEventId)) || (a.attempt ?? 1) < 2) continue;
    out.push({
      attempt: a.attempt!,
      timeoutType: a.lastFailure?.timeoutFailureInfo?.timeoutType ?? null,
      message: a.lastFailure?.message ?? '',
    });
  }
  return out;
}

/** The JSON results of every completed `activityType` activity in a history, in order. */
export function activityResults<T>(events: temporal.api.history.v1.IHistoryEvent[], activityType: string): T[] {
  const scheduled = new Set<string>();
  for (const e of events) {
    if (e.activityTaskScheduledEventAttributes?.activityType?.name === activityType) scheduled.add(String(e.eventId));
  }
  return events
    .map((e) => e.activityTaskCompletedEventAttributes)
    .filter((a) => a && scheduled.has(String(a.scheduledEventId)))
    .map((a) => JSON.parse(new TextDecoder().decode(a!.result!.payloads![0]!.data!)) as T);
}
