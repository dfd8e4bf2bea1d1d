/**
 * Exactly-once checks, through floe's own reader and through an independent engine (DuckDB's
 * iceberg extension, in the stack's Python venv): rows + dead letters == messages in the topic,
 * and no event id appears twice.
 */
import { Kafka, logLevel } from 'kafkajs';
import type { FloeConfig } from '../config';
import { findTable } from '../config';
import { openTables } from '../table/tables';
import { readColumnValues } from '../client/tables';
import { runPythonJson } from '../stack/python';

export interface Verification {
  messagesInTopic: number;
  rows: number;
  distinctEventIds: number;
  deadLetters: number;
  duckdb: { rows: number; distinctEventIds: number; deadLetters: number } | { error: string };
  metadataLocation: string;
  ok: boolean;
  problems: string[];
}

export async function countTopicMessages(brokers: string[], topic: string): Promise<number> {
  const admin = new Kafka({ clientId: 'floe-verify', brokers, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const offsets = await admin.fetchTopicOffsets(topic);
    return offsets.reduce((n, p) => n + Number(BigInt(p.high) - BigInt(p.low)), 0);
  } finally {
    await admin.disconnect();
  }
}

const DUCKDB_COUNT = `
import json, sys
from floe_duckdb import connect
con = connect()
rows, distinct = con.sql(f"SELECT count(*), count(DISTINCT event_id) FROM iceberg_scan('{sys.argv[1]}')").fetchone()
out = {"rows": rows, "distinctEventIds": distinct}
if len(sys.argv) > 2:
    out["deadLetters"] = con.sql(f"SELECT count(*) FROM iceberg_scan('{sys.argv[2]}')").fetchone()[0]
print(json.dumps(out))
`;

/** The table's rows and distinct event ids as DuckDB reads them (and the dead-letter table's rows, given its metadata). */
export async function duckdbCounts(metadataLocation: string): Promise<{ rows: number; distinctEventIds: number }>;
export async function duckdbCounts(
  metadataLocation: string,
  deadLetterMetadataLocation: string,
): Promise<{ rows: number; distinctEventIds: number; deadLetters: number }>;
export async function duckdbCounts(metadataLocation: string, deadLetterMetadataLocation?: string) {
  const args = deadLetterMetadataLocation ? [metadataLocation, deadLetterMetadataLocation] : [metadataLocation];
  return runPythonJson<{ rows: number; distinctEventIds: number; deadLetters?: number }>(DUCKDB_COUNT, args, { timeoutMs: 120_000 });
}

export async function verifyTable(cfg: FloeConfig, table: string, topic: string): Promise<Verification> {
  const t = findTable(cfg, table);
  const tables = await openTables(cfg);
  try {
    const loaded = await tables.load(table);
    const ids = await readColumnValues(tables, table, 'event_id');
    const dead = await readColumnValues(tables, t.deadLetterTable, 'offset');
    const messagesInTopic = await countTopicMessages(cfg.kafka.brokers, topic);
    const distinct = new Set(ids).size;
    let duckdb: Verification['duckdb'];
    try {
      duckdb = await duckdbCounts(loaded.metadataLocation, (await tables.load(t.deadLetterTable)).metadataLocation);
    } catch (e) {
      duckdb = { error: (e as Error).message };
    }
    const problems: string[] = [];
    if (ids.length + dead.length !== messagesInTopic)
      problems.push(`rows (${ids.length}) + dead letters (${dead.length}) != messages in topic (${messagesInTopic})`);
    if (distinct !== ids.length) problems.push(`${ids.length - distinct} duplicate event ids`);
    if ('error' in duckdb) problems.push(`DuckDB could not read the table: ${duckdb.error}`);
    else {
      if (duckdb.rows !== ids.length) problems.push(`DuckDB counts ${duckdb.rows} rows, floe ${ids.length}`);
      if (duckdb.distinctEventIds !== duckdb.rows)
        problems.push(`DuckDB sees ${duckdb.rows - duckdb.distinctEventIds} duplicate event ids`);
      if (duckdb.deadLetters !== dead.length) problems.push(`DuckDB counts ${duckdb.deadLetters} dead letters, floe ${dead.length}`);
      if (duckdb.rows + duckdb.deadLetters !== messagesInTopic)
        problems.push(`DuckDB: rows (${duckdb.rows}) + dead letters (${duckdb.deadLetters}) != messages in topic (${messagesInTopic})`);
    }
    return {
      messagesInTopic,
      rows: ids.length,
      distinctEventIds: distinct,
      deadLetters: dead.length,
      duckdb,
      metadataLocation: loaded.metadataLocation,
      ok: problems.length === 0,
      problems,
    };
  } finally {
    await tables.close();
  }
}
