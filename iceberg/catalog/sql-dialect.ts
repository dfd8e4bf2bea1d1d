/**
 * The little a SQL catalog needs from a database, so SQLite and PostgreSQL share one catalog.
 * Statements are written with `?` placeholders; dialects translate (`$1` for pg).
 */
export interface SqlDialect {
  readonly kind: 'sqlite' | 'postgresql';
  query<T extends Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  /** Runs one statement in autocommit mode; returns the number of rows it changed. */
  execute(sql: string, params?: unknown[]): Promise<number>;
  /** Runs `fn` in one transaction (statements inside use the same connection). */
  transaction<T>(fn: (tx: Pick<SqlDialect, 'query' | 'execute'>) => Promise<T>): Promise<T>;
  /** Column names of `table` (empty when it does not exist). */
  columns(table: string): Promise<string[]>;
  isUniqueViolation(e: unknown): boolean;
  /**
   * True when the error proves the statement did not take effect (the database answered with an
   * error, or it never ran). False means the outcome is unknown (connection lost mid-statement),
   * which for the commit CAS is CommitStateUnknown.
   */
  isDefiniteFailure(e: unknown): boolean;
  close(): Promise<void>;
}

/**
 * DDL of the JDBC catalog (Java JdbcCatalog schema V1) and PyIceberg's SqlCatalog, which share
 * these tables: same names, VARCHAR sizes, nullability and primary keys, so PyIceberg, Spark and
 * Trino open a catalog we created. `iceberg_type` is Java's V1 column ('TABLE' | 'VIEW', NULL =
 * table); PyIceberg neither reads nor writes it, and catalogs created by PyIceberg lack it.
 * `property_value` is NOT NULL as PyIceberg declares it (Java leaves it nullable but never writes NULL).
 */
export const CREATE_TABLES_DDL = `CREATE TABLE IF NOT EXISTS iceberg_tables (
  catalog_name VARCHAR(255) NOT NULL,
  table_namespace VARCHAR(255) NOT NULL,
  table_name VARCHAR(255) NOT NULL,
  metadata_location VARCHAR(1000),
  previous_metadata_location VARCHAR(1000),
  iceberg_type VARCHAR(5),
  PRIMARY KEY (catalog_name, table_namespace, table_name)
)`;

export const CREATE_NAMESPACE_PROPERTIES_DDL = `CREATE TABLE IF NOT EXISTS iceberg_namespace_properties (
  catalog_name VARCHAR(255) NOT NULL,
  namespace VARCHAR(255) NOT NULL,
  property_key VARCHAR(255) NOT NULL,
  property_value VARCHAR(1000) NOT NULL,
  PRIMARY KEY (catalog_name, namespace, property_key)
)`;
