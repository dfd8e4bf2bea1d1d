/**
 * Reading the rows of a table: each planned task's data file, streamed row group by row group,
 * minus the positions its position delete files or deletion vector list (spec "Scan Planning": a position delete
 * removes row `pos` of `file_path`, counting from 0 over the whole file). A task without deletes
 * is read exactly as before deletes existed: no delete file is opened, no row is inspected.
 */
import type * as arrow from 'apache-arrow';
import type { FileIO } from '../io/file-io';
import { readPositionDeletes } from '../parquet/position-deletes';
import { readParquetBatches } from '../parquet/reader';
import { deleteFileKey } from '../spec/position-delete';
import type { DataFile, LoadedTable, TableMetadata } from '../spec/types';
import { type FileScanTask, type PlanOptions, planTasks } from './plan';

/**
 * Deleted positions per delete file, loaded once per scan: one delete file usually serves many
 * data files of its partition. Holds every position of every delete file it loaded.
 */
export class PositionDeleteCache {
  private readonly files = new Map<string, Promise<Map<string, BigInt64Array>>>();
  constructor(private readonly io: FileIO) {}

  positions(deleteFile: DataFile): Promise<Map<string, BigInt64Array>> {
    const key = deleteFileKey(deleteFile); // the deletion vectors of one Puffin file are loaded one by one
    let p = this.files.get(key);
    if (!p) {
      p = readPositionDeletes(this.io, deleteFile);
      this.files.set(key, p);
      p.catch(() => this.files.delete(key)); // a failed read is retried by the next caller
    }
    return p;
  }
}

/** The sorted, distinct deleted positions of a task's data file (empty when it has no deletes). */
export async function deletedPositions(io: FileIO, task: FileScanTask, cache = new PositionDeleteCache(io)): Promise<BigInt64Array> {
  if (task.deletes.length === 0) return new BigInt64Array(0);
  const parts: BigInt64Array[] = [];
  for (const d of task.deletes) {
    const p = (await cache.positions(d)).get(task.file.filePath);
    if (p && p.length) parts.push(p);
  }
  if (parts.length === 1) return parts[0]!;
  const all = new BigInt64Array(parts.reduce((a, p) => a + p.length, 0));
  let o = 0;
  for (const p of parts) {
    all.set(p, o);
    o += p.length;
  }
  all.sort();
  let n = 0;
  for (let i = 0; i < all.length; i++) if (i === 0 || all[i] !== all[n - 1]) all[n++] = all[i]!;
  return all.subarray(0, n);
}

export interface ReadTaskOptions {
  /** top-level column names to read (default all) */
  columns?: string[];
  /** shares loaded delete files between the tasks of one scan */
  cache?: PositionDeleteCache;
}

/**
 * The live rows of one task as Arrow batches in file order: deleted rows are cut out, so a batch
 * may come back as several slices (zero-copy) around them. Batches keep the file's own Arrow
 * types (conformBatch gives the table's layout). Reads immutable files only.
 */
export async function* readTaskBatches(io: FileIO, task: FileScanTask, opts: ReadTaskOptions = {}): AsyncGenerator<arrow.RecordBatch> {
  const read = readParquetBatches(io, task.file.filePath, {
    fileSize: task.file.fileSizeInBytes,
    ...(opts.columns ? { columns: opts.columns } : {}),
  });
  if (task.deletes.length === 0) {
    yield* read;
    return;
  }
  const deleted = await deletedPositions(io, task, opts.cache ?? new PositionDeleteCache(io));
  if (deleted.length === 0) {
    yield* read;
    return;
  }
  let offset = 0n; // position of the batch's first row in the file
  let k = 0; // next deleted position to apply
  for await (const b of read) {
    const end = offset + BigInt(b.numRows);
    while (k < deleted.length && deleted[k]! < offset) k++; // a position past the previous batch's rows
    if (k >= deleted.length || deleted[k]! >= end) {
      yield b;
    } else {
      let from = 0;
      while (k < deleted.length && deleted[k]! < end) {
        const at = Number(deleted[k]! - offset);
        if (at > from) yield b.slice(from, at);
        from = at + 1;
        k++;
      }
      if (from < b.numRows) yield b.slice(from, b.numRows);
    }
    offset = end;
  }
}

/**
 * Every live row of a table's snapshot (planTasks options pick the snapshot and prune
 * partitions), task by task with position deletes applied. Reads immutable files only.
 */
export async function* scanBatches(
  table: TableMetadata | LoadedTable,
  io: FileIO,
  opts: PlanOptions & { columns?: string[] } = {},
): AsyncGenerator<arrow.RecordBatch> {
  const cache = new PositionDeleteCache(io);
  for (const task of await planTasks(table, io, opts)) {
    yield* readTaskBatches(io, task, { cache, ...(opts.columns ? { columns: opts.columns } : {}) });
  }
}
