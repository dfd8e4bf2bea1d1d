/**
 * The kinds of value a config key takes, for config/schema.ts and config/table-entry.ts: a mapping
 * of known keys, a string as written, a connection setting (with `${…}` references), a duration, a
 * size, a list, a secret by reference; and how a rule between the keys of a mapping reports, so
 * that every problem of a config is found in one pass.
 */
import { z } from 'zod';
import { unknownKeyMessage, type ConfigPath, type IssueParams } from './problems';
import { hasReference, REFERENCE_REFUSED, resolveReferences, unescapeReferences } from './references';
import { formatDuration, parseDuration, parseSize } from './units';

/**
 * Where a secret or a PEM comes from: a file, or an environment variable holding it. The config
 * only names it (`<key>File` / `<key>Env`); the process reads it when it builds its client
 * (config/secrets.ts), so the value never enters the parsed config, workflow inputs, history,
 * errors or logs.
 */
export type SecretRef = { file: string } | { env: string };

// ---------- how rules report

type Ctx = z.core.$RefinementCtx;
type Seg = string | number;

/** What a rule between keys reads and reports through. */
export interface Rule {
  /** Nothing at or below `path` (relative to the mapping) failed: its value is what the schema says. */
  ok(...path: Seg[]): boolean;
  /** `expected <what>, found <the value at path as written, or found>`. */
  expected(path: ConfigPath, what: string, ...found: [unknown?]): void;
  problem(path: ConfigPath, text: string): void;
}

export function ruleOf(ctx: Ctx): Rule {
  const push = (path: ConfigPath, message: string, params?: IssueParams) =>
    ctx.addIssue({ code: 'custom', path: [...path], message, ...(params ? { params } : {}), input: undefined, continue: true });
  return {
    ok: (...path) => !ctx.issues.some((i) => path.every((seg, k) => (i.path ?? [])[k] === seg)),
    expected: (path, what, ...found) => push(path, what, { expected: true, ...(found.length > 0 ? { found: found[0] } : {}) }),
    problem: (path, text) => push(path, text),
  };
}

export const isMapping = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * `schema` with a rule between its keys. It runs whenever the value is a mapping, even when some
 * key failed (every problem is reported at once), and reads only keys `ok` vouches for; not when
 * the mapping has an unknown key: the key a rule misses is most likely that one, misspelled.
 */
export function withRule<T extends z.ZodType>(schema: T, rule: (v: z.output<T>, r: Rule) => void): T {
  const unknownKey = (p: z.core.ParsePayload) => p.issues.some((i) => i.code === 'unrecognized_keys' && (i.path ?? []).length === 0);
  return schema.superRefine((v, ctx) => rule(v, ruleOf(ctx)), { when: (p) => isMapping(p.value) && !unknownKey(p) }) as T;
}

/** An issue from a transform: `expected` marks `message` as what was expected. */
export function addIssue(ctx: Ctx, message: string, expected = false): typeof z.NEVER {
  ctx.addIssue({ code: 'custom', message, ...(expected ? { params: { expected: true } } : {}), input: undefined });
  return z.NEVER;
}

/**
 * A `undefined`-free copy of `o`, typed with those members optional: the parsed config never holds
 * `key: undefined` (it compares and prints as written).
 */
type Tidy<T> = { [K in keyof T as undefined extends T[K] ? never : K]: T[K] } & {
  [K in keyof T as undefined extends T[K] ? K : never]?: Exclude<T[K], undefined>;
};
export function tidy<T extends object>(o: T): { [K in keyof Tidy<T>]: Tidy<T>[K] } {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as never;
}

// ---------- leaves

export const NON_EMPTY = 'a non-empty string';
export const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const COLUMN_NAME = 'a column name ([A-Za-z_][A-Za-z0-9_]*)';
export const IDENT = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$/;
export const IDENT_WHAT = 'an identifier "namespace.table"';
export const HTTP_URL = /^https?:\/\/[^/]/;
export const HTTP_URL_WHAT = 'an http(s)://host[:port] URL';
const ENV_NAME_WHAT = 'the name of an environment variable ([A-Za-z_][A-Za-z0-9_]*)';
const LIST = 'a non-empty list of strings';

/** A mapping of exactly these keys: an unknown key is told the key it most likely meant; a key of `refused`, why. */
export function obj<S extends z.core.$ZodLooseShape>(shape: S, refused: Record<string, string> = {}) {
  const valid = Object.keys(shape);
  return z.strictObject(shape, {
    // One line per key, in the issue's key order (config/problems.ts problemsOf splits them).
    error: (iss) =>
      iss.code === 'unrecognized_keys' ? iss.keys.map((k) => refused[k] ?? unknownKeyMessage(k, valid)).join('\n') : 'a mapping',
  });
}

/** A non-empty string as written; a `${…}` reference is refused (config/references.ts says why), `$${` is a literal `${`. */
export function text(pattern?: RegExp, what?: string) {
  const s = z
    .string({ error: NON_EMPTY })
    .min(1, { error: NON_EMPTY })
    .refine((v) => !hasReference(v), { error: REFERENCE_REFUSED, abort: true });
  return (pattern ? s.regex(pattern, { error: what }) : s).transform(unescapeReferences);
}

