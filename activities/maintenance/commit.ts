/**
 * Runs one table action (iceberg/transaction's TableAction: prepare -> {updates, requirements})
 * against the catalog with optimistic concurrency: a lost CAS reloads and re-prepares, up to a
 * bound. Files an attempt wrote are deleted only when the error proves the commit did not land;
 * an unknown commit state keeps them (PyIceberg's rule, STYLE "apache/iceberg-python").
 */
import type { Catalog } from '../../iceberg/catalog/catalog';
import { isIcebergError } from '../../iceberg/errors';
import type { FileIO } from '../../iceberg/io/file-io';
import type { TableAction } from '../../iceberg/transaction/snapshot-producer';
import type { LoadedTable, TableIdentifier, TableMetadata } from '../../iceberg/spec/types';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface ActionCommit { before: LoadedTable; after: LoadedTable }

export async function commitAction(
  catalog: Catalog, io: FileIO, id: TableIdentifier, action: TableAction,
  opts: { maxAttempts?: number; beforeAttempt?: (m: TableMetadata) => void } = {},
): Promise<ActionCommit> {
  const maxAttempts = opts.maxAttempts ?? 25;
  for (let attempt = 1; ; attempt++) {
    const before = await catalog.loadTable(id);
    opts.beforeAttempt?.(before.metadata);
    let pending;
    try {
      pending = await action.prepare(before.metadata, io, attempt);
    } catch (e) {
      await cleanup(io, action.writtenFiles());
      throw e;
    }
    try {
      const after = await catalog.commitTable(id, pending.requirements, pending.updates);
      return { before, after };
    } catch (e) {
      if (isIcebergError(e, 'CommitStateUnknown')) throw e; // may have landed: keep every file
      if (isIcebergError(e, 'CommitConflict') && attempt < maxAttempts) {
        await cleanup(io, pending.attemptFiles);
        await sleep(Math.min(2000, 20 * 2 ** attempt) * (0.5 + Math.random() / 2));
        continue;
      }
      await cleanup(io, action.writtenFiles());
      throw e;
    }
  }
}

async function cleanup(io: FileIO, files: string[]): Promise<void> {
  await Promise.all(files.map((f) => io.delete(f).catch(() => undefined)));
}
