/**
 * PostgreSQL dialect (node-postgres pool). Every catalog statement outside `transaction` runs in
 * autocommit, so the CAS UPDATE is one atomic statement under READ COMMITTED: a concurrent
 * UPDATE of the same row waits, then re-checks `metadata_location` and matches zero rows.
 */
import { Pool } from 'pg';
import type { PoolConfig } from 'pg';
import type { SqlDialect } from './sql-dialect';

export interface PostgresOptions {
  /** postgresql://user:pass@host:port/db */
  connectionString: string;
  maxConnections?: number;
  /** Abort connecting after this long, ms (default 10 s). */
  connectTimeoutMs?: number;
  /** Server-side statement_timeout, ms (default 30 s). */
  statementTimeoutMs?: number;
}

/** `?` placeholders -> `$1..$n` (catalog SQL never has `?` inside string literals). */
const numbered = (sql: string): string => {
  let i = 0;
  return sql.replace(/\?/g, () => `$${++i}`);
};

const sqlState = (e: unknown): string | undefined => {
  const code = (e as { code?: unknown }).code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
};

export class PostgresDialect implements SqlDialect {
  readonly kind = 'postgresql' as const;
  private readonly pool: Pool;

  constructor(opts: PostgresOptions) {
    const config: PoolConfig = {
      connectionString: opts.connectionString,
      max: opts.maxConnections ?? 4,
      connectionTimeoutMillis: opts.connectTimeoutMs ?? 10_000,
      // No statement may hang a commit forever (a lock held by a dead session, a stuck server):
      // the server cancels after 30 s (the transaction rolls back: provably not applied), and the
      // client gives up 5 s later (treated like any failure after the UPDATE: state unknown).
      statement_timeout: opts.statementTimeoutMs ?? 30_000,
      idle_in_transaction_session_timeout: 60_000,
      query_timeout: (opts.statementTimeoutMs ?? 30_000) + 5_000,
    };
    this.pool = new Pool(config);
    // An idle client losing its connection emits 'error' on the pool; unhandled it would crash
    // the process. The next query gets a fresh connection.
    this.pool.on('error', () => undefined);
  }

  async query<T extends Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<T[]> {
    return (await this.pool.query(numbered(sql), params)).rows as T[];
  }

  async execute(sql: string, params: unknown[] = []): Promise<number> {
    return (await this.pool.query(numbered(sql), params)).rowCount ?? 0;
  }

  async transaction<T>(fn: (tx: Pick<SqlDialect, 'query' | 'execute'>) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const out = await fn({
        query: async <R extends Record<string, unknown>>(sql: string, params: unknown[] = []) =>
          (await client.query(numbered(sql), params)).rows as R[],
        execute: async (sql: string, params: unknown[] = []) => (await client.query(numbered(sql), params)).rowCount ?? 0,
      });
      await client.query('COMMIT');
      return out;
    } catch (e) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw e;
    } finally {
      client.release();
    }
  }

  async columns(table: string): Promise<string[]> {
    const rows = await this.query<{ column_name: string }>(
      'SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?',
      [table],
    );
    return rows.map((r) => r.column_name);
  }

  isUniqueViolation(e: unknown): boolean {
    return sqlState(e) === '23505';
  }

  /**
   * The server answered our statement with an error, so (autocommit) it was rolled back. Class 08
   * (connection exception) and 57P (shutdown) can arrive around a commit whose outcome we never
   * saw; those, and errors with no SQLSTATE (socket reset, timeout), leave the outcome unknown.
   */
  isDefiniteFailure(e: unknown): boolean {
    const code = sqlState(e);
    if (code !== undefined) return !code.startsWith('08') && !code.startsWith('57P');
    // Never connected, so nothing was sent.
    const errno = (e as { code?: unknown }).code;
    if (errno === 'ECONNREFUSED' || errno === 'ENOTFOUND' || errno === 'EAI_AGAIN') return true;
    return /timeout exceeded when trying to connect/i.test((e as Error).message ?? '');
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
