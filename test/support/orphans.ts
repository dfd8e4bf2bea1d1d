/**
 * Files under a table's data/ folder that the current snapshot does not reference. For an
 * append-only ingest table (no expiry yet) these are exactly the files of uncommitted attempts.
 */
import type { Tables } from '../../ingest/tables';
import { planFiles } from '../../iceberg/scan';

export async function unreferencedDataFiles(tables: Tables, table: string): Promise<string[]> {
  const loaded = await tables.load(table);
  const live = new Set((await planFiles(loaded.metadata, tables.io)).map((f) => f.filePath));
  const out: string[] = [];
  for await (const f of tables.io.list(`${loaded.metadata.location}/data/`)) {
    if (!live.has(f.location)) out.push(f.location);
  }
  return out;
}
