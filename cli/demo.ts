import type { Command } from 'commander';
import { loadConfig } from '../config';
import { parseDurationOption, printTable } from './common';
import { CliError, EXIT } from './exit';

/**
 * `floe demo`: the README's main command. Brings the stack up, streams sample order events for
 * 1 July 2026 into a fresh topic at 20 events/s for 90 s while a worker ingests them, SIGKILLs the
 * worker at ~40 s and restarts it 5 s later, printing progress every ~2 s (rows committed, lag,
 * commits, the kill and the recovery), then a chart of lag and committed rows over time (--plot,
 * default on a terminal), the commits and the exactly-once checks.
 */
/** The end of an upsert/CDC demo: the table against the source state. */
function printChanges(res: Awaited<ReturnType<typeof import('../demo/scenario').runScenario>>, mode: 'upsert' | 'cdc', t0: number): void {
  console.log(`source state: ${res.distinctEventIds} live customers (mode ${mode})`);
  console.log(`floe:   rows ${res.rows}, dead letters ${res.deadLetters}`);
  console.log('duckdb + pyiceberg: ' + ('error' in res.duckdb ? `ERROR ${res.duckdb.error}` : `rows ${res.duckdb.rows}`));
  console.log(`table metadata: ${res.metadataLocation}`);
  if (!res.ok) {
    console.log(`\nFAILED: ${res.problems.join('; ')}`);
    process.exitCode = EXIT.failure;
  } else
    console.log(
      `\nOK: the table equals the source state (every live id once, at its last version; deleted ids gone) through floe, DuckDB and PyIceberg (${((Date.now() - t0) / 1000).toFixed(0)} s)`,
    );
}

export function registerDemoCommand(program: Command): void {
  program
    .command('demo')
    .description('stack up + stream sample orders into Iceberg, kill the worker mid-stream, verify exactly-once')
    .option('--rate <n>', 'events per second', '20')
    .option('--duration <duration>', 'how long to stream (90s, 2m; a bare number is milliseconds)', '90s')
    .option('--partitions <n>', 'topic partitions', '4')
    .option('--kill-at <duration>', 'SIGKILL the worker this long after the start (0 = never)', '40s')
    .option('--restart-after <duration>', 'restart the killed worker this long after the kill', '5s')
    .option('--commit-interval <duration>', 'ingest commit interval', '5s')
    .option('--cdc', "stream a customer table's inserts, updates and deletes as Debezium change events into a mode: cdc table")
    .option('--upsert', 'the same changes as keyed rows and tombstones into a mode: upsert table')
    .option('--keys <n>', 'with --cdc or --upsert: customer ids', '300')
    .option('--plot', 'draw lag and committed rows over time at the end (default on a terminal)')
    .option('--no-plot', 'no chart')
    .action(async (o: Record<string, string> & { plot?: boolean; cdc?: boolean; upsert?: boolean }) => {
      const num = (k: string) => {
        const v = Number(o[k]);
        if (!Number.isFinite(v) || v < 0)
          throw new CliError(
            `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}: expected a number >= 0, found ${JSON.stringify(o[k])}`,
            EXIT.usage,
          );
        return v;
      };
      // Durations in the config's syntax (a bare number is milliseconds), in seconds for the scenario.
      const seconds = (flag: string, text: string, atLeastMs: number) => parseDurationOption(flag, text, atLeastMs) / 1000;
      const durationS = seconds('--duration', o.duration!, 1000);
      const killAt = seconds('--kill-at', o.killAt!, 0) === 0 ? 0 : seconds('--kill-at', o.killAt!, 1000);
      const restartAfterS = seconds('--restart-after', o.restartAfter!, 0);
      parseDurationOption('--commit-interval', o.commitInterval!, 1);
      const { ensureStack } = await import('../stack/stack');
      const { runScenario } = await import('../demo/scenario');
      const { tableCommitRows } = await import('../client/tables');
      const { ProgressTracker } = await import('../demo/progress');
      const tracker = new ProgressTracker();
      if (o.cdc && o.upsert) throw new CliError('give --cdc or --upsert, not both', EXIT.usage);
      const changes =
        o.cdc || o.upsert ? { mode: o.cdc ? ('cdc' as const) : ('upsert' as const), keys: Math.max(1, num('keys')) } : undefined;
      const plot = o.plot ?? process.stdout.isTTY === true;
      const t0 = Date.now();
      await ensureStack();
      console.log(`stack ready in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      const res = await runScenario({
        ratePerS: num('rate'),
        durationS,
        partitions: Math.max(1, num('partitions')),
        kills: killAt > 0 ? [{ atS: killAt, restartAfterS }] : [],
        commitInterval: o.commitInterval,
        ...(changes ? { changes } : {}),
        // A line every ~2 s while it streams; the kill, the restart and the recovery as they happen.
        onProgress: (s) => {
          for (const line of tracker.sample(s)) console.log(line);
        },
        onWorkerEvent: (e) => console.log(tracker.event(e)),
      });
      if (plot) {
        console.log('');
        for (const line of tracker.chart()) console.log(line);
      }
      console.log(`\ncommits of ${res.table}:`);
      printTable(await tableCommitRows(loadConfig(res.configPath), res.table), [
        'time',
        'operation',
        'rows',
        'files',
        'total_rows',
        'total_files',
      ]);
      console.log('');
      console.log(`messages in topic ${res.topic}: ${res.messagesInTopic} (produced ${res.produced}, ${res.kills} worker kill(s))`);
      if (changes) {
        printChanges(res, changes.mode, t0);
        return;
      }
      console.log(`floe:   rows ${res.rows}, distinct event_id ${res.distinctEventIds}, dead letters ${res.deadLetters}`);
      console.log(
        'duckdb: ' +
          ('error' in res.duckdb
            ? `ERROR ${res.duckdb.error}`
            : `rows ${res.duckdb.rows}, distinct event_id ${res.duckdb.distinctEventIds}, dead letters ${res.duckdb.deadLetters}`),
      );
      console.log(`table metadata: ${res.metadataLocation}`);
      if (!res.ok) {
        console.log(`\nFAILED: ${res.problems.join('; ')}`);
        process.exitCode = EXIT.failure;
      } else {
        console.log(
          `\nOK: rows == messages and every event_id once, through floe and through DuckDB (${((Date.now() - t0) / 1000).toFixed(0)} s)`,
        );
      }
    });
}
