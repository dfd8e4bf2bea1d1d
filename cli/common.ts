import type { Command } from 'commander';
import { formatDuration, loadConfig, parseDuration, type FloeConfig } from '../config';
import { resolveConfigPath } from './config-path';
import { CliError, EXIT } from './exit';

/** The config of `-c`, `$FLOE_CONFIG` or ./floe.yaml; any problem loading it is a usage error (exit 2). */
export function configOf(cmd: Command): FloeConfig {
  const { path, from } = resolveConfigPath(cmd.optsWithGlobals().config as string | undefined);
  try {
    return loadConfig(path);
  } catch (e) {
    throw new CliError(`${(e as Error).message} (config file from ${from})`, EXIT.usage, { cause: e });
  }
}

/**
 * A duration option's value in the one syntax of the config file (config/units.ts): `90s`, `5m`,
 * `1.5h`; a bare number is milliseconds, there and here. Unreadable, or below `atLeastMs`: a usage
 * error naming the option (`floe: --timeout: expected …, found "120"`).
 */
export function parseDurationOption(flag: string, text: string, atLeastMs = 0): number {
  let ms: number;
  try {
    ms = parseDuration(text);
  } catch (e) {
    throw new CliError(`${flag}: ${(e as Error).message}`, EXIT.usage, { cause: e });
  }
  if (ms < atLeastMs)
    throw new CliError(
      `${flag}: expected a duration of at least ${formatDuration(atLeastMs)} (a bare number is milliseconds), found ${JSON.stringify(text)}`,
      EXIT.usage,
    );
  return ms;
}

/** Prints `value` as JSON (one document on stdout, for scripts). */
export function printJson(value: unknown): void {
  console.log(JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2));
}

/** Prints rows as an aligned text table (numbers right-aligned). */
export function printTable(rows: Record<string, unknown>[], columns?: string[]): void {
  for (const line of tableLines(rows, columns)) console.log(line);
}

/** Rows as the lines of an aligned text table (numbers right-aligned). */
export function tableLines(rows: Record<string, unknown>[], columns?: string[]): string[] {
  if (rows.length === 0) return ['(no rows)'];
  const cols = columns ?? Object.keys(rows[0]!);
  const cells = rows.map((r) => cols.map((c) => (r[c] === undefined || r[c] === null ? '' : String(r[c]))));
  const widths = cols.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const numeric = cols.map((_, i) => cells.every((row) => row[i] === '' || row[i] === '-' || /^-?[\d.,]+( \w+)?$/.test(row[i]!)));
  const fmt = (vals: string[]) =>
    vals
      .map((v, i) => (numeric[i] ? v.padStart(widths[i]!) : v.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [fmt(cols), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.map(fmt)];
}
