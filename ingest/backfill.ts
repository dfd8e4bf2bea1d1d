/**
 * Backfills: load a bounded range of a topic into a table exactly once. A backfill is an ingest
 * with its own ingest id (derived from the resolved range, so re-running the same backfill resumes
 * or finds it complete) that stops at the range's end. Overlap with what the table already holds
 * from the topic is refused unless forced.
 */
import { createHash } from 'node:crypto';
import { FailureType, nonRetryable } from '../contract';
import { allCursors, formatOffsets, type Offsets } from '../table/cursor';
import { topicWatermarks } from './kafka';
import { ingestTableConfig, type Deps } from './deps';
import type { OffsetRange } from './types';
import { ensureIngestTables } from './tables';

/** A range end: an ISO time (first offset at/after it), offsets per partition, or one offset for all. */
export type BackfillBound = { time: string } | { offsets: Offsets } | { offset: string };

export interface PrepareBackfillInput {
  table: string;
  from: BackfillBound;
  to: BackfillBound;
  force: boolean;
}
export interface PreparedBackfill {
  ingestId: string;
  range: OffsetRange;
  records: string;
}

const BAD_BACKFILL = FailureType.BadBackfillRange;

/** Resolves times to offsets, validates the range against the topic and the table. Read-only. */
export async function prepareBackfill(deps: Deps, input: PrepareBackfillInput): Promise<PreparedBackfill> {
  const t = ingestTableConfig(deps.cfg, input.table);
  // A backfill's range cursor would have to live in every table of the route, created or not yet.
  if (t.route)
    throw nonRetryable(
      FailureType.ConfigError,
      `table ${t.table} routes its records over several tables: a backfill of a route is not supported`,
    );
  await ensureIngestTables(deps.tables, t, deps.cfg.schemaRegistry);
  const wm = await topicWatermarks(deps.admin, t.topic);
  const resolve = async (b: BackfillBound, what: string): Promise<Offsets> => {
    const out: Offsets = {};
    if ('time' in b) {
      const ms = Date.parse(b.time);
      if (Number.isNaN(ms)) throw nonRetryable(BAD_BACKFILL, `--${what}: expected an ISO time, found ${JSON.stringify(b.time)}`);
      for (const p of await deps.admin.fetchTopicOffsetsByTimestamp(t.topic, ms)) {
        // -1: no record at/after the time -> the end of the partition.
        out[String(p.partition)] = p.offset === '-1' ? wm.high[String(p.partition)]! : p.offset;
      }
      return out;
    }
    if ('offset' in b) {
      for (const p of Object.keys(wm.high)) out[p] = b.offset;
      return out;
    }
    return { ...b.offsets };
  };
  const from = await resolve(input.from, 'from');
  const to = await resolve(input.to, 'to');
  for (const p of Object.keys(to)) {
    if (wm.high[p] === undefined) throw nonRetryable(BAD_BACKFILL, `--to: topic ${t.topic} has no partition ${p}`);
    from[p] ??= wm.low[p]!;
    const f = BigInt(from[p]!),
      e = BigInt(to[p]!);
    if (e > BigInt(wm.high[p]!)) throw nonRetryable(BAD_BACKFILL, `--to: partition ${p} ends at ${wm.high[p]}, range asks up to ${to[p]}`);
    if (f < BigInt(wm.low[p]!))
      throw nonRetryable(BAD_BACKFILL, `--from: partition ${p} starts at ${wm.low[p]} (retention), range asks from ${from[p]}`);
    if (f > e) throw nonRetryable(BAD_BACKFILL, `range of partition ${p} is reversed: from ${from[p]} > to ${to[p]}`);
  }
  for (const p of Object.keys(from)) if (to[p] === undefined) delete from[p];
  const range: OffsetRange = { from, to };
  const key = Object.keys(to)
    .sort((a, b) => Number(a) - Number(b))
    .map((p) => `${p}:${from[p]}-${to[p]}`)
    .join(',');
  const ingestId = `backfill-${createHash('sha256').update(`${t.topic}|${key}`).digest('hex').slice(0, 16)}`;

  if (!input.force) {
    const { metadata } = await deps.tables.load(t.table);
    // Cursors are table properties: a finished backfill stays visible whatever expiry removed.
    for (const [other, c] of allCursors(metadata)) {
      if (other === ingestId || (c.topic !== null && c.topic !== t.topic)) continue; // our own earlier run: resuming is fine
      if (c.range === undefined) {
        // A live ingest holds everything below its cursor and will read everything above it.
        throw nonRetryable(
          FailureType.BackfillOverlap,
          `table ${t.table} is fed from topic ${t.topic} continuously by ingest id "${other}" (cursor ${formatOffsets(c.offsets)}); a backfill of ${key} would duplicate rows; use --force to load it anyway`,
        );
      }
      const h = c.range;
      const hit = Object.keys(to).find(
        (p) => h.to[p] !== undefined && BigInt(from[p]!) < BigInt(h.to[p]!) && BigInt(h.from[p] ?? '0') < BigInt(to[p]!),
      );
      if (hit !== undefined) {
        throw nonRetryable(
          FailureType.BackfillOverlap,
          `range ${key} overlaps backfill "${other}" (partition ${hit}: ${h.from[hit]}-${h.to[hit]}, loaded up to ${c.offsets[hit] ?? h.from[hit]}); use --force to load it anyway`,
        );
      }
    }
  }
  const records = Object.keys(to).reduce((n, p) => n + BigInt(to[p]!) - BigInt(from[p]!), 0n);
  return { ingestId, range, records: records.toString() };
}
