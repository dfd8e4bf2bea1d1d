export * from './types';
export {
  planFileGroups,
  binPack,
  shouldRewrite,
  commitBatchSize,
  fileStats,
  matchesFilter,
  transformTimeRange,
  lookbackWindow,
  validateCompactOptions,
  type LiveFile,
} from './plan';
export {
  compactOptionsFor,
  planCompaction,
  rewriteFileGroup,
  commitRewrite,
  tableFileStats,
  toLiveFiles,
  SUMMARY_COMPACT_GROUPS,
  INPUTS_VANISHED,
} from './compact';
export { expireSnapshotsCommit, deleteExpiredFiles, PROP_EXPIRE_ID, PROP_EXPIRE_BEFORE } from './expire';
export { removeOrphanFiles, checkGrace, UNSAFE_GRACE, STALE_PENDING_MS } from './orphans';
export { liveDataFiles, reachableFiles, reachableSize, relPath, absPath, type Reachable } from './reachable';
