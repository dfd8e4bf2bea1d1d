/**
 * Table properties floe and this library read or write: the names (Java's TableProperties /
 * iceberg-rust's spec/table_properties.rs), their defaults, and typed getters. Every read of a
 * table property inside iceberg/ goes through here, so a key is spelled once and a value that
 * does not parse fails with 'DataInvalid' naming the key and the value, instead of quietly
 * meaning something else.
 *
 * Getters read before anything is written (staging a commit, planning, configuring a writer),
 * so a bad value stops the operation up front, never after a commit landed.
 */
import { IcebergError } from '../errors';

export type TableProperties = Readonly<Record<string, string>>;

// ---------------- names and defaults ----------------

/** Format version requested when creating a table through a REST catalog. */
export const FORMAT_VERSION = 'format-version';

/** Commit retries of a Transaction (after a lost CAS). */
export const COMMIT_NUM_RETRIES = 'commit.retry.num-retries';
export const COMMIT_NUM_RETRIES_DEFAULT = 4;
export const COMMIT_MIN_RETRY_WAIT_MS = 'commit.retry.min-wait-ms';
export const COMMIT_MIN_RETRY_WAIT_MS_DEFAULT = 100;
export const COMMIT_MAX_RETRY_WAIT_MS = 'commit.retry.max-wait-ms';
export const COMMIT_MAX_RETRY_WAIT_MS_DEFAULT = 60_000;
/** Java's total retry budget. Named here for completeness: Transaction bounds retries by count only. */
export const COMMIT_TOTAL_RETRY_TIME_MS = 'commit.retry.total-timeout-ms';
export const COMMIT_TOTAL_RETRY_TIME_MS_DEFAULT = 30 * 60 * 1000;

/** Manifest merging (transaction/merge.ts). */
export const MANIFEST_TARGET_SIZE_BYTES = 'commit.manifest.target-size-bytes';
export const MANIFEST_TARGET_SIZE_BYTES_DEFAULT = 8 * 1024 * 1024;
export const MANIFEST_MIN_MERGE_COUNT = 'commit.manifest.min-count-to-merge';
export const MANIFEST_MIN_MERGE_COUNT_DEFAULT = 100;
export const MANIFEST_MERGE_ENABLED = 'commit.manifest-merge.enabled';
export const MANIFEST_MERGE_ENABLED_DEFAULT = true;

/** Metadata files (catalog/metadata-files.ts, catalog/stage.ts). */
export const WRITE_METADATA_PATH = 'write.metadata.path';
export const METADATA_PREVIOUS_VERSIONS_MAX = 'write.metadata.previous-versions-max';
export const DEFAULT_PREVIOUS_VERSIONS_MAX = 100;
export const METADATA_DELETE_AFTER_COMMIT = 'write.metadata.delete-after-commit.enabled';
export const METADATA_DELETE_AFTER_COMMIT_DEFAULT = false;

/** Column metrics in manifests (parquet/metrics.ts). */
export const METRICS_MODE_DEFAULT = 'write.metadata.metrics.default';
export const METRICS_MAX_INFERRED_COLUMN_DEFAULTS = 'write.metadata.metrics.max-inferred-column-defaults';
export const MAX_INFERRED_COLUMN_DEFAULTS = 100;
export const METRICS_MODE_COLUMN_PREFIX = 'write.metadata.metrics.column.';

/** Data files. */
export const WRITE_DATA_PATH = 'write.data.path';
export const WRITE_FORMAT_DEFAULT = 'write.format.default';
export const WRITE_FORMAT_DEFAULT_DEFAULT = 'parquet';
export const WRITE_TARGET_FILE_SIZE_BYTES = 'write.target-file-size-bytes';
export const DEFAULT_TARGET_FILE_SIZE_BYTES = 512 * 1024 * 1024;
export const PARQUET_COMPRESSION = 'write.parquet.compression-codec';
/** Iceberg's default since 1.4. */
export const PARQUET_COMPRESSION_DEFAULT = 'zstd';
/** Unset: the Parquet writer's own limits apply (no default is imposed here). */
export const PARQUET_ROW_GROUP_SIZE_BYTES = 'write.parquet.row-group-size-bytes';
export const PARQUET_PAGE_SIZE_BYTES = 'write.parquet.page-size-bytes';
export const PARQUET_DICT_SIZE_BYTES = 'write.parquet.dict-size-bytes';

