/**
 * Runs iceberg_oracle.py (PyIceberg / DuckDB) in the stack's venv with one JSON request and
 * returns its JSON answer. The request goes through a temp file: appended rows can be large.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runPython } from '../../stack';
import type { CanonRow } from './canonical';

export const ORACLE_SCRIPT = join(__dirname, 'iceberg_oracle.py');

export interface OracleCatalog {
  name: string;
  uri: string;
  warehouse: string;
}

export interface OracleFile {
  file_path: string;
  content: number;
  file_format: string;
  spec_id: number;
  record_count: number;
  file_size_in_bytes: number;
  partition: Record<string, string | boolean | null>;
  column_sizes: Record<string, number> | null;
  value_counts: Record<string, number> | null;
  null_value_counts: Record<string, number> | null;
  nan_value_counts: Record<string, number> | null;
  lower_bounds: Record<string, string> | null;
  upper_bounds: Record<string, string> | null;
  split_offsets: number[] | null;
  /** manifest entry facts (inherited from the manifest list where null in the file) */
  sequence_number: number | null;
  file_sequence_number: number | null;
  status: number;
  reference?: {
    record_count: number;
    value_counts: Record<string, number>;
    null_value_counts: Record<string, number>;
    nan_value_counts: Record<string, number>;
    lower_bounds: Record<string, string>;
    upper_bounds: Record<string, string>;
    split_offsets: number[];
  };
}

export interface OracleSnapshot {
  snapshot_id: string;
  parent_snapshot_id: string | null;
  sequence_number: number;
  operation: string | null;
  summary: Record<string, string>;
}
export interface OracleSnapshots {
  current: string | null;
  list: OracleSnapshot[];
}

export interface ReadResult {
  metadata_location: string;
  columns: Array<[string, string]>;
  rows: CanonRow[];
  files: OracleFile[];
  snapshots: OracleSnapshots;
}

async function run<T>(request: Record<string, unknown>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'floe-oracle-'));
  const file = join(dir, 'request.json');
  try {
    writeFileSync(file, JSON.stringify(request));
    const { stdout } = await runPython([ORACLE_SCRIPT, file], { timeoutMs: 5 * 60_000 });
    const last = stdout.trim().split('\n').pop() ?? '';
    try {
      return JSON.parse(last) as T;
    } catch {
      throw new Error(
        `oracle ${String(request['op'])}: expected JSON on the last stdout line, found ${JSON.stringify(last.slice(0, 300))}`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export const pyRead = (catalog: OracleCatalog, table: string, opts: { referenceStats?: boolean } = {}): Promise<ReadResult> =>
  run({ op: 'read', catalog, table, reference_stats: opts.referenceStats ?? false });

export const duckRead = (
  metadataLocation: string,
  columns: Array<[string, string]>,
  queries: Record<string, string> = {},
): Promise<{ count: number; rows: CanonRow[]; queries?: Record<string, unknown[][]> }> =>
  run({ op: 'duckdb', metadata_location: metadataLocation, columns, queries });

/** PyIceberg plan_files per row filter (PyIceberg's string filter syntax); `__all__` = no filter. */
export const pyPlan = (catalog: OracleCatalog, table: string, filters: Record<string, string>): Promise<Record<string, string[]>> =>
  run({ op: 'plan', catalog, table, filters });

/** Appends rows given in canonical form (keyed by column name) with PyIceberg. */
export const pyAppend = (
  catalog: OracleCatalog,
  table: string,
  rows: Array<Record<string, unknown>>,
  summary: Record<string, string> = {},
): Promise<{ metadata_location: string; snapshot_id: string }> => run({ op: 'append', catalog, table, rows, summary });

export const pyCount = (
  catalog: OracleCatalog,
  table: string,
  column: string,
): Promise<{ count: number; values: number[]; snapshots: OracleSnapshots }> => run({ op: 'count', catalog, table, column });
