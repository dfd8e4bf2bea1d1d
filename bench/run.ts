/** `npm run bench`: every benchmark in turn (each is also runnable on its own). */
import { spawnSync } from 'node:child_process';
const benches = ['bench/parquet-write.ts', 'bench/ingest.ts', 'bench/commit-latency.ts', 'bench/compaction.ts'];
let failed = 0;
for (const b of benches) {
  console.log(`\n### ${b}`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', b, ...process.argv.slice(2)], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
