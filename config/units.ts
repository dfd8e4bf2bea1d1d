/**
 * The one syntax for durations and sizes, shared by the config file (config/schema.ts), every CLI
 * flag that takes one (cli/common.ts parseDurationOption: --timeout, --watch, the demo's;
 * cli/maintenance.ts: --older-than and the sizes) and the benches. One rule for a bare number
 * everywhere: it is milliseconds (a duration) or bytes (a size), in a file and on the command line
 * alike. No Node imports: safe anywhere.
 *
 * Durations: a plain non-negative integer is milliseconds (`1500`); otherwise an integer or
 * decimal followed by one of `ms`, `s`, `m`, `h`, `d` (`500ms`, `30s`, `1.5h`, `7d`). Units are
 * lower case (`m` is minutes; there is no month). The result is rounded to whole milliseconds.
 *
 * Sizes: a plain non-negative integer is bytes (`134217728`); otherwise an integer or decimal
 * followed by one of `B`, `KB`, `MB`, `GB`, `TB`, `KiB`, `MiB`, `GiB`, `TiB`, in any case
 * (`128MB`, `1.5gib`). Both spellings are 1024-based: `1KB` = `1KiB` = 1024 bytes. The result is
 * rounded to whole bytes.
 *
 * Surrounding whitespace and whitespace between the number and its unit are ignored. Numbers
 * (not text) must be non-negative safe integers and mean milliseconds or bytes.
 */

const DURATION_UNITS = new Map([
  ['ms', 1],
  ['s', 1000],
  ['m', 60_000],
  ['h', 3_600_000],
  ['d', 86_400_000],
]);
const SIZE_UNITS = new Map([
  ['b', 1],
  ['kb', 1024],
  ['mb', 1024 ** 2],
  ['gb', 1024 ** 3],
  ['tb', 1024 ** 4],
  ['kib', 1024],
  ['mib', 1024 ** 2],
  ['gib', 1024 ** 3],
  ['tib', 1024 ** 4],
]);

/** What parseDuration accepts, for error messages: `expected <DURATION_SYNTAX>, found …`. */
const DURATION_SYNTAX = 'a duration like 500ms, 30s, 15m, 1.5h, 7d or whole milliseconds';
/** What parseSize accepts, for error messages: `expected <SIZE_SYNTAX>, found …`. */
const SIZE_SYNTAX = 'a size like 134217728 (bytes), 512KB, 128MB or 1.5GiB (KB and KiB alike are 1024-based)';

/**
 * `v` read by the shared grammar as a count of base units (`base`: ms or bytes). `unit` maps a
 * unit as written to its scale, undefined for an unknown unit.
 */
function parseCount(v: string | number, syntax: string, unit: (u: string) => number | undefined, base: 'ms' | 'bytes'): number {
  const fail = (expected = syntax) => new Error(`expected ${expected}, found ${JSON.stringify(v)}`);
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v) || v < 0) throw fail();
    return v;
  }
  if (typeof v !== 'string') throw fail();
  const s = v.trim();
  const m = /^(\d+(?:\.\d+)?)\s*([A-Za-z]+)$/.exec(s);
  const scale = m ? unit(m[2]!) : undefined;
  let n: number;
  if (/^\d+$/.test(s)) n = Number(s);
  else if (m && scale !== undefined) n = Math.round(Number(m[1]) * scale);
  else throw fail();
  if (!Number.isSafeInteger(n)) throw fail(`at most ${Number.MAX_SAFE_INTEGER} ${base}`);
  return n;
}

/** Milliseconds in a duration such as `500ms`, `30s`, `15m`, `1.5h`, `7d` or `1500` (see the grammar above). */
export function parseDuration(v: string | number): number {
  return parseCount(v, DURATION_SYNTAX, (u) => DURATION_UNITS.get(u), 'ms');
}

/** Bytes in a size such as `134217728`, `128MB`, `1.5GiB` (see the grammar above; 1024-based). */
export function parseSize(v: string | number): number {
  return parseCount(v, SIZE_SYNTAX, (u) => SIZE_UNITS.get(u.toLowerCase()), 'bytes');
}

function checkCount(n: number, what: string): void {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`${what}: expected a non-negative safe integer, found ${n}`);
}

/**
 * `ms` in the largest unit that holds it exactly (`600000` -> `10m`, `90000` -> `90s`,
 * `1500` -> `1500ms`, `0` -> `0s`); parseDuration reads it back to the same number.
 */
export function formatDuration(ms: number): string {
  checkCount(ms, 'formatDuration');
  if (ms === 0) return '0s';
  for (const [unit, n] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ] as const) {
    if (ms % n === 0) return `${ms / n}${unit}`;
  }
  return `${ms}ms`;
}

/**
 * `bytes` in the largest 1024-based unit that holds it exactly (`134217728` -> `128MiB`,
 * `1536` -> `1536B`, `0` -> `0B`); parseSize reads it back to the same number.
 */
export function formatSize(bytes: number): string {
  checkCount(bytes, 'formatSize');
  if (bytes === 0) return '0B';
  for (const [unit, n] of [
    ['TiB', 1024 ** 4],
    ['GiB', 1024 ** 3],
    ['MiB', 1024 ** 2],
    ['KiB', 1024],
  ] as const) {
    if (bytes % n === 0) return `${bytes / n}${unit}`;
  }
  return `${bytes}B`;
}
