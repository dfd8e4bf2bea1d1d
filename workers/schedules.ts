/**
 * Schedule setup for deployments: connect to Temporal with the config and create or update every
 * table's maintenance Schedules (the same as `floe schedules apply`). Idempotent: run it at every
 * deploy; a changed cron or paused flag in the config updates the existing Schedule in place.
 */
import { connectClient } from '../client';
import { applySchedules, type AppliedSchedule } from '../client/maintenance';
import type { FloeConfig } from '../config';

export async function ensureSchedules(cfg: FloeConfig, tables?: string[]): Promise<AppliedSchedule[]> {
  const fc = await connectClient(cfg);
  try {
    return await applySchedules(fc, tables);
  } finally {
    await fc.close();
  }
}
