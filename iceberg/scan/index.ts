export { planFiles, planTasks, snapshotFor } from './plan';
export type { FileScanTask, PartitionPredicate, PlanOptions } from './plan';
export { allDataFiles, filesTable, historyTable, manifestsTable, partitionsTable, snapshotsTable } from './metadata-tables';
export { mapConcurrent } from './parallel';
export type { FileRow, HistoryRow, ManifestRow, PartitionRow, SnapshotRow } from './metadata-tables';
