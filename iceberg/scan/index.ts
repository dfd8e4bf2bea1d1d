export { planFiles, planTasks, snapshotFor } from './plan';
export { PositionDeleteCache, deletedPositions, readTaskBatches, scanBatches } from './read';
export type { ReadTaskOptions } from './read';
export type { FileScanTask, PartitionPredicate, PlanOptions } from './plan';
export { allDataFiles, filesTable, historyTable, manifestsTable, partitionsTable, snapshotsTable } from './metadata-tables';
export { mapConcurrent } from './parallel';
export type { FileRow, HistoryRow, ManifestRow, PartitionRow, ReadableMetrics, SnapshotRow } from './metadata-tables';
