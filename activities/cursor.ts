/**
 * The ingest cursor lives in the table (DESIGN "Exactly-once protocol" §1): every ingest commit's
 * snapshot summary carries `floe.ingest-id`, `floe.offsets` (JSON object partition -> next offset,
 * offsets as strings) and a unique `floe.commit-id`. Pure functions over TableMetadata.
 */
import { ancestors } from '../iceberg/spec/metadata';
import type { Snapshot, TableMetadata } from '../iceberg/spec/types';

export const SUMMARY_INGEST_ID = 'floe.ingest-id';
export const SUMMARY_OFFSETS = 'floe.offsets';
export const SUMMARY_COMMIT_ID = 'floe.commit-id';
export const SUMMARY_TOPIC = 'floe.topic';
export const SUMMARY_DEAD_LETTERS = 'floe.dead-letters';
/** Backfills only: the offset range {from, to} the ingest id covers. */
export const SUMMARY_RANGE = 'floe.range';

/** Partition number (as a decimal string) -> next offset to read (decimal string, 64-bit safe). */
export type Offsets = Record<string, string>;

export interface Cursor {
  /** Snapshot that carries the cursor; null when this ingest never committed. Decimal string. */
  snapshotId: string | null;
  offsets: Offsets;
}

export function readCursor(m: TableMetadata, ingestId: string): Cursor {
  for (const s of ancestors(m)) {
    if (s.summary[SUMMARY_INGEST_ID] === ingestId) {
      return { snapshotId: s['snapshot-id'].toString(), offsets: parseOffsets(s.summary[SUMMARY_OFFSETS]) };
    }
  }
  return { snapshotId: null, offsets: {} };
}

/** The snapshot a (possibly retried) commit already produced, if it landed. */
export function findCommit(m: TableMetadata, commitId: string): Snapshot | undefined {
  for (const s of ancestors(m)) if (s.summary[SUMMARY_COMMIT_ID] === commitId) return s;
  return undefined;
}

/** Snapshot ids that must survive expiry: the newest cursor snapshot of every ingest id. */
export function cursorSnapshotIds(m: TableMetadata): bigint[] {
  const seen = new Map<string, bigint>();
  for (const s of ancestors(m)) {
    const id = s.summary[SUMMARY_INGEST_ID];
    if (id !== undefined && !seen.has(id)) seen.set(id, s['snapshot-id']);
  }
  return [...seen.values()];
}

export function parseOffsets(json: string | undefined): Offsets {
  if (json === undefined) return {};
  const o = JSON.parse(json) as unknown;
  if (o === null || typeof o !== 'object' || Array.isArray(o)) throw new Error(`${SUMMARY_OFFSETS} is not a JSON object: ${json}`);
  const out: Offsets = {};
  for (const [p, v] of Object.entries(o as Record<string, unknown>)) {
    if (typeof v !== 'string' || !/^\d+$/.test(v) || !/^\d+$/.test(p)) throw new Error(`${SUMMARY_OFFSETS} has a bad entry ${p}: ${JSON.stringify(v)}`);
    out[p] = v;
  }
  return out;
}

/** Stable JSON (partitions in numeric order) so equal cursors serialize equally. */
export function formatOffsets(o: Offsets): string {
  const keys = Object.keys(o).sort((a, b) => Number(a) - Number(b));
  return JSON.stringify(Object.fromEntries(keys.map((k) => [k, o[k]])));
}
