/**
 * A synthetic customer table's changes, for the upsert/CDC demo and its tests: inserts, updates
 * and deletes of `keys` customer ids, deterministic in the event number, with the source state
 * they leave (what the Iceberg table must equal), and the check of a table against it through
 * floe's reader and DuckDB.
 */
import type { FloeConfig } from '../config';
import { findTable } from '../config';
import { openTables } from '../table/tables';
import { PositionDeleteCache, planTasks, readTaskBatches } from '../iceberg';
import { runPythonJson } from '../stack/python';

interface Customer {
  id: number;
  name: string;
  email: string;
  tier: string;
  version: number;
  updated_at: string;
}

/** One change of the source table. */
interface CustomerChange {
  id: number;
  op: 'c' | 'u' | 'd';
  before: Customer | null;
  after: Customer | null;
}

const mix = (n: number): number => {
  let x = (n ^ 0x9e3779b9) >>> 0;
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b) >>> 0;
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35) >>> 0;
  return (x ^ (x >>> 16)) >>> 0;
};
const TIERS = ['free', 'plus', 'pro'];
const T0 = Date.UTC(2026, 6, 1);

/**
 * The changes of a customer table of `keys` ids: event n picks id mix(n) % keys; an absent id is
 * inserted, a present one updated (3 of 4) or deleted (1 of 4). `state` is the source table.
 */
export class CustomerSource {
  readonly state = new Map<number, Customer>();
  private n = 0;
  inserts = 0;
  updates = 0;
  deletes = 0;

  constructor(private readonly keys: number) {}

  next(): CustomerChange {
    const n = this.n++;
    const id = mix(n) % this.keys;
    const before = this.state.get(id) ?? null;
    if (before && mix(n + 7) % 4 === 0) {
      this.state.delete(id);
      this.deletes++;
      return { id, op: 'd', before, after: null };
    }
    const after: Customer = {
      id,
      name: `customer ${id} v${(before?.version ?? 0) + 1}`,
      email: `c${id}@example.com`,
      tier: TIERS[mix(n + 3) % 3]!,
      version: (before?.version ?? 0) + 1,
      updated_at: new Date(T0 + n * 1000).toISOString(),
    };
    this.state.set(id, after);
    if (before) this.updates++;
    else this.inserts++;
    return { id, op: before ? 'u' : 'c', before, after };
  }
}

/**
 * A change as Kafka messages. `upsert`: the row keyed by its id as text, a delete a tombstone.
 * `cdc`: Debezium's envelope keyed by `{"id": …}`, a delete followed by its tombstone (as
 * Debezium sends them).
 */
export function changeMessages(c: CustomerChange, mode: 'upsert' | 'cdc', n: number): Array<{ key: string; value: string | null }> {
  if (mode === 'upsert') return [{ key: String(c.id), value: c.after ? JSON.stringify(c.after) : null }];
  const key = JSON.stringify({ id: c.id });
  const event = {
    before: c.before,
    after: c.after,
    source: { connector: 'postgresql', name: 'dbserver1', db: 'shop', schema: 'public', table: 'customers', lsn: 1000 + n },
    op: c.op,
    ts_ms: T0 + n * 1000,
  };
  const out = [{ key, value: JSON.stringify(event) as string | null }];
  if (c.op === 'd') out.push({ key, value: null });
  return out;
}

interface UpsertVerification {
  /** keys in the source state */
  expected: number;
  rows: number;
  duckdb: { rows: number; distinct: number; mismatched: number } | { error: string };
  pyiceberg?: { rows: number };
  metadataLocation: string;
  deadLetters: number;
  ok: boolean;
  problems: string[];
}

