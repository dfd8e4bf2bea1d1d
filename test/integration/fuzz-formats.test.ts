/**
 * Property-based fuzzing of every value format into tables with every partition transform (issue
 * 29, item 12), the fast loop: random table schemas (every Iceberg type, nested struct/list/map,
 * optional and required), partition specs (identity, bucket, truncate, year, month, day, hour,
 * void) and records (every Unicode class, strings up to 64 KiB, numbers at and past each type's
 * bounds, NaN/±Infinity/-0, deep nesting, nulls in required fields, wrong types, invalid UTF-8,
 * truncated and garbage bytes, bad framing), in JSON, plain Avro, and Avro, Protobuf and JSON
 * Schema framed through the stack's Schema Registry. Each case is one ingest cycle in process
 * (test/support/fuzz/loop.ts: floe's sink, Parquet writer and commit into a SQLite catalog on a
 * file:// warehouse, no Kafka).
 *
 * The property: the cycle never fails (floe's decoder promises every row it returns is writable,
 * so a failed write would stall the table until isolation picks the record out), every message is
 * exactly one row or one dead letter with a reason, good records are rows and bad ones dead
 * letters; and, read back through PyIceberg (an independent reader, once for every case of the
 * run), every row equals the record it came from.
 *
 * Seeded: FLOE_FUZZ_SEED (default below, printed) and FLOE_FUZZ_RUNS (cases per format) replay or
 * widen a run; bench/fuzz.ts runs it for longer. A failing case is shrunk by fast-check and printed.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import fc from 'fast-check';
import { parseConfig } from '../../config';
import { ensureStack, stackEnv } from '../../stack';
import { openTables, type Tables } from '../../table/tables';
import { FORMATS, caseArb, type FuzzCase } from '../support/fuzz/arbitraries';
import { MapValue } from '../support/fuzz/model';
import { offsetProblems, readWithPyIceberg, runCase, valueProblems, type CaseResult, type LoopEnv } from '../support/fuzz/loop';

const SEED = Number(process.env.FLOE_FUZZ_SEED ?? 20261207);
const RUNS = Number(process.env.FLOE_FUZZ_RUNS ?? 20);

/** What the fuzzer found, shrunk: each runs in every run, through the same loop and PyIceberg. */
const REGRESSIONS: Array<{ name: string; cases: FuzzCase[] }> = [
  {
    // avsc read a map into {}: the key "__proto__" set the prototype and the entry vanished (ingest/formats/avro.ts)
    name: 'a map key "__proto__" lands as an entry in every format',
    cases: FORMATS.map((format) => ({
      format,
      fields: [{ name: 'm', type: { type: 'map', value: 'long', valueRequired: false }, required: false }],
      partitionBy: [],
      records: [
        {
          value: {
            m: new MapValue([
              ['__proto__', 1n],
              ['a', 2n],
            ]),
          },
          spoil: { kind: 'none' },
        },
      ],
    })),
  },
  {
    // the manifest's partition record defined the Avro fixed `decimal_1_0` twice: no commit landed (iceberg/spec/manifest.ts)
    name: 'two partition fields of one decimal or uuid type commit',
    cases: [
      {
        format: 'json',
        fields: [
          { name: 'aa', type: 'decimal(1, 0)', required: false },
          { name: 'u', type: 'uuid', required: false },
          { name: 'v', type: 'uuid', required: false },
        ],
        partitionBy: [
          { column: 'aa', transform: 'void' },
          { column: 'aa', transform: 'truncate[3000]' },
          { column: 'u', transform: 'identity' },
          { column: 'v', transform: 'identity' },
        ],
        records: [{ value: { aa: 0n, u: '00000000-0000-4000-8000-000000000001', v: null }, spoil: { kind: 'none' } }],
      },
    ],
  },
  {
    // a Timestamp of nanos 1e9 was carried into the seconds (ingest/formats/protobuf.ts): now a dead letter
    name: 'a protobuf Timestamp with nanos past 999,999,999 is a dead letter',
    cases: [
      {
        format: 'protobuf',
        fields: [{ name: 'fs', type: 'timestamptz', required: false }],
        partitionBy: [],
        records: [
          { value: { fs: 0n }, spoil: { kind: 'field', field: 'fs', bad: 0 } },
          { value: { fs: null }, spoil: { kind: 'none' } },
        ],
      },
    ],
  },
];

describe('fuzz: every value format into every partition transform (in process)', { timeout: 20 * 60_000 }, () => {
  let root: string;
  let tables: Tables;
  let env: LoopEnv;
  const results: CaseResult[] = [];

  before(async () => {
    await ensureStack(['schema-registry']);
    root = mkdtempSync(join(tmpdir(), 'floe-fuzz-'));
    const base = {
      catalog: {
        type: 'sql',
        name: 'fuzz',
        uri: `sqlite:///${join(root, 'catalog.db')}`,
        warehouse: pathToFileURL(join(root, 'warehouse')).href,
      },
      schemaRegistry: { url: stackEnv().schemaRegistry.url },
    };
    tables = await openTables(parseConfig({ ...base, tables: [] }));
    env = { base: base as LoopEnv['base'], tables };
    console.log(`fuzz: seed ${SEED}, ${RUNS} cases per format (FLOE_FUZZ_SEED / FLOE_FUZZ_RUNS to change)`);
  });

  after(async () => {
    await tables?.close();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  for (const format of FORMATS) {
    it(`${format}: every message is a row or a dead letter with a reason, and the cycle never fails`, async () => {
      let n = 0;
      const out = await fc.check(
        fc.asyncProperty(caseArb(format, { maxRecords: 24, depth: 2 }), async (c) => {
          const r = await runCase(env, c, `${format.replace(/-/g, '_')}_${n++}`);
          results.push(r);
          const problems = offsetProblems(r);
          if (problems.length > 0) throw new Error(problems.join('\n'));
        }),
        { seed: SEED, numRuns: RUNS, endOnFailure: false },
      );
      if (out.failed) {
        console.log(fc.defaultReportMessage(out));
        assert.fail(
          `fuzz ${format}: seed ${SEED}, path ${out.counterexamplePath}: ${String((out.errorInstance as Error | undefined)?.message ?? out.errorInstance)}`,
        );
      }
    });
  }

  for (const reg of REGRESSIONS) {
    it(`regression: ${reg.name}`, async () => {
      for (const [i, c] of reg.cases.entries()) {
        const r = await runCase(env, c, `reg_${c.format.replace(/-/g, '_')}_${i}`);
        results.push(r);
        assert.deepEqual(offsetProblems(r), [], `${c.format}`);
      }
    });
  }

  it('every row read back through PyIceberg equals the record it came from', async () => {
    const catalog = { name: 'fuzz', uri: `sqlite:///${join(root, 'catalog.db')}`, warehouse: pathToFileURL(join(root, 'warehouse')).href };
    const read = await readWithPyIceberg(catalog, results);
    const problems = results.flatMap((r) => valueProblems(r, read.tables[r.table]));
    const rows = results.reduce((s, r) => s + r.rowOffsets.length, 0);
    const dead = results.reduce((s, r) => s + r.dead.length, 0);
    console.log(`fuzz: ${results.length} tables, ${rows} rows, ${dead} dead letters read back through PyIceberg`);
    assert.deepEqual(problems, []);
  });
});
