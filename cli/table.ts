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
  t.command('rewrite-manifests <table>')
    .description("rewrite the current snapshot's data manifests clustered by partition, no rows change (Spark rewrite_manifests)")
    .option('--json', 'print JSON')
    .action(async (table: string, o: { json?: boolean }, cmd: Command) => {
      // loaded when the command runs: `floe --help` stays fast
      const { openTables } = await import('../table/tables');
      const { rewriteManifests } = await import('../maintenance/rewrite-manifests');
      const tables = await openTables(configOf(cmd));
      const r = await rewriteManifests(tables, table).finally(() => tables.close());
      if (o.json) return printJson(r);
      if (r.noop === 'empty') console.log(`${table}: no live data files; nothing to rewrite`);
      else if (r.noop === 'clustered')
        console.log(`${table}: already one data manifest per partition (${r.manifestsBefore} manifests); nothing to rewrite`);
      else console.log(`${table}: rewrote ${r.entries} entries of ${r.partitions} partitions in snapshot ${r.snapshotId}`);
      printTable([
        {
          manifests_before: r.manifestsBefore,
          manifests_after: r.manifestsAfter,
          entries: r.entries,
          partitions: r.partitions,
          max_manifests_per_partition_before: r.maxManifestsPerPartition,
        },
      ]);
    });
}
