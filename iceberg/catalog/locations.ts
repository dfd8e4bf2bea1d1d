/**
 * Table locations across a catalog. A table owns everything under its location, and maintenance
 * (orphan removal) deletes what its own metadata does not reach there; so a table whose location
 * lies inside another's (`a.b` at `<wh>/a/b`, `a.b.c` at `<wh>/a/b/c`) would have its files swept
 * by the outer table's maintenance. Creation refuses such a layout (`overlappingTables`), and the
 * sweep skips whatever lies under another table's location (`tableLocations`).
 *
 * Concurrency: a snapshot of the catalog when called; a table created or dropped meanwhile may be
 * missed. Reads only.
 */
import { isIcebergError } from '../errors';
import { mapConcurrent } from '../scan/parallel';
import type { TableIdentifier } from '../spec/types';
import { identToString, type Catalog } from './catalog';

/**
 * Comparable form of a location: no trailing slash, `s3a://`/`s3n://` read as `s3://`, and the
 * local forms read as `file:///path`: Java (Hadoop's Path, so Spark's HadoopFileIO) writes
 * `file:/path`, PyIceberg and floe `file:///path`, and `file://localhost/path` is the same file.
 * Two locations name the same object when their forms are equal: a table floe made at
 * `file:///wh/t` holds Spark's files as `file:/wh/t/data/...` after Spark rewrote it.
 */
export const normalizeLocation = (location: string): string =>
  location
    .replace(/\/+$/, '')
    .replace(/^s3[an]:\/\//i, 's3://')
    .replace(/^file:(?:\/\/(?:localhost)?)?\/(?!\/)/i, 'file:///');

/** True if `inner` is `outer` or lies under it (path-wise: `t` does not contain `t2`). */
export function locationContains(outer: string, inner: string): boolean {
  const o = normalizeLocation(outer),
    i = normalizeLocation(inner);
  return i === o || i.startsWith(`${o}/`);
}

/** Every namespace of the catalog, walking nested levels (guarded against servers that ignore `parent`). */
export async function listAllNamespaces(catalog: Catalog): Promise<string[][]> {
  const seen = new Map<string, string[]>();
  const walk = async (parent: string[]): Promise<void> => {
    for (const ns of await catalog.listNamespaces(parent)) {
      const key = ns.join('\u0000');
      if (seen.has(key) || ns.length <= parent.length || !parent.every((p, i) => ns[i] === p)) continue;
      seen.set(key, ns);
      await walk(ns);
    }
  };
  await walk([]);
  return [...seen.values()];
}

/** Every table of the catalog. */
export async function listAllTables(catalog: Catalog): Promise<TableIdentifier[]> {
  const out: TableIdentifier[] = [];
  for (const ns of await listAllNamespaces(catalog)) {
    try {
      out.push(...(await catalog.listTables(ns)));
    } catch (e) {
      if (!isIcebergError(e, 'NotFound')) throw e; // dropped while we walked
    }
  }
  return out;
}

export interface TableLocation {
  id: TableIdentifier;
  name: string;
  location: string;
}

/**
 * The location of every table of the catalog (but `exclude`), loaded a few at a time. A table
 * dropped meanwhile is left out; one whose metadata cannot be read fails the call (its location
 * is unknown, so nothing may be assumed about it), except when only its metadata.json is missing
 * and the catalog named it: then its location is the folder above `metadata/`.
 */
export async function tableLocations(
  catalog: Catalog,
  opts: { exclude?: TableIdentifier; concurrency?: number; known?: Map<string, string> } = {},
): Promise<TableLocation[]> {
  const skip = opts.exclude ? identToString(opts.exclude) : undefined;
  const ids = (await listAllTables(catalog)).filter((id) => identToString(id) !== skip);
  const out = await mapConcurrent(ids, opts.concurrency ?? 8, async (id): Promise<TableLocation | undefined> => {
    const name = identToString(id);
    // `known`: locations loaded before, by name (a caller creating thousands of tables would
    // otherwise load every table of the catalog for each one).
    const cached = opts.known?.get(name);
    if (cached !== undefined) return { id, name, location: cached };
    try {
      const t = await catalog.loadTable(id);
      const location = normalizeLocation(t.metadata.location);
      opts.known?.set(name, location);
      return { id, name, location };
    } catch (e) {
      if (!isIcebergError(e, 'NotFound')) throw e;
      const ml = e.context['metadataLocation'];
      const m = typeof ml === 'string' ? /^(.*)\/metadata\/[^/]+$/.exec(ml) : null;
      if (m) return { id, name: identToString(id), location: normalizeLocation(m[1]!) };
      if (typeof ml === 'string') throw e; // metadata elsewhere (write.metadata.path): location unknown
      return undefined; // dropped between listing and loading
    }
  });
  return out.filter((x): x is TableLocation => x !== undefined);
}

export interface Overlap extends TableLocation {
  relation: 'same' | 'contains' | 'inside';
}

/**
 * Tables (but `exclude`) whose location equals `location`, lies inside it (`contains`: the new
 * table would contain them) or contains it (`inside`: the new table would lie inside them).
 */
export async function overlappingTables(
  catalog: Catalog,
  location: string,
  exclude?: TableIdentifier,
  known?: Map<string, string>,
): Promise<Overlap[]> {
  const loc = normalizeLocation(location);
  const out: Overlap[] = [];
  for (const t of await tableLocations(catalog, { exclude, ...(known ? { known } : {}) })) {
    if (t.location === loc) out.push({ ...t, relation: 'same' });
    else if (locationContains(loc, t.location)) out.push({ ...t, relation: 'contains' });
    else if (locationContains(t.location, loc)) out.push({ ...t, relation: 'inside' });
  }
  return out;
}
