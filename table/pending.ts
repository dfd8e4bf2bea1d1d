/**
 * Pending-commit markers: the files of a commit in flight are unreachable from the table's
 * metadata until its CAS lands, so to the orphan sweep they look exactly like orphans. A writer
 * that may take longer than the sweep's grace period (an ingest cycle, a compaction run) first
 * writes a marker naming the file-name prefix of everything it is about to write, and removes it
 * once its commit landed or its run ended. The sweep reads the markers *before* it loads the
 * metadata and lists the files, and keeps every file whose base name starts with a marked prefix.
 *
 * Layout: `<tableLocation>/metadata/floe-pending/<owner>/<filePrefix>` (both path segments
 * escaped, see `escapeSegment`: owners are workflow ids like `floe-ingest/demo.orders/main`).
 * The marker's body is JSON for people looking at the bucket; only its key and age matter.
 *
 * Concurrency: markers are plain objects; marking is an idempotent overwrite (it refreshes the
 * age), clearing deletes what the listing finds. A writer must mark *before* writing files.
 * No Temporal imports: this is domain code the activities call.
 */
import type { FileIO } from '../iceberg';

/** Folder (relative to the table location) holding the markers. */
const PENDING_DIR = 'metadata/floe-pending';

const trim = (location: string): string => location.replace(/\/+$/, '');

/** `<tableLocation>/metadata/floe-pending/` (with the trailing slash: a directory). */
export const pendingDir = (tableLocation: string): string => `${trim(tableLocation)}/${PENDING_DIR}/`;

/** True for the markers themselves (the sweep never deletes them). */
export const isPendingMarker = (fileLocation: string, tableLocation: string): boolean => fileLocation.startsWith(pendingDir(tableLocation));

const SAFE = /[A-Za-z0-9._-]/;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * One path segment from any string, reversibly, with characters every store and `file://` path
 * accepts: `[A-Za-z0-9._-]` stay, every other UTF-8 byte becomes `~XX`. (`%XX` would not do:
 * file URLs decode it and refuse an encoded `/`.)
 */
export function escapeSegment(s: string): string {
  let out = '';
  for (const ch of s) {
    if (SAFE.test(ch)) out += ch;
    else for (const b of encoder.encode(ch)) out += `~${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** Inverse of `escapeSegment`; undefined for a segment it cannot have produced. */
export function unescapeSegment(s: string): string | undefined {
  const bytes: number[] = [];
  for (let i = 0; i < s.length;) {
    if (s[i] === '~') {
      const hex = s.slice(i + 1, i + 3);
      if (!/^[0-9A-F]{2}$/.test(hex)) return undefined;
      bytes.push(parseInt(hex, 16));
      i += 3;
    } else {
      if (!SAFE.test(s[i]!)) return undefined;
      bytes.push(s.charCodeAt(i));
      i++;
    }
  }
  return decoder.decode(new Uint8Array(bytes));
}

const checkArgs = (owner: string, filePrefix?: string): void => {
  if (owner.length === 0) throw new Error('pending marker owner: expected a non-empty string, found ""');
  if (filePrefix === undefined) return;
  // An empty prefix would protect every file of the table from the sweep, forever.
  if (filePrefix.length === 0 || filePrefix.includes('/')) {
    throw new Error(`pending marker file prefix: expected a non-empty file-name prefix without "/", found ${JSON.stringify(filePrefix)}`);
  }
};

/** Marker objects under `<tableLocation>/metadata/floe-pending/<owner>/<filePrefix>` protect files whose base name starts with filePrefix from the orphan sweep. */
export async function markPending(io: FileIO, tableLocation: string, owner: string, filePrefix: string): Promise<void> {
  checkArgs(owner, filePrefix);
  const location = `${pendingDir(tableLocation)}${escapeSegment(owner)}/${escapeSegment(filePrefix)}`;
  await io.write(location, encoder.encode(JSON.stringify({ owner, filePrefix, markedAt: new Date().toISOString() })));
}

/** Removes every marker of `owner` (after its commit landed or its run ended). Best effort, idempotent. */
export async function clearPending(io: FileIO, tableLocation: string, owner: string): Promise<void> {
  checkArgs(owner);
  try {
    const markers: string[] = [];
    for await (const f of io.list(`${pendingDir(tableLocation)}${escapeSegment(owner)}/`)) markers.push(f.location);
    await Promise.all(markers.map((l) => io.delete(l).catch(() => undefined)));
  } catch {
    // Best effort: a marker left behind only keeps its files from the sweep (and is reported).
  }
}

/** Every protected file-name prefix, with the marker's age. */
export async function listPending(
  io: FileIO,
  tableLocation: string,
): Promise<Array<{ owner: string; filePrefix: string; lastModified: number }>> {
  const dir = pendingDir(tableLocation);
  const out: Array<{ owner: string; filePrefix: string; lastModified: number }> = [];
  for await (const f of io.list(dir)) {
    const parts = f.location.slice(dir.length).split('/');
    const owner = parts.length === 2 ? unescapeSegment(parts[0]!) : undefined;
    const filePrefix = parts.length === 2 ? unescapeSegment(parts[1]!) : undefined;
    // Something else under the folder (not written by markPending): protects nothing, and the
    // sweep leaves it alone like every object under the folder.
    if (!owner || !filePrefix) continue;
    out.push({ owner, filePrefix, lastModified: f.lastModified });
  }
  return out;
}

/** True if the base name of `fileLocation` starts with one of the pending prefixes. */
export function isProtected(fileLocation: string, pending: Array<{ filePrefix: string }>): boolean {
  const base = fileLocation.slice(fileLocation.lastIndexOf('/') + 1);
  return pending.some((p) => base.startsWith(p.filePrefix));
}
