/**
 * SqlCatalog: the JDBC / PyIceberg SQL catalog (tables `iceberg_tables` and
 * `iceberg_namespace_properties`) on SQLite or PostgreSQL, so PyIceberg's SqlCatalog, Spark's
 * and Trino's JdbcCatalog open the same catalog.
 *
 * Namespaces are stored as dotted strings ('a.b'), as those catalogs do; a namespace exists if it
 * has a property row or any table (PyIceberg's rule). The metadata files live in the table's
 * location and are read and written through the FileIO given at construction.
 */
import { IcebergError, isIcebergError } from '../errors';
import type { FileIO } from '../io/file-io';
import { parseTableMetadata } from '../spec/metadata';
import type { LoadedTable, TableIdentifier, TableMetadata } from '../spec/types';
import type { Catalog } from './catalog';
import { identToString } from './catalog';
import { redactError, redactSecrets } from './redact';
import { CREATE_NAMESPACE_PROPERTIES_DDL, CREATE_TABLES_DDL } from './sql-dialect';
import type { SqlDialect } from './sql-dialect';
import { cleanUpAfterCommit, discardStagedMetadata, stageTable, writeStagedMetadata } from './stage';
import type { TableRequirement, TableUpdate } from './updates';

export interface SqlCatalogOptions {
  /** The `catalog_name` column: several catalogs can share one database. */
  name: string;
  dialect: SqlDialect;
  io: FileIO;
  /** Root for default table locations: `${warehouse}/${namespace}.db/${table}` (PyIceberg's layout). */
  warehouse?: string;
  /** Create the two tables when missing (default true), like PyIceberg's `init_catalog_tables`. */
  initTables?: boolean;
  /** Values to mask wherever they appear in error messages (the connection password): see redact.ts. */
  secrets?: string[];
}

export {
  METADATA_PREVIOUS_VERSIONS_MAX,
  METADATA_DELETE_AFTER_COMMIT,
  WRITE_METADATA_PATH,
  newMetadataLocation,
  withPreviousMetadata,
} from './metadata-files';

const NAMESPACE_MINIMAL_PROPERTIES = { exists: 'true' };

/** Tables whose newest parsed metadata a SqlCatalog keeps (least recently used go first). */
const KNOWN_METADATA_TABLES = 64;

interface TableRow extends Record<string, unknown> {
  metadata_location: string | null;
  previous_metadata_location: string | null;
}

const decoder = new TextDecoder();

export const namespaceToString = (ns: string[]): string => {
  if (ns.length === 0) throw new IcebergError('DataInvalid', 'namespace must have at least one level', { retryable: false });
  for (const level of ns) {
    // Levels are joined with '.', so a '.' inside a level could not be read back.
    if (level.length === 0 || level.includes('.')) {
      throw IcebergError.mismatch('DataInvalid', 'namespace level', 'a non-empty name without "."', JSON.stringify(level), false);
    }
  }
  return ns.join('.');
};

export class SqlCatalog implements Catalog {
  readonly name: string;
  readonly io: FileIO;
  private readonly db: SqlDialect;
  private readonly warehouse: string | undefined;
  private readonly initTables: boolean;
  private readonly secrets: string[];
  private ready: Promise<void> | undefined;
  /** Java's V1 schema column; absent in catalogs PyIceberg created, then we leave it alone. */
  private hasIcebergType = false;
  /**
   * Per table, the metadata this catalog last read or committed and the file it is in. A
   * metadata.json is never rewritten in place (every version gets a new name), so while the
   * catalog row still names that file, load and commit reuse it instead of reading and parsing
   * it again (Java's BaseMetastoreTableOperations.refresh does the same). Without this every
   * commit parsed the whole table history twice (the load, then the CAS's base).
   * The metadata is shared with callers, as MemoryCatalog does: applyUpdates never mutates its
   * base, and its history records are frozen (spec/metadata.ts freezeRecord).
   */
  private readonly known = new Map<string, { location: string; metadata: TableMetadata }>();