/** Any string (free-form properties), as `text`. */
const anyString = z
  .string({ error: 'a string' })
  .refine((v) => !hasReference(v), { error: REFERENCE_REFUSED, abort: true })
  .transform(unescapeReferences);

/** A free-form mapping of strings (its keys are not checked). */
export const mapOf = (value: z.ZodType<string> = anyString) => z.record(z.string(), value, { error: 'a mapping of strings' });

/** A connection setting: a non-empty string whose `${NAME}` / `${file:/path}` references are substituted. */
export function conn(description?: string, pattern?: RegExp, what?: string) {
  const checked = z.string().min(1, { error: NON_EMPTY });
  return z
    .string({ error: NON_EMPTY })
    .transform(substituted)
    .pipe(pattern ? checked.regex(pattern, { error: what }) : checked)
    .describe(`${description ? `${description}. ` : ''}May hold \${NAME} / \${file:/path} references, substituted at load.`);
}

function substituted(v: string, ctx: Ctx): string {
  const r = resolveReferences(v);
  if ('value' in r) return r.value;
  for (const p of r.problems) addIssue(ctx, p);
  return z.NEVER;
}

export const bool = () => z.boolean({ error: 'true or false' });
const POSITIVE_INT = 'a positive integer';
export const posInt = () => z.int({ error: POSITIVE_INT }).positive({ error: POSITIVE_INT });

/** What `parse` makes of `v`, or undefined when it refuses it (the issue names the key). */
function parsedOrUndefined(parse: (v: string | number) => number, v: string | number): number | undefined {
  try {
    return parse(v);
  } catch {
    return undefined;
  }
}

const DURATION = 'a duration like 500ms, 30s, 15m, 7d or positive millis';
/** A positive duration in milliseconds (config/units.ts); `below` is an exclusive bound and why. */
export function duration(below?: { ms: number; why: string }, atLeast?: { ms: number; why: string }) {
  return z
    .union([z.number(), z.string()], { error: DURATION })
    .transform((v, ctx) => {
      const ms = parsedOrUndefined(parseDuration, v);
      if (!ms) return addIssue(ctx, DURATION, true);
      if (below && ms >= below.ms) return addIssue(ctx, `a duration below ${formatDuration(below.ms)} (${below.why})`, true);
      if (atLeast && ms < atLeast.ms) return addIssue(ctx, `a duration of at least ${formatDuration(atLeast.ms)} (${atLeast.why})`, true);
      return ms;
    })
    .meta({ description: 'a duration: 500ms, 30s, 15m, 1.5h, 7d; a bare number is milliseconds' });
}

const SIZE = 'a size like 134217728 (positive bytes), 512KB or 128MB (1024-based)';
/** A positive size in bytes (config/units.ts; KB and KiB alike are 1024-based). */
export function size() {
  return z
    .union([z.number(), z.string()], { error: SIZE })
    .transform((v, ctx) => parsedOrUndefined(parseSize, v) || addIssue(ctx, SIZE, true))
    .meta({ description: 'a size: 512KB, 128MB, 1.5GiB (1024-based); a bare number is bytes' });
}

/** A list of strings, or one string of comma-separated items. */
export function list(item: z.ZodType<string, string>, whole: z.ZodType<string, string>) {
  const split = (s: string) =>
    s
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean);
  return z.union([whole.transform(split), z.array(item, { error: LIST }).min(1, { error: LIST })], { error: LIST });
}

/**
 * A command as argv: a list of strings, or one string (the executable alone). Taken literally: the
 * command reads its own environment (a shell in it expands its own `${VAR}`).
 */
const ARGV = 'a command as a list of strings, e.g. ["/usr/local/bin/kafka-token", "--audience", "kafka"]';
const arg = z.string({ error: NON_EMPTY }).min(1, { error: NON_EMPTY });
export const argv = z.union([arg.transform((s) => [s]), z.array(arg, { error: ARGV }).min(1, { error: ARGV })], { error: ARGV });

// ---------- secrets by reference

type RefKeys<B extends string> = { [K in `${B}File` | `${B}Env`]: z.ZodOptional<ReturnType<typeof text>> };

/** `<base>File` / `<base>Env`: where the process reads a secret or PEM when it connects (never at load). */
export function refKeys<B extends string>(base: B): RefKeys<B> {
  return { [`${base}File`]: text().optional(), [`${base}Env`]: text(NAME, ENV_NAME_WHAT).optional() } as RefKeys<B>;
}

/** The reference `<base>File` / `<base>Env` names; undefined when neither is given. */
export function refOf(v: Record<string, unknown>, base: string): SecretRef | undefined {
  const file = v[`${base}File`],
    envName = v[`${base}Env`];
  return typeof file === 'string' ? { file } : typeof envName === 'string' ? { env: envName } : undefined;
}

/** Each of `bases` named at most once (`<base>File` or `<base>Env`, not both). */
export function oneRefEach(v: Record<string, unknown>, r: Rule, ...bases: string[]): void {
  for (const base of bases)
    if (v[`${base}File`] !== undefined && v[`${base}Env`] !== undefined)
      r.problem([`${base}File`], `give either ${base}File or ${base}Env, not both`);
}

export const notWritten = (what: string, key: string) =>
  `${what} is never written in the config: name an environment variable (${key}Env) or a file (${key}File)`;
