/**
 * Orphans in tests: the files under a table's data/ folder that the current snapshot does not
 * reference (for an append-only ingest table, no expiry yet, exactly the files of uncommitted
 * attempts), and a planted one.
 */
import type { FloeConfig } from '../../config';
import { openTables, type Tables } from '../../table/tables';
import { planFiles } from '../../iceberg';

export async function unreferencedDataFiles(tables: Tables, table: string): Promise<string[]> {
  const loaded = await tables.load(table);
  const live = new Set((await planFiles(loaded.metadata, tables.io)).map((f) => f.filePath));
  const out: string[] = [];
  for await (const f of tables.io.list(`${loaded.metadata.location}/data/`)) {
    if (!live.has(f.location)) out.push(f.location);
  }
  return out;
}

/** Writes an orphan (a file no commit references) of `size` bytes into `table`'s data folder; returns its location. */
export async function plantOrphan(cfg: FloeConfig, table: string, name: string, size: number): Promise<string> {
  const tables = await openTables(cfg);
  try {
    const location = `${(await tables.load(table)).metadata.location}/data/orphan-${name}.parquet`;
    await tables.io.write(location, new Uint8Array(size));
    return location;
  } finally {
    await tables.close();
  }
}
