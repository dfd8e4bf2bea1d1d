/**
 * Maintenance windows: the reference time of a run (a scheduled run's scheduled start time, or a
 * time given by hand). Expiry and orphan removal count their cutoffs back from it, so a window
 * that does not parse (`Date.parse` gives NaN, and every comparison with NaN is false: every
 * unreachable file counted as an orphan) or lies in the future (a later cutoff than the run's
 * real time allows) must be refused, never guessed at.
 *
 * Pure and deterministic (workflow code imports it): the caller passes "now".
 */

import { FailureType } from '../contract';

/** Failure type of a refused window. */
export const INVALID_WINDOW = FailureType.InvalidWindow;

/** A window may be this far ahead of the checker's clock (client, server and worker clocks differ). */
export const WINDOW_MAX_SKEW_MS = 5 * 60_000;

export class InvalidWindowError extends Error {
  readonly type = INVALID_WINDOW;
  constructor(message: string) {
    super(message);
    this.name = 'InvalidWindowError';
  }
}

// ISO 8601 as floe writes windows (windowOf): a date, or a date-time with Z or an offset. A
// date-time without a zone would be read in the local zone of whichever process parses it.
const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2}))?$/;

const EXPECTED = 'an ISO 8601 time like 2026-07-01T03:00:00Z (or a date, 2026-07-01)';

/** The time of `window` in epoch ms, or throws InvalidWindowError naming what is wrong. */
export function parseWindow(window: string, nowMs: number, what = 'window'): number {
  const m = ISO.exec(window.trim());
  const ms = m ? Date.parse(window.trim()) : NaN;
  if (!m || !Number.isFinite(ms)) {
    throw new InvalidWindowError(`${what}: expected ${EXPECTED}, found ${JSON.stringify(window)}`);
  }
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map((x) => (x === undefined ? 0 : Number(x)));
  // Date.parse rolls some impossible dates over (2026-02-30 is 2 March): refuse them.
  const probe = new Date(Date.UTC(y!, mo! - 1, d!));
  if (probe.getUTCFullYear() !== y || probe.getUTCMonth() !== mo! - 1 || probe.getUTCDate() !== d || h! > 23 || mi! > 59 || s! > 59) {
    throw new InvalidWindowError(`${what}: expected ${EXPECTED}, found ${JSON.stringify(window)} (no such date or time)`);
  }
  checkAsOf(ms, nowMs, what);
  return ms;
}

/** An optional window: null/undefined give null (the caller uses "now"); anything else must parse. */
export function parseOptionalWindow(window: string | null | undefined, nowMs: number, what = 'window'): number | null {
  if (window === null || window === undefined) return null;
  return parseWindow(window, nowMs, what);
}

/** A reference time in epoch ms: finite and not in the future (beyond the clock skew allowance). */
export function checkAsOf(asOfMs: number, nowMs: number, what = 'asOf'): void {
  if (typeof asOfMs !== 'number' || !Number.isFinite(asOfMs)) {
    throw new InvalidWindowError(`${what}: expected a time in epoch milliseconds, found ${String(asOfMs)}`);
  }
  if (asOfMs > nowMs + WINDOW_MAX_SKEW_MS) {
    throw new InvalidWindowError(
      `${what}: expected a time not in the future (at most ${WINDOW_MAX_SKEW_MS / 60_000} minutes after now, ${new Date(nowMs).toISOString()}), found ${new Date(asOfMs).toISOString()}`,
    );
  }
}
