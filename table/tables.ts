/**
 * The table operations both ingest and maintenance need, over the iceberg/ library: open the
 * configured catalog + FileIO, create a table, write rows as partitioned Parquet data files, and
 * append exactly once (commit-id lookup + caller validation on every CAS attempt). What an ingest's
 * tables look like (config columns, the dead-letter table) is ingest/tables.ts.
 */
import { randomUUID } from 'node:crypto';
import { tableLocationBase, type FloeConfig, type TableConfig } from '../config';
import {
  parseIdentifier,
  catalogFromConfig,
  overlappingTables,
  METADATA_DELETE_AFTER_COMMIT,
  METADATA_PREVIOUS_VERSIONS_MAX,
  PARQUET_COMPRESSION,
  WRITE_FORMAT_DEFAULT,
  IcebergError,
  isIcebergError,
  newTableMetadata,
  PartitionedRowWriter,
  writePartitionedRows,
  Transaction,
  type Catalog,
  type FileIO,
  type DataFile,
  type LoadedTable,
  type Schema,
  type TableMetadata,
  type FileEncoderFactory,
  type Row,
  type ValidateOutcome,
} from '../iceberg';
import { s3Options } from './storage';
import { readSecret } from '../config/secrets';

export interface AppendOutcome {
  /** the new snapshot's id; null when `alreadyCommitted` (the caller knows where it recorded it) */
  snapshotId: string | null;
  alreadyCommitted: boolean;
  metadata: TableMetadata;
}

export interface AppendRequest {
  files: DataFile[];
  summary: Record<string, string>;
  /** table properties set in the same atomic commit, given the snapshot's id (fixed before the first try) */
  properties?: (snapshotId: bigint) => Record<string, string>;
  /**
   * Runs against the freshly loaded metadata before every CAS attempt: throw to refuse (fencing),
   * return ALREADY_COMMITTED when the table shows this append landed on an earlier try.
   */
  validate: (m: TableMetadata) => ValidateOutcome | Promise<ValidateOutcome>;
  /** the table as the caller just loaded it: the first attempt uses it instead of loading again */
  base?: LoadedTable;
  /**
   * Position delete files committed with `files` in one RowDelta (an upsert table's cycle), and
   * every data file they name: the commit fails (CommitFailed, not retryable) if one is no longer live.
   */
  deletes?: { files: DataFile[]; referencedDataFiles: string[]; removeDeleteFiles?: DataFile[] };
}

export interface RowWriterOptions {
  targetFileSizeBytes: number;
  encoder?: FileEncoderFactory;
  /** Runs once before the first file is written. */
  beforeFirstFile?: () => Promise<void>;
}

export interface Tables {
  catalog: Catalog;
  io: FileIO;
  load(table: string): Promise<LoadedTable>;
  /**
   * Creates the namespace and the table when missing; `schema` is asked only then (a registry
   * format's table asks its registry). Safe to race.
   */
  ensureTable(
    table: string,
    schema: () => Promise<Schema>,
    partitionBy: TableConfig['partitionBy'],
    properties: Record<string, string>,
    formatVersion?: 2 | 3,
  ): Promise<void>;
  /**
   * Upgrades the table to `formatVersion` when it is older (one commit of `upgrade-format-version`;
   * 2 -> 3 starts row lineage at next-row-id 0). Returns the version it had. Safe to race.
   */
  upgradeFormatVersion(table: string, formatVersion: 2 | 3): Promise<number>;
  /** Writes rows as Parquet, one file per table partition (rolled at the target size). */
  writeDataFiles(table: string, rows: readonly Row[], prefix: string, targetFileSizeBytes: number): Promise<DataFile[]>;
  /**
   * A writer that takes rows one by one while they are still being read and encodes behind the
   * reader (`encoder`: on worker threads); files as for writeDataFiles. Close or abort it.
   */
  openRowWriter(table: string, prefix: string, opts: RowWriterOptions): Promise<PartitionedRowWriter>;
  /**
   * Appends `files` (and properties) in one snapshot through the library's Transaction, exactly
   * once as far as `validate` can tell. Concurrency: optimistic; CAS conflicts reload, re-validate
   * and retry with the table's `commit.retry.*` backoff; appends never conflict logically.
   */
  appendOnce(table: string, req: AppendRequest): Promise<AppendOutcome>;
  close(): Promise<void>;
}

