/**
 * A separate writer process for test/integration/interop-concurrency.test.ts. One JSON argument:
 *   {mode: 'append', config, table, writer, commits, rows, go}   -> appends `commits` snapshots
 *   {mode: 'rewrite', config, table, writer, rounds, go}         -> compacts all live files, `rounds` times
 * Writes `<go>.ready-<writer>` once loaded, then waits for the file `go` to exist (so sibling
 * processes start together), then prints one JSON line: what it committed and how each attempt
 * ended. Exits 0 unless something unexpected broke.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { isIcebergError, parseIdentifier, snapshotById, type SqlCatalogConfig } from '../../iceberg';
import { appendRows, compact, liveFiles, open, type Backend } from './floe-table';
import { setTimeout as sleep } from 'node:timers/promises';

interface Args {
  mode: 'append' | 'rewrite';
  config: SqlCatalogConfig;
  table: string;
  writer: number;
  commits?: number;
  rows?: number;
  rounds?: number;
  go: string;
}

export interface AppendReport {
  mode: 'append';
  writer: number;
  commits: Array<{ snapshotId: string; sequenceNumber: string; ids: [number, number] }>;
}
export interface RewriteOutcome {
  outcome: 'committed' | 'commit-failed' | 'conflict-exhausted' | 'skipped';
  snapshotId?: string;
  replaced?: string[];
  added?: string[];
  missing?: string[];
  message?: string;
}
export interface RewriteReport {
  mode: 'rewrite';
  writer: number;
  rounds: RewriteOutcome[];
}

async function main(): Promise<void> {
  const a = JSON.parse(process.argv[2]!) as Args;
  const b = { kind: a.config.warehouse.startsWith('s3:') ? 's3' : 'file', warehouse: a.config.warehouse, config: a.config } as Backend;
  const { catalog, io } = await open(b);
  const id = parseIdentifier(a.table);
  writeFileSync(`${a.go}.ready-${a.writer}`, '');
  while (!existsSync(a.go)) await sleep(20);
  try {
    if (a.mode === 'append') {
      const report: AppendReport = { mode: 'append', writer: a.writer, commits: [] };
      for (let c = 0; c < a.commits!; c++) {
        const first = a.writer * 1_000_000 + c * a.rows!;
        const rows = Array.from({ length: a.rows! }, (_, j) => ({ id: BigInt(first + j), writer: a.writer, part: (first + j) % 3 }));
        const r = await appendRows(catalog, io, id, rows, `w${a.writer}-c${c}`, {
          'floe.writer': String(a.writer),
          'floe.commit': String(c),
        });
        const snap = snapshotById(r.table.metadata, r.snapshotId)!;
        report.commits.push({
          snapshotId: r.snapshotId.toString(),
          sequenceNumber: snap['sequence-number'].toString(),
          ids: [first, first + a.rows! - 1],
        });
      }
      process.stdout.write(`${JSON.stringify(report)}\n`);
    } else {
      const report: RewriteReport = { mode: 'rewrite', writer: a.writer, rounds: [] };
      let skips = 0;
      for (let k = 0; k < a.rounds!; k++) {
        const t = await catalog.loadTable(id);
        const files = await liveFiles(io, t);
        if (files.length < 2) {
          // nothing to compact yet (appenders still starting): wait without spending a round
          if (++skips > 100) report.rounds.push({ outcome: 'skipped' });
          else k--;
          await sleep(50);
          continue;
        }
        await sleep(Math.random() * 150); // spread rounds over the appenders' run
        try {
          const r = await compact(catalog, io, t, files, `rw${a.writer}-r${k}`, { maxAttempts: 8, minWaitMs: 10, maxWaitMs: 300 });
          report.rounds.push({
            outcome: 'committed',
            snapshotId: r.table.metadata['current-snapshot-id']?.toString(),
            replaced: files.map((f) => f.filePath),
            added: r.added.map((f) => f.filePath),
          });
        } catch (e) {
          if (isIcebergError(e, 'CommitFailed')) {
            const missing = (e as { context?: { missing?: string[] } }).context?.missing ?? [];
            report.rounds.push({
              outcome: 'commit-failed',
              missing,
              replaced: files.map((f) => f.filePath),
              message: (e as Error).message,
            });
          } else if (isIcebergError(e, 'CommitConflict')) {
            report.rounds.push({ outcome: 'conflict-exhausted', message: (e as Error).message });
          } else {
            throw e;
          }
        }
      }
      process.stdout.write(`${JSON.stringify(report)}\n`);
    }
  } finally {
    await catalog.close();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
