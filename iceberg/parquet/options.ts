/** Parquet writer options and footer facts, shared by both encoders (writer.ts, flat-encoder.ts). */
import type { MetricsConfig } from './metrics';

export type ParquetCodec = 'zstd' | 'snappy' | 'gzip' | 'lz4' | 'brotli' | 'uncompressed';

export interface ParquetWriteOptions {
  /** Iceberg `write.parquet.compression-codec`; default zstd (Iceberg's default since 1.4). */
  codec?: ParquetCodec;
  /** Max rows per row group (parquet-rs default 1Mi rows). */
  rowGroupRows?: number;
  /** Iceberg `write.parquet.row-group-size-bytes` (default 128 MiB). */
  rowGroupBytes?: number;
  /** Iceberg `write.parquet.page-size-bytes` (default 1 MiB). */
  pageSizeBytes?: number;
  /** Iceberg `write.parquet.dict-size-bytes` (default 2 MiB). */
  dictSizeBytes?: number;
  /** Metrics mode per field id; default from the table properties rules (truncate(16)). */
  metrics?: MetricsConfig;
}

export interface FooterFacts {
  numRows: number;
  /** field id -> compressed bytes of its column chunks, all row groups */
  columnSizes: Map<number, number>;
  /** byte offset where each row group starts (spec: split_offsets, ascending) */
  splitOffsets: number[];
}
