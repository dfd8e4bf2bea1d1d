/** `npm run bench`: every benchmark in turn (each is also runnable on its own), each given the options it takes. */
import { spawnSync } from 'node:child_process';
import type { ParseArgsOptionsConfig } from 'node:util';
import { attachValue, benchArgs } from './support/args';

/** The benchmarks, with the options each takes (as its own benchArgs declares them). */
const benches: Record<string, ParseArgsOptionsConfig> = {
  'bench/parquet-write.ts': { rows: { type: 'string' }, runs: { type: 'string' } },
  'bench/ingest.ts': {
    events: { type: 'string' },
    'fresh-seconds': { type: 'string' },
    rate: { type: 'string' },
    pairs: { type: 'string' },
    'fresh-interval': { type: 'string' },
    format: { type: 'string' },
  },
  'bench/commit-latency.ts': { points: { type: 'string' }, samples: { type: 'string' } },
  'bench/compaction.ts': {
    files: { type: 'string' },
    'rows-per-file': { type: 'string' },
    'no-reference': { type: 'boolean' },
    source: { type: 'boolean' },
    'node-args': { type: 'string' },
  },
};

const values: Record<string, unknown> = benchArgs(
  `npm run bench [-- <options of ${Object.keys(benches).join(', ')}>]`,
  Object.assign({}, ...Object.values(benches)) as ParseArgsOptionsConfig,
  attachValue(process.argv.slice(2), 'node-args'),
);

let failed = 0;
for (const [b, options] of Object.entries(benches)) {
  // attached values (--name=value): a value may start with a dash
  const args = Object.keys(options).flatMap((name) => {
    const v = values[name];
    return v === undefined || v === false ? [] : v === true ? [`--${name}`] : [`--${name}=${String(v)}`];
  });
  console.log(`\n### ${b}`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', b, ...args], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
