/**
 * Transaction: one or more actions committed as one catalog commit, with optimistic retries
 * (after iceberg-rust's Transaction and PyIceberg's commit loop).
 *
 * On IcebergError('CommitConflict') the table is reloaded, `validate` runs again, and every
 * action is re-prepared against the new base (snapshot ids stay fixed). Files written for an
 * attempt are deleted only when that attempt provably did not land (a conflict, a failed
 * requirement, a validation error before the CAS); after 'CommitStateUnknown' or any other error
 * from the catalog call nothing is deleted, because the commit may be live.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { IcebergError, isIcebergError } from '../errors';
import type { Catalog } from '../catalog/catalog';
import type { FileIO } from '../io/file-io';
import { commitMaxRetryWaitMs, commitMinRetryWaitMs, commitNumRetries } from '../spec/table-properties';
import type { DataFile, LoadedTable, TableIdentifier, TableMetadata } from '../spec/types';
import { applyUpdates } from './apply';
import { ExpireSnapshots, type ExpireSnapshotsOptions, type ExpiredFiles } from './expire';
import {
  FastAppend,
  type PendingCommit,
  RewriteFiles,
  type RewriteDeletesOptions,
  RowDelta,
  type RowDeltaOptions,
  SnapshotProducer,
  type TableAction,
} from './snapshot-producer';
import type { TableRequirement, TableUpdate } from './updates';

export interface RetryOptions {
  /** attempts in total; default 1 + table `commit.retry.num-retries` (4) */
  maxAttempts?: number;
  /** default table `commit.retry.min-wait-ms` (100) */
  minWaitMs?: number;
  /** default table `commit.retry.max-wait-ms` (60000) */
  maxWaitMs?: number;
}

export interface CommitOptions extends RetryOptions {
  /**
   * Runs against the freshly loaded table before every attempt (fencing, idempotency lookups).
   * Throw to stop: nothing is committed and this transaction's files are cleaned up. Return
   * `ALREADY_COMMITTED` when the table shows this transaction landed on an earlier try (a retry
   * whose response was lost): nothing more is committed and the result says so.
   */
  validate?: (table: LoadedTable) => Promise<ValidateOutcome> | ValidateOutcome;
  /** the table as already loaded, used for the first attempt instead of a load */
  table?: LoadedTable;
}

export const ALREADY_COMMITTED = 'already-committed' as const;
export type ValidateOutcome = void | typeof ALREADY_COMMITTED;

export interface CommitResult {
  table: LoadedTable;
  /** snapshot ids created, in action order (empty when `alreadyCommitted`) */
  snapshotIds: bigint[];
  attempts: number;
  /** `validate` found this transaction's effect already in the table */
  alreadyCommitted: boolean;
}

class SetProperties implements TableAction {
  constructor(
    private readonly updates: Record<string, string>,
    private readonly removals: string[],
  ) {}
  writtenFiles(): string[] {
    return [];
  }
  async prepare(): Promise<PendingCommit> {
    const updates: TableUpdate[] = [];
    if (Object.keys(this.updates).length) updates.push({ action: 'set-properties', updates: this.updates });
    if (this.removals.length) updates.push({ action: 'remove-properties', removals: this.removals });
    return { updates, requirements: [], attemptFiles: [], referencedFiles: [] };
  }
}

/** `upgrade-format-version` to `version`, when the table is older (a no-op otherwise). */
class UpgradeFormatVersion implements TableAction {
  constructor(private readonly version: 2 | 3) {}
  writtenFiles(): string[] {
    return [];
  }
  async prepare(base: TableMetadata): Promise<PendingCommit> {
    if (base['format-version'] >= this.version) return { updates: [], requirements: [], attemptFiles: [], referencedFiles: [] };
    return {
      updates: [{ action: 'upgrade-format-version', 'format-version': this.version }],
      requirements: [{ type: 'assert-table-uuid', uuid: base['table-uuid'] }],
      attemptFiles: [],
      referencedFiles: [],
    };
  }
}

/** Requirements come from the first action per kind: later actions see our own uncommitted state. */
function mergeRequirements(all: TableRequirement[][]): TableRequirement[] {
  const seen = new Set<string>();
  const out: TableRequirement[] = [];
  for (const r of all.flat()) {
    const key = r.type === 'assert-ref-snapshot-id' ? `${r.type}:${r.ref}` : r.type;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(r);
  }
  return out;
}

