/**
 * Arrow <-> Parquet for Iceberg data files: schemas with field ids, JS values -> Arrow, column
 * metrics, one-shot and rolling writers, and a row-group-streaming reader.
 */
export {
  PARQUET_FIELD_ID_KEY,
  fieldIdOf,
  icebergToArrowField,
  icebergToArrowSchema,
  icebergToArrowType,
  leafColumns,
  type LeafColumn,
} from './schema';
export {
  BUILD_CHUNK_ROWS,
  buildData,
  columnsToRecordBatch,
  columnsToRecordBatches,
  rowsToRecordBatch,
  rowsToRecordBatches,
  type Columns,
  type Row,
} from './columns';
export { conformBatch } from './conform';
export {
  DEFAULT_METRICS_MODE,
  MetricsCollector,
  metricsConfigFromProperties,
  parseMetricsMode,
  truncateBinaryLower,
  truncateBinaryUpper,
  truncateStringLower,
  truncateStringUpper,
  type ColumnMetrics,
  type MetricsConfig,
  type MetricsMode,
} from './metrics';
export {
  arrowByteLength,
  encodeParquet,
  highCardinalityColumns,
  parquetWriteOptionsFromProperties,
  parseCodec,
  readFooterFacts,
  toRecordBatches,
  writeParquetFile,
  type DataFileStats,
  type FooterFacts,
  type ParquetCodec,
  type ParquetWriteOptions,
  type WriteInput,
  type WrittenParquet,
} from './writer';
export {
  DEFAULT_TARGET_FILE_SIZE_BYTES,
  RollingParquetWriter,
  writeDataFile,
  type RollingWriterOptions,
  type WriteDataFileRequest,
  type WrittenDataFile,
} from './rolling-writer';
export { readParquetBatches, readParquetInfo, readParquetTable, type ParquetFileInfo, type ReadParquetOptions } from './reader';
export {
  PartitionedRowWriter,
  writePartitionedRows,
  type PartitionedRowWriterOptions,
  type PartitionedWriteOptions,
} from './partitioned-writer';
export { EncoderPool, inProcessEncoder, type FileEncoder, type FileEncoderFactory } from './encoder-pool';
export {
  POSITION_DELETE_SCHEMA,
  deletedPositionCounts,
  readPositionDeletes,
  sortPositionDeletes,
  writePositionDeleteFiles,
  writePositionDeletes,
  type DataFilePositionDelete,
  type PositionDelete,
  type PositionDeleteFiles,
  type PositionDeleteWriteRequest,
} from './position-deletes';
