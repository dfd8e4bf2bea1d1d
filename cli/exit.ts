/**
 * `floe`'s exit codes, one table for --help, the README and scripts. A script can tell "fix the
 * command or config" (2) from "it is not there" (3) from "try again later" (4) without parsing text.
 */
import { CommanderError } from 'commander';
import { ConfigError } from '../config';

// Matched by name, not instanceof: importing the Temporal SDK here would load it for `floe --help`
// (the SDK sets these names itself, and its instanceof is name-based across copies too).
const NOT_FOUND_ERRORS = new Set(['WorkflowNotFoundError', 'ScheduleNotFoundError', 'NamespaceNotFoundError']);
const USAGE_ERRORS = new Set(['SecretError', 'InvalidWindowError']);

export const EXIT = {
  ok: 0,
  failure: 1,
  usage: 2,
  notFound: 3,
  unavailable: 4,
} as const;

type ExitCode = (typeof EXIT)[keyof typeof EXIT];

export const EXIT_CODES: readonly { code: ExitCode; meaning: string }[] = [
  { code: EXIT.ok, meaning: 'success' },
  { code: EXIT.failure, meaning: 'the operation failed (a workflow failed, a table drifted from the config, a demo check failed)' },
  { code: EXIT.usage, meaning: 'usage or config error: unknown command or option, bad argument, no/unreadable/invalid config' },
  { code: EXIT.notFound, meaning: 'not found: table not in the config or catalog, ingest not started, no such workflow or schedule' },
  { code: EXIT.unavailable, meaning: 'a service is unreachable or unhealthy (Temporal, Kafka, catalog, S3; `stack status`)' },
];

/** An error whose exit code the CLI knows; its message is printed as is. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'CliError';
  }
}

/** Runs `parse` (an argument parser) and turns whatever it throws into a usage error. */
export function usage<T>(parse: () => T): T {
  try {
    return parse();
  } catch (e) {
    if (e instanceof CliError) throw e;
    throw new CliError((e as Error).message, EXIT.usage, { cause: e });
  }
}

// Socket errors that mean "nobody answered there", anywhere in the cause chain.
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET']);
const GRPC_UNAVAILABLE = 14;

function causes(err: unknown): unknown[] {
  const out: unknown[] = [];
  for (let e = err, depth = 0; e && depth < 10; e = (e as { cause?: unknown }).cause, depth++) {
    out.push(e);
    for (const inner of (e as { errors?: unknown[] }).errors ?? []) out.push(inner); // AggregateError (dual-stack connect)
  }
  return out;
}

function isUnavailable(e: unknown): boolean {
  const x = e as { code?: unknown; name?: unknown; message?: unknown };
  if (typeof x.code === 'string' && NETWORK_CODES.has(x.code)) return true;
  if (x.code === GRPC_UNAVAILABLE) return true;
  if (x.name === 'KafkaJSConnectionError' || x.name === 'KafkaJSBrokerNotFound') return true;
  // @temporalio/client's Connection.connect when no server answers within connectTimeout.
  return typeof x.message === 'string' && /^Failed to connect before the deadline/.test(x.message);
}

/** The exit code for an error that ended a command. */
export function exitCodeOf(err: unknown): ExitCode {
  if (err instanceof CliError) return err.exitCode;
  // Help and --version exit 0; everything else commander reports is a usage error.
  if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
  const chain = causes(err);
  for (const e of chain) {
    const { name, kind } = (e ?? {}) as { name?: string; kind?: string };
    if (e instanceof ConfigError || USAGE_ERRORS.has(name ?? '')) return EXIT.usage;
    if (NOT_FOUND_ERRORS.has(name ?? '') || (name === 'IcebergError' && kind === 'NotFound')) return EXIT.notFound;
    // config/load.ts findTable (test/unit/cli-exit.test.ts pins this message).
    if (/^table \S+ (is not in the config \(known: |is a routed table of )/.test((e as Error)?.message ?? '')) return EXIT.notFound;
  }
  if (chain.some(isUnavailable)) return EXIT.unavailable;
  return EXIT.failure;
}

/** The exit-code table as `floe --help` prints it. */
export function exitCodesHelp(): string {
  return ['Exit codes:', ...EXIT_CODES.map((c) => `  ${c.code}  ${c.meaning}`)].join('\n');
}
