/**
 * `floe compact|expire|orphans|maintain <table>`, `floe schedules ...` and `floe table files`:
 * thin layers over client/maintenance.ts. Runs go through Temporal; a progress bar follows the
 * workflow's progress query, and the result prints as a table (or JSON with --json).
 */
import { Option, type Command } from 'commander';
import { SingleBar, Presets } from 'cli-progress';
import type { FloeClient } from '../client';
import type { ProgressCallback, ScheduleKind, TableFiles } from '../client/maintenance';
import type { CompactOptions, CompactResult, ExpireResult, FileStats, OrphansResult } from '../maintenance/types';
import { parseDuration, parseSize } from '../config/units';
import { configOf, printJson, printTable } from './common';
import { CliError, EXIT } from './exit';
import { parseWindow } from '../maintenance/window';

// client/maintenance.ts (and through it the Temporal SDK, S3 and Parquet) loads when a command
// runs, not at start, so `floe --help` stays fast.
type MaintenanceApi = typeof import('../client/maintenance');
const api = (): Promise<MaintenanceApi> => import('../client/maintenance');

/** client/maintenance.ts SCHEDULE_KINDS, restated so registering the commands loads nothing. */
const SCHEDULE_KINDS = ['compact', 'expire', 'orphans'] as const satisfies readonly ScheduleKind[];
// Fails to compile if client/maintenance.ts gains a kind this list lacks.
const _allKinds: readonly (typeof SCHEDULE_KINDS)[number][] = [] as ScheduleKind[];

const int = (s: string): number => {
  if (!/^\d+$/.test(s)) throw new CliError(`expected a non-negative integer, found "${s}"`, EXIT.usage);
  return Number(s);
};

/**
 * An option's value parser whose errors name the option, as `--window` does: a usage error (exit 2)
 * that commander passes through and cli/main.ts prints as `floe: --older-than: expected …, found "5x"`.
 */
const arg =
  <T>(flag: string, parse: (s: string) => T) =>
  (s: string): T => {
    try {
      return parse(s);
    } catch (e) {
      throw new CliError(`${flag}: ${(e as Error).message}`, EXIT.usage, { cause: e });
    }
  };

/** `--window`: an ISO 8601 time not in the future (checked again by the client, workflow and activity). */
function parseWindowOption(s: string): string {
  try {
    parseWindow(s, Date.now(), '--window');
  } catch (e) {
    throw new CliError((e as Error).message, EXIT.usage, { cause: e });
  }
  return s.trim();
}

const mb = (n: number): string => (n / 1024 / 1024).toFixed(2);

/** A cli-progress bar on stderr fed by the workflow's progress query; silent when not a TTY. */
function progressBar(enabled: boolean): { onProgress?: ProgressCallback; stop(): void } {
  if (!enabled || !process.stderr.isTTY) return { stop() {} };
  const bar = new SingleBar(
    { format: '{phase} [{bar}] {percentage}% | {value}/{total} {unit}', stream: process.stderr, hideCursor: true },
    Presets.shades_classic,
  );
  let started = false;
  return {
    onProgress: (p) => {
      const total = Math.max(1, p.total);
      const unit = p.unit === 'bytes' ? 'MB' : p.unit;
      const scale = (n: number) => (p.unit === 'bytes' ? Number(mb(n)) : n);
      if (!started) {
        bar.start(scale(total), scale(p.done), { phase: p.phase, unit });
        started = true;
      }
      bar.setTotal(scale(total));
      bar.update(scale(p.done), { phase: p.phase, unit });
    },
    stop: () => {
      if (started) bar.stop();
    },
  };
}

async function withClient<T>(cmd: Command, fn: (fc: FloeClient, m: MaintenanceApi) => Promise<T>): Promise<T> {
  const { connectClient } = await import('../client');
  const m = await api();
  const fc = await connectClient(configOf(cmd));
  try {
    return await fn(fc, m);
  } catch (e) {
    // "Workflow execution failed" alone says nothing: show the failure that caused it.
    if ((e as Error).name === 'WorkflowFailedError') {
      let cause: Error | undefined = (e as Error).cause as Error | undefined;
      while (cause && (cause as { cause?: Error }).cause) cause = (cause as { cause?: Error }).cause;
      throw new CliError(`${(e as Error).message}: ${cause?.message ?? 'no cause reported'}`, EXIT.failure, { cause: e });
    }
    throw e;
  } finally {
    await fc.close();
  }
}

// ---------- shared options and output

