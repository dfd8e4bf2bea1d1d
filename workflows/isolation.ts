/**
 * Poison cycles end (docs/DESIGN-NOTES.md, "Nothing stalls a table"): the pure state of finding
 * the records that make a cycle fail, apart from the workflow function. No I/O, no Temporal:
 * unit-tested with plain node:test and through the mocked-activity workflow tests.
 *
 * A cycle whose poll or commit fails `isolateAfterAttempts` times (K) with an error that is not a
 * service's trouble (activities/failures.ts serviceTrouble) is blamed on its records. The offsets
 * it covered become ranges, one per partition, checked one at a time by cycles of their own (poll
 * that range alone, commit it): a range that commits is done; one that fails is split in two
 * (bisection); a single record that fails K times alone is dead-lettered with the error. The split
 * is workflow state, so it is in Temporal's history (and carried across continue-as-new): a worker
 * killed in the middle resumes the same split, and each range's commit is the ordinary idempotent,
 * fenced commit, so no record lands twice or is skipped.
 *
 * If every record fails alone (MAX_ISOLATED_IN_A_ROW dead letters in a row, nothing committed in
 * between), the failure is not the records' (a permission, a full disk, a bug that hits every
 * row): isolation stops dead-lettering and the ingest shows `stalled` on that record until the
 * cause is fixed.
 */
import type { Offsets } from '../table/cursor';

/** Config `isolateAfterAttempts` when not set: attempts of one cycle step before its records are blamed. */
export const DEFAULT_ISOLATE_AFTER_ATTEMPTS = 5;
/** Single records dead-lettered in a row, with no range committed in between, before isolation stalls instead. */
export const MAX_ISOLATED_IN_A_ROW = 20;

/** Offsets [from, to) of one partition still to check (decimal strings). */
export interface IsolationRange {
  partition: string;
  from: string;
  to: string;
  /** Set once this one record failed alone K times: the next cycle writes it as a dead letter with this reason. */
  deadLetter?: string;
}

export interface Isolation {
  /** Ranges still to check, in offset order per partition; the head is checked next. */
  ranges: IsolationRange[];
  /** The failure that started it (`Type: message`). */
  reason: string;
  sinceMs: number;
  /** Records dead-lettered by this isolation so far. */
  deadLettered: number;
  /** ...of them since the last range that committed. */
  inARow: number;
}

/**
 * A repeating failure of a cycle step, as status shows it: `stalled` once `attempts` reaches K.
 * Cleared by the next step that succeeds.
 */
export interface Failing {
  error: string;
  attempts: number;
  sinceMs: number;
}

/**
 * The isolation of a failed cycle: for each partition the offsets it may have covered, [start,
 * end). A failed commit knows its end offsets; a failed poll does not, and covers up to the high
 * watermark it was planned at, at most `maxRecords` past its start (a poll reads no more).
 */
export function startIsolation(
  covered: Record<string, { from: string; to: string }>,
  reason: string,
  nowMs: number,
): Isolation | undefined {
  const ranges = Object.entries(covered)
    .filter(([, r]) => BigInt(r.to) > BigInt(r.from))
    .sort(([a], [b]) => Number(a) - Number(b))
    .map(([partition, r]) => ({ partition, from: r.from, to: r.to }));
  return ranges.length === 0 ? undefined : { ranges, reason, sinceMs: nowMs, deadLettered: 0, inARow: 0 };
}

/** What a failed poll covered: each partition from its start to min(high watermark, start + maxRecords). */
export function pollCoverage(
  partitions: readonly number[],
  start: Offsets,
  high: Offsets,
  maxRecords: number,
): Record<string, { from: string; to: string }> {
  const out: Record<string, { from: string; to: string }> = {};
  for (const p of partitions.map(String)) {
    const from = BigInt(start[p] ?? '0');
    const cap = from + BigInt(Math.max(1, maxRecords));
    const hw = BigInt(high[p] ?? '0');
    out[p] = { from: from.toString(), to: (hw < cap ? hw : cap).toString() };
  }
  return out;
}

/**
 * The range the next isolation cycle checks, from the table's cursor `start` (a range the table
 * already passed, after a crash or another writer, is dropped or shortened: it is never read
 * twice). Undefined when nothing is left: the isolation is over.
 */
export function nextRange(iso: Isolation, start: Offsets): IsolationRange | undefined {
  while (iso.ranges.length > 0) {
    const r = iso.ranges[0]!;
    const cursor = BigInt(start[r.partition] ?? '0');
    if (cursor >= BigInt(r.to)) {
      iso.ranges.shift();
      continue;
    }
    if (cursor > BigInt(r.from)) {
      r.from = cursor.toString();
      delete r.deadLetter;
    }
    return r;
  }
  return undefined;
}

export const rangeSize = (r: IsolationRange): bigint => BigInt(r.to) - BigInt(r.from);

/**
 * The head range's cycle committed up to `end`: a poll may stop short of its range (a record or
 * byte bound), and the rest stays the head. One that read nothing found no records there (the
 * range reached past the topic's end, or held only transaction markers): it is done, and what
 * arrives later is read by ordinary cycles.
 */
export function rangeCommitted(iso: Isolation, end: Offsets): void {
  const r = iso.ranges[0];
  if (!r) return;
  const e = BigInt(end[r.partition] ?? r.from);
  if (e <= BigInt(r.from)) {
    iso.ranges.shift();
    return;
  }
  if (r.deadLetter !== undefined) {
    iso.deadLettered++;
    iso.inARow++;
  } else iso.inARow = 0;
  if (e >= BigInt(r.to)) iso.ranges.shift();
  else {
    r.from = e.toString();
    delete r.deadLetter;
  }
}

/**
 * The head range failed with `reason` (not a service's trouble). A range of several records is
 * split in two, the lower half first; one record that failed alone (K attempts) is marked for the
 * dead-letter table, unless MAX_ISOLATED_IN_A_ROW records in a row already were: then 'stall'.
 */
export function rangeFailed(iso: Isolation, reason: string): 'split' | 'dead-letter' | 'stall' {
  const r = iso.ranges[0]!;
  const n = rangeSize(r);
  if (n > 1n) {
    const mid = (BigInt(r.from) + n / 2n).toString();
    iso.ranges.splice(0, 1, { partition: r.partition, from: r.from, to: mid }, { partition: r.partition, from: mid, to: r.to });
    return 'split';
  }
  // Failing even as a dead letter, or after too many in a row: not this record's fault.
  if (r.deadLetter !== undefined || iso.inARow >= MAX_ISOLATED_IN_A_ROW) return 'stall';
  r.deadLetter = reason;
  return 'dead-letter';
}

/** A repeating failure: the first sets `since`, each adds its attempts. */
export function recordFailure(prev: Failing | undefined, error: string, attempts: number, nowMs: number): Failing {
  return { error, attempts: (prev?.attempts ?? 0) + attempts, sinceMs: prev?.sinceMs ?? nowMs };
}

/** The wait before the next try of a step that keeps failing for a service: 1 s doubling up to a minute. */
export function backoffMs(failing: Failing, isolateAfter: number): number {
  const rounds = Math.max(0, Math.floor(failing.attempts / Math.max(1, isolateAfter)));
  return Math.min(60_000, 1000 * 2 ** Math.min(6, rounds));
}