  constructor(opts: SqlCatalogOptions) {
    if (!opts.name) throw new IcebergError('DataInvalid', 'SqlCatalog: "name" is required', { retryable: false });
    this.name = opts.name;
    this.db = opts.dialect;
    this.io = opts.io;
    this.warehouse = opts.warehouse?.replace(/\/+$/, '');
    this.initTables = opts.initTables ?? true;
    this.secrets = opts.secrets ?? [];
  }

  /** Creates the catalog tables if needed; every method calls it, so calling it is optional. */
  init(): Promise<void> {
    this.ready ??= this.doInit().catch((e: unknown) => {
      this.ready = undefined;
      throw this.dbError(e, 'initialize catalog tables');
    });
    return this.ready;
  }

  private async doInit(): Promise<void> {
    if (this.initTables) {
      for (const ddl of [CREATE_TABLES_DDL, CREATE_NAMESPACE_PROPERTIES_DDL]) {
        try {
          await this.db.execute(ddl);
        } catch (e) {
          // Two processes creating the tables at once: Postgres reports the loser's
          // CREATE TABLE IF NOT EXISTS as a unique violation on pg_type.
          if (!this.db.isUniqueViolation(e)) throw e;
        }
      }
    }
    const cols = await this.db.columns('iceberg_tables');
    if (cols.length === 0) {
      throw new IcebergError('NotFound', `catalog table iceberg_tables does not exist in the ${this.db.kind} database (initTables=false)`, {
        retryable: false,
      });
    }
    this.hasIcebergType = cols.includes('iceberg_type');
  }

  private dbError(e: unknown, what: string): IcebergError {
    if (e instanceof IcebergError) return e;
    return new IcebergError('Io', `${this.db.kind} catalog "${this.name}": ${what} failed: ${this.redact((e as Error).message)}`, {
      cause: this.redactError(e),
    });
  }

  /** Driver messages never reach a log with the connection's password in them. */
  private redact(text: string): string {
    return redactSecrets(String(text), this.secrets);
  }

  private redactError(e: unknown): Error {
    return redactError(e, this.secrets);
  }

  /** Only rows that are tables (Java's JDBC catalog stores views in the same table). */
  private get tableTypeFilter(): string {
    return this.hasIcebergType ? ` AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)` : '';
  }

  // ---------------- namespaces ----------------

  /** Every namespace string known to this catalog (from properties and from tables). */
  private async allNamespaces(): Promise<string[]> {
    await this.init();
    try {
      const rows = await this.db.query<{ ns: string }>(
        `SELECT table_namespace AS ns FROM iceberg_tables WHERE catalog_name = ?
         UNION SELECT namespace AS ns FROM iceberg_namespace_properties WHERE catalog_name = ?`,
        [this.name, this.name],
      );
      return rows.map((r) => r.ns);
    } catch (e) {
      throw this.dbError(e, 'list namespaces');
    }
  }

  async listNamespaces(parent: string[] = []): Promise<string[][]> {
    if (parent.length > 0 && !(await this.namespaceExists(parent))) {
      throw new IcebergError('NotFound', `namespace ${parent.join('.')} does not exist`, { retryable: false });
    }
    const out = new Map<string, string[]>();
    for (const s of await this.allNamespaces()) {
      const levels = s.split('.');
      if (levels.length <= parent.length || parent.some((p, i) => levels[i] !== p)) continue;
      const child = levels.slice(0, parent.length + 1);
      out.set(child.join('.'), child);
    }
    return [...out.keys()].sort().map((k) => out.get(k)!);
  }

  /** True if the namespace has properties, tables, or child namespaces (PyIceberg's rule). */
  async namespaceExists(namespace: string[]): Promise<boolean> {
    const ns = namespaceToString(namespace);
    return (await this.allNamespaces()).some((s) => s === ns || s.startsWith(`${ns}.`));
  }