/** An option whose value `parse` reads; its errors name the option (see `arg`). */
function parsedOption<T>(flags: string, description: string, parse: (s: string) => T): Option {
  return new Option(flags, description).argParser(arg(flags.split(' ')[0]!, parse));
}
const sizeOption = (flags: string, description: string) => parsedOption(flags, description, parseSize);
const countOption = (flags: string, description: string) => parsedOption(flags, description, int);
const olderThanOption = (description: string) => parsedOption('--older-than <duration>', description, parseDuration);
const dryRunOption = (description: string) => new Option('--dry-run', description);
const jsonOption = () => new Option('--json', 'print JSON');

/** `r` as JSON with --json, else as `print` shows it. */
function printResult<T>(json: boolean | undefined, r: T, print: (r: T) => void): void {
  if (json) printJson(r);
  else print(r);
}

/** Runs a maintenance workflow through Temporal with a progress bar (none with --json), then prints its result. */
async function runMaintenance<T>(
  cmd: Command,
  json: boolean | undefined,
  run: (fc: FloeClient, m: MaintenanceApi, onProgress?: ProgressCallback) => Promise<T>,
  print: (r: T) => void,
): Promise<void> {
  const bar = progressBar(!json);
  const r = await withClient(cmd, (fc, m) => run(fc, m, bar.onProgress)).finally(() => bar.stop());
  printResult(json, r, print);
}

/** `kind` if it names a schedule kind, else an error quoting it. */
function scheduleKind(kind: string): ScheduleKind {
  if (!(SCHEDULE_KINDS as readonly string[]).includes(kind))
    throw new CliError(`kind: expected ${SCHEDULE_KINDS.join(' | ')}, found "${kind}"`, EXIT.usage);
  return kind as ScheduleKind;
}

// ---------- floe compact

interface CompactFlags {
  targetFileSize?: number;
  minInputFiles?: number;
  minFileSize?: number;
  maxFileSize?: number;
  maxGroupSize?: number;
  maxConcurrent?: number;
  partialProgress?: boolean;
  maxCommits?: number;
  partition?: string[];
  json?: boolean;
}

function compactOptions(o: CompactFlags): Partial<CompactOptions> {
  return {
    targetFileSizeBytes: o.targetFileSize,
    minInputFiles: o.minInputFiles,
    minFileSizeBytes: o.minFileSize,
    maxFileSizeBytes: o.maxFileSize,
    maxFileGroupSizeBytes: o.maxGroupSize,
    maxConcurrentFileGroupRewrites: o.maxConcurrent,
    partialProgress: o.partialProgress ? true : undefined,
    maxCommits: o.maxCommits,
    partitionFilter: o.partition ? { paths: o.partition } : undefined,
  };
}

function printCompaction(r: CompactResult): void {
  printTable([
    {
      rewritten_data_files_count: r.rewritten_data_files_count,
      added_data_files_count: r.added_data_files_count,
      rewritten_MB: mb(r.rewritten_bytes_count),
      added_MB: mb(r.added_bytes_count),
      failed_groups: r.failed_data_file_groups.length,
      commits: r.commits,
    },
  ]);
  console.log();
  printTable([
    { '': 'before', files: r.before.files, MB: mb(r.before.bytes), avg_file_MB: mb(r.before.avgFileSizeBytes) },
    { '': 'after', files: r.after.files, MB: mb(r.after.bytes), avg_file_MB: mb(r.after.avgFileSizeBytes) },
  ]);
  for (const f of r.failed_data_file_groups) console.log(`group ${f.index} (${f.partitionPath || 'unpartitioned'}) failed: ${f.reason}`);
}

function registerCompact(program: Command): void {
  program
    .command('compact <table>')
    .description('rewrite small files into files of the target size (Spark rewrite_data_files), now, through Temporal')
    .addOption(sizeOption('--target-file-size <size>', 'target output file size, e.g. 128MB (default: table config)'))
    .addOption(countOption('--min-input-files <n>', 'rewrite a group only with at least n files (default 5)'))
    .addOption(sizeOption('--min-file-size <size>', 'files below this size are rewritten (default 75% of target)'))
    .addOption(sizeOption('--max-file-size <size>', 'files above this size are split (default 180% of target)'))
    .addOption(sizeOption('--max-group-size <size>', 'input bytes of one file group (default 100GB)'))
    .addOption(countOption('--max-concurrent <n>', 'file groups rewritten at once (default 2)'))
    .option('--partial-progress', 'commit groups as they finish, in up to --max-commits commits')
    .addOption(countOption('--max-commits <n>', 'commits with --partial-progress (default 10)'))
    .option('--partition <path...>', 'only these partitions (paths as under data/, e.g. event_time_day=2024-06-01/event_type=paid)')
    .addOption(jsonOption())
    .action(async (table: string, o: CompactFlags, cmd: Command) => {
      await runMaintenance(
        cmd,
        o.json,
        (fc, m, onProgress) => m.compactTable(fc, table, compactOptions(o), { onProgress }),
        printCompaction,
      );
    });
}