/** A REST catalog's auth and properties; secrets by reference are read here, in the process that connects. */
const restCatalogOptions = (c: FloeConfig['catalog']) => ({
  ...(c.tokenRef ? { token: readSecret(c.tokenRef, 'catalog.token') } : {}),
  ...(c.credential ? { credential: readSecret(c.credential, 'catalog.credential') } : {}),
  ...(c.properties ? { properties: c.properties } : {}),
});

export async function openTables(cfg: FloeConfig): Promise<Tables> {
  const { catalog, io } = await catalogFromConfig({
    type: cfg.catalog.type,
    name: cfg.catalog.name,
    uri: cfg.catalog.uri,
    warehouse: cfg.catalog.warehouse,
    ...(cfg.catalog.token ? { token: cfg.catalog.token } : {}),
    ...restCatalogOptions(cfg.catalog),
    s3: s3Options(cfg.s3),
  } as Parameters<typeof catalogFromConfig>[0]);
  const base = tableLocationBase(cfg.catalog);

  // Parquet bytes per Arrow byte of each table's last files.
  const ratios = new Map<string, number>();
  // Every table's location as first loaded by a creation's overlap check: a table's location does
  // not move, and a route creating thousands of tables would otherwise load them all for each one.
  const locations = new Map<string, string>();
  const atVersion = new Map<string, number>();
  const tables: Tables = {
    catalog,
    io,
    load: (table) => catalog.loadTable(parseIdentifier(table)),

    ensureTable: (table, schema, partitionBy, properties, formatVersion) =>
      createTable(catalog, base, table, schema, partitionBy, properties, formatVersion ?? 2, locations),

    async upgradeFormatVersion(table, formatVersion) {
      // a table's format version never goes down: once seen at it, no need to load it again
      const known = atVersion.get(table);
      if (known !== undefined && known >= formatVersion) return known;
      const loaded = await tables.load(table);
      const had = loaded.metadata['format-version'];
      if (had < formatVersion)
        await new Transaction(parseIdentifier(table)).upgradeFormatVersion(formatVersion).commit(catalog, io, { table: loaded });
      atVersion.set(table, Math.max(had, formatVersion));
      return had;
    },

    async writeDataFiles(table, rows, prefix, targetFileSizeBytes) {
      const { metadata } = await tables.load(table);
      return writePartitionedRows(io, metadata, rows, {
        targetFileSizeBytes,
        fileName: (n) => `${prefix}-${String(n).padStart(5, '0')}.parquet`,
      });
    },

    async openRowWriter(table, prefix, opts) {
      const { metadata } = await tables.load(table);
      const ratio = ratios.get(table);
      return new PartitionedRowWriter(io, metadata, {
        targetFileSizeBytes: opts.targetFileSizeBytes,
        fileName: (n) => `${prefix}-${String(n).padStart(5, '0')}.parquet`,
        ...(opts.encoder ? { encoder: opts.encoder } : {}),
        ...(opts.beforeFirstFile ? { beforeFirstFile: opts.beforeFirstFile } : {}),
        ...(ratio === undefined ? {} : { compressionRatioHint: ratio }),
        // the next cycle's writer starts from what this one learned (no trial encode per cycle)
        learnedRatio: (r) => ratios.set(table, r),
      });
    },

    async appendOnce(table, req) {
      const tx = new Transaction(parseIdentifier(table));
      const append =
        req.deletes && req.deletes.files.length > 0
          ? tx.rowDelta(req.files, req.deletes.files, {
              referencedDataFiles: req.deletes.referencedDataFiles,
              summaryProps: req.summary,
              ...(req.deletes.removeDeleteFiles?.length ? { removeDeleteFiles: req.deletes.removeDeleteFiles } : {}),
            })
          : tx.fastAppend(req.files, req.summary);
      if (req.properties) tx.setProperties(req.properties(append.snapshotId));
      const r = await tx.commit(catalog, io, { validate: (t) => req.validate(t.metadata), ...(req.base ? { table: req.base } : {}) });
      return {
        snapshotId: r.alreadyCommitted ? null : append.snapshotId.toString(),
        alreadyCommitted: r.alreadyCommitted,
        metadata: r.table.metadata,
      };
    },

    close: () => catalog.close(),
  };
  return tables;
}

