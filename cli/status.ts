import { setTimeout as sleep } from 'node:timers/promises';
import type { Command } from 'commander';
import { configOf, parseDurationOption, printJson, tableLines } from './common';
import { statusScreen } from './format';

/**
 * `floe status [table...] [--watch [interval]] [--json]`: one screen for every configured table
 * (client/overview.ts). --watch redraws it in place every interval (default 2 s) until Ctrl-C;
 * with --json it prints one JSON document per line per refresh.
 */
export function registerStatusCommand(program: Command): void {
  program
    .command('status [tables...]')
    .description('every configured table at a glance: ingest state, lag, last commit, rows/s, files, maintenance, failures')
    .option('--watch [interval]', 'refresh in place every interval, at least 1s (default 2s; 5s, 1m; a bare number is milliseconds)')
    .option('--json', 'print JSON')
    .action(async (names: string[], o: { watch?: string | true; json?: boolean }, cmd: Command) => {
      const intervalMs = o.watch === undefined ? null : o.watch === true ? 2000 : parseDurationOption('--watch', o.watch, 1000);
      const cfg = configOf(cmd);
      const [{ connectClient }, { statusOverview }, { openTables }] = await Promise.all([
        import('../client'),
        import('../client/overview'),
        import('../table/tables'),
      ]);
      const [fc, tables] = await Promise.all([connectClient(cfg), openTables(cfg)]);
      const tty = process.stdout.isTTY && !o.json;
      // Ctrl-C ends --watch after the current screen, and the connections close cleanly.
      const ac = new AbortController();
      const onSigint = () => ac.abort();
      if (intervalMs !== null) process.once('SIGINT', onSigint);
      try {
        for (;;) {
          const overview = await statusOverview(fc, tables, names);
          if (o.json && intervalMs === null) printJson(overview);
          else if (o.json) console.log(JSON.stringify(overview));
          else {
            const s = statusScreen(overview);
            const lines = [s.header, '', ...tableLines(s.rows, s.columns)];
            if (s.failures.length) lines.push('', 'failures:', ...s.failures.map((f) => `  ${f}`));
            if (intervalMs !== null) lines.push('', `refreshing every ${intervalMs / 1000} s; Ctrl-C to stop`);
            // In place: cursor home and clear the screen, then the new screen.
            process.stdout.write((tty && intervalMs !== null ? '\x1b[H\x1b[2J' : '') + lines.join('\n') + '\n');
          }
          if (intervalMs === null || ac.signal.aborted) break;
          await sleep(intervalMs, undefined, { signal: ac.signal }).catch(() => undefined);
          if (ac.signal.aborted) break;
        }
      } finally {
        process.off('SIGINT', onSigint);
        await Promise.all([fc.close(), tables.close()]);
      }
    });
}
