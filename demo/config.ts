import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { floeHome } from '../stack/paths';

/** Writes a config for a fresh table + topic, derived from examples/orders.yaml. */
export function scenarioConfig(
  name: string,
  partitions: number,
  commitInterval: string,
  overrides: Record<string, unknown> = {},
  example = 'orders.yaml',
): { path: string; table: string; topic: string } {
  const base = parseYaml(readFileSync(resolve(__dirname, '../examples', example), 'utf8')) as any;
  const table = `demo.${name.replace(/[^A-Za-z0-9_]/g, '_')}`;
  const topic = name;
  const t = base.tables[0];
  t.table = table;
  t.topic = topic;
  t.commitInterval = commitInterval;
  t.parallelism = Math.min(2, partitions);
  Object.assign(t, overrides);
  base.temporal = { ...(base.temporal ?? {}), taskQueue: `floe-${name}` };
  const dir = join(floeHome(), 'runs');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.yaml`);
  writeFileSync(path, stringifyYaml(base));
  return { path, table, topic };
}
