/**
 * SQLite dialect (Node's built-in `node:sqlite`, Node >= 22.5; no native addon to compile). WAL mode lets readers run beside a writer; busy_timeout makes a
 * second process wait for the write lock instead of failing at once, so several worker
 * processes can commit to one catalog file (the CAS UPDATE itself is atomic in SQLite).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DatabaseSync, type SQLInputValue } from 'node:sqlite';
import type { SqlDialect } from './sql-dialect';

export interface SqliteOptions {
  /** File path, or ':memory:' (single process only). */
  path: string;
  /** How long to wait for another process's write lock, ms (default 30 s). */
  busyTimeoutMs?: number;
}

/** SQLite's extended result code of a node:sqlite error (`errcode`), or undefined for any other error. */
const sqliteCode = (e: unknown): number | undefined => {
  const err = e as { code?: unknown; errcode?: unknown };
  return err.code === 'ERR_SQLITE_ERROR' && typeof err.errcode === 'number' ? err.errcode : undefined;
};
// https://sqlite.org/rescode.html: the primary code is the low byte of an extended one.
const SQLITE_IOERR = 10;
const SQLITE_CORRUPT = 11;
const SQLITE_CONSTRAINT_PRIMARYKEY = 1555;
const SQLITE_CONSTRAINT_UNIQUE = 2067;

export class SqliteDialect implements SqlDialect {
  readonly kind = 'sqlite' as const;
  private readonly db: DatabaseSync;
  // node:sqlite is synchronous but our catalog code awaits between statements of a
  // transaction; this queue keeps another caller's statements out of an open transaction.
  private queue: Promise<unknown> = Promise.resolve();

  constructor(opts: SqliteOptions) {
    if (opts.path !== ':memory:') fs.mkdirSync(path.dirname(path.resolve(opts.path)), { recursive: true });
    this.db = new DatabaseSync(opts.path, { timeout: opts.busyTimeoutMs ?? 30_000 });
    this.db.exec('PRAGMA journal_mode = WAL');
    // FULL (not NORMAL) so a committed pointer swap survives power loss, as the catalog is the
    // single source of truth for which metadata.json is current.
    this.db.exec('PRAGMA synchronous = FULL');
  }

  private serialized<T>(fn: () => T | Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private queryNow<T>(sql: string, params: unknown[]): T[] {
    return this.db.prepare(sql).all(...(params as SQLInputValue[])) as T[];
  }

  private executeNow(sql: string, params: unknown[]): number {
    return Number(this.db.prepare(sql).run(...(params as SQLInputValue[])).changes);
  }

  query<T extends Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<T[]> {
    return this.serialized(() => this.queryNow<T>(sql, params));
  }

  execute(sql: string, params: unknown[] = []): Promise<number> {
    return this.serialized(() => this.executeNow(sql, params));
  }

  transaction<T>(fn: (tx: Pick<SqlDialect, 'query' | 'execute'>) => Promise<T>): Promise<T> {
    return this.serialized(async () => {
      // IMMEDIATE takes the write lock up front: a deferred transaction that reads, then writes,
      // can fail with SQLITE_BUSY without waiting when another process wrote in between.
      this.db.exec('BEGIN IMMEDIATE');
      try {
        const out = await fn({
          query: async <R extends Record<string, unknown>>(sql: string, params: unknown[] = []) => this.queryNow<R>(sql, params),
          execute: async (sql: string, params: unknown[] = []) => this.executeNow(sql, params),
        });
        this.db.exec('COMMIT');
        return out;
      } catch (e) {
        if (this.db.isTransaction) this.db.exec('ROLLBACK');
        throw e;
      }
    });
  }

  async columns(table: string): Promise<string[]> {
    const rows = await this.query<{ name: string }>(`PRAGMA table_info(${JSON.stringify(table)})`);
    return rows.map((r) => r.name);
  }

  isUniqueViolation(e: unknown): boolean {
    const code = sqliteCode(e);
    return code === SQLITE_CONSTRAINT_PRIMARYKEY || code === SQLITE_CONSTRAINT_UNIQUE;
  }

  /**
   * SQLite statements are atomic: an error means the statement was rolled back, except an I/O
   * error while committing, after which the file may or may not hold the change.
   */
  isDefiniteFailure(e: unknown): boolean {
    const code = sqliteCode(e);
    return code !== undefined && (code & 0xff) !== SQLITE_IOERR && (code & 0xff) !== SQLITE_CORRUPT;
  }

  async close(): Promise<void> {
    await this.serialized(() => {
      if (this.db.isOpen) this.db.close();
    });
  }
}