/** (id, version) of every row as DuckDB's iceberg_scan and PyIceberg's scan read it, position deletes applied. */
const ENGINE_ROWS = `
import json, sys
from floe_duckdb import connect, pyiceberg_s3_properties
from pyiceberg.table import StaticTable
con = connect()
duck = con.sql(f"SELECT id, version FROM iceberg_scan('{sys.argv[1]}')").fetchall()
t = StaticTable.from_metadata(sys.argv[1], properties=pyiceberg_s3_properties()).scan(selected_fields=("id", "version")).to_arrow()
py = list(zip(t.column("id").to_pylist(), t.column("version").to_pylist()))
print(json.dumps({"duckdb": [[int(a), int(b)] for a, b in duck], "pyiceberg": [[int(a), int(b)] for a, b in py]}))
`;

/** Checks the table equals `state` (id -> version) through floe's reader (deletes applied) and DuckDB. */
export async function verifyUpsertTable(
  cfg: FloeConfig,
  table: string,
  state: ReadonlyMap<number, Pick<Customer, 'version'>>,
): Promise<UpsertVerification> {
  const t = findTable(cfg, table);
  const tables = await openTables(cfg);
  try {
    const loaded = await tables.load(table);
    const cache = new PositionDeleteCache(tables.io);
    const rows: Array<[number, number]> = [];
    for (const task of await planTasks(loaded.metadata, tables.io)) {
      for await (const b of readTaskBatches(tables.io, task, { columns: ['id', 'version'], cache })) {
        const ids = b.getChild('id')!,
          versions = b.getChild('version')!;
        for (let i = 0; i < b.numRows; i++) rows.push([Number(ids.get(i)), Number(versions.get(i))]);
      }
    }
    const dead = await tables.load(t.deadLetterTable);
    const deadLetters = Number(dead.metadata.snapshots.at(-1)?.summary['total-records'] ?? '0');
    const problems = compareState('floe', rows, state);
    if (deadLetters !== 0) problems.push(`${deadLetters} dead letters (none expected)`);
    let duckdb: UpsertVerification['duckdb'];
    let pyiceberg: UpsertVerification['pyiceberg'];
    try {
      const e = await runPythonJson<Record<'duckdb' | 'pyiceberg', Array<[number, number]>>>(ENGINE_ROWS, [loaded.metadataLocation], {
        timeoutMs: 120_000,
      });
      const p = compareState('DuckDB', e.duckdb, state);
      problems.push(...p, ...compareState('PyIceberg', e.pyiceberg, state));
      duckdb = { rows: e.duckdb.length, distinct: new Set(e.duckdb.map((r) => r[0])).size, mismatched: p.length };
      pyiceberg = { rows: e.pyiceberg.length };
    } catch (e) {
      duckdb = { error: (e as Error).message };
      problems.push(`DuckDB and PyIceberg could not read the table: ${duckdb.error}`);
    }
    return {
      metadataLocation: loaded.metadataLocation,
      expected: state.size,
      rows: rows.length,
      duckdb,
      ...(pyiceberg ? { pyiceberg } : {}),
      deadLetters,
      ok: problems.length === 0,
      problems,
    };
  } finally {
    await tables.close();
  }
}

/** What differs between a reader's (id, version) rows and the source state. */
function compareState(
  reader: string,
  rows: ReadonlyArray<[number, number]>,
  state: ReadonlyMap<number, Pick<Customer, 'version'>>,
): string[] {
  const problems: string[] = [];
  const seen = new Map<number, number>();
  let duplicates = 0,
    stale = 0,
    deleted = 0;
  for (const [id, version] of rows) {
    if (seen.has(id)) duplicates++;
    seen.set(id, version);
    const want = state.get(id);
    if (!want) deleted++;
    else if (want.version !== version) stale++;
  }
  const missing = [...state.keys()].filter((id) => !seen.has(id)).length;
  if (duplicates) problems.push(`${reader}: ${duplicates} keys found twice`);
  if (stale) problems.push(`${reader}: ${stale} keys at an old version`);
  if (deleted) problems.push(`${reader}: ${deleted} rows of deleted keys`);
  if (missing) problems.push(`${reader}: ${missing} keys missing`);
  return problems;
}