  async createNamespace(namespace: string[], properties: Record<string, string> = {}): Promise<void> {
    const ns = namespaceToString(namespace);
    if (await this.namespaceExists(namespace)) {
      throw new IcebergError('AlreadyExists', `namespace ${ns} already exists`, { retryable: false });
    }
    const props = Object.keys(properties).length > 0 ? properties : NAMESPACE_MINIMAL_PROPERTIES;
    try {
      await this.db.transaction(async (tx) => {
        for (const [k, v] of Object.entries(props)) {
          await tx.execute(
            'INSERT INTO iceberg_namespace_properties (catalog_name, namespace, property_key, property_value) VALUES (?, ?, ?, ?)',
            [this.name, ns, k, v],
          );
        }
      });
    } catch (e) {
      if (this.db.isUniqueViolation(e))
        throw new IcebergError('AlreadyExists', `namespace ${ns} already exists`, { retryable: false, cause: this.redactError(e) });
      throw this.dbError(e, `create namespace ${ns}`);
    }
  }

  async loadNamespaceProperties(namespace: string[]): Promise<Record<string, string>> {
    const ns = namespaceToString(namespace);
    if (!(await this.namespaceExists(namespace))) {
      throw new IcebergError('NotFound', `namespace ${ns} does not exist`, { retryable: false });
    }
    const rows = await this.db.query<{ property_key: string; property_value: string }>(
      'SELECT property_key, property_value FROM iceberg_namespace_properties WHERE catalog_name = ? AND namespace = ?',
      [this.name, ns],
    );
    return Object.fromEntries(rows.map((r) => [r.property_key, r.property_value]));
  }

  /** Fails if the namespace holds tables or child namespaces (Java's rule; PyIceberg checks tables only). */
  async dropNamespace(namespace: string[]): Promise<void> {
    const ns = namespaceToString(namespace);
    const all = await this.allNamespaces();
    if (!all.some((s) => s === ns || s.startsWith(`${ns}.`))) {
      throw new IcebergError('NotFound', `namespace ${ns} does not exist`, { retryable: false });
    }
    const tables = await this.listTables(namespace);
    const children = all.filter((s) => s.startsWith(`${ns}.`));
    if (tables.length > 0 || children.length > 0) {
      throw IcebergError.mismatch(
        'DataInvalid',
        `cannot drop namespace ${ns}: it is not empty`,
        'no tables and no child namespaces',
        `${tables.length} table(s), ${children.length} child namespace(s)`,
        false,
      );
    }
    try {
      await this.db.execute('DELETE FROM iceberg_namespace_properties WHERE catalog_name = ? AND namespace = ?', [this.name, ns]);
    } catch (e) {
      throw this.dbError(e, `drop namespace ${ns}`);
    }
  }

  // ---------------- tables ----------------

  async listTables(namespace: string[]): Promise<TableIdentifier[]> {
    const ns = namespaceToString(namespace);
    if (!(await this.namespaceExists(namespace))) {
      throw new IcebergError('NotFound', `namespace ${ns} does not exist`, { retryable: false });
    }
    const rows = await this.db.query<{ table_name: string }>(
      `SELECT table_name FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ?${this.tableTypeFilter} ORDER BY table_name`,
      [this.name, ns],
    );
    return rows.map((r) => ({ namespace: [...namespace], name: r.table_name }));
  }

  private async tableRow(id: TableIdentifier): Promise<TableRow | undefined> {
    await this.init();
    const ns = namespaceToString(id.namespace);
    try {
      const rows = await this.db.query<TableRow>(
        `SELECT metadata_location, previous_metadata_location FROM iceberg_tables
         WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?${this.tableTypeFilter}`,
        [this.name, ns, id.name],
      );
      return rows[0];
    } catch (e) {
      throw this.dbError(e, `look up table ${identToString(id)}`);
    }
  }

  async tableExists(id: TableIdentifier): Promise<boolean> {
    return (await this.tableRow(id)) !== undefined;
  }

  /** Where `createTable` callers should put a new table: namespace `location` property, else the warehouse. */
  async defaultTableLocation(id: TableIdentifier): Promise<string> {
    const ns = namespaceToString(id.namespace);
    const props = await this.loadNamespaceProperties(id.namespace);
    const nsLocation = props['location'];
    if (nsLocation) return `${nsLocation.replace(/\/+$/, '')}/${id.name}`;
    if (!this.warehouse) {
      throw new IcebergError(
        'DataInvalid',
        `catalog "${this.name}" has no warehouse and namespace ${ns} no "location": cannot place table ${id.name}`,
        { retryable: false },
      );
    }
    return `${this.warehouse}/${ns}.db/${id.name}`;
  }

