/**
 * Shared by the maintenance integration tests: seed a table with many small files (no Kafka
 * needed), run an in-process worker, and read a table through independent engines (PyIceberg's
 * StaticTable and DuckDB's iceberg_scan) to compare rows before and after maintenance.
 */
import { Runtime, DefaultLogger } from '@temporalio/worker';
import type { FloeConfig } from '../../config';
import { findTable, loadConfig } from '../../config';
import { openTables } from '../../table/tables';
import { runPythonJson } from '../../stack/python';
import { createWorker } from '../../workers';
import { orderEvents } from '../../demo/generator';
import type { Row } from '../../ingest/decode';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { floeHome } from '../../stack/paths';
import { ensureIngestTables } from '../../ingest/tables';

/**
 * A config for a fresh table `demo.<name>` (topic `<name>`, task queue `floe-<name>`), derived
 * from examples/orders.yaml like demo/scenario's, with maintenance overrides.
 */
export function maintenanceTestConfig(
  name: string,
  maintenance: Record<string, unknown> = {},
): { path: string; table: string; cfg: FloeConfig } {
  const base = parseYaml(readFileSync(resolve(__dirname, '../../examples/orders.yaml'), 'utf8')) as any;
  const table = `demo.${name}`;
  const t = base.tables[0];
  Object.assign(t, { table, topic: name, commitInterval: '2s', parallelism: 1 });
  t.maintenance = { ...t.maintenance, ...maintenance };
  base.temporal = { ...(base.temporal ?? {}), taskQueue: `floe-${name}` };
  const dir = join(floeHome(), 'runs');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.yaml`);
  writeFileSync(path, stringifyYaml(base));
  return { path, table, cfg: loadConfig(path) };
}

let runtimeInstalled = false;

/** Runs `fn` while an in-process floe worker serves the config's task queue. */
export async function withWorker<T>(cfg: FloeConfig, fn: () => Promise<T>): Promise<T> {
  if (!runtimeInstalled && !process.env.FLOE_VERBOSE) {
    Runtime.install({ logger: new DefaultLogger('WARN') });
    runtimeInstalled = true;
  }
  const { worker, close } = await createWorker(cfg, { identity: `floe-test-worker@${process.pid}` });
  try {
    return await worker.runUntil(fn());
  } finally {
    await close();
  }
}

/** Order events as table rows, the way the ingest decoder types them. */
export function orderRows(from: number, count: number): Row[] {
  const rows: Row[] = [];
  let n = 0;
  for (const e of orderEvents()) {
    if (n >= from + count) break;
    if (n++ < from) continue;
    rows.push({
      event_id: e.event_id,
      order_id: BigInt(e.order_id),
      event_type: e.event_type,
      event_time: BigInt(Date.parse(e.event_time)) * 1000n,
      customer_id: BigInt(e.customer_id),
      amount: e.amount,
      currency: e.currency,
      kafka_partition: 0,
      kafka_offset: BigInt(n - 1),
    });
  }
  return rows;
}

/** Appends `commits` snapshots of `rowsPerCommit` rows each: one small file per partition per commit. */
export async function seedSmallFiles(cfg: FloeConfig, table: string, commits: number, rowsPerCommit: number): Promise<number> {
  const t = findTable(cfg, table);
  const tables = await openTables(cfg);
  try {
    await ensureIngestTables(tables, t, cfg.schemaRegistry);
    let files = 0;
    for (let c = 0; c < commits; c++) {
      const written = await tables.writeDataFiles(t.table, orderRows(c * rowsPerCommit, rowsPerCommit), `seed-${c}`, t.targetFileSizeBytes);
      await tables.appendOnce(t.table, { files: written, summary: { 'floe.commit-id': `seed-${table}-${c}` }, validate: () => undefined });
      files += written.length;
    }
    return files;
  } finally {
    await tables.close();
  }
}

export interface EngineRead {
  rows: number;
  distinctEventIds: number;
  amountSum: number;
  files: number;
}

const READ = String.raw`
import json, sys
from pyiceberg.table import StaticTable
from floe_duckdb import connect, pyiceberg_s3_properties
loc = sys.argv[1]
t = StaticTable.from_metadata(loc, properties=pyiceberg_s3_properties())
a = t.scan().to_arrow()
import pyarrow.compute as pc
py = {"rows": a.num_rows, "distinctEventIds": len(pc.unique(a["event_id"])), "amountSum": round(float(pc.sum(a["amount"]).as_py() or 0), 2),
      "files": len(list(t.scan().plan_files()))}
con = connect()
r = con.sql(f"SELECT count(*), count(DISTINCT event_id), round(coalesce(sum(amount), 0), 2) FROM iceberg_scan('{loc}')").fetchone()
print(json.dumps({"pyiceberg": py, "duckdb": {"rows": r[0], "distinctEventIds": r[1], "amountSum": float(r[2]), "files": py["files"]}}))
`;

/** The table at `metadataLocation` as PyIceberg and DuckDB read it. */
export async function engineReads(metadataLocation: string): Promise<{ pyiceberg: EngineRead; duckdb: EngineRead }> {
  return runPythonJson(READ, [metadataLocation], { timeoutMs: 180_000 });
}

export async function currentMetadataLocation(cfg: FloeConfig, table: string): Promise<string> {
  const tables = await openTables(cfg);
  try {
    return (await tables.load(table)).metadataLocation;
  } finally {
    await tables.close();
  }
}