export class Transaction {
  private readonly actions: TableAction[] = [];
  constructor(readonly identifier: TableIdentifier) {}

  /** Adds `files` in an `append` snapshot (merging small manifests per table properties). */
  fastAppend(files: DataFile[], summaryProps: Record<string, string> = {}): FastAppend {
    const a = new FastAppend(files, summaryProps);
    this.actions.push(a);
    return a;
  }
  /** Replaces `deleted` by `added` in a `replace` snapshot; fails if a replaced file vanished. */
  rewriteFiles(
    deleted: DataFile[],
    added: DataFile[],
    summaryProps: Record<string, string> = {},
    deletes?: RewriteDeletesOptions,
  ): RewriteFiles {
    const a = new RewriteFiles(deleted, added, summaryProps, deletes);
    this.actions.push(a);
    return a;
  }
  /**
   * Adds data files and position delete files in one snapshot; fails with CommitFailed if a data
   * file the deletes name is no longer live (see RowDelta).
   */
  rowDelta(addedDataFiles: DataFile[], addedDeleteFiles: DataFile[], opts: RowDeltaOptions = {}): RowDelta {
    const a = new RowDelta(addedDataFiles, addedDeleteFiles, opts);
    this.actions.push(a);
    return a;
  }
  /** Removes old snapshots; `.result` lists unreachable files after commit (caller deletes them). */
  expireSnapshots(opts: ExpireSnapshotsOptions = {}): ExpireSnapshots {
    const a = new ExpireSnapshots(opts);
    this.actions.push(a);
    return a;
  }
  /**
   * Upgrades the table's format version (spec "Format Versioning"): to 3, next-row-id starts at 0
   * and the snapshots after it assign row ids and take deletion vectors only. Actions added after
   * this one in the same transaction are prepared against the upgraded table.
   */
  upgradeFormatVersion(version: 2 | 3): this {
    this.actions.push(new UpgradeFormatVersion(version));
    return this;
  }
  setProperties(updates: Record<string, string>, removals: string[] = []): this {
    this.actions.push(new SetProperties(updates, removals));
    return this;
  }
  /** Adds a custom action (anything producing REST updates + requirements). */
  add(action: TableAction): this {
    this.actions.push(action);
    return this;
  }

  /** Builds all actions against `base`, chaining their updates through applyUpdates. */
  private async prepareAll(
    base: TableMetadata,
    io: FileIO,
    attempt: number,
  ): Promise<{ commits: PendingCommit[]; updates: TableUpdate[]; requirements: TableRequirement[] }> {
    const commits: PendingCommit[] = [];
    let m = base;
    for (const a of this.actions) {
      const c = await a.prepare(m, io, attempt);
      commits.push(c);
      if (c.updates.length) m = applyUpdates(m, c.updates, BigInt(Date.now()));
    }
    return { commits, updates: commits.flatMap((c) => c.updates), requirements: mergeRequirements(commits.map((c) => c.requirements)) };
  }

  private async deleteQuietly(io: FileIO, paths: Iterable<string>): Promise<void> {
    // Best effort: a leftover file is an orphan for the orphan sweep, never a correctness issue.
    await Promise.all([...new Set(paths)].map((p) => io.delete(p).catch(() => undefined)));
  }

