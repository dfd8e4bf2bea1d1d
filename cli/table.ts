import type { Command } from 'commander';
import { configOf, printJson, printTable } from './common';

export function registerTableCommands(program: Command): void {
  const t = program.command('table').description('inspect Iceberg tables');
  t.command('commits <table>')
    .description('snapshots on main, oldest first: time, operation, rows, files, totals')
    .option('--json', 'print JSON')
    .action(async (table: string, o: { json?: boolean }, cmd: Command) => {
      const { tableCommitRows } = await import('../client/tables');
      const rows = await tableCommitRows(configOf(cmd), table);
      if (o.json) printJson(rows);
      else printTable(rows, ['time', 'operation', 'rows', 'files', 'removed_files', 'total_rows', 'total_files', 'snapshot_id']);
    });
}