async function createTable(
  catalog: Catalog,
  base: string | undefined,
  table: string,
  schemaOf: () => Promise<Schema>,
  partitionBy: TableConfig['partitionBy'],
  properties: Record<string, string>,
  formatVersion: 2 | 3,
  locations?: Map<string, string>,
): Promise<void> {
  const id = parseIdentifier(table);
  if (!(await catalog.namespaceExists(id.namespace))) {
    await catalog.createNamespace(id.namespace).catch((e) => {
      if (!isIcebergError(e, 'AlreadyExists')) throw e;
    });
  }
  if (await catalog.tableExists(id)) return;
  // No base (a REST catalog whose warehouse is a name): the catalog places the table ('' asks it to).
  const location = base === undefined ? '' : `${base}/${id.namespace.join('/')}/${id.name}`;
  // A table owns everything under its location: orphan removal of the outer one of two nested
  // tables (`a.b` at <wh>/a/b, `a.b.c` at <wh>/a/b/c) would delete the inner one's files.
  const overlaps = location === '' ? [] : await overlappingTables(catalog, location, id, locations);
  if (overlaps.length > 0) {
    const o = overlaps[0]!;
    const how =
      o.relation === 'same' ? 'is the location of' : o.relation === 'contains' ? 'contains the location of' : 'lies inside the location of';
    throw IcebergError.mismatch(
      'DataInvalid',
      `cannot create table ${table} at ${location}: its location ${how} table ${o.name} (${o.location}), so one table's maintenance would delete the other's files`,
      "a location that neither contains nor lies inside another table's location (rename the table or namespace)",
      `${overlaps.length} overlapping table(s): ${overlaps.map((x) => x.name).join(', ')}`,
      false,
    );
  }
  const schema = await schemaOf();
  const missing = partitionBy.find((p) => !schema.fields.some((f) => f.name === p.column));
  if (missing)
    throw IcebergError.mismatch(
      'DataInvalid',
      `cannot create table ${table}: it is partitioned on ${missing.column}, which neither the config nor the record schema has`,
      'a partition column the table has (a config column, or a field of the record schema registered before the ingest starts)',
      missing.column,
      false,
    );
  const byName = new Map(schema.fields.map((f) => [f.name, f.id]));
  const metadata = newTableMetadata({
    location,
    schema,
    spec: {
      'spec-id': 0,
      fields: partitionBy.map((p, i) => ({
        'source-id': byName.get(p.column)!,
        'field-id': 1000 + i,
        transform: p.transform,
        name: p.name ?? (p.transform === 'identity' ? p.column : `${p.column}_${p.transform.replace(/\[.*$/, '')}`),
      })),
    },
    properties: {
      [WRITE_FORMAT_DEFAULT]: 'parquet',
      [PARQUET_COMPRESSION]: 'zstd',
      // Metadata growth: without these every commit leaves a metadata.json behind forever (8,640
      // a day at a 10 s commit interval). 100 previous versions (Java's default) is ~15 KB of
      // metadata log, and at least 100 commit intervals (17 min at 10 s) for a reader that was
      // handed an older version to open it; floe's expiry reads its base version within seconds.
      [METADATA_DELETE_AFTER_COMMIT]: 'true',
      [METADATA_PREVIOUS_VERSIONS_MAX]: '100',
      ...properties,
    },
    tableUuid: randomUUID(),
    formatVersion,
  });
  await catalog.createTable(id, metadata).catch((e) => {
    if (!isIcebergError(e, 'AlreadyExists')) throw e;
  });
}
