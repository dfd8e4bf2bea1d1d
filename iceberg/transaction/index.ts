export * from './updates';
export { applyUpdates, checkRequirements } from './apply';
export { buildSummary } from './summary';
export { packEnd, planMerge } from './merge';
export { FastAppend, ReplaceDeleteFiles, RewriteFiles, RowDelta, SnapshotProducer, newSnapshotId } from './snapshot-producer';
export type { PendingCommit, RewriteDeletesOptions, RowDeltaOptions, TableAction } from './snapshot-producer';
export { ExpireSnapshots, snapshotsToExpire, unreachableFiles } from './expire';
export type { ExpireSnapshotsOptions, ExpiredFiles } from './expire';
export { ALREADY_COMMITTED, Transaction, expireSnapshots, fastAppend, rewriteFiles, rowDelta } from './transaction';
export type { CommitOptions, CommitResult, RetryOptions, ValidateOutcome } from './transaction';
export {
  ENTRIES_PROCESSED,
  MANIFESTS_CREATED,
  MANIFESTS_KEPT,
  MANIFESTS_REPLACED,
  RewriteManifests,
  packByPartition,
} from './rewrite-manifests';
export type { RewriteManifestsNoop, RewriteManifestsOptions, RewriteManifestsPlan } from './rewrite-manifests';
