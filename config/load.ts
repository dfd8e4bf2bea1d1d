/**
 * Loading a config: a file (YAML or JSON) or a parsed object, checked whole against the one schema
 * (config/schema.ts). A bad config fails with every problem at once, each naming its key path and,
 * for a file, its line: `config tables[0].commitInterval: expected a duration like 500ms, …, found
 * "soon" (line 12)`.
 */
import { readFileSync } from 'node:fs';
import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Node } from 'yaml';
import { ConfigError, problemsOf, type ConfigPath, type ConfigProblem } from './problems';
import { configSchema, LOCATION_URI } from './schema';
import type { CatalogConfig, FloeConfig, TableConfig } from './types';

/** The config `raw` describes, or every problem it has; `lineOf` places a key path in the file. */
export function checkConfig(
  raw: unknown,
  lineOf?: (path: ConfigPath) => number | undefined,
): { config: FloeConfig; problems?: undefined } | { config?: undefined; problems: ConfigProblem[] } {
  const r = configSchema.safeParse(raw, { error: (iss) => (iss.code === 'invalid_type' ? `a ${iss.expected}` : undefined) });
  if (r.success) return { config: r.data };
  const problems = problemsOf(r.error.issues, raw, lineOf);
  return { problems: lineOf ? problems.sort((a, b) => (a.line ?? 0) - (b.line ?? 0)) : problems };
}

/** Validates a parsed config object; defaults point at the local stack (stack/). */
export function parseConfig(raw: unknown): FloeConfig {
  const r = checkConfig(raw);
  if (r.problems) throw new ConfigError(r.problems);
  return r.config;
}

/**
 * The config in file `path`, or every problem it has, each with its line. A file that cannot be
 * read or is not YAML throws (a plain Error, as no key can be named).
 */
export function checkConfigFile(path: string): ReturnType<typeof checkConfig> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new Error(`cannot read config file ${path}: ${(e as Error).message}`);
  }
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter });
  if (doc.errors.length > 0) throw new Error(`config file ${path} is not valid YAML/JSON: ${doc.errors.map((e) => e.message).join('; ')}`);
  return checkConfig(doc.toJS(), (p) => {
    const offset = offsetOf(doc.contents, p);
    return offset === undefined ? undefined : lineCounter.linePos(offset).line;
  });
}

export function loadConfig(path: string): FloeConfig {
  const r = checkConfigFile(path);
  if (r.problems) throw new ConfigError(r.problems);
  return r.config;
}

/**
 * Where the key at `path` is written: its key (`commitInterval:`) or list item, else the nearest
 * enclosing one that is (a missing key is placed at its mapping).
 */
function offsetOf(root: unknown, path: ConfigPath): number | undefined {
  let node = root;
  let offset = (root as Node | null)?.range?.[0];
  for (const seg of path) {
    if (isMap(node)) {
      const pair = node.items.find((p) => (isScalar(p.key) ? p.key.value : p.key) === seg);
      if (!pair) break;
      offset = (pair.key as Node | null)?.range?.[0] ?? offset;
      node = pair.value;
    } else if (isSeq(node) && typeof seg === 'number' && node.items[seg] !== undefined) {
      node = node.items[seg];
      offset = (node as Node | null)?.range?.[0] ?? offset;
    } else break;
  }
  return offset;
}

/**
 * Where a new table `ns.name` goes: `<base>/ns/name` under `catalog.location`, else under the
 * warehouse when that is a location. Undefined: a REST catalog whose warehouse is a name places the
 * table itself (from its namespace's or warehouse's location).
 */
export function tableLocationBase(c: Pick<CatalogConfig, 'warehouse' | 'location'>): string | undefined {
  const base = c.location ?? (LOCATION_URI.test(c.warehouse) ? c.warehouse : undefined);
  return base?.replace(/\/+$/, '');
}

/** Every table an entry writes that the config names: its own and its route's static tables. */
export function entryTables(t: TableConfig): string[] {
  return [...new Set([t.table, ...Object.values(t.route?.tables ?? {})])];
}

export function findTable(cfg: FloeConfig, table: string): TableConfig {
  const t = cfg.tables.find((x) => x.table === table);
  const routedBy = cfg.tables.find((x) => x.route && entryTables(x).includes(table));
  if (!t && routedBy)
    throw new Error(`table ${table} is a routed table of ${routedBy.table}: its ingest is the route's, run it as ${routedBy.table}`);
  if (!t) throw new Error(`table ${table} is not in the config (known: ${cfg.tables.map((x) => x.table).join(', ') || 'none'})`);
  return t;
}
