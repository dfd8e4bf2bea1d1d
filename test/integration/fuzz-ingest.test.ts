/**
 * Property-based fuzzing through the real stack (issue 29, item 12): for each value format (JSON,
 * plain Avro, and Avro, Protobuf, JSON Schema framed by the stack's Schema Registry) a seeded random
 * table schema and partition spec and a few hundred random records, good and spoilt
 * (test/support/fuzz/), produced to Kafka and ingested by a worker process of its own running the
 * ingest workflows on the Temporal dev server, into the stack's SQLite catalog on SeaweedFS S3.
 *
 * The property: every ingest drains without ever showing `stalled` or `failed` and no cycle step
 * fails more than K (isolateAfterAttempts) times, so every message is settled within K+1 cycles
 * of being read; every message is exactly one row or one dead letter with a reason (rows + dead
 * letters == messages, no offset twice), good records rows and bad ones dead letters; and every row
 * read back through PyIceberg equals the record it came from.
 *
 * Seeded like fuzz-formats.test.ts: FLOE_FUZZ_SEED (printed), FLOE_FUZZ_RECORDS (records per format).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { ensureStack, stackEnv } from '../../stack';
import { scenarioConfig } from '../../demo/scenario';
import { loadConfig, type FloeConfig } from '../../config';
import { connectClient, ingestStatus, signalIngest, startIngest, waitForIngest, type FloeClient } from '../../client';
import { floeHome } from '../../stack/paths';
import { spawnWorker, type WorkerProcess } from '../../workers/process';
import { produceMessages } from '../support/produce';
import { FORMATS, caseArb } from '../support/fuzz/arbitraries';
import type { FuzzMessage } from '../support/fuzz/formats';
import { offsetProblems, prepareCase, readWithPyIceberg, valueProblems, type CaseResult } from '../support/fuzz/loop';

const SEED = Number(process.env.FLOE_FUZZ_SEED ?? 20261207);
const RECORDS = Number(process.env.FLOE_FUZZ_RECORDS ?? 200);

interface Entry {
  format: string;
  table: string;
  deadLetterTable: string;
  topic: string;
  messages: FuzzMessage[];
}

describe('fuzz: every value format through Kafka, a worker and the ingest workflow (real stack)', { timeout: 15 * 60_000 }, () => {
  let cfg: FloeConfig;
  let fc_: FloeClient;
  let worker: WorkerProcess;
  const entries: Entry[] = [];

  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3', 'schema-registry']);
    const name = `it_fuzz_${Date.now().toString(36)}`;
    const c = scenarioConfig(name, 1, '2s');
    const registryUrl = stackEnv().schemaRegistry.url;
    const tables: Array<Record<string, unknown>> = [];
    for (const [i, format] of FORMATS.entries()) {
      // one seeded case per format, its records many: the same seed gives the same tables and records
      const [c0] = fc.sample(caseArb(format, { minRecords: RECORDS, maxRecords: RECORDS, depth: 2 }), { seed: SEED + i, numRuns: 1 });
      const table = `demo.${name}_${format.replace(/-/g, '_')}`;
      const topic = `${name}-${format}`;
      const { entry, messages } = await prepareCase(c0!, { table, topic }, registryUrl);
      tables.push({ ...entry, ingestId: 'main', commitInterval: '2s', parallelism: 1 });
      entries.push({ format, table, deadLetterTable: `${table}_dead_letters`, topic, messages });
    }
    const doc = parseYaml(readFileSync(c.path, 'utf8')) as Record<string, unknown>;
    doc.tables = tables;
    doc.schemaRegistry = { url: registryUrl };
    writeFileSync(c.path, stringifyYaml(doc));
    cfg = loadConfig(c.path);
    for (const e of entries)
      await produceMessages(
        cfg,
        e.topic,
        e.messages.map((m) => ({ key: m.key, value: m.value, partition: 0 })),
      );
    worker = spawnWorker(c.path, join(floeHome(), 'logs', `${name}-worker.log`));
    fc_ = await connectClient(cfg);
    const n = entries.reduce((s, e) => s + e.messages.length, 0);
    console.log(`fuzz: seed ${SEED}, ${entries.length} formats, ${n} messages (FLOE_FUZZ_SEED / FLOE_FUZZ_RECORDS to change)`);
  });

  after(async () => {
    await fc_?.close();
    await worker?.kill('SIGTERM');
  });

  it('every ingest drains without stalling or failing, each message a row or a dead letter, every row equal', async () => {
    for (const e of entries) await startIngest(fc_, e.table);
    for (const e of entries) await signalIngest(fc_, e.table, 'stop');
    // Watch every ingest while it drains: `stalled`, `failed`, or a step failing past K attempts is the property broken.
    const seen: string[] = [];
    let maxAttempts = 0;
    let done = false;
    const watch = (async () => {
      while (!done) {
        for (const e of entries) {
          const s = await ingestStatus(fc_, e.table).catch(() => null);
          if (!s) continue;
          if (s.state === 'stalled' || s.state === 'failed') seen.push(`${e.format}: ${s.state} ${s.error ?? JSON.stringify(s.failing)}`);
          maxAttempts = Math.max(maxAttempts, s.failing?.attempts ?? 0);
        }
        await sleep(1000);
      }
    })();
    let timer: NodeJS.Timeout | undefined;
    const finals = await Promise.race([
      Promise.all(entries.map((e) => waitForIngest(fc_, e.table))),
      new Promise<never>((_, reject) => {
        // a hang guard, not a speed check: a table that never drains is the stall the property forbids
        timer = setTimeout(() => reject(new Error(`not drained after 8 minutes; seen ${JSON.stringify(seen)}`)), 8 * 60_000);
      }),
    ]).finally(() => {
      clearTimeout(timer);
      done = true;
    });
    await watch;
    assert.deepEqual(seen, [], 'no ingest was ever stalled or failed');
    for (const [i, s] of finals.entries()) {
      const e = entries[i]!;
      const k = s.isolateAfter ?? 5;
      assert.equal(s.state, 'stopped', `${e.format}: ${s.error ?? ''}`);
      assert.ok(maxAttempts <= k, `${e.format}: a step failed ${maxAttempts} times (K = ${k}): not settled within K+1 cycles`);
      assert.equal(s.totalRows + s.totalDeadLetters, e.messages.length, `${e.format}: rows + dead letters == messages`);
      console.log(`fuzz ${e.format}: ${s.totalRows} rows, ${s.totalDeadLetters} dead letters, ${s.cycles} cycles, ${s.commits} commits`);
    }

    // Read back through PyIceberg: offsets (each message once, good ones rows, bad ones dead letters) and values.
    const read = await readWithPyIceberg(cfg.catalog as { name: string; uri: string; warehouse: string }, entries);
    const problems: string[] = [];
    for (const e of entries) {
      const t = read.tables[e.table];
      const r: CaseResult = {
        table: e.table,
        deadLetterTable: e.deadLetterTable,
        messages: e.messages,
        rowOffsets: (t?.rows ?? []).map(([o]) => BigInt(o)),
        dead: (t?.dead ?? []).map(([o, error]) => ({ offset: BigInt(o), error })),
      };
      problems.push(...offsetProblems(r).map((p) => `${e.format}: ${p}`), ...valueProblems(r, t));
    }
    assert.deepEqual(problems, []);
  });
});
