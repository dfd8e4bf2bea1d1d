/**
 * The ingest cursor lives in the table, never in Kafka. Pure functions over TableMetadata.
 *
 * Where: a table property `floe.cursor.<ingest id>` holding JSON
 * `{topic, topic-id?, offsets, snapshot-id, commit-id, range?}`, set in the same atomic catalog commit as
 * the snapshot it describes. Every ingest snapshot's summary also carries `floe.ingest-id`,
 * `floe.offsets`, `floe.commit-id` and `floe.topic`, for audit and for tables written before the
 * property existed.
 *
 * Why a property and not the summary alone: the summary is only reachable by walking the main
 * branch's ancestry, and that walk stops at the first expired parent. Expiry may remove any
 * snapshot (and must, to keep storage bounded), so a cursor found by walking is lost when an
 * unrelated writer makes more commits than expiry retains. Properties are carried by every
 * metadata version whatever is expired, so the cursor outlives snapshot history.
 */
import { CURSOR_PROPERTY_PREFIX, DEAD_LETTER_CURSOR_PROPERTY_PREFIX } from '../contract';
import { ancestors, type Snapshot, type TableMetadata } from '../iceberg';

export const SUMMARY_INGEST_ID = 'floe.ingest-id';
export const SUMMARY_OFFSETS = 'floe.offsets';
export const SUMMARY_COMMIT_ID = 'floe.commit-id';
export const SUMMARY_TOPIC = 'floe.topic';
/** Kafka's id of the topic the offsets belong to (KIP-516), when the cluster has topic ids. */
export const SUMMARY_TOPIC_ID = 'floe.topic-id';
export const SUMMARY_DEAD_LETTERS = 'floe.dead-letters';
/** Backfills only: the offset range {from, to} the ingest id covers. */
export const SUMMARY_RANGE = 'floe.range';
/**
 * Offsets the commit's cycle started past the table's cursor (`<p>:<from>-<to> ...`): records
 * Kafka deleted (retention, deleteRecords) before the table got them. Never read, never rows.
 */
export const SUMMARY_SKIPPED = 'floe.skipped';

/** Partition number (as a decimal string) -> next offset to read (decimal string, 64-bit safe). */
export type Offsets = Record<string, string>;

export interface OffsetRange {
  from: Offsets;
  to: Offsets;
}

export interface Cursor {
  /** Snapshot that carries the cursor (the fencing token); null when this ingest never committed. */
  snapshotId: string | null;
  /** Commit id of that snapshot: a retried commit with this id already landed. */
  commitId: string | null;
  offsets: Offsets;
  /** Topic the offsets belong to; null only for legacy summaries without one. */
  topic: string | null;
  /**
   * Kafka's id of that topic (new when a topic is deleted and created again under its name); null
   * when the cursor predates topic ids or the cluster has none. Absent means null.
   */
  topicId?: string | null;
  /** Backfills: the range this ingest id loads. */
  range?: OffsetRange;
}

const NONE: Cursor = { snapshotId: null, commitId: null, offsets: {}, topic: null };

const cursorPropertyKey = (ingestId: string): string => `${CURSOR_PROPERTY_PREFIX}${ingestId}`;
const deadLetterCursorPropertyKey = (ingestId: string): string => `${DEAD_LETTER_CURSOR_PROPERTY_PREFIX}${ingestId}`;

/** The table property update that records `c` (same commit as the snapshot `c.snapshotId`). */
export function cursorProperty(ingestId: string, c: Cursor): Record<string, string> {
  if (c.snapshotId === null || c.commitId === null) {
    throw new Error(`cursor of ${ingestId}: a recorded cursor needs a snapshot id and a commit id`);
  }
  const body: Record<string, unknown> = {
    topic: c.topic,
    ...(c.topicId ? { 'topic-id': c.topicId } : {}),
    offsets: sortOffsets(c.offsets),
    'snapshot-id': c.snapshotId,
    'commit-id': c.commitId,
  };
  if (c.range) body.range = { from: sortOffsets(c.range.from), to: sortOffsets(c.range.to) };
  return { [cursorPropertyKey(ingestId)]: JSON.stringify(body) };
}

function parseCursorProperty(key: string, json: string): Cursor {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(json) as Record<string, unknown>;
  } catch {
    throw new Error(`table property ${key} is not JSON: ${json}`);
  }
  const str = (k: string): string => {
    if (typeof o[k] !== 'string') throw new Error(`table property ${key}: expected "${k}" to be a string, found ${JSON.stringify(o[k])}`);
    return o[k] as string;
  };
  const range = o.range as OffsetRange | undefined;
  return {
    snapshotId: str('snapshot-id'),
    commitId: str('commit-id'),
    topic: typeof o.topic === 'string' ? o.topic : null,
    ...(typeof o['topic-id'] === 'string' ? { topicId: o['topic-id'] } : {}),
    offsets: parseOffsets(JSON.stringify(o.offsets)),
    ...(range ? { range: { from: parseOffsets(JSON.stringify(range.from)), to: parseOffsets(JSON.stringify(range.to)) } } : {}),
  };
}

function cursorFromSummary(s: Snapshot): Cursor {
  const range = s.summary[SUMMARY_RANGE];
  return {
    snapshotId: s['snapshot-id'].toString(),
    commitId: s.summary[SUMMARY_COMMIT_ID] ?? null,
    offsets: parseOffsets(s.summary[SUMMARY_OFFSETS]),
    topic: s.summary[SUMMARY_TOPIC] ?? null,
    ...(s.summary[SUMMARY_TOPIC_ID] ? { topicId: s.summary[SUMMARY_TOPIC_ID] } : {}),
    ...(range ? { range: JSON.parse(range) as OffsetRange } : {}),
  };
}

