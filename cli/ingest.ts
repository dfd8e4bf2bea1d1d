import type { Command } from 'commander';
import type { IngestSignal, IngestStatusView } from '../client';
import { configOf, parseDurationOption, printJson, printTable } from './common';
import { CliError, EXIT, usage } from './exit';
import { findTable, topicEntry, topicSetLabel } from '../config';
import { ingestStatusLines } from './format';

// Loaded by the commands that use them, not at start: `floe --help` should not pay for the
// Temporal SDK, Kafka, S3 and Parquet modules (~1 s of loading on a small machine).
const client = () => import('../client');

export function registerIngestCommands(program: Command): void {
  program
    .command('worker')
    .description('run a floe worker (workflows + activities) until SIGTERM')
    .action(async (_o, cmd: Command) => {
      const { runWorker } = await import('../workers');
      await runWorker(configOf(cmd));
      // Drained and closed: exit even if a client library left a timer or socket behind.
      process.exit(0);
    });

  const ingest = program.command('ingest').description('control the ingest of a table');
  ingest
    .command('start <table>')
    .description('start (or attach to) the ingest workflow of a table')
    .option('--force', 'start even if another ingest id already loads this topic into the table (it would be loaded again)')
    .option('--json', 'print JSON')
    .action(async (table: string, o: { force?: boolean; json?: boolean }, cmd: Command) => {
      const { connectClient, startIngest, TableDriftError } = await client();
      const fc = await connectClient(configOf(cmd));
      try {
        const { workflowId, runId } = await startIngest(fc, table, { force: o.force ?? false });
        if (o.json) printJson({ table, workflowId, runId });
        else console.log(`ingest ${table}: workflow ${workflowId} run ${runId}`);
      } catch (e) {
        if (!(e instanceof TableDriftError)) throw e;
        if (o.json)
          console.error(
            JSON.stringify({ error: `ingest ${table} not started: table drift`, problems: e.problems, exitCode: EXIT.failure }),
          );
        else {
          // One line per problem: table, column, both types.
          console.error(
            `floe: ingest ${table} not started: the configured columns no longer match the table:\n${e.problems.map((p) => `  - ${p}`).join('\n')}`,
          );
          console.error('Change the config to match the table (or the table back), then start the ingest again.');
        }
        process.exitCode = EXIT.failure;
      } finally {
        await fc.close();
      }
    });
  for (const [name, signal, what] of [
    ['pause', 'pause', 'pause after the current cycle'],
    ['resume', 'resume', 'resume a paused ingest'],
  ] as const) {
    ingest
      .command(`${name} <table>`)
      .description(what)
      .option('--json', 'print JSON')
      .action(async (table: string, o: { json?: boolean }, cmd: Command) => {
        const { connectClient, signalIngest } = await client();
        const fc = await connectClient(configOf(cmd));
        try {
          await signalIngest(fc, table, signal as IngestSignal);
          if (o.json) printJson({ table, signal: name, sent: true });
          else console.log(`ingest ${table}: ${name} sent`);
        } finally {
          await fc.close();
        }
      });
  }
  registerIngestStop(ingest);
  registerIngestStatus(ingest);
  registerIngestReset(ingest);
}

/** `floe ingest status <table>`: exit 3 when the ingest was never started. */
function registerIngestStatus(ingest: Command): void {
  ingest
    .command('status <table>')
    .description('cursor, lag, last commit, throughput')
    .option('--json', 'print JSON')
    .action(async (table: string, o: { json?: boolean }, cmd: Command) => {
      const { connectClient, ingestStatus } = await client();
      const fc = await connectClient(configOf(cmd));
      try {
        const s = await ingestStatus(fc, table);
        if (!s) {
          // Not an error to print, but a script must be able to tell it apart from a running ingest.
          if (o.json) printJson({ table, state: 'not-started' });
          else console.log(`ingest ${table}: not started`);
          process.exitCode = EXIT.notFound;
          return;
        }
        if (o.json) printJson(s);
        else printIngestStatus(s);
      } finally {
        await fc.close();
      }
    });
}

function printIngestStatus(s: IngestStatusView): void {
  const { lines, partitions, tables } = ingestStatusLines(s, Date.now());
  for (const l of lines) console.log(l);
  printTable(partitions);
  if (tables.length > 0) {
    console.log('');
    printTable(tables);
  }
}

