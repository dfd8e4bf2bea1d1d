/** Puffin files and v3 deletion vectors (deletion-vector-v1 blobs). */
export { decodePuffinFooter, encodePuffin, puffinBlob, writePuffin } from './puffin';
export type { PuffinBlobInput, PuffinBlobMetadata, PuffinFooter, WrittenPuffin } from './puffin';
export {
  DELETION_VECTOR_BLOB_TYPE,
  ROW_POSITION_FIELD_ID,
  decodeDeletionVector,
  deserializePositions,
  encodeDeletionVector,
  portableRoaringSize,
  readDeletionVector,
  serializePositions,
} from './deletion-vector';
export { liveDeletes, mergeDeletionVectors, readDeleteFile, writeDeletionVectors } from './deletion-vectors';
export type { DeletionVectorTarget, LiveDeletes, MergedDeletionVectors } from './deletion-vectors';