  private remember(id: TableIdentifier, location: string, metadata: TableMetadata): void {
    const k = identToString(id);
    this.known.delete(k);
    this.known.set(k, { location, metadata });
    if (this.known.size > KNOWN_METADATA_TABLES) this.known.delete(this.known.keys().next().value!);
  }

  private async readMetadata(location: string, id: TableIdentifier): Promise<TableMetadata> {
    const k = identToString(id);
    const known = this.known.get(k);
    if (known?.location === location) {
      this.known.delete(k); // most recently used last
      this.known.set(k, known);
      return known.metadata;
    }
    const metadata = await this.readMetadataFile(location, id);
    this.remember(id, location, metadata);
    return metadata;
  }

  private async readMetadataFile(location: string, id: TableIdentifier): Promise<TableMetadata> {
    let bytes: Uint8Array;
    try {
      bytes = await this.io.read(location);
    } catch (e) {
      if (isIcebergError(e, 'NotFound')) {
        throw new IcebergError('NotFound', `table ${identToString(id)}: its current metadata file ${location} is missing`, {
          retryable: false,
          context: { metadataLocation: location },
          cause: e,
        });
      }
      throw e;
    }
    return parseTableMetadata(decoder.decode(bytes));
  }

  async loadTable(id: TableIdentifier): Promise<LoadedTable> {
    const row = await this.tableRow(id);
    if (!row?.metadata_location) {
      throw new IcebergError('NotFound', `table ${identToString(id)} does not exist in catalog "${this.name}"`, { retryable: false });
    }
    return { identifier: id, metadataLocation: row.metadata_location, metadata: await this.readMetadata(row.metadata_location, id) };
  }

  /**
   * Writes `00000-<uuid>.metadata.json` under the metadata's location (or the default location
   * when it is empty) and inserts the row. Concurrent creates: one INSERT wins, the other gets
   * 'AlreadyExists' and its metadata file is deleted.
   */
  async createTable(id: TableIdentifier, metadata: TableMetadata): Promise<LoadedTable> {
    const ns = namespaceToString(id.namespace);
    if (!(await this.namespaceExists(id.namespace))) {
      throw new IcebergError('NotFound', `cannot create table ${identToString(id)}: namespace ${ns} does not exist`, { retryable: false });
    }
    if (await this.tableExists(id)) {
      throw new IcebergError('AlreadyExists', `table ${identToString(id)} already exists`, { retryable: false });
    }
    const m: TableMetadata = metadata.location ? metadata : { ...metadata, location: await this.defaultTableLocation(id) };
    const staged = stageTable(id, undefined, [{ type: 'assert-create' }], [], { nowMs: BigInt(Date.now()), initial: m });
    const location = staged.metadataLocation;
    await writeStagedMetadata(this.io, staged);
    try {
      await this.db.execute(
        this.hasIcebergType
          ? `INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location, previous_metadata_location, iceberg_type) VALUES (?, ?, ?, ?, NULL, 'TABLE')`
          : 'INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location, previous_metadata_location) VALUES (?, ?, ?, ?, NULL)',
        [this.name, ns, id.name, location],
      );
    } catch (e) {
      if (this.db.isUniqueViolation(e)) {
        await discardStagedMetadata(this.io, staged);
        throw new IcebergError('AlreadyExists', `table ${identToString(id)} already exists`, {
          retryable: false,
          cause: this.redactError(e),
        });
      }
      if (this.db.isDefiniteFailure(e)) await discardStagedMetadata(this.io, staged);
      throw this.dbError(e, `create table ${identToString(id)}`);
    }
    this.remember(id, location, staged.metadata);
    return { identifier: id, metadataLocation: location, metadata: staged.metadata };
  }

