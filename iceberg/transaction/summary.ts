/**
 * Snapshot summaries with the standard keys Java's SnapshotSummary writes (added-*, deleted-*,
 * changed-partition-count, total-*), so engines that show table stats from the summary agree.
 */
import { partitionKey } from '../spec/partition';
import { type DataFile, DataFileContent, type Snapshot, type SnapshotOperation } from '../spec/types';

interface SummaryDelta {
  added: DataFile[];
  deleted: DataFile[];
}

const sum = (files: DataFile[], f: (d: DataFile) => number): number => files.reduce((a, d) => a + f(d), 0);

/**
 * Builds `summary` for a new snapshot. Totals continue the parent's totals (0 for the first
 * snapshot); when the parent summary lacks a total (an old writer), that total is omitted, as Java does.
 * Caller properties win over nothing but `operation` (which is never overridable).
 */
export function buildSummary(
  operation: SnapshotOperation,
  delta: SummaryDelta,
  parent: Snapshot | undefined,
  props: Record<string, string> = {},
): Snapshot['summary'] {
  const data = (fs: DataFile[]) => fs.filter((f) => f.content === DataFileContent.Data);
  const posDeletes = (fs: DataFile[]) => fs.filter((f) => f.content === DataFileContent.PositionDeletes);
  const eqDeletes = (fs: DataFile[]) => fs.filter((f) => f.content === DataFileContent.EqualityDeletes);
  const addedData = data(delta.added),
    deletedData = data(delta.deleted);
  const s: Record<string, string> = {};
  const setIf = (k: string, v: number): void => {
    if (v > 0) s[k] = String(v);
  };
  setIf('added-data-files', addedData.length);
  setIf('deleted-data-files', deletedData.length);
  setIf('added-delete-files', posDeletes(delta.added).length + eqDeletes(delta.added).length);
  setIf('removed-delete-files', posDeletes(delta.deleted).length + eqDeletes(delta.deleted).length);
  const dvs = (fs: DataFile[]) => fs.filter((f) => f.content === DataFileContent.PositionDeletes && f.fileFormat === 'PUFFIN');
  setIf('added-dvs', dvs(delta.added).length);
  setIf('removed-dvs', dvs(delta.deleted).length);
  setIf(
    'added-records',
    sum(addedData, (f) => f.recordCount),
  );
  setIf(
    'deleted-records',
    sum(deletedData, (f) => f.recordCount),
  );
  setIf(
    'added-files-size',
    sum(delta.added, (f) => f.fileSizeInBytes),
  );
  setIf(
    'removed-files-size',
    sum(delta.deleted, (f) => f.fileSizeInBytes),
  );
  setIf(
    'added-position-deletes',
    sum(posDeletes(delta.added), (f) => f.recordCount),
  );
  setIf(
    'removed-position-deletes',
    sum(posDeletes(delta.deleted), (f) => f.recordCount),
  );
  setIf(
    'added-equality-deletes',
    sum(eqDeletes(delta.added), (f) => f.recordCount),
  );
  setIf(
    'removed-equality-deletes',
    sum(eqDeletes(delta.deleted), (f) => f.recordCount),
  );
  const partitions = new Set([...delta.added, ...delta.deleted].map((f) => `${f.specId}:${partitionKey(f.partition)}`));
  s['changed-partition-count'] = String(partitions.size);

  const prev = parent?.summary as Record<string, string> | undefined;
  const total = (key: string, added: number, removed: number): void => {
    const before = prev === undefined ? '0' : prev[key];
    if (before === undefined || !/^-?\d+$/.test(before)) return;
    s[key] = (BigInt(before) + BigInt(added) - BigInt(removed)).toString();
  };
  total(
    'total-records',
    sum(addedData, (f) => f.recordCount),
    sum(deletedData, (f) => f.recordCount),
  );
  total(
    'total-files-size',
    sum(delta.added, (f) => f.fileSizeInBytes),
    sum(delta.deleted, (f) => f.fileSizeInBytes),
  );
  total('total-data-files', addedData.length, deletedData.length);
  total(
    'total-delete-files',
    posDeletes(delta.added).length + eqDeletes(delta.added).length,
    posDeletes(delta.deleted).length + eqDeletes(delta.deleted).length,
  );
  total(
    'total-position-deletes',
    sum(posDeletes(delta.added), (f) => f.recordCount),
    sum(posDeletes(delta.deleted), (f) => f.recordCount),
  );
  total(
    'total-equality-deletes',
    sum(eqDeletes(delta.added), (f) => f.recordCount),
    sum(eqDeletes(delta.deleted), (f) => f.recordCount),
  );
  return { ...s, ...props, operation };
}
