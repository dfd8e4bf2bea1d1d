/**
 * The worker's key indexes, one per upsert table, each a cache of one snapshot (key-index.ts):
 * brought to the table's current snapshot before each use (advance: only the snapshots since;
 * rebuilt when that cannot be followed), used by one caller at a time. Lost with the process and
 * rebuilt from the table by the next poll: nothing here is needed for correctness.
 */
import type { FileIO, TableMetadata } from '../../iceberg';
import { SpillingKeyStore } from './disk-key-store';
import { buildKeyIndex, type KeyIndex } from './key-index';

/** Where a table's index lives: in memory up to `maxMemoryKeys`, then on disk (disk-key-store.ts). */
interface KeyIndexPlacement {
  maxMemoryKeys: number;
  spillDir?: string;
}

interface Entry {
  /** the id columns and placement the index was built for */
  shape: string;
  index: KeyIndex | undefined;
  /** the last use: the next waits for it */
  tail: Promise<unknown>;
}

class KeyIndexes {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly io: FileIO) {}

  /**
   * Runs `use` with `table`'s index at `metadata`'s current snapshot (the caller loaded it just
   * before). A failure to build or advance drops the index (the next use rebuilds it).
   */
  async use<T>(
    table: string,
    metadata: TableMetadata,
    idColumns: readonly string[],
    placement: KeyIndexPlacement,
    use: (index: KeyIndex) => T,
  ): Promise<T> {
    const shape = JSON.stringify([idColumns, placement.maxMemoryKeys, placement.spillDir ?? '']);
    let e = this.entries.get(table);
    if (!e || e.shape !== shape) {
      e?.index?.close();
      this.entries.set(table, (e = { shape, index: undefined, tail: Promise.resolve() }));
    }
    const entry = e;
    const run = entry.tail.then(async () => {
      try {
        if (!entry.index) {
          const store = new SpillingKeyStore(placement.maxMemoryKeys, tidyDir(placement.spillDir));
          try {
            entry.index = await buildKeyIndex(this.io, metadata, idColumns, { store });
          } catch (err) {
            store.close();
            throw err;
          }
        } else await entry.index.advance(this.io, metadata);
      } catch (err) {
        entry.index?.close();
        entry.index = undefined;
        throw err;
      }
      return use(entry.index);
    });
    entry.tail = run.catch(() => undefined);
    return run;
  }

  /** Keys held over all tables. */
  get keys(): number {
    let n = 0;
    for (const e of this.entries.values()) n += e.index?.size ?? 0;
    return n;
  }
}

const tidyDir = (dir: string | undefined): { dir?: string } => (dir === undefined ? {} : { dir });

const byIo = new WeakMap<FileIO, KeyIndexes>();

/** The process's key indexes for tables read through `io` (one per worker's storage). */
export function keyIndexesOf(io: FileIO): KeyIndexes {
  let k = byIo.get(io);
  if (!k) byIo.set(io, (k = new KeyIndexes(io)));
  return k;
}
