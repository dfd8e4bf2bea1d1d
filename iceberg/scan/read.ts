/**
 * Reading the rows of a table: each planned task's data file, streamed row group by row group,
 * minus the positions its position delete files or deletion vector list (spec "Scan Planning": a position delete
 * removes row `pos` of `file_path`, counting from 0 over the whole file). A task without deletes
 * is read exactly as before deletes existed: no delete file is opened, no row is inspected.
 * On request, rows come with their v3 row lineage (`_row_id`, `_last_updated_sequence_number`:
 * materialized or inherited, spec "Row Lineage"), as compaction needs to keep it; otherwise
 * lineage columns a file materializes are not returned (they are not table columns).
 */
import * as arrow from 'apache-arrow';
import type { FileIO } from '../io/file-io';
import { readPositionDeletes } from '../parquet/position-deletes';
import { readParquetBatches, readParquetInfo } from '../parquet/reader';
import { fieldIdOf, icebergToArrowField } from '../parquet/schema';
import { deleteFileKey } from '../spec/position-delete';
import { LAST_UPDATED_SEQUENCE_NUMBER_FIELD_ID, ROW_ID_FIELD_ID, ROW_LINEAGE_FIELDS, isRowLineageFieldId } from '../spec/row-lineage';
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
  /**
   * Row lineage (spec "Row Lineage", v3): every batch ends with `_row_id` and
   * `_last_updated_sequence_number` (optional longs carrying their reserved field ids), the file's
   * materialized value where non-null, else inherited (first_row_id + the row's position in the
   * whole file, before deletes; the file's data sequence number). Without it, materialized lineage
   * columns are left out: they are not table columns.
   */
  rowLineage?: boolean;
}

/** An Int64 Arrow column from values (null where `valid` says so). */
function int64Data(values: BigInt64Array, valid: Uint8Array | undefined, nullCount: number): arrow.Data<arrow.Int64> {
  return arrow.makeData({
    type: new arrow.Int64(),
    length: values.length,
    nullCount,
    data: values,
    ...(nullCount > 0 ? { nullBitmap: valid } : {}),
  });
}

/**
 * `b` (rows `offset`.. of the task's file) with its lineage columns synthesized (ReadTaskOptions.rowLineage);
 * materialized lineage columns are replaced by the merged ones.
 */
function withRowLineage(b: arrow.RecordBatch, offset: bigint, task: FileScanTask): arrow.RecordBatch {
  const n = b.numRows;
  const fields = b.schema.fields;
  const materialized = (id: number): arrow.Vector | undefined => {
    const k = fields.findIndex((f) => fieldIdOf(f) === id);
    return k < 0 ? undefined : arrow.makeVector(b.data.children[k]!);
  };
  const firstRowId = task.file.firstRowId;
  const column = (id: number, inherited: (i: number) => bigint | undefined): arrow.Data<arrow.Int64> => {
    const m = materialized(id);
    const values = new BigInt64Array(n);
    const valid = new Uint8Array((n + 7) >> 3);
    let nulls = 0;
    for (let i = 0; i < n; i++) {
      const x = m?.get(i) as bigint | number | null | undefined;
      const v = x === null || x === undefined ? inherited(i) : BigInt(x);
      if (v === undefined) nulls++;
      else {
        values[i] = v;
        valid[i >> 3]! |= 1 << (i & 7);
      }
    }
    return int64Data(values, valid, nulls);
  };
  const rowIds = column(ROW_ID_FIELD_ID, (i) => (firstRowId === undefined ? undefined : firstRowId + offset + BigInt(i)));
  const seqs = column(LAST_UPDATED_SEQUENCE_NUMBER_FIELD_ID, () => (firstRowId === undefined ? undefined : task.dataSequenceNumber));
  const keep = fields.map((f, k) => [f, k] as const).filter(([f]) => !isRowLineageFieldId(fieldIdOf(f)));
  const schema = new arrow.Schema([...keep.map(([f]) => f), ...ROW_LINEAGE_FIELDS.map(icebergToArrowField)], b.schema.metadata);
  const children = [...keep.map(([, k]) => b.data.children[k]!), rowIds, seqs];
  return new arrow.RecordBatch(schema, arrow.makeData({ type: new arrow.Struct(schema.fields), length: n, nullCount: 0, children }));
}

/** `b` without materialized lineage columns; `b` itself when it has none (every v2 file). */
function withoutRowLineage(b: arrow.RecordBatch): arrow.RecordBatch {
  const fields = b.schema.fields;
  if (!fields.some((f) => isRowLineageFieldId(fieldIdOf(f)))) return b;
  const keep = fields.map((f, k) => [f, k] as const).filter(([f]) => !isRowLineageFieldId(fieldIdOf(f)));
  const schema = new arrow.Schema(
    keep.map(([f]) => f),
    b.schema.metadata,
  );
  const children = keep.map(([, k]) => b.data.children[k]!);
  return new arrow.RecordBatch(
    schema,
    arrow.makeData({ type: new arrow.Struct(schema.fields), length: b.numRows, nullCount: 0, children }),
  );
}

/** The file's batches with lineage columns added (or materialized ones dropped), positions counted over the whole file. */
async function* lineageBatches(
  read: AsyncGenerator<arrow.RecordBatch>,
  task: FileScanTask,
  rowLineage: boolean,
): AsyncGenerator<arrow.RecordBatch> {
  let offset = 0n;
  for await (const b of read) {
    yield rowLineage ? withRowLineage(b, offset, task) : withoutRowLineage(b);
    offset += BigInt(b.numRows);
  }
}

/**
 * The live rows of one task as Arrow batches in file order: deleted rows are cut out, so a batch
 * may come back as several slices (zero-copy) around them. Batches keep the file's own Arrow
 * types (conformBatch gives the table's layout). Reads immutable files only.
 */
export async function* readTaskBatches(io: FileIO, task: FileScanTask, opts: ReadTaskOptions = {}): AsyncGenerator<arrow.RecordBatch> {
  let columns = opts.columns;
  if (columns && opts.rowLineage) {
    // a projection reads the file's materialized lineage columns too (when it has them)
    const info = await readParquetInfo(io, task.file.filePath, { fileSize: task.file.fileSizeInBytes });
    const names = info.schema.fields.filter((f) => isRowLineageFieldId(fieldIdOf(f))).map((f) => f.name);
    const synthesized = new Set([...ROW_LINEAGE_FIELDS.map((f) => f.name), ...names]);
    columns = [...columns.filter((c) => !synthesized.has(c)), ...names];
  }
  const read = lineageBatches(
    readParquetBatches(io, task.file.filePath, {
      fileSize: task.file.fileSizeInBytes,
      ...(columns ? { columns } : {}),
    }),
    task,
    opts.rowLineage === true,
  );
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
  opts: PlanOptions & { columns?: string[]; rowLineage?: boolean } = {},
): AsyncGenerator<arrow.RecordBatch> {
  const cache = new PositionDeleteCache(io);
  for (const task of await planTasks(table, io, opts)) {
    yield* readTaskBatches(io, task, {
      cache,
      ...(opts.columns ? { columns: opts.columns } : {}),
      ...(opts.rowLineage ? { rowLineage: true } : {}),
    });
  }
}
