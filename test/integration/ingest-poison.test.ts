/**
 * Poison cycles end, against the real stack (Temporal, Kafka, SeaweedFS S3, the SQLite catalog, a
 * worker process of its own):
 * - partition values too long for a path segment (300 "é", 1,800 characters URL-encoded; 5,000
 *   "x") in identity and truncate[3000] partitions, on S3 and on a file:// warehouse, land as rows
 *   (they used to fail every write: ENAMETOOLONG, or a key over S3's 1,024 bytes);
 * - a deterministic failure no classifier knows, injected at the write of two records
 *   (FLOE_TEST_FAIL_RECORD), is isolated by bisection within isolateAfterAttempts attempts: the
 *   two records become dead letters naming the failure, every other record a row, exactly once,
 *   counted by floe's reader and DuckDB.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { ensureStack } from '../../stack/stack';
import { scenarioConfig } from '../../demo/scenario';
import { verifyTable } from '../../demo/verify';
import { findTable, loadConfig, type FloeConfig } from '../../config';
import { connectClient, signalIngest, startIngest, waitForIngest, type FloeClient } from '../../client';
import { readColumnValues } from '../../client/tables';
import { openTables } from '../../table/tables';
import { floeHome } from '../../stack/paths';
import { spawnWorker, type WorkerProcess } from '../../workers/process';
import { produceMessages } from '../support/produce';

const columns = [
  { name: 'event_id', type: 'string', required: true },
  { name: 'note', type: 'string' },
];

interface Run {
  cfg: FloeConfig;
  table: string;
  topic: string;
  fc: FloeClient;
  worker: WorkerProcess;
}

/** A config of one table (its entry overridden, its warehouse maybe), a worker process of its own with `env`. */
async function start(name: string, overrides: Record<string, unknown>, env: Record<string, string>, warehouse?: string): Promise<Run> {
  const c = scenarioConfig(name, 1, '2s', overrides);
  if (warehouse) {
    const doc = parseYaml(readFileSync(c.path, 'utf8')) as { catalog: Record<string, unknown> };
    doc.catalog.warehouse = warehouse;
    writeFileSync(c.path, stringifyYaml(doc));
  }
  const cfg = loadConfig(c.path);
  const worker = spawnWorker(c.path, join(floeHome(), 'logs', `${c.table.replace(/\W/g, '_')}-worker.log`), env);
  return { cfg, table: c.table, topic: c.topic, fc: await connectClient(cfg), worker };
}

async function drain(r: Run) {
  await startIngest(r.fc, r.table);
  await signalIngest(r.fc, r.table, 'stop');
  return waitForIngest(r.fc, r.table);
}

describe('poison cycles end (real stack)', { timeout: 15 * 60_000 }, () => {
  const runs: Run[] = [];
  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3']);
  });
  after(async () => {
    for (const r of runs) {
      await r.fc.close();
      await r.worker.kill('SIGTERM');
    }
  });

  for (const storage of ['s3', 'file'] as const) {
    it(`long partition values (300 "é", 5,000 "x") land in identity and truncate[3000] partitions on ${storage === 's3' ? 'S3' : 'file://'}`, async () => {
      const warehouse = storage === 'file' ? pathToFileURL(mkdtempSync(join(tmpdir(), 'floe-long-'))).href : undefined;
      const r = await start(
        `it_long_${storage}_${Date.now().toString(36)}`,
        {
          columns,
          partitionBy: [
            { column: 'note', transform: 'identity' },
            { column: 'note', transform: 'truncate[3000]', name: 'note_trunc' },
          ],
          isolateAfterAttempts: 2,
        },
        {},
        warehouse,
      );
      runs.push(r);
      const notes = ['é'.repeat(300), 'x'.repeat(5000), 'short', 'é'.repeat(300), `${'x'.repeat(5000)}y`, null];
      await produceMessages(
        r.cfg,
        r.topic,
        notes.map((note, i) => ({ key: `k${i}`, value: JSON.stringify({ event_id: `e${i}`, note }) })),
      );
      const status = await drain(r);
      assert.equal(status.state, 'stopped');
      assert.equal(status.totalRows, notes.length);
      assert.equal(status.totalDeadLetters, 0, 'no value was isolated: the paths are short');
      const tables = await openTables(r.cfg);
      try {
        const got = (await readColumnValues(tables, r.table, 'note')).map((v) => (v === null ? null : String(v))).sort();
        assert.deepEqual(got, [...notes].map((v) => v).sort(), 'every value lands whole (only the path is shortened)');
        const loaded = await tables.load(r.table);
        if (storage === 'file') assert.match(loaded.metadata.location, /^file:/);
      } finally {
        await tables.close?.();
      }
    });
  }

  it('an unknown deterministic failure of two records is isolated within isolateAfterAttempts and dead-lettered; every other record lands once', async () => {
    const r = await start(
      `it_poison_${Date.now().toString(36)}`,
      { columns, partitionBy: [], isolateAfterAttempts: 2 },
      { FLOE_TEST_FAIL_RECORD: 'POISON' },
    );
    runs.push(r);
    const values = Array.from({ length: 60 }, (_, i) => ({ event_id: `e${i}`, note: i === 17 || i === 40 ? `POISON ${i}` : `fine ${i}` }));
    await produceMessages(
      r.cfg,
      r.topic,
      values.map((v, i) => ({ key: `k${i}`, value: JSON.stringify(v) })),
    );
    const status = await drain(r);
    assert.equal(status.state, 'stopped');
    assert.equal(status.totalRows, 58);
    assert.equal(status.totalDeadLetters, 2);
    assert.equal(status.isolation, undefined, 'the isolation finished');
    const v = await verifyTable(r.cfg, r.table, r.topic);
    assert.deepEqual(v.problems, [], v.problems.join('; '));
    const tables = await openTables(r.cfg);
    try {
      const dl = findTable(r.cfg, r.table).deadLetterTable;
      const offsets = (await readColumnValues(tables, dl, 'offset')).map(String).sort();
      assert.deepEqual(offsets, ['17', '40']);
      const reasons = await readColumnValues(tables, dl, 'error');
      for (const reason of reasons) assert.match(String(reason), /isolated: the record failed its cycle alone.*injected failure/);
    } finally {
      await tables.close?.();
    }
  });
});
