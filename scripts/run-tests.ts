/**
 * node's test runner (a process per file, as `node --test` runs them) over the files given, started
 * in the order given: `node --test` sorts its file arguments, and scripts/test.sh starts the
 * longest files first so that none of them starts last and runs on alone.
 *   node --import tsx scripts/run-tests.ts <concurrency> <timeout ms> <file>...
 * The spec report on stdout, then the slowest files with their times (to keep test.sh's
 * longest-first list and the 15-minute budget of issue 30 honest); exits 1 if a test (or a file)
 * failed.
 */
import { relative, resolve } from 'node:path';
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
// The spec report holds a file back until every file before it is reported, so one slow or hung
// file hides the others' progress: a line on stderr as each file starts and ends (as it happens),
// and every 5 minutes the files still running, so a log cut short still shows where the time went.
const running = new Map<string, number>();
const t0 = Date.now();
const progress = (m: string) => process.stderr.write(`[tests +${Math.round((Date.now() - t0) / 1000)} s] ${m}\n`);
// A file's own test is named by the path as given (relative or not); `file` is absolute.
const isFile = (d: { nesting: number; name: string; file?: string }) =>
  d.nesting === 0 && d.file !== undefined && resolve(d.name) === d.file;
tests.on('test:dequeue', (d: { nesting: number; name: string; file?: string }) => {
  if (isFile(d)) running.set(relative(process.cwd(), d.file!), Date.now());
});
tests.on('test:complete', (d: { nesting: number; name: string; file?: string; details: { passed: boolean } }) => {
  if (!isFile(d)) return;
  const f = relative(process.cwd(), d.file!);
  const began = running.get(f);
  running.delete(f);
  progress(`${d.details.passed ? 'ok' : 'FAILED'} ${f}${began === undefined ? '' : ` (${Math.round((Date.now() - began) / 1000)} s)`}`);
});
const still = setInterval(() => {
  const now = Date.now();
  if (running.size > 0) progress(`running: ${[...running].map(([f, at]) => `${f} (${Math.round((now - at) / 1000)} s)`).join(', ')}`);
}, 300_000);
still.unref();
const report = tests.compose(new spec());
report.pipe(process.stdout, { end: false });
void finished(report).then(() => {
  const slowest = [...fileMs].sort((a, b) => b[1] - a[1]).slice(0, 10);
  console.log(`slowest files (of ${fileMs.size}, ${concurrency} at a time):`);
  for (const [file, ms] of slowest) console.log(`  ${(ms / 1000).toFixed(1).padStart(6)} s  ${file}`);
});
