export * from './types';
export {
  planFileGroups,
  binPack,
  commitBatchSize,
  fileStats,
  matchesFilter,
  transformTimeRange,
  lookbackWindow,
  type LiveFile,
} from './plan';
export { planCompaction, rewriteFileGroup, commitRewrite, tableFileStats, toLiveFiles } from './compact';
export { expireSnapshotsCommit, deleteExpiredFiles, expireNow, expiryDue } from './expire';
export { removeOrphanFiles } from './orphans';
export { liveDataFiles, reachableFiles } from './reachable';
