import type { Command } from 'commander';
import { configOf, printJson, printTable } from './common';

export function registerTableCommands(program: Command): void {
  const t = program.command('table').description('inspect Iceberg tables');
  t.command('commits <table>')
    .description("snapshots on main, oldest first: time, operation, rows, files, totals (--json: Spark's snapshots columns)")
    .option('--json', "print JSON: every snapshot with Spark's snapshots columns and history's is_current_ancestor")
    .action(async (table: string, o: { json?: boolean }, cmd: Command) => {
      if (o.json) {
        const { commitsJson, withTable } = await import('./table-inspect');
        return printJson(await withTable(configOf(cmd), table, (lt) => commitsJson(lt)));
      }
      const { tableCommitRows } = await import('../client/tables');
      const rows = await tableCommitRows(configOf(cmd), table);
      printTable(rows, ['time', 'operation', 'rows', 'files', 'removed_files', 'total_rows', 'total_files', 'snapshot_id']);
    });
  t.command('partitions <table>')
    .description("per partition of the current snapshot: records, files, bytes, deletes, last update (Spark's partitions table)")
    .option('--json', "print JSON with Spark's partitions columns")
    .action(async (table: string, o: { json?: boolean }, cmd: Command) => {
      const { partitionsView, withTable } = await import('./table-inspect');
      const v = await withTable(configOf(cmd), table, partitionsView);
      if (o.json) printJson(v.json);
      else printTable(v.text);
    });
  t.command('manifests <table>')
    .description("the current snapshot's manifests: content, size, file counts, partition ranges (Spark's manifests table)")
    .option('--json', "print JSON with Spark's manifests columns")
    .action(async (table: string, o: { json?: boolean }, cmd: Command) => {
      const { manifestsView, withTable } = await import('./table-inspect');
      const v = await withTable(configOf(cmd), table, manifestsView);
      if (o.json) printJson(v.json);
      else printTable(v.text);
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
  t.command('rewrite-position-deletes <table>')
    .description(
      "merge each partition's position delete files into one and drop positions of files no longer live, no rows change (Spark rewrite_position_delete_files)",
    )
    .option('--json', 'print JSON')
    .action(async (table: string, o: { json?: boolean }, cmd: Command) => {
      const { openTables } = await import('../table/tables');
      const { rewritePositionDeletes } = await import('../maintenance/rewrite-position-deletes');
      const tables = await openTables(configOf(cmd));
      const r = await rewritePositionDeletes(tables, table).finally(() => tables.close());
      if (o.json) return printJson(r);
      if (r.snapshotId === null)
        console.log(
          `${table}: ${r.deleteFilesBefore} position delete files, at most one per partition and none dangling; nothing to rewrite`,
        );
      else console.log(`${table}: rewrote the position delete files of ${r.partitions} partitions in snapshot ${r.snapshotId}`);
      printTable([
        {
          delete_files_before: r.deleteFilesBefore,
          delete_files_after: r.deleteFilesAfter,
          positions_before: r.positionsBefore,
          positions_after: r.positionsAfter,
          dangling_dropped: r.danglingDropped,
        },
      ]);
    });
}