// ---------- floe expire

function printExpiry(r: ExpireResult): void {
  console.log(
    `${r.dryRun ? 'would expire' : 'expired'} ${r.expiredSnapshots} snapshots older than ${new Date(r.cutoffMs).toISOString()}; ${r.retainedSnapshots} retained; legacy cursors carried into table properties: ${r.carriedCursors.join(', ') || 'none'}`,
  );
  printTable([
    {
      data_files: r.deleted.dataFiles,
      manifests: r.deleted.manifests,
      manifest_lists: r.deleted.manifestLists,
      metadata_files: r.deleted.metadataFiles,
    },
  ]);
}

function registerExpire(program: Command): void {
  program
    .command('expire <table>')
    .description('expire old snapshots and delete the files only they reached (Spark expire_snapshots)')
    .addOption(olderThanOption('expire snapshots older than this, e.g. 5d (default: table config)'))
    .addOption(countOption('--retain-last <n>', 'always keep the n newest snapshots (default: table config)'))
    .addOption(dryRunOption('list what would expire; change nothing'))
    .addOption(jsonOption())
    .action(async (table: string, o: { olderThan?: number; retainLast?: number; dryRun?: boolean; json?: boolean }, cmd: Command) => {
      const options = { olderThanMs: o.olderThan, retainLast: o.retainLast, dryRun: o.dryRun };
      await runMaintenance(cmd, o.json, (fc, m, onProgress) => m.expireTable(fc, table, options, { onProgress }), printExpiry);
    });
}

// ---------- floe orphans

function printOrphanSweep(r: OrphansResult): void {
  printTable([
    {
      listed: r.filesListed,
      reachable: r.reachableFiles,
      orphans: r.orphans,
      orphan_MB: mb(r.orphanBytes),
      kept_by_grace: r.keptByGracePeriod,
      kept_pending: r.keptByPending,
      kept_other_tables: r.keptByOtherTables,
      deleted: r.deleted,
    },
  ]);
  if (r.nestedTables.length) console.log(`left alone: files of tables inside this table's location: ${r.nestedTables.join(', ')}`);
  if (r.stalePendingOwners.length)
    console.log(`pending markers older than 7 days (their runs may have died; files stay protected): ${r.stalePendingOwners.join(', ')}`);
  if (r.dryRun) for (const l of r.sample) console.log(`would delete ${l}`);
}

function registerOrphans(program: Command): void {
  program
    .command('orphans <table>')
    .description('delete files under the table location that no metadata reaches (Spark remove_orphan_files)')
    .addOption(olderThanOption('grace period, e.g. 3d (default: table config; at least 1h unless --force)'))
    .addOption(dryRunOption('list what would be deleted; delete nothing'))
    .option('--force', 'allow a grace period below 1 hour (in-flight commits may lose files)')
    .addOption(jsonOption())
    .action(async (table: string, o: { olderThan?: number; dryRun?: boolean; force?: boolean; json?: boolean }, cmd: Command) => {
      const options = { olderThanMs: o.olderThan, dryRun: o.dryRun, force: o.force };
      await runMaintenance(cmd, o.json, (fc, m, onProgress) => m.removeOrphans(fc, table, options, { onProgress }), printOrphanSweep);
    });
}

// ---------- floe maintain

function registerMaintain(program: Command): void {
  program
    .command('maintain <table>')
    .description('compact, then expire, then remove orphans; one run per table and window')
    .option('--window <iso>', 'window (ISO 8601 time, e.g. 2026-07-01T03:00:00Z, not in the future); default now', parseWindowOption)
    .addOption(dryRunOption('expire/orphans: report only'))
    .addOption(new Option('--json', 'print JSON (the result always prints as JSON; accepted for symmetry)'))
    .action(async (table: string, o: { window?: string; dryRun?: boolean }, cmd: Command) => {
      printJson(await withClient(cmd, (fc, m) => m.maintainTable(fc, table, { window: o.window, dryRun: o.dryRun })));
    });
}