/** Snapshot expiry (transaction/expire.ts). */
export const MAX_SNAPSHOT_AGE_MS = 'history.expire.max-snapshot-age-ms';
export const MAX_SNAPSHOT_AGE_MS_DEFAULT = 5n * 24n * 3600n * 1000n;
export const MIN_SNAPSHOTS_TO_KEEP = 'history.expire.min-snapshots-to-keep';
export const MIN_SNAPSHOTS_TO_KEEP_DEFAULT = 1;

// ---------------- typed getters ----------------

const unparsable = (key: string, expected: string, raw: string): IcebergError =>
  new IcebergError('DataInvalid', `table property ${key}: expected ${expected}, found ${JSON.stringify(raw)}`, {
    retryable: false,
    context: { property: key, expected, found: raw },
  });

const INTEGER = /^[+-]?\d+$/;

function string(props: TableProperties, key: string): string | undefined;
function string(props: TableProperties, key: string, def: string): string;
function string(props: TableProperties, key: string, def?: string): string | undefined {
  return props[key] ?? def;
}

function int(props: TableProperties, key: string): number | undefined;
function int(props: TableProperties, key: string, def: number): number;
function int(props: TableProperties, key: string, def?: number): number | undefined {
  const raw = props[key];
  if (raw === undefined) return def;
  const n = Number(raw.trim());
  if (!INTEGER.test(raw.trim()) || !Number.isSafeInteger(n)) throw unparsable(key, 'an integer', raw);
  return n;
}

function long(props: TableProperties, key: string): bigint | undefined;
function long(props: TableProperties, key: string, def: bigint): bigint;
function long(props: TableProperties, key: string, def?: bigint): bigint | undefined {
  const raw = props[key];
  if (raw === undefined) return def;
  const n = INTEGER.test(raw.trim()) ? BigInt(raw.trim()) : undefined;
  if (n === undefined || BigInt.asIntN(64, n) !== n) throw unparsable(key, 'a 64-bit integer', raw);
  return n;
}

function bool(props: TableProperties, key: string): boolean | undefined;
function bool(props: TableProperties, key: string, def: boolean): boolean;
function bool(props: TableProperties, key: string, def?: boolean): boolean | undefined {
  const raw = props[key];
  if (raw === undefined) return def;
  const v = raw.trim().toLowerCase();
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw unparsable(key, 'true or false', raw);
}

/**
 * Typed reads of any table property: absent -> the default (or undefined without one); present
 * but unparsable -> IcebergError('DataInvalid') naming the key and the value. `int` takes a safe
 * integer, `long` a 64-bit integer (bigint), `bool` true/false in any case.
 */
export const tableProperty = { string, int, long, bool } as const;

// ---------------- per-property getters (the rules of each property) ----------------

/** A non-negative integer, else the default (negative values fall back, as they always have). */
const nonNegative = (props: TableProperties, key: string, def: number): number => {
  const n = int(props, key, def);
  return n >= 0 ? n : def;
};
/** A positive integer, else the default. */
const positive = (props: TableProperties, key: string, def: number): number => {
  const n = int(props, key, def);
  return n > 0 ? n : def;
};

/** `commit.retry.*`: non-negative integers; negative values mean the default. */
export const commitNumRetries = (props: TableProperties): number => nonNegative(props, COMMIT_NUM_RETRIES, COMMIT_NUM_RETRIES_DEFAULT);
export const commitMinRetryWaitMs = (props: TableProperties): number =>
  nonNegative(props, COMMIT_MIN_RETRY_WAIT_MS, COMMIT_MIN_RETRY_WAIT_MS_DEFAULT);
