/**
 * node's test runner (a process per file, as `node --test` runs them) over the files given, started
 * in the order given: `node --test` sorts its file arguments, and scripts/test.sh starts the
 * longest files first so that none of them starts last and runs on alone.
 *   node --import tsx scripts/run-tests.ts <concurrency> <timeout ms> <file>...
 * The spec report on stdout, then the slowest files with their times (to keep test.sh's
 * longest-first list and the 15-minute budget of issue 30 honest); exits 1 if a test (or a file)
 * failed.
 */
import { relative } from 'node:path';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';
import { finished } from 'node:stream/promises';

const [concurrency, timeout, ...files] = process.argv.slice(2);
if (!(Number(concurrency) >= 1) || !(Number(timeout) > 0) || files.length === 0) {
  console.error('usage: node --import tsx scripts/run-tests.ts <concurrency> <timeout ms> <file>...');
  process.exit(2);
}
// Each file's process gets this process's Node flags (--import tsx), as under `node --test`.
// forceExit: a file's process exits once its tests are done, even if a failed or timed-out test
// left a handle open (a Kafka consumer, a worker, a timer). Without it such a file never ends, and
// since the spec report is in file order, it also holds back every later file's report: a CI run
// (stop 39) printed one integration file, then nothing until its 90-minute limit.
const tests = run({ files, concurrency: Number(concurrency), timeout: Number(timeout), forceExit: true });
tests.on('test:fail', () => {
  process.exitCode = 1;
});
// Each file's process ends with a summary of its own (with `file` set; the overall one has none).
const fileMs = new Map<string, number>();
tests.on('test:summary', (s: { file?: string; duration_ms: number }) => {
  if (s.file !== undefined) fileMs.set(relative(process.cwd(), s.file), s.duration_ms);
});
const report = tests.compose(new spec());
report.pipe(process.stdout, { end: false });
void finished(report).then(() => {
  const slowest = [...fileMs].sort((a, b) => b[1] - a[1]).slice(0, 10);
  console.log(`slowest files (of ${fileMs.size}, ${concurrency} at a time):`);
  for (const [file, ms] of slowest) console.log(`  ${(ms / 1000).toFixed(1).padStart(6)} s  ${file}`);
});
