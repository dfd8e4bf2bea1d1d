/**
 * The fuzzer's long run (issue 29, item 12): the fast loop of test/integration/fuzz-formats.test.ts
 * (random schemas, partition specs and records, good and spoilt, in every value format, each case
 * one in-process ingest cycle into a SQLite catalog on a file:// warehouse) round after round with
 * a new seed each, until `--duration` seconds have passed; each round's tables are read back through
 * PyIceberg. Prints every failure with the seed and fast-check's path to replay it
 * (FLOE_FUZZ_SEED=<seed> in the test, or --seed here) and its shrunk counterexample; exits 1 if any.
 *
 *   npx tsx bench/fuzz.ts [--seed 1] [--runs 25] [--duration 600] [--records 24] [--depth 2]
 *
 * Needs the stack's Schema Registry (`floe stack up`) for the registry formats.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import fc from 'fast-check';
import { parseConfig } from '../config';
import { ensureStack, stackEnv } from '../stack';
import { openTables } from '../table/tables';
import { FORMATS, caseArb } from '../test/support/fuzz/arbitraries';
import { offsetProblems, readWithPyIceberg, runCase, valueProblems, type CaseResult } from '../test/support/fuzz/loop';
import { benchArgs, numberArg } from './support/args';

const args = benchArgs('npx tsx bench/fuzz.ts [--seed 1] [--runs 25] [--duration 600] [--records 24] [--depth 2]', {
  seed: { type: 'string' },
  runs: { type: 'string' },
  duration: { type: 'string' },
  records: { type: 'string' },
  depth: { type: 'string' },
});
const FIRST_SEED = numberArg(args.seed, Date.now() % 1_000_000);
const RUNS = numberArg(args.runs, 25);
const DURATION_S = numberArg(args.duration, 600);
const RECORDS = numberArg(args.records, 24);
const DEPTH = numberArg(args.depth, 2);

async function main(): Promise<void> {
  await ensureStack(['schema-registry']);
  const root = mkdtempSync(join(tmpdir(), 'floe-bench-fuzz-'));
  const catalog = {
    type: 'sql',
    name: 'fuzz',
    uri: `sqlite:///${join(root, 'catalog.db')}`,
    warehouse: pathToFileURL(join(root, 'warehouse')).href,
  };
  const base = { catalog, schemaRegistry: { url: stackEnv().schemaRegistry.url } };
  const tables = await openTables(parseConfig({ ...base, tables: [] }));
  const env = { base: base as Parameters<typeof runCase>[0]['base'], tables };
  const started = Date.now();
  const failures: string[] = [];
  let cases = 0,
    rows = 0,
    dead = 0,
    messages = 0;
  console.log(
    `fuzz bench: seeds from ${FIRST_SEED}, ${RUNS} cases per format per round, ${DURATION_S} s, up to ${RECORDS} records per case`,
  );
  try {
    for (let seed = FIRST_SEED; (Date.now() - started) / 1000 < DURATION_S; seed++) {
      const round: CaseResult[] = [];
      for (const format of FORMATS) {
        let n = 0;
        const out = await fc.check(
          fc.asyncProperty(caseArb(format, { maxRecords: RECORDS, depth: DEPTH }), async (c) => {
            const r = await runCase(env, c, `s${seed}_${format.replace(/-/g, '_')}_${n++}`);
            round.push(r);
            const problems = offsetProblems(r);
            if (problems.length > 0) throw new Error(problems.join('\n'));
          }),
          { seed, numRuns: RUNS },
        );
        if (out.failed) failures.push(`${format}, seed ${seed}:\n${fc.defaultReportMessage(out)}`);
      }
      const read = await readWithPyIceberg({ name: catalog.name, uri: catalog.uri, warehouse: catalog.warehouse }, round);
      for (const r of round) {
        cases++;
        messages += r.messages.length;
        rows += r.rowOffsets.length;
        dead += r.dead.length;
        const problems = valueProblems(r, read.tables[r.table]);
        if (problems.length > 0) failures.push(`seed ${seed}, ${r.table}:\n${problems.join('\n')}`);
      }
      const s = Math.round((Date.now() - started) / 1000);
      console.log(
        `round seed ${seed}: ${round.length} cases; total ${cases} cases, ${messages} messages, ${rows} rows, ${dead} dead letters, ${failures.length} failures, ${s} s`,
      );
    }
  } finally {
    await tables.close();
    rmSync(root, { recursive: true, force: true });
  }
  for (const f of failures) console.log(`\nFAILURE ${f}`);
  console.log(`\nfuzz bench: ${cases} cases, ${messages} messages (${rows} rows, ${dead} dead letters), ${failures.length} failures`);
  process.exit(failures.length > 0 ? 1 : 0);
}

void main();