export const commitMaxRetryWaitMs = (props: TableProperties): number =>
  nonNegative(props, COMMIT_MAX_RETRY_WAIT_MS, COMMIT_MAX_RETRY_WAIT_MS_DEFAULT);

export const manifestTargetSizeBytes = (props: TableProperties): number =>
  positive(props, MANIFEST_TARGET_SIZE_BYTES, MANIFEST_TARGET_SIZE_BYTES_DEFAULT);
export const manifestMinMergeCount = (props: TableProperties): number =>
  positive(props, MANIFEST_MIN_MERGE_COUNT, MANIFEST_MIN_MERGE_COUNT_DEFAULT);
export const manifestMergeEnabled = (props: TableProperties): boolean =>
  bool(props, MANIFEST_MERGE_ENABLED, MANIFEST_MERGE_ENABLED_DEFAULT);

/** `write.metadata.path` without trailing slashes; undefined when unset or empty. */
export const writeMetadataPath = (props: TableProperties): string | undefined =>
  props[WRITE_METADATA_PATH] ? props[WRITE_METADATA_PATH].replace(/\/+$/, '') : undefined;

/** Where metadata files (metadata.json, manifest lists, manifests) go: `write.metadata.path`, else `<location>/metadata`. */
export const metadataDirectory = (m: { location: string; properties: TableProperties }): string =>
  writeMetadataPath(m.properties) ?? `${m.location.replace(/\/+$/, '')}/metadata`;

/**
 * `write.metadata.previous-versions-max`: at least 1, default 100. A value of 0 means the
 * default, as it always has here (Java would clamp it to 1).
 */
export const metadataPreviousVersionsMax = (props: TableProperties): number => {
  const n = int(props, METADATA_PREVIOUS_VERSIONS_MAX, DEFAULT_PREVIOUS_VERSIONS_MAX);
  return n === 0 ? DEFAULT_PREVIOUS_VERSIONS_MAX : Math.max(1, n);
};

export const metadataDeleteAfterCommit = (props: TableProperties): boolean =>
  bool(props, METADATA_DELETE_AFTER_COMMIT, METADATA_DELETE_AFTER_COMMIT_DEFAULT);

/** `write.metadata.metrics.default` as written (parse it with parquet/metrics parseMetricsMode); undefined when unset. */
export const metricsModeDefault = (props: TableProperties): string | undefined => props[METRICS_MODE_DEFAULT];
export const metricsMaxInferredColumnDefaults = (props: TableProperties): number =>
  int(props, METRICS_MAX_INFERRED_COLUMN_DEFAULTS, MAX_INFERRED_COLUMN_DEFAULTS);
/** `write.metadata.metrics.column.<dotted column name>`: the metrics mode override of one column. */
export const metricsModeColumn = (props: TableProperties, column: string): string | undefined =>
  props[`${METRICS_MODE_COLUMN_PREFIX}${column}`];

export const targetFileSizeBytes = (props: TableProperties): number =>
  int(props, WRITE_TARGET_FILE_SIZE_BYTES, DEFAULT_TARGET_FILE_SIZE_BYTES);
export const parquetCompressionCodec = (props: TableProperties): string => string(props, PARQUET_COMPRESSION, PARQUET_COMPRESSION_DEFAULT);
export const parquetRowGroupSizeBytes = (props: TableProperties): number | undefined => int(props, PARQUET_ROW_GROUP_SIZE_BYTES);
export const parquetPageSizeBytes = (props: TableProperties): number | undefined => int(props, PARQUET_PAGE_SIZE_BYTES);
export const parquetDictSizeBytes = (props: TableProperties): number | undefined => int(props, PARQUET_DICT_SIZE_BYTES);

export const maxSnapshotAgeMs = (props: TableProperties): bigint => long(props, MAX_SNAPSHOT_AGE_MS, MAX_SNAPSHOT_AGE_MS_DEFAULT);
export const minSnapshotsToKeep = (props: TableProperties): number => int(props, MIN_SNAPSHOTS_TO_KEEP, MIN_SNAPSHOTS_TO_KEEP_DEFAULT);
