/**
 * The table operations floe's activities need, over the iceberg/ library: open the configured
 * catalog + FileIO, create ingest tables, write rows as partitioned Parquet data files, and append
 * exactly once (commit-id lookup + caller validation on every CAS attempt).
 */
import { randomUUID } from 'node:crypto';
import type { ColumnConfig, FloeConfig, TableConfig } from '../config';
import type { Catalog } from '../iceberg/catalog/catalog';
import { parseIdentifier } from '../iceberg/catalog/catalog';
import { catalogFromConfig } from '../iceberg/catalog/config';
import { IcebergError, isIcebergError } from '../iceberg/errors';
import type { FileIO } from '../iceberg/io/file-io';
import { newTableMetadata } from '../iceberg/spec/metadata';
import type { DataFile, LoadedTable, NestedField, Schema, Snapshot, TableMetadata } from '../iceberg/spec/types';
import { writePartitionedRows } from '../iceberg/parquet';
import { FastAppend } from '../iceberg/transaction/snapshot-producer';
import { findCommit } from './cursor';
import type { Row } from './decode';

export interface AppendOutcome { snapshot: Snapshot; alreadyCommitted: boolean; metadata: TableMetadata }

export interface Tables {
  catalog: Catalog;
  io: FileIO;
  load(table: string): Promise<LoadedTable>;
  /** Creates the namespace, the table and its dead-letter table when missing. Safe to race. */
  ensureIngestTables(t: TableConfig): Promise<void>;
  /** Writes rows as Parquet, one file per table partition (rolled at the target size). */
  writeDataFiles(table: string, rows: Row[], prefix: string, targetFileSizeBytes: number): Promise<DataFile[]>;
  /**
   * Appends `files` in one snapshot unless a snapshot with `commitId` is already in the main
   * ancestry. `validate` runs against the freshly loaded metadata before every CAS attempt (fencing).
   * Concurrency: optimistic; CAS conflicts reload and retry, appends never conflict logically.
   */
  appendOnce(table: string, commitId: string, files: DataFile[], summary: Record<string, string>,
    validate: (m: TableMetadata) => Promise<void> | void): Promise<AppendOutcome>;
  close(): Promise<void>;
}

export const deadLetterColumns: ColumnConfig[] = [
  { name: 'topic', type: 'string', required: true },
  { name: 'partition', type: 'int', required: true },
  { name: 'offset', type: 'long', required: true },
  { name: 'key', type: 'binary', required: false },
  { name: 'value', type: 'binary', required: false },
  { name: 'error', type: 'string', required: true },
  { name: 'kafka_timestamp', type: 'timestamptz', required: false },
];

export function schemaOf(columns: ColumnConfig[]): Schema {
  return {
    type: 'struct', 'schema-id': 0,
    fields: columns.map((c, i): NestedField => ({ id: i + 1, name: c.name, required: c.required, type: c.type, ...(c.doc ? { doc: c.doc } : {}) })),
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function openTables(cfg: FloeConfig): Promise<Tables> {
  const { catalog, io } = await catalogFromConfig({
    type: cfg.catalog.type, name: cfg.catalog.name, uri: cfg.catalog.uri, warehouse: cfg.catalog.warehouse,
    ...(cfg.catalog.token ? { token: cfg.catalog.token } : {}),
    s3: {
      endpoint: cfg.s3.endpoint, region: cfg.s3.region, forcePathStyle: cfg.s3.forcePathStyle,
      ...(cfg.s3.accessKeyId ? { accessKeyId: cfg.s3.accessKeyId, secretAccessKey: cfg.s3.secretAccessKey } : {}),
    },
  } as Parameters<typeof catalogFromConfig>[0]);
  const warehouse = cfg.catalog.warehouse.replace(/\/+$/, '');

  const create = async (table: string, columns: ColumnConfig[], partitionBy: TableConfig['partitionBy'], properties: Record<string, string>) => {
    const id = parseIdentifier(table);
    if (!(await catalog.namespaceExists(id.namespace))) {
      await catalog.createNamespace(id.namespace).catch((e) => { if (!isIcebergError(e, 'AlreadyExists')) throw e; });
    }
    if (await catalog.tableExists(id)) return;
    const schema = schemaOf(columns);
    const byName = new Map(schema.fields.map((f) => [f.name, f.id]));
    const metadata = newTableMetadata({
      location: `${warehouse}/${id.namespace.join('/')}/${id.name}`,
      schema,
      spec: {
        'spec-id': 0,
        fields: partitionBy.map((p, i) => ({
          'source-id': byName.get(p.column)!, 'field-id': 1000 + i, transform: p.transform,
          name: p.name ?? (p.transform === 'identity' ? p.column : `${p.column}_${p.transform.replace(/\[.*$/, '')}`),
        })),
      },
      properties: { 'write.format.default': 'parquet', 'write.parquet.compression-codec': 'zstd', ...properties },
      tableUuid: randomUUID(),
    });
    await catalog.createTable(id, metadata).catch((e) => { if (!isIcebergError(e, 'AlreadyExists')) throw e; });
  };

  const tables: Tables = {
    catalog, io,
    load: (table) => catalog.loadTable(parseIdentifier(table)),

    async ensureIngestTables(t) {
      await create(t.table, t.columns, t.partitionBy, t.properties);
      await create(t.deadLetterTable, deadLetterColumns, [], {});
    },

    async writeDataFiles(table, rows, prefix, targetFileSizeBytes) {
      const { metadata } = await tables.load(table);
      return writePartitionedRows(io, metadata, rows, {
        targetFileSizeBytes, fileName: (n) => `${prefix}-${String(n).padStart(5, '0')}.parquet`,
      });
    },

    async appendOnce(table, commitId, files, summary, validate) {
      const id = parseIdentifier(table);
      // One action for all attempts: its snapshot id and new-file manifests are fixed up front.
      const action = new FastAppend(files, summary);
      for (let attempt = 1; ; attempt++) {
        const loaded = await catalog.loadTable(id);
        const existing = findCommit(loaded.metadata, commitId);
        if (existing) return { snapshot: existing, alreadyCommitted: true, metadata: loaded.metadata };
        await validate(loaded.metadata);
        const pending = await action.prepare(loaded.metadata, io, attempt);
        try {
          const after = await catalog.commitTable(id, pending.requirements, pending.updates);
          // Manifests merged away on this attempt are referenced by nothing: delete them now
          // rather than leave them to the orphan sweep.
          const referenced = new Set(pending.referencedFiles);
          await Promise.all(action.writtenFiles().filter((f) => !referenced.has(f)).map((f) => io.delete(f).catch(() => undefined)));
          const snap = findCommit(after.metadata, commitId);
          if (!snap) throw new IcebergError('Unexpected', `append of commit ${commitId} landed but its snapshot is not on main`);
          return { snapshot: snap, alreadyCommitted: false, metadata: after.metadata };
        } catch (e) {
          if (isIcebergError(e, 'CommitConflict') && attempt < 30) {
            // This attempt's manifest list provably did not land; the next attempt writes its own.
            await Promise.all(pending.attemptFiles.map((f) => io.delete(f).catch(() => undefined)));
            await sleep(Math.min(2000, 20 * 2 ** attempt) * (0.5 + Math.random() / 2));
            continue;
          }
          // CommitStateUnknown and everything else keep the files: the commit may have landed, and
          // the activity retry will find it by commit id.
          throw e;
        }
      }
    },

    close: () => catalog.close(),
  };
  return tables;
}
