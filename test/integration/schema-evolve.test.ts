/**
 * An optional column added to the config evolves the table on the next ingest start (real stack:
 * Kafka, Temporal, SeaweedFS S3, SQLite catalog), exactly once even when the worker is SIGKILLed
 * right after the schema commit and before any data of the new schema is written: the restarted
 * cycle finds the column there and adds nothing; rows == messages with no duplicate; rows written
 * before the change read as null in the new column, later rows carry its values, through floe's
 * reader, DuckDB and PyIceberg.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { ensureStack } from '../../stack/stack';
import { floeHome } from '../../stack/paths';
import { runPythonJson } from '../../stack/python';
import { scenarioConfig } from '../../demo/scenario';
import { verifyTable } from '../../demo/verify';
import { loadConfig } from '../../config';
import { connectClient, signalIngest, startIngest, waitForIngest } from '../../client';
import { openTables } from '../../table/tables';
import { currentSchema } from '../../iceberg';
import { spawnWorker, type WorkerProcess } from '../../workers/process';
import { produceMessages } from '../support/produce';

const N = 20;
const v1 = [
  { name: 'event_id', type: 'string', required: true },
  { name: 'n', type: 'long', required: true },
];

const READ = `
import json, sys
from pyiceberg.table import StaticTable
from floe_duckdb import connect, pyiceberg_s3_properties
t = StaticTable.from_metadata(sys.argv[1], properties=pyiceberg_s3_properties())
py = sorted([r["event_id"], r["note"]] for r in t.scan().to_arrow().to_pylist())
duck = sorted([list(r) for r in connect().sql(f"SELECT event_id, note FROM iceberg_scan('{sys.argv[1]}')").fetchall()])
print(json.dumps({"pyiceberg": py, "duckdb": duck}))
`;

describe('schema evolution from the config (real stack)', { timeout: 10 * 60_000 }, () => {
  const workers: WorkerProcess[] = [];
  let dir: string;

  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3']);
    dir = mkdtempSync(join(tmpdir(), 'floe-evolve-'));
  });
  after(async () => {
    for (const w of workers) await w.kill('SIGKILL');
  });

  it('adds the column before writing, survives a SIGKILL after the schema commit, and reads back old rows as null', async () => {
    const c = scenarioConfig(`it_evolve_${Date.now().toString(36)}`, 1, '1s', { columns: v1, partitionBy: [] });
    const cfg1 = loadConfig(c.path);
    const send = (from: number) =>
      produceMessages(
        cfg1,
        c.topic,
        Array.from({ length: N }, (_, k) => ({
          value: JSON.stringify({ event_id: `e${String(from + k).padStart(3, '0')}`, n: from + k, note: `note-${from + k}` }),
        })),
      );
    const log = (name: string) => join(floeHome(), 'logs', `${c.table.replace(/\W/g, '_')}-${name}.log`);

    // 1. the table as first configured: no note column; the messages carry one that is ignored
    await send(0);
    workers.push(spawnWorker(c.path, log('v1')));
    let fc = await connectClient(cfg1);
    try {
      await startIngest(fc, c.table);
      await signalIngest(fc, c.table, 'stop');
      assert.equal((await waitForIngest(fc, c.table)).totalRows, N);
    } finally {
      await fc.close();
    }
    await workers.pop()!.kill('SIGTERM');

    // 2. the config gains an optional column; the worker dies right after the schema commit
    const raw = parseYaml(readFileSync(c.path, 'utf8')) as { tables: Array<{ columns: unknown[] }> };
    raw.tables[0]!.columns.push({ name: 'note', type: 'string' });
    writeFileSync(c.path, stringifyYaml(raw));
    const cfg2 = loadConfig(c.path);
    await send(N);
    const marker = join(dir, 'killed');
    const doomed = spawnWorker(c.path, log('v2-killed'), { FLOE_TEST_KILL_AT: 'after-evolve', FLOE_TEST_KILL_MARKER: marker });
    workers.push(doomed);
    fc = await connectClient(cfg2);
    try {
      await startIngest(fc, c.table); // no drift: a new optional column is not drift
      await signalIngest(fc, c.table, 'stop');
      const exited = await doomed.exited;
      assert.equal(exited.signal, 'SIGKILL', 'the worker killed itself at after-evolve');
      assert.match(readFileSync(marker, 'utf8'), /^after-evolve /);
      workers.push(spawnWorker(c.path, log('v2')));
      const status = await waitForIngest(fc, c.table);
      assert.equal(status.totalRows, N, 'this run committed the second batch');
    } finally {
      await fc.close();
    }
    assert.ok(existsSync(marker));

    // 3. exactly once, the column added once, old rows null
    const v = await verifyTable(cfg2, c.table, c.topic);
    assert.deepEqual(v.problems, []);
    assert.equal(v.rows, 2 * N);
    const tables = await openTables(cfg2);
    try {
      const { metadata, metadataLocation } = await tables.load(c.table);
      const fields = currentSchema(metadata).fields.map((f) => [f.id, f.name]);
      assert.deepEqual(fields.slice(-1), [[fields.length, 'note']], 'note added once, at the end');
      assert.equal(metadata.schemas.length, 2, 'one schema change');
      const expected = Array.from({ length: 2 * N }, (_, i) => [`e${String(i).padStart(3, '0')}`, i < N ? null : `note-${i}`]);
      const read = await runPythonJson<{ pyiceberg: unknown[]; duckdb: unknown[] }>(READ, [metadataLocation], { timeoutMs: 120_000 });
      assert.deepEqual(read.pyiceberg, expected);
      assert.deepEqual(read.duckdb, expected);
    } finally {
      await tables.close();
    }
  });
});
