/** The metric names docker/grafana/floe-dashboard.json queries (histogram series folded onto their metric). */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export const DASHBOARD = join(__dirname, '..', '..', 'docker', 'grafana', 'floe-dashboard.json');

interface Panel {
  type: string;
  targets?: Array<{ expr: string }>;
  panels?: Panel[];
}

export function dashboardExprs(): string[] {
  const d = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
    panels: Panel[];
    templating: { list: Array<{ query: string | { query: string } }> };
  };
  const panels = d.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
  return [
    ...panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)),
    ...d.templating.list.map((v) => (typeof v.query === 'string' ? v.query : v.query.query)),
  ];
}

/** Every `floe_*` / `temporal_*` series name in the dashboard's queries, with `_bucket/_sum/_count` kept as written. */
export function dashboardSeries(): Set<string> {
  return new Set(dashboardExprs().flatMap((e) => [...e.matchAll(/\b(?:floe|temporal)_[a-z0-9_]+/g)].map((m) => m[0])));
}