  /**
   * Commits all actions as one catalog commit. Concurrency: optimistic CAS with bounded retries
   * and exponential backoff with jitter; each retry reloads, re-validates and re-plans.
   */
  async commit(catalog: Catalog, io: FileIO, opts: CommitOptions = {}): Promise<CommitResult> {
    let table = opts.table ?? (await catalog.loadTable(this.identifier));
    const props = table.metadata.properties;
    const maxAttempts = Math.max(1, opts.maxAttempts ?? 1 + commitNumRetries(props));
    const minWait = opts.minWaitMs ?? commitMinRetryWaitMs(props);
    const maxWait = opts.maxWaitMs ?? commitMaxRetryWaitMs(props);
    const all = (): string[] => this.actions.flatMap((a) => a.writtenFiles());

    for (let attempt = 1; ; attempt++) {
      let prepared: Awaited<ReturnType<Transaction['prepareAll']>>;
      try {
        if ((await opts.validate?.(table)) === ALREADY_COMMITTED) {
          // An earlier try landed; whatever this process wrote since is referenced by nothing.
          await this.deleteQuietly(io, all());
          return { table, snapshotIds: [], attempts: attempt, alreadyCommitted: true };
        }
        prepared = await this.prepareAll(table.metadata, io, attempt);
      } catch (e) {
        await this.deleteQuietly(io, all()); // nothing was sent to the catalog
        throw e;
      }
      if (prepared.updates.length === 0) return { table, snapshotIds: [], attempts: attempt, alreadyCommitted: false };
      try {
        const committed = await catalog.commitTable(this.identifier, prepared.requirements, prepared.updates);
        const referenced = new Set(prepared.commits.flatMap((c) => c.referencedFiles));
        await this.deleteQuietly(
          io,
          all().filter((p) => !referenced.has(p)),
        );
        const snapshotIds = this.actions.filter((a): a is SnapshotProducer => a instanceof SnapshotProducer).map((a) => a.snapshotId);
        return { table: committed, snapshotIds, attempts: attempt, alreadyCommitted: false };
      } catch (e) {
        const conflict = isIcebergError(e, 'CommitConflict');
        const provenNotLanded = conflict || isIcebergError(e, 'CommitFailed');
        if (!provenNotLanded) throw e; // CommitStateUnknown, transport errors: keep every file
        if (!conflict || attempt >= maxAttempts) {
          await this.deleteQuietly(io, all());
          if (conflict) {
            throw new IcebergError(
              'CommitConflict',
              `commit to ${this.identifier.namespace.join('.')}.${this.identifier.name} lost ${attempt} CAS races: ${(e as Error).message}`,
              { retryable: true, cause: e, context: { ...(e as IcebergError).context, attempts: attempt } },
            );
          }
          throw e;
        }
        await this.deleteQuietly(
          io,
          prepared.commits.flatMap((c) => c.attemptFiles),
        );
        const wait = Math.min(maxWait, minWait * 2 ** (attempt - 1));
        await sleep(wait * (0.5 + Math.random() / 2));
        table = await catalog.loadTable(this.identifier);
      }
    }
  }
}

// ---------- one-call conveniences ----------

/**
 * One fast-append CAS attempt against `table` exactly as loaded: a lost race throws
 * IcebergError('CommitConflict') after cleaning up, so the caller reloads, re-validates its
 * own fencing and calls again. For retries inside the library use `new Transaction(id)` with
 * `commit(catalog, io, {validate})`.
 */
export async function fastAppend(
  catalog: Catalog,
  io: FileIO,
  table: LoadedTable,
  files: DataFile[],
  summaryProps: Record<string, string> = {},
  opts: Omit<CommitOptions, 'table'> = { maxAttempts: 1 },
): Promise<LoadedTable> {
  const tx = new Transaction(table.identifier);
  tx.fastAppend(files, summaryProps);
  return (await tx.commit(catalog, io, { maxAttempts: 1, ...opts, table })).table;
}

/** Rewrite with retries (concurrent appends are fine; vanished replaced files fail with CommitFailed). */
export async function rewriteFiles(
  catalog: Catalog,
  io: FileIO,
  id: TableIdentifier,
  deleted: DataFile[],
  added: DataFile[],
  summaryProps: Record<string, string> = {},
  opts: CommitOptions = {},
  deletes?: RewriteDeletesOptions,
): Promise<CommitResult> {
  const tx = new Transaction(id);
  tx.rewriteFiles(deleted, added, summaryProps, deletes);
  return tx.commit(catalog, io, opts);
}

/**
 * Commits position deletes (and data files) with retries: concurrent appends are fine; a
 * referenced data file that vanished fails with CommitFailed (not retryable).
 */
export async function rowDelta(
  catalog: Catalog,
  io: FileIO,
  id: TableIdentifier,
  addedDataFiles: DataFile[],
  addedDeleteFiles: DataFile[],
  deltaOpts: RowDeltaOptions = {},
  opts: CommitOptions = {},
): Promise<CommitResult> {
  const tx = new Transaction(id);
  tx.rowDelta(addedDataFiles, addedDeleteFiles, deltaOpts);
  return tx.commit(catalog, io, opts);
}

/** Expires snapshots with retries; returns the unreachable files (not deleted here). */
export async function expireSnapshots(
  catalog: Catalog,
  io: FileIO,
  id: TableIdentifier,
  expire: ExpireSnapshotsOptions,
  opts: CommitOptions = {},
): Promise<CommitResult & { expired: ExpiredFiles }> {
  const tx = new Transaction(id);
  const a = tx.expireSnapshots(expire);
  const r = await tx.commit(catalog, io, opts);
  return { ...r, expired: a.result };
}
