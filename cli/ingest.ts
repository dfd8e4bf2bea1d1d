import type { Command } from 'commander';
import {
  connectClient,
  ingestStatus,
  parseBackfillBound,
  runBackfill,
  signalIngest,
  startIngest,
  TableDriftError,
  type IngestSignal,
} from '../client';
import { runWorker } from '../workers';
import { configOf, printTable } from './common';
import { findTable } from '../config';
import { createDeps } from '../activities';
import { parseResetTarget, resetCursor, resolveResetTarget } from '../ingest/reset';

export function registerIngestCommands(program: Command): void {
  program
    .command('worker')
    .description('run a floe worker (workflows + activities) until SIGTERM')
    .action(async (_o, cmd: Command) => {
      await runWorker(configOf(cmd));
      // Drained and closed: exit even if a client library left a timer or socket behind.
      process.exit(0);
    });

  const ingest = program.command('ingest').description('control the ingest of a table');
  ingest
    .command('start <table>')
    .description('start (or attach to) the ingest workflow of a table')
    .option('--force', 'start even if another ingest id already loads this topic into the table (it would be loaded again)')
    .action(async (table: string, o: { force?: boolean }, cmd: Command) => {
      const fc = await connectClient(configOf(cmd));
      try {
        const { workflowId, runId } = await startIngest(fc, table, { force: o.force ?? false });
        console.log(`ingest ${table}: workflow ${workflowId} run ${runId}`);
      } catch (e) {
        if (!(e instanceof TableDriftError)) throw e;
        // One line per problem: table, column, both types.
        console.error(
          `floe: ingest ${table} not started: the configured columns no longer match the table:\n${e.problems.map((p) => `  - ${p}`).join('\n')}`,
        );
        console.error('Change the config to match the table (or the table back), then start the ingest again.');
        process.exitCode = 1;
      } finally {
        await fc.close();
      }
    });
  for (const [name, signal, what] of [
    ['pause', 'pause', 'pause after the current cycle'],
    ['resume', 'resume', 'resume a paused ingest'],
    ['stop', 'stop', 'drain what is in the topic now, commit it, and stop'],
  ] as const) {
    ingest
      .command(`${name} <table>`)
      .description(what)
      .action(async (table: string, _o, cmd: Command) => {
        const fc = await connectClient(configOf(cmd));
        try {
          await signalIngest(fc, table, signal as IngestSignal);
          console.log(`ingest ${table}: ${name} sent`);
        } finally {
          await fc.close();
        }
      });
  }
  ingest
    .command('status <table>')
    .description('cursor, lag, last commit, throughput')
    .option('--json', 'print JSON')
    .action(async (table: string, o: { json?: boolean }, cmd: Command) => {
      const fc = await connectClient(configOf(cmd));
      try {
        const s = await ingestStatus(fc, table);
        if (!s) {
          console.log(`ingest ${table}: not started`);
          return;
        }
        if (o.json) {
          console.log(JSON.stringify(s, null, 2));
          return;
        }
        console.log(
          `ingest ${s.table}/${s.ingestId}: ${s.state}; ${s.commits} commits, ${s.totalRows} rows, ${s.totalDeadLetters} dead letters, ${s.fencedCommits} fenced`,
        );
        console.log(
          `last commit ${s.lastCommitId ?? '-'} snapshot ${s.lastSnapshotId ?? '-'} at ${s.lastCommitTimeMs ? new Date(s.lastCommitTimeMs).toISOString() : '-'}; ${s.rowsPerSecond} rows/s; ${s.filesPerCommit} files/commit`,
        );
        if (s.error) console.log(`error: ${s.error}`);
        printTable(Object.keys(s.cursor).map((p) => ({ partition: p, next_offset: s.cursor[p], lag: s.lag[p] ?? '' })));
      } finally {
        await fc.close();
      }
    });
  ingest
    .command('reset <table>')
    .description('move the ingest cursor (recreated topic, failover, deliberate replay or skip) in one exactly-once commit')
    .requiredOption('--to <target>', 'earliest, latest, an ISO time, or "partition:offset,..." for every partition')
    .action(async (table: string, o: { to: string }, cmd: Command) => {
      const cfg = configOf(cmd);
      const t = findTable(cfg, table);
      const target = parseResetTarget(o.to);
      const deps = await createDeps(cfg);
      try {
        await deps.tables.ensureIngestTables(t);
        const r = await resetCursor(deps.tables, t, t.ingestId, await resolveResetTarget(deps.admin, t.topic, target));
        console.log(`ingest ${t.table}/${t.ingestId}: cursor ${r.changed ? 'moved' : 'already at the target'} (topic ${t.topic})`);
        printTable(Object.keys(r.after).map((p) => ({ partition: p, before: r.before.offsets[p] ?? '-', after: r.after[p] })));
      } finally {
        await deps.close();
      }
    });
}

export function registerBackfillCommand(program: Command): void {
  program
    .command('backfill <table>')
    .description('load a bounded range of the topic into the table exactly once (re-runs add nothing)')
    .requiredOption('--from <bound>', 'ISO time, "partition:offset,..." or one offset for all partitions')
    .requiredOption('--to <bound>', 'exclusive end: ISO time, "partition:offset,..." or one offset')
    .option('--force', 'load even if the range overlaps what the table already holds from the topic')
    .action(async (table: string, o: { from: string; to: string; force?: boolean }, cmd: Command) => {
      const fc = await connectClient(configOf(cmd));
      try {
        const r = await runBackfill(fc, table, parseBackfillBound(o.from, '--from'), parseBackfillBound(o.to, '--to'), o.force ?? false);
        console.log(
          `backfill ${r.prepared.ingestId} of ${table}: ${r.prepared.records} offsets in range; ${r.status.commits} commits, ${r.status.totalRows} rows, ${r.status.totalDeadLetters} dead letters this run`,
        );
        printTable(
          Object.keys(r.prepared.range.to).map((p) => ({
            partition: p,
            from: r.prepared.range.from[p],
            to: r.prepared.range.to[p],
            cursor: r.status.cursor[p] ?? '',
          })),
        );
      } finally {
        await fc.close();
      }
    });
}
