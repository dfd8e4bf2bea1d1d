/**
 * The import graph of floe's own modules, read with TypeScript's own pre-processor: no cycle
 * between files, no arrow from a lower layer to a higher one, and no Temporal in domain code.
 *
 *   iceberg/, contract/                 the Iceberg library; the pure workflow/activity contract
 *   config/, stack/                     config loading; the local dev stack
 *   observability/                      logs and metrics (no floe imports above config)
 *   ingest/, maintenance/               floe's domain: cycles, cursors, compaction, expiry, orphans
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
  ingest: 2,
  maintenance: 2,
  activities: 3,
  workflows: 3,
  client: 4,
  workers: 4,
  cli: 5,
  demo: 5,
  bench: 6,
  scripts: 6,
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

void test('domain code (ingest/, maintenance/, iceberg/, contract/, config/) never imports Temporal', () => {
  const bad = files
    .filter((f) => ['ingest', 'maintenance', 'iceberg', 'contract', 'config'].includes(top(relative(ROOT, f))))
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