/**
 * `floe ingest stop <table> [--wait [--timeout d]]`: drain and stop. With --wait, returns only when
 * the run completed and prints its final status (exit 0); a run that fails while draining exits 1
 * with its error, a drain that outlasts --timeout exits 1 with the status at that moment.
 */
function registerIngestStop(ingest: Command): void {
  ingest
    .command('stop <table>')
    .description('drain what is in the topic now, commit it, and stop')
    .option('--wait', 'block until the drain finished, then print the final status')
    .option('--timeout <duration>', 'with --wait: give up waiting after this long, at least 1s (90s, 5m; a bare number is milliseconds)')
    .option('--json', 'print JSON')
    .action(async (table: string, o: { wait?: boolean; timeout?: string; json?: boolean }, cmd: Command) => {
      const timeoutMs = o.timeout === undefined ? undefined : parseDurationOption('--timeout', o.timeout, 1000);
      if (timeoutMs !== undefined && !o.wait) throw new CliError('--timeout needs --wait', EXIT.usage);
      const { connectClient, stopIngest, DrainTimeoutError } = await client();
      const fc = await connectClient(configOf(cmd));
      try {
        const final = await stopIngest(fc, table, { wait: o.wait ?? false, ...(timeoutMs !== undefined ? { timeoutMs } : {}) }).catch(
          (e: unknown) => {
            if (!(e instanceof DrainTimeoutError) || !e.status) throw e;
            if (o.json) printJson({ ...e.status, waitTimedOut: true });
            else printIngestStatus(e.status);
            throw e;
          },
        );
        if (!final) {
          if (o.json) printJson({ table, signal: 'stop', sent: true });
          else console.log(`ingest ${table}: stop sent`);
          return;
        }
        if (o.json) printJson(final);
        else printIngestStatus(final);
      } finally {
        await fc.close();
      }
    });
}

/** `floe ingest reset <table> --to ...`. */
function registerIngestReset(ingest: Command): void {
  ingest
    .command('reset <table>')
    .description('move the ingest cursor (recreated topic, failover, deliberate replay or skip) in one exactly-once commit')
    .requiredOption('--to <target>', 'earliest, latest, an ISO time, or "partition:offset,..." for every partition')
    .option('--topic <topic>', 'an entry of several topics: the topic whose cursor moves (each topic has its own)')
    .option('--json', 'print JSON')
    .action(async (table: string, o: { to: string; topic?: string; json?: boolean }, cmd: Command) => {
      const { parseResetTarget, resetCursor, resolveResetTarget } = await import('../ingest/reset');
      const { ensureIngestTables } = await import('../ingest/tables');
      const { createDeps } = await import('../activities');
      const cfg = configOf(cmd);
      const entry = findTable(cfg, table);
      if (entry.topics && o.topic === undefined)
        throw new CliError(`table ${table} reads ${topicSetLabel(entry)}, each with its own cursor: name one with --topic`, EXIT.usage);
      const t = usage(() => (o.topic === undefined ? entry : topicEntry(entry, o.topic)));
      const target = usage(() => parseResetTarget(o.to));
      const deps = await createDeps(cfg);
      try {
        await ensureIngestTables(deps.tables, t, deps.cfg.schemaRegistry);
        const offsets = await resolveResetTarget(deps.admin, t.topic, target);
        // The cursor moves to the topic as it is now (after a recreation: the new one, by its id).
        const r = await resetCursor(deps.tables, t, t.ingestId, offsets, (await deps.topicIds?.of(t.topic)) ?? null);
        if (o.json) {
          printJson({ table: t.table, ingestId: t.ingestId, topic: t.topic, changed: r.changed, before: r.before.offsets, after: r.after });
          return;
        }
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
    .option('--json', 'print JSON')
    .action(async (table: string, o: { from: string; to: string; force?: boolean; json?: boolean }, cmd: Command) => {
      const { connectClient, parseBackfillBound, runBackfill } = await client();
      const from = usage(() => parseBackfillBound(o.from, '--from'));
      const to = usage(() => parseBackfillBound(o.to, '--to'));
      const fc = await connectClient(configOf(cmd));
      try {
        const r = await runBackfill(fc, table, from, to, o.force ?? false);
        if (o.json) {
          printJson(r);
          return;
        }
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
