/**
 * One poll's changes of an upsert or CDC table, kept until the poll ends and then resolved
 * against the key index: per key only the last change counts (the highest offset of its
 * partition: a key lives in one partition of a key-partitioned topic), its old row (if the table
 * has one) gets a position delete, and an upsert's row is written. Rows of keys changed twice in
 * one poll are never written, so a poll's own files need no deletes.
 * Memory: the poll's rows until it ends (bounded by maxBytesPerCycle and maxRecordsPerCycle).
 */
import type { DataFilePositionDelete } from '../../iceberg';
import type { Row } from '../decode';
import type { Change } from './changes';
import type { KeyIndex } from './key-index';

interface ResolvedChanges {
  /** rows to write, one per key whose last change is an upsert */
  rows: Row[];
  /** the table's old rows of every changed key */
  deletes: DataFilePositionDelete[];
  /** keys whose last change deletes them */
  deletedKeys: number;
}

export class ChangeBuffer {
  private readonly rows: Row[] = [];
  /** per entry of `rows`: an upsert's row (true) or a delete's key (false) */
  private readonly upsert: boolean[] = [];

  add(c: Change): void {
    if (c.kind === 'upsert') this.rows.push(c.row);
    else this.rows.push(c.key);
    this.upsert.push(c.kind === 'upsert');
  }

  get size(): number {
    return this.rows.length;
  }

  /** Resolves against `index` (the table's current snapshot); synchronous, so the index cannot move meanwhile. */
  resolve(index: KeyIndex): ResolvedChanges {
    const keys = this.rows.length === 0 ? [] : index.keysOf(this.rows);
    const last = new Map<string, number>();
    keys.forEach((k, i) => last.set(k, i));
    const rows: Row[] = [];
    const deletes: DataFilePositionDelete[] = [];
    let deletedKeys = 0;
    for (const [key, i] of last) {
      const at = index.lookup(key);
      if (at) {
        const dataFile = index.dataFile(at.file);
        if (!dataFile) throw new Error(`key index: ${index.describe(key)} is in ${at.file}, whose partition the index does not know`);
        deletes.push({ dataFile, pos: BigInt(at.pos) });
      }
      if (this.upsert[i]) rows.push(this.rows[i]!);
      else deletedKeys++;
    }
    return { rows, deletes, deletedKeys };
  }
}
