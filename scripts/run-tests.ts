/**
 * node's test runner (a process per file, as `node --test` runs them) over the files given, started
 * in the order given: `node --test` sorts its file arguments, and scripts/test.sh starts the
 * longest files first so that none of them starts last and runs on alone.
 *   node --import tsx scripts/run-tests.ts <concurrency> <timeout ms> <file>...
 * The spec report on stdout; exits 1 if a test (or a file) failed.
 */
import { run } from 'node:test';
import { spec } from 'node:test/reporters';

const [concurrency, timeout, ...files] = process.argv.slice(2);
if (!(Number(concurrency) >= 1) || !(Number(timeout) > 0) || files.length === 0) {
  console.error('usage: node --import tsx scripts/run-tests.ts <concurrency> <timeout ms> <file>...');
  process.exit(2);
}
// Each file's process gets this process's Node flags (--import tsx), as under `node --test`.
const tests = run({ files, concurrency: Number(concurrency), timeout: Number(timeout) });
tests.on('test:fail', () => {
  process.exitCode = 1;
});
tests.compose(new spec()).pipe(process.stdout);