/** The cursor of `ingestId`: the table property, or (tables written before it) the newest ingest summary. */
export function readCursor(m: TableMetadata, ingestId: string): Cursor {
  const key = cursorPropertyKey(ingestId);
  const prop = m.properties[key];
  if (prop !== undefined) return parseCursorProperty(key, prop);
  for (const s of ancestors(m)) {
    if (s.summary[SUMMARY_INGEST_ID] === ingestId) return cursorFromSummary(s);
  }
  return NONE;
}

/** Every ingest id's cursor: properties first, then legacy summaries reachable from main. */
export function allCursors(m: TableMetadata): Map<string, Cursor> {
  const out = new Map<string, Cursor>();
  for (const [k, v] of Object.entries(m.properties)) {
    if (k.startsWith(CURSOR_PROPERTY_PREFIX)) out.set(k.slice(CURSOR_PROPERTY_PREFIX.length), parseCursorProperty(k, v));
  }
  for (const [id, c] of legacyCursors(m)) if (!out.has(id)) out.set(id, c);
  return out;
}

/** Cursors only summaries know (no property yet): expiry carries them into properties before cutting history. */
export function legacyCursors(m: TableMetadata): Map<string, Cursor> {
  const out = new Map<string, Cursor>();
  for (const s of ancestors(m)) {
    const id = s.summary[SUMMARY_INGEST_ID];
    if (id === undefined || out.has(id) || m.properties[cursorPropertyKey(id)] !== undefined) continue;
    const c = cursorFromSummary(s);
    if (c.commitId !== null) out.set(id, c);
  }
  return out;
}

/** The property updates that make every legacy cursor survive expiry (empty when there are none). */
export function carryLegacyCursors(m: TableMetadata): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [id, c] of legacyCursors(m)) Object.assign(out, cursorProperty(id, c));
  return out;
}

/** The snapshot a (possibly retried) commit already produced, if it is still in the main ancestry. */
export function findCommit(m: TableMetadata, commitId: string): Snapshot | undefined {
  for (const s of ancestors(m)) if (s.summary[SUMMARY_COMMIT_ID] === commitId) return s;
  return undefined;
}

/**
 * Whether `commitId` of `ingestId` landed: the cursor names it (true whatever expiry removed since,
 * because commits of one ingest id are serialized by the fence), or it is in the ancestry.
 * Returns the snapshot id, or null.
 */
export function landedCommit(m: TableMetadata, ingestId: string, commitId: string): string | null {
  const c = readCursor(m, ingestId);
  if (c.commitId === commitId) return c.snapshotId;
  return findCommit(m, commitId)?.['snapshot-id'].toString() ?? null;
}

/** Dead-letter table: offsets below which an ingest id's dead letters are recorded, and the commit that set them. */
export interface DeadLetterCursor {
  offsets: Offsets;
  commitId: string | null;
}

export function readDeadLetterCursor(m: TableMetadata, ingestId: string): DeadLetterCursor {
  const key = deadLetterCursorPropertyKey(ingestId);
  const v = m.properties[key];
  if (v === undefined) return { offsets: {}, commitId: null };
  const o = JSON.parse(v) as { offsets?: unknown; 'commit-id'?: unknown };
  return { offsets: parseOffsets(JSON.stringify(o.offsets ?? {})), commitId: typeof o['commit-id'] === 'string' ? o['commit-id'] : null };
}

export function deadLetterCursorProperty(ingestId: string, topic: string, c: DeadLetterCursor): Record<string, string> {
  return { [deadLetterCursorPropertyKey(ingestId)]: JSON.stringify({ topic, offsets: sortOffsets(c.offsets), 'commit-id': c.commitId }) };
}

/** Per-partition maximum of two offset maps. */
export function maxOffsets(a: Offsets, b: Offsets): Offsets {
  const out: Offsets = { ...a };
  for (const [p, o] of Object.entries(b)) if (out[p] === undefined || BigInt(o) > BigInt(out[p]!)) out[p] = o;
  return out;
}

export const sameOffsets = (a: Offsets, b: Offsets): boolean => formatOffsets(a) === formatOffsets(b);

export function parseOffsets(json: string | undefined): Offsets {
  if (json === undefined) return {};
  const o = JSON.parse(json) as unknown;
  if (o === null || typeof o !== 'object' || Array.isArray(o)) throw new Error(`${SUMMARY_OFFSETS} is not a JSON object: ${json}`);
  const out: Offsets = {};
  for (const [p, v] of Object.entries(o as Record<string, unknown>)) {
    if (typeof v !== 'string' || !/^\d+$/.test(v) || !/^\d+$/.test(p))
      throw new Error(`${SUMMARY_OFFSETS} has a bad entry ${p}: ${JSON.stringify(v)}`);
    out[p] = v;
  }
  return out;
}

const sortOffsets = (o: Offsets): Offsets =>
  Object.fromEntries(
    Object.keys(o)
      .sort((a, b) => Number(a) - Number(b))
      .map((k) => [k, o[k]!]),
  );

/** Stable JSON (partitions in numeric order) so equal cursors serialize equally. */
export function formatOffsets(o: Offsets): string {
  return JSON.stringify(sortOffsets(o));
}