// ---------- floe schedules

function registerSchedules(program: Command): void {
  const s = program.command('schedules').description('Temporal Schedules of table maintenance');
  s.command('apply [tables...]')
    .description('create or update the schedules from the config (overlap: skip)')
    .addOption(jsonOption())
    .action(async (tables: string[], o: { json?: boolean }, cmd: Command) => {
      printResult(o.json, await withClient(cmd, (fc, m) => m.applySchedules(fc, tables)), (r) =>
        printTable(r as unknown as Record<string, unknown>[]),
      );
    });
  s.command('list')
    .description('floe schedules on the Temporal server')
    .addOption(jsonOption())
    .action(async (o: { json?: boolean }, cmd: Command) => {
      printResult(o.json, await withClient(cmd, (fc, m) => m.listSchedules(fc)), (r) =>
        printTable(r as unknown as Record<string, unknown>[]),
      );
    });
  for (const [name, paused] of [
    ['pause', true],
    ['unpause', false],
  ] as const) {
    s.command(`${name} <table> [kind]`)
      .description(`${name} the maintenance schedules of a table (kind: ${SCHEDULE_KINDS.join('|')})`)
      .addOption(jsonOption())
      .action(async (table: string, kind: string | undefined, o: { json?: boolean }, cmd: Command) => {
        const k = kind === undefined ? undefined : scheduleKind(kind);
        const ids = await withClient(cmd, (fc, m) => m.setSchedulesPaused(fc, table, paused, k));
        if (o.json) printJson({ table, paused, scheduleIds: ids });
        else for (const id of ids) console.log(`${id}: ${paused ? 'paused' : 'unpaused'}`);
      });
  }
  registerScheduleBackfill(s);
}

function registerScheduleBackfill(schedules: Command): void {
  schedules
    .command('backfill <table> <kind>')
    .description('re-run the scheduled windows between --start and --end (idempotent per window)')
    .requiredOption('--start <iso>', 'start of the time range')
    .requiredOption('--end <iso>', 'end of the time range')
    .addOption(jsonOption())
    .action(async (table: string, kind: string, o: { start: string; end: string; json?: boolean }, cmd: Command) => {
      const k = scheduleKind(kind);
      for (const [flag, v] of [
        ['--start', o.start],
        ['--end', o.end],
      ] as const) {
        if (Number.isNaN(new Date(v).getTime()))
          throw new CliError(`${flag}: expected an ISO 8601 time like 2026-07-01T00:00:00Z, found "${v}"`, EXIT.usage);
      }
      await withClient(cmd, (fc, m) => m.backfillSchedule(fc, table, k, new Date(o.start), new Date(o.end)));
      if (o.json) printJson({ table, kind, start: o.start, end: o.end, requested: true });
      else console.log(`backfill of ${kind} for ${table} from ${o.start} to ${o.end} requested`);
    });
}

// ---------- floe table files

function printTableFiles(r: TableFiles): void {
  const row = (name: string, f: FileStats) => ({
    partition: name,
    files: f.files,
    MB: mb(f.bytes),
    avg_file_KB: (f.avgFileSizeBytes / 1024).toFixed(1),
  });
  printTable([...r.partitions.map((p) => row(p.partition, p)), row('(all)', r.overall)]);
}

/** `floe table files` joins the `table` group registered by cli/table.ts. */
function registerTableFiles(program: Command): void {
  const tableCmd = program.commands.find((c) => c.name() === 'table') ?? program.command('table').description('inspect Iceberg tables');
  tableCmd
    .command('files <table>')
    .description("data files: count and average size, overall and per partition (--json: one row per live file, Spark's files table)")
    .addOption(new Option('--json', "print JSON: every live data and delete file with Spark's files columns"))
    .action(async (table: string, o: { json?: boolean }, cmd: Command) => {
      // The summary is what an operator looks at; a script wants the files themselves, as Spark lists them.
      if (o.json) {
        const { filesJson, withTable } = await import('./table-inspect');
        return printJson(await withTable(configOf(cmd), table, filesJson));
      }
      printTableFiles(await (await api()).tableFiles(configOf(cmd), table));
    });
}

/** `floe compact|expire|orphans|maintain`, `floe schedules ...` and `floe table files`, in that order. */
export function registerMaintenanceCommands(program: Command): void {
  registerCompact(program);
  registerExpire(program);
  registerOrphans(program);
  registerMaintain(program);
  registerSchedules(program);
  registerTableFiles(program);
}
