/**
 * What is wrong with a config, as one list: each problem names its key path
 * (`tables[2].partitionBy[0].transform`), says what was expected and what the file holds, and, for
 * a file, its line. A config is checked whole (config/schema.ts), so every problem is reported at
 * once; a `ConfigError` carries them all.
 */
import { distance } from 'fastest-levenshtein';
import type { z } from 'zod';
// The one leaf module, not the entry: config/ is loaded by every command, and the entry loads all
// of iceberg (~1 s). iceberg/catalog/redact.ts imports nothing.
// eslint-disable-next-line no-restricted-imports -- a dependency-free leaf on the CLI's start path
import { redactSecrets } from '../iceberg/catalog/redact';
import { FailureType, FloeFailure } from '../contract';

export type ConfigPath = readonly (string | number)[];

export interface ConfigProblem {
  /** The key path as written in messages: `tables[2].partitionBy[0].transform`, `(root)` for the whole file. */
  key: string;
  path: ConfigPath;
  message: string;
  /** 1-based line in the file, when the config came from one. */
  line?: number;
}

/** A bad config: every problem found, each naming its key; the message has one line per problem. */
export class ConfigError extends FloeFailure {
  readonly problems: readonly ConfigProblem[];
  /** The first problem's key path. */
  readonly key: string;

  /** One wrong value: `config <key>: expected <expected>, found <found>` (or `config <key>: <problem>`). */
  constructor(key: string, expected: string, found: unknown, problem?: string);
  constructor(problems: readonly ConfigProblem[]);
  constructor(keyOrProblems: string | readonly ConfigProblem[], expected?: string, found?: unknown, problem?: string) {
    const problems =
      typeof keyOrProblems === 'string'
        ? [{ key: keyOrProblems, path: [], message: problem ?? `expected ${expected}, found ${foundText(found)}` }]
        : keyOrProblems;
    // A FloeFailure of type ConfigError: thrown in an activity, it reaches Temporal through
    // toFailure as a non-retryable ConfigError (not by its class name).
    super(FailureType.ConfigError, problems.map(problemLine).join('\n'));
    this.name = 'ConfigError';
    this.problems = problems;
    this.key = problems[0]?.key ?? '(root)';
  }

  /** `config <key>: <problem>` for what is not a wrong value (a missing key, a clash between entries). */
  static problem(key: string, problem: string): ConfigError {
    return new ConfigError(key, '', undefined, problem);
  }
}

/** `config <key>: <message> (line N)`. */
function problemLine(p: ConfigProblem): string {
  return `config ${p.key}: ${p.message}${p.line !== undefined ? ` (line ${p.line})` : ''}`;
}

/** `tables[2].partitionBy[0].transform`; `(root)` for the empty path. */
export function keyOf(path: ConfigPath): string {
  if (path.length === 0) return '(root)';
  return path.map((s, i) => (typeof s === 'number' ? `[${s}]` : i === 0 ? s : `.${s}`)).join('');
}

/** A value as a message quotes it: JSON, with URI passwords and `key=secret` pairs masked. */
function foundText(v: unknown): string {
  return redactSecrets(JSON.stringify(v) ?? String(v));
}

/** The valid key a typo most likely meant, or undefined when none is close. */
export function nearestKey(key: string, valid: readonly string[]): string | undefined {
  const norm = (s: string) => s.toLowerCase().replace(/[-_\s]/g, '');
  const exact = valid.find((v) => norm(v) === norm(key));
  if (exact) return exact;
  let best: string | undefined,
    bestD = Infinity;
  for (const v of valid) {
    const d = distance(norm(key), norm(v));
    if (d < bestD) {
      best = v;
      bestD = d;
    }
  }
  // Close means a few edits, and fewer than half the key: `comitInterval`, not `foo` -> `topic`.
  return best !== undefined && bestD <= Math.max(2, Math.floor(norm(key).length / 3)) && bestD < norm(key).length / 2 ? best : undefined;
}

/** What an unknown key of a mapping is told: the key it most likely meant, else every valid key. */
export function unknownKeyMessage(key: string, valid: readonly string[]): string {
  const near = nearestKey(key, valid);
  return `unknown key; ${near ? `did you mean "${near}"?` : `expected one of ${valid.join(', ')}`}`;
}

/**
 * Issue params config/values.ts sets: `expected` marks a message as what was expected (the value
 * found is appended), `found` replaces the value as written (a default, one list item).
 */
export interface IssueParams {
  expected?: true;
  found?: unknown;
}

/**
 * The problems of a failed parse. `raw` is the config as written (before `${…}` references are
 * resolved): a message quotes the value the file holds at the key, never a resolved one. Issues
 * zod raises itself (a wrong type, a value not in an enum, a list too short) carry the schema's
 * "what was expected"; a union that failed reports the branch the value's type chose.
 */
export function problemsOf(
  issues: readonly z.core.$ZodIssue[],
  raw: unknown,
  lineOf?: (path: ConfigPath) => number | undefined,
): ConfigProblem[] {
  const out: ConfigProblem[] = [];
  const add = (path: ConfigPath, message: string) => {
    const line = lineOf?.(path);
    out.push({ key: keyOf(path), path, message, ...(line !== undefined ? { line } : {}) });
  };
  const walk = (list: readonly z.core.$ZodIssue[], prefix: ConfigPath) => {
    for (const iss of list) {
      const path = [...prefix, ...(iss.path as (string | number)[])];
      if (iss.code === 'unrecognized_keys') {
        // config/values.ts `obj` wrote one message line per key, in the issue's key order.
        const lines = iss.message.split('\n');
        iss.keys.forEach((k, i) => add([...path, k], lines[i] ?? 'unknown key'));
        continue;
      }
      if (iss.code === 'invalid_union') {
        // The branch whose type the value has (a string, a mapping) says what is wrong inside it.
        const typed = iss.errors.filter((branch) => !branch.some((b) => b.code === 'invalid_type' && b.path.length === 0));
        if (typed.length === 1) {
          walk(typed[0]!, path);
          continue;
        }
      }
      const params = (iss.code === 'custom' ? iss.params : undefined) as IssueParams | undefined;
      if (iss.code === 'custom' && !params?.expected) add(path, iss.message);
      else add(path, `expected ${iss.message}, found ${foundText(params && 'found' in params ? params.found : writtenAt(raw, path))}`);
    }
  };
  walk(issues, []);
  return out;
}

/**
 * The value the config holds at `path` as written; a path below a string (an item of a
 * comma-separated list) gives that string.
 */
function writtenAt(raw: unknown, path: ConfigPath): unknown {
  let v = raw;
  for (const seg of path) {
    if (typeof v === 'string') return v;
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string | number, unknown>)[seg];
  }
  return v;
}