  /**
   * Removes the catalog row. With `purge`, also deletes the metadata files and manifest lists the
   * metadata names (manifests and data files are left to orphan removal: reading them needs the
   * manifest reader). Not atomic with concurrent commits: a commit racing a drop loses its CAS.
   */
  async dropTable(id: TableIdentifier, opts: { purge?: boolean } = {}): Promise<void> {
    let loaded: LoadedTable | undefined;
    if (opts.purge) {
      loaded = await this.loadTable(id).catch((e: unknown) => {
        // A table whose metadata file is gone can still be dropped; nothing left to purge there.
        if (isIcebergError(e, 'NotFound') && e.context['metadataLocation'] !== undefined) return undefined;
        throw e;
      });
    }
    const ns = namespaceToString(id.namespace);
    await this.init();
    let n: number;
    try {
      n = await this.db.execute(
        `DELETE FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?${this.tableTypeFilter}`,
        [this.name, ns, id.name],
      );
    } catch (e) {
      throw this.dbError(e, `drop table ${identToString(id)}`);
    }
    this.known.delete(identToString(id));
    if (n === 0)
      throw new IcebergError('NotFound', `table ${identToString(id)} does not exist in catalog "${this.name}"`, { retryable: false });
    if (loaded) {
      const files = new Set<string>([
        loaded.metadataLocation,
        ...loaded.metadata['metadata-log'].map((e) => e['metadata-file']),
        ...loaded.metadata.snapshots.map((s) => s['manifest-list']),
      ]);
      for (const f of files) await this.io.delete(f);
    }
  }

  /**
   * Compare-and-swap commit: load the current metadata, stage the commit (stage.ts: check
   * `requirements`, apply `updates`, metadata version N+1), write it, then swap the pointer only if
   * it still names version N.
   * A lost race or failed requirement: 'CommitConflict' (retryable; our new file is deleted).
   * A database failure once the UPDATE may have run: 'CommitStateUnknown' (file kept).
   */
  async commitTable(id: TableIdentifier, requirements: TableRequirement[], updates: TableUpdate[]): Promise<LoadedTable> {
    const row = await this.tableRow(id);
    const current = row?.metadata_location
      ? { metadataLocation: row.metadata_location, metadata: await this.readMetadata(row.metadata_location, id) }
      : undefined;
    const staged = stageTable(id, current, requirements, updates, { nowMs: BigInt(Date.now()) });
    const newLocation = staged.metadataLocation;
    if (!staged.changed) return { identifier: id, metadataLocation: newLocation, metadata: staged.metadata };
    const baseLocation = staged.baseMetadataLocation!;
    await writeStagedMetadata(this.io, staged);

    let swapped: number;
    try {
      swapped = await this.db.execute(
        `UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ?
         WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? AND metadata_location = ?`,
        [newLocation, baseLocation, this.name, namespaceToString(id.namespace), id.name, baseLocation],
      );
    } catch (e) {
      if (this.db.isDefiniteFailure(e)) {
        await discardStagedMetadata(this.io, staged);
        throw new IcebergError('Io', `commit to ${identToString(id)} failed before the swap: ${this.redact((e as Error).message)}`, {
          retryable: true,
          cause: this.redactError(e),
        });
      }
      throw new IcebergError(
        'CommitStateUnknown',
        `commit to ${identToString(id)}: the catalog update may or may not have been applied: ${this.redact((e as Error).message)}`,
        {
          retryable: false,
          context: { metadataLocation: newLocation, baseMetadataLocation: baseLocation },
          cause: this.redactError(e),
        },
      );
    }
    if (swapped === 0) {
      await discardStagedMetadata(this.io, staged);
      const now = await this.tableRow(id).catch(() => undefined);
      throw IcebergError.mismatch(
        'CommitConflict',
        `commit to ${identToString(id)} lost a race: table metadata_location changed`,
        baseLocation,
        now?.metadata_location ?? 'table dropped',
        true,
      );
    }
    this.remember(id, newLocation, staged.metadata);
    // Best effort, after the swap: a failed delete leaves an orphan, never a broken table.
    await cleanUpAfterCommit(this.io, staged);
    return { identifier: id, metadataLocation: newLocation, metadata: staged.metadata };
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}
