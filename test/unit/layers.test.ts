/**
 * The import graph of floe's own modules, read with TypeScript's own pre-processor: no cycle
 * between files, no arrow from a lower layer to a higher one, and no Temporal in domain code.
 *
 *   iceberg/, contract/                 the Iceberg library; the pure workflow/activity contract
 *   config/, stack/                     config loading; the local dev stack
 *   observability/                      logs and metrics (no floe imports above config)
 *   table/                              what ingest and maintenance share: opening tables, cursors,
 *                                       crash points, pending markers, staged file lists, wire types
 *   ingest/, maintenance/               floe's domain: cycles, compaction, expiry, orphans
 *   activities/, workflows/             Temporal bindings
 *   client/, workers/                   what users and processes start
 *   cli/, demo/                         commands
 *   bench/, scripts/                    tools
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync, existsSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

const ROOT = resolve(__dirname, '../..');
const LAYER: Record<string, number> = {
  iceberg: 0,
  contract: 0,
  config: 1,
  stack: 1,
  observability: 1,
  table: 2,
  ingest: 3,
  maintenance: 3,
  activities: 4,
  workflows: 4,
  client: 5,
  workers: 5,
  cli: 6,
  demo: 6,
  bench: 7,
  scripts: 7,
};

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...sources(p));
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

interface Edge {
  from: string;
  to: string;
  typeOnly: boolean;
}

function edges(file: string): Edge[] {
  const text = readFileSync(file, 'utf8');
  const out: Edge[] = [];
  for (const f of ts.preProcessFile(text, true, true).importedFiles) {
    if (!f.fileName.startsWith('.')) continue;
    const base = resolve(dirname(file), f.fileName);
    const target = [`${base}.ts`, join(base, 'index.ts'), base].find((c) => existsSync(c) && statSync(c).isFile());
    if (!target) continue;
    // `import type` / `export type` lines vanish at run time; they still count for cycles.
    const line =
      text
        .slice(0, text.indexOf(`'${f.fileName}'`))
        .split('\n')
        .pop() ?? '';
    const stmtStart = text.lastIndexOf('import', text.indexOf(`'${f.fileName}'`));
    const stmt = text.slice(Math.max(stmtStart, 0), text.indexOf(`'${f.fileName}'`));
    out.push({
      from: relative(ROOT, file),
      to: relative(ROOT, target),
      typeOnly: /^(import|export) type\b/.test(stmt.trim()) || /^\s*(import|export) type\b/.test(line),
    });
  }
  return out;
}

const files = Object.keys(LAYER)
  .filter((d) => existsSync(join(ROOT, d)))
  .flatMap((d) => sources(join(ROOT, d)));
const graph = files.flatMap(edges);
const top = (p: string) => p.split('/')[0]!;

void test('no module imports a module of a higher layer', () => {
  const bad = graph
    .filter((e) => LAYER[top(e.to)] !== undefined && LAYER[top(e.to)]! > LAYER[top(e.from)]!)
    .map((e) => `${e.from} -> ${e.to}`);
  assert.deepEqual(bad, []);
});

void test('the import graph between files has no cycle', () => {
  const next = new Map<string, string[]>();
  for (const e of graph) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
  const state = new Map<string, 'open' | 'done'>();
  const cycles: string[] = [];
  const visit = (f: string, path: string[]): void => {
    if (state.get(f) === 'done') return;
    if (state.get(f) === 'open') {
      cycles.push([...path.slice(path.indexOf(f)), f].join(' -> '));
      return;
    }
    state.set(f, 'open');
    for (const t of next.get(f) ?? []) visit(t, [...path, f]);
    state.set(f, 'done');
  };
  for (const f of files.map((p) => relative(ROOT, p))) visit(f, []);
  assert.deepEqual(cycles, []);
});

void test('domain code (table/, ingest/, maintenance/, iceberg/, contract/, config/) never imports Temporal', () => {
  const bad = files
    .filter((f) => ['table', 'ingest', 'maintenance', 'iceberg', 'contract', 'config'].includes(top(relative(ROOT, f))))
    .filter((f) => ts.preProcessFile(readFileSync(f, 'utf8'), true, true).importedFiles.some((i) => i.fileName.startsWith('@temporalio/')))
    .map((f) => relative(ROOT, f));
  assert.deepEqual(bad, []);
});

void test('workflows import other layers for types only, except the pure contract and maintenance/window', () => {
  const allowed = new Set(['contract/index.ts', 'maintenance/window.ts']);
  const bad = graph
    .filter((e) => top(e.from) === 'workflows' && top(e.to) !== 'workflows' && !e.typeOnly && !allowed.has(e.to))
    .map((e) => `${e.from} -> ${e.to}`);
  assert.deepEqual(bad, []);
});

/**
 * Folders of one layer import each other only where declared here, with the reason. What two
 * siblings both need moves to a folder below both (as table/ holds what ingest/ and maintenance/
 * share) instead of one sibling reaching into the other.
 */
const SIBLING_IMPORTS: Record<string, string> = {
  'stack -> config': 'the local stack starts its services with the defaults the config falls back to (config/local-stack.ts)',
  'workflows -> activities': 'activity signatures for proxyActivities (types only: the workflows test above checks it)',
  'workers -> client': 'a worker connects to Temporal and installs schedules as a client does',
  'cli -> demo': '`floe demo` runs the demo scenario',
};

void test('sibling folders of one layer import each other only where SIBLING_IMPORTS declares it', () => {
  const bad = graph
    .filter((e) => LAYER[top(e.to)] !== undefined && top(e.to) !== top(e.from) && LAYER[top(e.to)] === LAYER[top(e.from)])
    .filter((e) => SIBLING_IMPORTS[`${top(e.from)} -> ${top(e.to)}`] === undefined)
    .map((e) => `${e.from} -> ${e.to}`);
  assert.deepEqual(bad, []);
});

void test('only stack/, cli/, demo/, bench/ and test/ import the dev stack (production code never does)', () => {
  const mayImportStack = new Set(['stack', 'cli', 'demo', 'bench']);
  const bad = graph.filter((e) => top(e.to) === 'stack' && !mayImportStack.has(top(e.from))).map((e) => `${e.from} -> ${e.to}`);
  assert.deepEqual(bad, []);
});
