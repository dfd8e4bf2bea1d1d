/**
 * `floe ingest reset`: the operator's explicit way to move an ingest id's cursor (a recreated
 * topic, a failover cluster, a deliberate replay or skip). It commits a cursor-only snapshot (no
 * files) whose table property is the new cursor, bound to the configured topic; the dead-letter
 * cursor moves to the same offsets first, so a replay re-records dead letters with their rows.
 *
 * Exactly once: applying a reset whose target is already the cursor changes nothing (checked on
 * every CAS attempt), so a re-run after a lost response is a no-op. A live ingest keeps running:
 * its next commit is fenced (its base cursor changed) and it reloads from the new cursor.
 */
import { randomUUID } from 'node:crypto';
import type { Admin } from 'kafkajs';
import type { TableConfig } from '../config';
import { ALREADY_COMMITTED } from '../iceberg';
import type { Tables } from '../table/tables';
import { topicWatermarks } from './kafka';
import { listedRouteTables, readRouteCursor, routeCursorProperty, staticRouteTables } from './route';
import {
  SUMMARY_COMMIT_ID,
  SUMMARY_INGEST_ID,
  SUMMARY_OFFSETS,
  SUMMARY_TOPIC,
  SUMMARY_TOPIC_ID,
  cursorProperty,
  deadLetterCursorProperty,
  formatOffsets,
  readCursor,
  readDeadLetterCursor,
  sameOffsets,
  type Cursor,
  type Offsets,
} from '../table/cursor';

const SUMMARY_RESET = 'floe.reset';

/** `earliest`, `latest`, an ISO time, or `p:offset,p:offset` (every partition of the topic). */
type ResetTarget = { kind: 'earliest' } | { kind: 'latest' } | { kind: 'time'; iso: string } | { kind: 'offsets'; offsets: Offsets };

export function parseResetTarget(s: string): ResetTarget {
  if (s === 'earliest' || s === 'latest') return { kind: s };
  if (/^\d+:\d+(,\d+:\d+)*$/.test(s))
    return { kind: 'offsets', offsets: Object.fromEntries(s.split(',').map((kv) => kv.split(':') as [string, string])) };
  if (/^\d{4}-\d{2}-\d{2}T/.test(s) && !Number.isNaN(Date.parse(s))) return { kind: 'time', iso: new Date(Date.parse(s)).toISOString() };
  throw new Error(
    `--to: expected earliest, latest, an ISO time (2026-07-01T00:00:00Z) or "partition:offset,..." for every partition, found ${JSON.stringify(s)}`,
  );
}

/** Resolves a target to one offset per partition of the topic, each within [low, high]. */
export async function resolveResetTarget(admin: Admin, topic: string, target: ResetTarget): Promise<Offsets> {
  const wm = await topicWatermarks(admin, topic);
  if (target.kind === 'earliest') return wm.low;
  if (target.kind === 'latest') return wm.high;
  if (target.kind === 'time') {
    const out: Offsets = {};
    for (const p of await admin.fetchTopicOffsetsByTimestamp(topic, Date.parse(target.iso))) {
      out[String(p.partition)] = p.offset === '-1' ? wm.high[String(p.partition)]! : p.offset;
    }
    return out;
  }
  const parts = Object.keys(wm.high);
  const missing = parts.filter((p) => target.offsets[p] === undefined);
  if (missing.length)
    throw new Error(`--to: topic ${topic} has partitions ${parts.join(',')}; give an offset for each (missing ${missing.join(',')})`);
  for (const [p, o] of Object.entries(target.offsets)) {
    if (wm.high[p] === undefined) throw new Error(`--to: topic ${topic} has no partition ${p}`);
    if (BigInt(o) < BigInt(wm.low[p]!) || BigInt(o) > BigInt(wm.high[p]!)) {
      throw new Error(`--to: partition ${p} holds offsets ${wm.low[p]}..${wm.high[p]}, found ${o}`);
    }
  }
  return { ...target.offsets };
}

interface ResetOutcome {
  before: Cursor;
  after: Offsets;
  changed: boolean;
  snapshotId: string | null;
}

/**
 * Moves `ingestId`'s cursor of table `t` to `offsets`, bound to the topic's Kafka id `topicId` (the
 * topic as it is now: a reset is how a cursor moves to a recreated topic). Concurrency: optimistic
 * CAS; see the file comment.
 */
export async function resetCursor(
  tables: Tables,
  t: TableConfig,
  ingestId: string,
  offsets: Offsets,
  topicId: string | null = null,
): Promise<ResetOutcome> {
  const before = readCursor((await tables.load(t.table)).metadata, ingestId);
  const commitId = `reset-${randomUUID()}`;

  await tables.appendOnce(t.deadLetterTable, {
    files: [],
    summary: { [SUMMARY_COMMIT_ID]: commitId, [SUMMARY_TOPIC]: t.topic, [SUMMARY_RESET]: 'true' },
    properties: () => deadLetterCursorProperty(ingestId, t.topic, { offsets, commitId }),
    validate: (m) => (sameOffsets(readDeadLetterCursor(m, ingestId).offsets, offsets) ? ALREADY_COMMITTED : undefined),
  });
  // A route: every table of it moves (its base table last: its outcome is the one reported).
  if (t.route) {
    const names = [...staticRouteTables(t), ...listedRouteTables((await tables.load(t.table)).metadata.properties)];
    for (const name of names.filter((n) => n !== t.table)) await resetTableCursor(tables, t, name, ingestId, offsets, commitId, topicId);
  }
  const res = await resetTableCursor(tables, t, t.table, ingestId, offsets, commitId, topicId);
  return { before, after: offsets, changed: !res.alreadyCommitted, snapshotId: res.snapshotId };
}

function resetTableCursor(
  tables: Tables,
  t: TableConfig,
  table: string,
  ingestId: string,
  offsets: Offsets,
  commitId: string,
  topicId: string | null,
) {
  // Without an id (a caller that did not ask the cluster) the id does not decide: the cursor written
  // has none, and takes the topic's at its next commit.
  const isTarget = (c: Cursor) => c.topic === t.topic && (topicId === null || c.topicId === topicId) && sameOffsets(c.offsets, offsets);
  return tables.appendOnce(table, {
    files: [],
    summary: {
      [SUMMARY_INGEST_ID]: ingestId,
      [SUMMARY_OFFSETS]: formatOffsets(offsets),
      [SUMMARY_COMMIT_ID]: commitId,
      [SUMMARY_TOPIC]: t.topic,
      ...(topicId ? { [SUMMARY_TOPIC_ID]: topicId } : {}),
      [SUMMARY_RESET]: 'true',
    },
    properties: (snapshotId) => ({
      ...cursorProperty(ingestId, { snapshotId: snapshotId.toString(), commitId, offsets, topic: t.topic, topicId }),
      // A route's base table (reset last): its route cursor moves with every table's, both ways.
      ...(t.route && table === t.table ? routeCursorProperty(ingestId, offsets) : {}),
    }),
    validate: (m) =>
      isTarget(readCursor(m, ingestId)) && (!t.route || table !== t.table || sameOffsets(readRouteCursor(m.properties, ingestId), offsets))
        ? ALREADY_COMMITTED
        : undefined,
  });
}
