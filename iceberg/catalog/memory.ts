/**
 * In-memory Catalog for unit tests. Commits run the SQL catalog's staging step (stage.ts: check
 * requirements against the current metadata, apply updates, metadata log, new location), write
 * the new metadata.json through the FileIO and swap the pointer; all synchronous between awaits
 * on one event loop, so the swap is atomic.
 * `beforeCommit` lets tests inject a concurrent commit or a failure at the CAS point.
 */
import { IcebergError } from '../errors';
import type { FileIO } from '../io/file-io';
import { parseTableMetadata } from '../spec/metadata';
import type { LoadedTable, TableIdentifier, TableMetadata } from '../spec/types';
import { type Catalog, identToString } from './catalog';
import { cleanUpAfterCommit, discardStagedMetadata, stageTable, writeStagedMetadata } from './stage';
import type { TableRequirement, TableUpdate } from './updates';

export class MemoryCatalog implements Catalog {
  private readonly namespaces = new Map<string, Record<string, string>>();
  // `metadata` is the object we serialized into metadataLocation: kept so loads skip a re-parse
  // (applyUpdates never mutates its base, so sharing it is safe).
  private readonly tables = new Map<string, { identifier: TableIdentifier; metadataLocation: string; metadata: TableMetadata }>();
  /** Called inside commitTable after the commit is staged (requirements passed), before the metadata write and the swap (tests inject races here). */
  beforeCommit?: (id: TableIdentifier, attempt: { requirements: TableRequirement[]; updates: TableUpdate[] }) => Promise<void> | void;
  commits = 0;

  constructor(
    readonly name: string,
    private readonly io: FileIO,
    private readonly now: () => bigint = () => BigInt(Date.now()),
  ) {}

  /** Direct children of `parent`, including levels that exist only as a prefix of a deeper namespace (the SQL catalog's rule). */
  async listNamespaces(parent: string[] = []): Promise<string[][]> {
    const out = new Map<string, string[]>();
    for (const ns of [...this.namespaces.keys()].map((k) => k.split('\u0000'))) {
      if (ns.length <= parent.length || !parent.every((p, i) => ns[i] === p)) continue;
      const child = ns.slice(0, parent.length + 1);
      out.set(child.join('\u0000'), child);
    }
    return [...out.values()];
  }
  async createNamespace(namespace: string[], properties: Record<string, string> = {}): Promise<void> {
    const k = namespace.join('\u0000');
    if (this.namespaces.has(k))
      throw new IcebergError('AlreadyExists', `namespace ${namespace.join('.')} already exists`, { retryable: false });
    this.namespaces.set(k, { ...properties });
  }
  async namespaceExists(namespace: string[]): Promise<boolean> {
    return this.namespaces.has(namespace.join('\u0000'));
  }
  async dropNamespace(namespace: string[]): Promise<void> {
    if ((await this.listTables(namespace)).length > 0)
      throw new IcebergError('DataInvalid', `namespace ${namespace.join('.')} is not empty`, { retryable: false });
    this.namespaces.delete(namespace.join('\u0000'));
  }
  async listTables(namespace: string[]): Promise<TableIdentifier[]> {
    return [...this.tables.values()]
      .map((t) => t.identifier)
      .filter((id) => id.namespace.length === namespace.length && id.namespace.every((p, i) => p === namespace[i]));
  }
  async tableExists(id: TableIdentifier): Promise<boolean> {
    return this.tables.has(identToString(id));
  }
  /** Registers an existing metadata file (e.g. written by PyIceberg) under `id`. */
  async registerTable(id: TableIdentifier, metadataLocation: string): Promise<LoadedTable> {
    const metadata = parseTableMetadata(Buffer.from(await this.io.read(metadataLocation)).toString('utf8'));
    this.tables.set(identToString(id), { identifier: id, metadataLocation, metadata });
    return { identifier: id, metadataLocation, metadata };
  }
  async createTable(id: TableIdentifier, metadata: TableMetadata): Promise<LoadedTable> {
    if (!(await this.namespaceExists(id.namespace)))
      throw new IcebergError('NotFound', `namespace ${id.namespace.join('.')} does not exist`, { retryable: false });
    if (this.tables.has(identToString(id)))
      throw new IcebergError('AlreadyExists', `table ${identToString(id)} already exists`, { retryable: false });
    const staged = stageTable(id, undefined, [{ type: 'assert-create' }], [], { nowMs: this.now(), initial: metadata });
    await writeStagedMetadata(this.io, staged);
    const { metadataLocation } = staged;
    this.tables.set(identToString(id), { identifier: id, metadataLocation, metadata: staged.metadata });
    return { identifier: id, metadataLocation, metadata: staged.metadata };
  }
  async loadTable(id: TableIdentifier): Promise<LoadedTable> {
    const t = this.tables.get(identToString(id));
    if (!t) throw new IcebergError('NotFound', `table ${identToString(id)} does not exist`, { retryable: false });
    if (!(await this.io.exists(t.metadataLocation))) {
      throw new IcebergError('NotFound', `table ${identToString(id)}: metadata file ${t.metadataLocation} is missing`, {
        retryable: false,
      });
    }
    return { identifier: id, metadataLocation: t.metadataLocation, metadata: t.metadata };
  }
  async dropTable(id: TableIdentifier): Promise<void> {
    this.tables.delete(identToString(id));
  }
  async commitTable(id: TableIdentifier, requirements: TableRequirement[], updates: TableUpdate[]): Promise<LoadedTable> {
    const base = this.tables.has(identToString(id)) ? await this.loadTable(id) : undefined;
    const staged = stageTable(id, base, requirements, updates, { nowMs: this.now() });
    if (!staged.changed) return { identifier: id, metadataLocation: staged.metadataLocation, metadata: staged.metadata };
    await this.beforeCommit?.(id, { requirements, updates });
    await writeStagedMetadata(this.io, staged);
    // The CAS: the pointer must still be the one we loaded (a beforeCommit hook may have moved it).
    const cur = this.tables.get(identToString(id));
    if (!cur || cur.metadataLocation !== staged.baseMetadataLocation) {
      await discardStagedMetadata(this.io, staged);
      throw IcebergError.mismatch(
        'CommitConflict',
        `commit ${identToString(id)}: metadata location`,
        staged.baseMetadataLocation,
        cur?.metadataLocation,
        true,
      );
    }
    const { metadataLocation, metadata } = staged;
    this.tables.set(identToString(id), { identifier: id, metadataLocation, metadata });
    this.commits++;
    await cleanUpAfterCommit(this.io, staged);
    return { identifier: id, metadataLocation, metadata };
  }
  async close(): Promise<void> {}
}
