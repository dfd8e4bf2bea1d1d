import type { Command } from 'commander';
import { openTables } from '../activities/tables';
import { ancestry } from '../activities/cursor';
import { configOf, printTable } from './common';

/** One row per snapshot on main, oldest first: what `floe table commits` prints. */
export async function tableCommits(cfgPath: Command, table: string): Promise<Record<string, string>[]> {
  const tables = await openTables(configOf(cfgPath));
  try {
    const { metadata } = await tables.load(table);
    return [...ancestry(metadata)].reverse().map((s) => ({
      time: new Date(Number(s['timestamp-ms'])).toISOString(),
      snapshot_id: s['snapshot-id'].toString(),
      operation: s.summary.operation,
      rows: s.summary['added-records'] ?? '0',
      files: s.summary['added-data-files'] ?? '0',
      removed_files: s.summary['deleted-data-files'] ?? '0',
      total_rows: s.summary['total-records'] ?? '',
      total_files: s.summary['total-data-files'] ?? '',
      commit_id: s.summary['floe.commit-id'] ?? '',
    }));
  } finally {
    await tables.close();
  }
}

export function registerTableCommands(program: Command): void {
  const t = program.command('table').description('inspect Iceberg tables');
  t.command('commits <table>').description('snapshots on main: time, operation, rows, files, totals')
    .option('--json', 'print JSON')
    .action(async (table: string, o: { json?: boolean }, cmd: Command) => {
      const rows = await tableCommits(cmd, table);
      if (o.json) console.log(JSON.stringify(rows, null, 2));
      else printTable(rows, ['time', 'operation', 'rows', 'files', 'removed_files', 'total_rows', 'total_files', 'snapshot_id']);
    });
}
