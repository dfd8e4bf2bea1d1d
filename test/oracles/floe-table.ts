/**
 * floe-side helpers for the interop tests: a warehouse on file:// or SeaweedFS S3 with a SQLite
 * catalog that PyIceberg opens too, partitioned writes + fast append, live-file planning and
 * reading back through floe's Parquet reader, and a compaction-like rewrite.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  catalogFromConfig,
  parquetWriteOptionsFromProperties,
  readParquetBatches,
  writePartitionedRows,
  RollingParquetWriter,
  planFiles,
  currentSchema,
  newTableMetadata,
  specById,
  partitionKey,
  partitionPath,
  Transaction,
  type Catalog,
  type SqlCatalogConfig,
  type FileIO,
  type Row,
  type DataFile,
  type LoadedTable,
  type PartitionSpec,
  type Schema,
  type TableIdentifier,
  type TableMetadata,
} from '../../iceberg';
import { stackEnv } from '../../stack';
import { canonBatch, type CanonRow } from './canonical';
import type { OracleCatalog } from './oracle';

export type BackendKind = 'file' | 's3';

/** One warehouse + SQLite catalog file; `name` is shared so PyIceberg sees floe's tables. */
export interface Backend {
  kind: BackendKind;
  warehouse: string;
  config: SqlCatalogConfig;
  oracle: OracleCatalog;
}

/** `root` is a local temp dir (catalog file, and the warehouse for file://). */
export function backend(kind: BackendKind, root: string, catalogName = 'floe'): Backend {
  mkdirSync(root, { recursive: true });
  const db = join(root, 'catalog.db');
  const uri = `sqlite:///${db}`; // db is absolute: 4 slashes, as SQLAlchemy wants
  const s3 = stackEnv().s3;
  const warehouse =
    kind === 'file'
      ? pathToFileURL(join(root, 'warehouse')).href
      : `s3://${s3.bucket}/interop-tests/${Date.now()}-${randomUUID().slice(0, 8)}`;
  const config: SqlCatalogConfig = {
    type: 'sql',
    name: catalogName,
    uri,
    warehouse,
    busyTimeoutMs: 30_000,
    s3: {
      endpoint: s3.endpoint,
      region: s3.region,
      forcePathStyle: true,
      accessKeyId: s3.accessKeyId,
      secretAccessKey: s3.secretAccessKey,
    },
  };
  return { kind, warehouse, config, oracle: { name: catalogName, uri, warehouse } };
}

export async function open(b: Backend): Promise<{ catalog: Catalog; io: FileIO }> {
  return catalogFromConfig(b.config);
}

export async function createTable(
  catalog: Catalog,
  b: Backend,
  id: TableIdentifier,
  schema: Schema,
  spec: PartitionSpec,
  properties: Record<string, string> = {},
): Promise<LoadedTable> {
  if (!(await catalog.namespaceExists(id.namespace))) await catalog.createNamespace(id.namespace);
  return catalog.createTable(
    id,
    newTableMetadata({
      location: `${b.warehouse}/${id.namespace.join('/')}/${id.name}`,
      schema,
      spec,
      tableUuid: randomUUID(),
      properties: { 'write.format.default': 'parquet', 'write.parquet.compression-codec': 'zstd', ...properties },
    }),
  );
}

/** Writes rows as Parquet, one file per partition (the writer activities/tables.ts uses). */
export async function writeFiles(io: FileIO, metadata: TableMetadata, rows: readonly Row[], prefix: string): Promise<DataFile[]> {
  return writePartitionedRows(io, metadata, rows, { fileName: (n) => `${prefix}-${String(n).padStart(5, '0')}-${randomUUID()}.parquet` });
}

export const FAST_RETRY = { maxAttempts: 60, minWaitMs: 10, maxWaitMs: 400 };

/** Writes and fast-appends `rows` in one snapshot; returns the files and the committed table. */
export async function appendRows(
  catalog: Catalog,
  io: FileIO,
  id: TableIdentifier,
  rows: readonly Row[],
  prefix: string,
  summary: Record<string, string> = {},
): Promise<{ files: DataFile[]; table: LoadedTable; snapshotId: bigint }> {
  const loaded = await catalog.loadTable(id);
  const files = await writeFiles(io, loaded.metadata, rows, prefix);
  const tx = new Transaction(id);
  tx.fastAppend(files, summary);
  const r = await tx.commit(catalog, io, { ...FAST_RETRY, table: loaded });
  return { files, table: r.table, snapshotId: r.snapshotIds[0]! };
}

/** Live data files of the current snapshot, as floe's scan planning returns them. */
export async function liveFiles(io: FileIO, table: TableMetadata | LoadedTable): Promise<DataFile[]> {
  return planFiles(table, io);
}

/** Every row of the given files, read with floe's Parquet reader, canonical and unsorted. */
export async function readRows(io: FileIO, schema: Schema, files: readonly DataFile[]): Promise<CanonRow[]> {
  const rows: CanonRow[] = [];
  for (const f of files) {
    for await (const batch of readParquetBatches(io, f.filePath, { fileSize: f.fileSizeInBytes })) rows.push(...canonBatch(schema, batch));
  }
  return rows;
}

/**
 * Compaction-like rewrite: per partition, stream every given file through a RollingParquetWriter
 * into one new file, then commit one `replace` snapshot. Concurrency: see RewriteFiles (fails with
 * CommitFailed if a replaced file vanished; concurrent appends are kept).
 */
export async function compact(
  catalog: Catalog,
  io: FileIO,
  table: LoadedTable,
  files: readonly DataFile[],
  prefix: string,
  retry = FAST_RETRY,
): Promise<{ added: DataFile[]; table: LoadedTable }> {
  const m = table.metadata;
  const schema = currentSchema(m);
  const groups = new Map<string, DataFile[]>();
  for (const f of files) {
    const key = `${f.specId}:${partitionKey(f.partition)}`;
    let g = groups.get(key);
    if (!g) groups.set(key, (g = []));
    g.push(f);
  }
  const added: DataFile[] = [];
  let n = 0;
  for (const group of groups.values()) {
    const first = group[0]!;
    const spec = specById(m, first.specId);
    const dir = spec.fields.length ? `${m.location}/data/${partitionPath(spec, schema, first.partition)}` : `${m.location}/data`;
    const w = new RollingParquetWriter({
      ...parquetWriteOptionsFromProperties(schema, m.properties),
      schema,
      io,
      location: () => `${dir}/${prefix}-${String(n++).padStart(5, '0')}-${randomUUID()}.parquet`,
    });
    for (const f of group) {
      for await (const b of readParquetBatches(io, f.filePath, { fileSize: f.fileSizeInBytes })) await w.writeBatch(b);
    }
    for (const f of await w.close()) added.push({ ...f, specId: first.specId, partition: first.partition });
  }
  const tx = new Transaction(table.identifier);
  tx.rewriteFiles([...files], added, { 'floe.operation': 'compact' });
  const r = await tx.commit(catalog, io, { ...retry, table });
  return { added, table: r.table };
}

/** Best-effort removal of an S3 warehouse prefix (file:// roots are removed with the temp dir). */
export async function dropWarehouse(io: FileIO, b: Backend): Promise<void> {
  if (b.kind !== 's3') return;
  const files: string[] = [];
  try {
    for await (const f of io.list(b.warehouse)) files.push(f.location);
  } catch {
    /* best effort */
  }
  for (let i = 0; i < files.length; i += 32) await Promise.all(files.slice(i, i + 32).map((f) => io.delete(f).catch(() => undefined)));
}
