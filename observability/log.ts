/**
 * floe's one logger (pino): floe's own code, the Temporal runtime (core, worker, workflow `log` through
 * the worker's sink, activity `log`) and kafkajs all write through it, so a worker's output is one
 * stream of lines with the same fields: `level`, `time`, `msg`, and where known `table`, `ingestId`,
 * `workflowId`, `commitId`.
 *
 * `FLOE_LOG_FORMAT=json|text` (default: text when stderr is a terminal, JSON lines otherwise) and
 * `FLOE_LOG_LEVEL` (trace|debug|info|warn|error|fatal|silent, default info). Logs go to stderr so a
 * command's `--json` result on stdout stays clean. Keys that name secrets are redacted wherever they
 * appear in a line's fields (one or two levels deep); messages never carry them in the first place.
 */
import { pino, type Logger as Pino, type LevelWithSilent, type DestinationStream } from 'pino';
import { isKafkajsNegativeTimeout } from './warnings';

export type LogFormat = 'json' | 'text';
export type { Pino as Logger };

const LEVELS: readonly LevelWithSilent[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

/** Field names that hold secrets in floe's configs, kafkajs, the AWS SDK and HTTP headers. */
const SECRET_KEYS = [
  'password',
  'secret',
  'secretAccessKey',
  'sessionToken',
  'token',
  'accessToken',
  'access_token',
  'refreshToken',
  'apiKey',
  'credential',
  'credentials',
  'authorization',
  'Authorization',
  'clientKey',
  'privateKey',
  'key',
  'cookie',
];
const REDACT_PATHS = [...SECRET_KEYS, ...SECRET_KEYS.map((k) => `*.${k}`), ...SECRET_KEYS.map((k) => `*.*.${k}`)];

/** `FLOE_LOG_FORMAT`, or text on a terminal and JSON otherwise. A wrong value fails naming the variable. */
export function logFormat(env: NodeJS.ProcessEnv = process.env, isTTY = process.stderr.isTTY === true): LogFormat {
  const v = env.FLOE_LOG_FORMAT?.trim();
  if (v === undefined || v === '') return isTTY ? 'text' : 'json';
  if (v === 'json' || v === 'text') return v;
  throw new Error(`FLOE_LOG_FORMAT: expected json or text, found ${JSON.stringify(v)}`);
}

/** `FLOE_LOG_LEVEL` (default info). A wrong value fails naming the variable. */
export function logLevel(env: NodeJS.ProcessEnv = process.env): LevelWithSilent {
  const v = env.FLOE_LOG_LEVEL?.trim().toLowerCase();
  if (v === undefined || v === '') return 'info';
  if ((LEVELS as string[]).includes(v)) return v as LevelWithSilent;
  throw new Error(`FLOE_LOG_LEVEL: expected one of ${LEVELS.join(', ')}, found ${JSON.stringify(env.FLOE_LOG_LEVEL)}`);
}

// Shown first, in this order, after the message; the rest follow as key=value.
const LEAD = ['table', 'ingestId', 'workflowId', 'commitId'];
const HIDDEN = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'sdkComponent', 'namespace', 'taskQueue', 'runId']);

const show = (v: unknown) => (typeof v === 'string' ? (/[\s"=]/.test(v) || v === '' ? JSON.stringify(v) : v) : JSON.stringify(v));

/** One pino JSON line as a terminal line: `12:00:01.123 INFO  committed table=db.t ingestId=main rows=500`. */
export function formatText(line: string): string {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line.endsWith('\n') ? line : `${line}\n`;
  }
  const time = new Date(typeof o.time === 'number' ? o.time : Date.now()).toISOString().slice(11, 23);
  const level = String(o.level).toUpperCase().padEnd(5);
  const keys = [...LEAD.filter((k) => k in o), ...Object.keys(o).filter((k) => !LEAD.includes(k) && !HIDDEN.has(k))];
  const fields = keys.map((k) => {
    const v = o[k];
    if (k === 'err' && v && typeof v === 'object') {
      const e = v as { type?: string; message?: string };
      return `err=${show(`${e.type ?? 'Error'}: ${e.message ?? ''}`)}`;
    }
    return `${k}=${show(v)}`;
  });
  return `${time} ${level} ${String(o.msg ?? '')}${fields.length ? ` ${fields.join(' ')}` : ''}\n`;
}

/** A pino destination that turns each JSON line into a text line before writing it. */
function textDestination(out: { write(s: string): unknown }): DestinationStream {
  return { write: (line: string) => void out.write(formatText(line)) };
}

export interface LoggerOptions {
  format?: LogFormat;
  level?: LevelWithSilent;
  /** Where lines go (default: stderr, written synchronously so a crash loses nothing). */
  destination?: { write(s: string): unknown };
}

/** A new root logger; most code wants `log()` instead. */
export function createLogger(o: LoggerOptions = {}): Pino {
  const format = o.format ?? logFormat();
  const out = o.destination ?? pino.destination({ fd: 2, sync: true });
  return pino(
    {
      level: o.level ?? logLevel(),
      base: { pid: process.pid },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      // Error objects under `err` (pino's convention) come out as {type, message, stack}.
      serializers: { err: pino.stdSerializers.err },
      formatters: { level: (label) => ({ level: label }) },
    },
    format === 'text' ? textDestination(out) : (out as DestinationStream),
  );
}

let root: Pino | undefined;

/** The process's logger (created from FLOE_LOG_FORMAT / FLOE_LOG_LEVEL on first use). */
export function log(): Pino {
  root ??= createLogger();
  return root;
}

/** Replaces the process's logger (tests; a command that configures logging differently). */
export function setLogger(l: Pino): void {
  root = l;
}

/**
 * Node's process warnings (deprecations, negative timeouts, …) as log lines instead of Node's own
 * multi-line text on stderr, which would break a JSON log stream. Replaces Node's default printer.
 */
export function routeProcessWarnings(): void {
  process.removeAllListeners('warning');
  process.on('warning', (w) => {
    if (isKafkajsNegativeTimeout(w)) return;
    log().warn({ warning: w.name, code: (w as NodeJS.ErrnoException).code }, w.message);
  });
}
