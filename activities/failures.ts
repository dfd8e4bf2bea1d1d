/**
 * The one place that turns errors into Temporal failures. Temporal matches a workflow's
 * `nonRetryableErrorTypes` against the failure *type*, which for a plain Error is its `name`:
 * every IcebergError arrived as type 'IcebergError' and no 'DataInvalid' entry ever matched, so an
 * invalid batch retried forever. Here an IcebergError becomes an ApplicationFailure typed by its
 * kind, non-retryable when its kind says a retry cannot help; a domain FloeFailure or a refused
 * window becomes one typed by its failure type.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { FailureType, FloeFailure, StepCancelled, type StepRun } from '../contract';
import { IcebergError } from '../iceberg';
import { InvalidWindowError } from '../maintenance/window';

const NON_RETRYABLE_KINDS = new Set<string>([FailureType.DataInvalid, FailureType.FeatureUnsupported]);

/** Socket and name-resolution failures: the service is not reachable from here (now). */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
  // Postgres: admin shutdown, cannot connect now, too many connections.
  '57P01',
  '57P03',
  '53300',
]);
/** HTTP statuses that say the service is down, overloaded, or refuses floe's credentials (not the request's content). */
const SERVICE_STATUSES = new Set([401, 403, 407, 408, 429, 500, 502, 503, 504]);
/** AWS SDK error names of the same kind. */
const SERVICE_ERROR_NAMES = new Set([
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeTooSkewed',
  'SlowDown',
  'ThrottlingException',
  'AccessDenied',
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'ExpiredToken',
  'CredentialsProviderError',
]);

/**
 * Why `e` is a service's trouble rather than the data's, or undefined: a socket error, Kafka's
 * client giving up (every KafkaJS* error: floe decodes records itself, so kafkajs never fails on a
 * record's content), an HTTP status or AWS error name of an unreachable, overloaded or refusing
 * service. The cause chain is walked (IcebergError and kafkajs wrap what they retried).
 *
 * This is the one line between the two ways floe handles a failure that repeats: a service's
 * trouble is retried with backoff for as long as it lasts, the ingest showing `stalled`; anything
 * else that fails the same cycle again and again is blamed on its records, which are isolated and
 * dead-lettered (workflows/ingest.ts). A service error put on the wrong side would dead-letter good
 * records, so the list errs towards services (and the isolation stalls, rather than dead-lettering
 * on, when every record fails alone).
 */
export function serviceTrouble(e: unknown): string | undefined {
  for (let cur = e as Record<string, any> | undefined, depth = 0; cur && typeof cur === 'object' && depth < 8; cur = cur.cause, depth++) {
    const code = typeof cur.code === 'string' ? cur.code : undefined;
    if (code && NETWORK_CODES.has(code)) return code;
    const name = typeof cur.name === 'string' ? cur.name : '';
    if (name.startsWith('KafkaJS')) return name;
    if (SERVICE_ERROR_NAMES.has(name)) return name;
    const status = cur.$metadata?.httpStatusCode ?? cur.context?.status ?? cur.status;
    if (typeof status === 'number' && SERVICE_STATUSES.has(status)) return `HTTP ${status}`;
  }
  return undefined;
}

export function toFailure(e: unknown): unknown {
  if (e instanceof ApplicationFailure) return e;
  if (e instanceof FloeFailure) return ApplicationFailure.create({ message: e.message, type: e.type, nonRetryable: !e.retryable });
  if (e instanceof StepCancelled) return new CancelledFailure(e.message);
  if (e instanceof InvalidWindowError) return ApplicationFailure.nonRetryable(e.message, e.type);
  const service = !(e instanceof IcebergError) || e.kind === 'Io' || e.kind === 'Unexpected' ? serviceTrouble(e) : undefined;
  if (service !== undefined) {
    const message = e instanceof Error ? e.message : String(e);
    return ApplicationFailure.create({ message, type: FailureType.ServiceUnavailable, cause: e instanceof Error ? e : undefined });
  }
  if (e instanceof IcebergError) {
    return ApplicationFailure.create({
      message: e.message,
      type: e.kind,
      nonRetryable: NON_RETRYABLE_KINDS.has(e.kind),
      cause: e,
    });
  }
  return e;
}

/** Wraps every activity of `acts` so what it throws goes through `toFailure`. */
export function withFailureMapping<T extends Record<string, (...args: any[]) => Promise<unknown>>>(acts: T): T {
  const out: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(acts)) {
    out[name] = async (...args: unknown[]) => {
      try {
        return await fn(...args);
      } catch (e) {
        throw toFailure(e);
      }
    };
  }
  return out as T;
}

/** The current activity attempt as domain code sees it (contract StepRun). */
export function currentRun(): StepRun {
  const ctx = Context.current();
  return {
    attempt: ctx.info.attempt,
    heartbeat: (d?: unknown) => ctx.heartbeat(d),
    warn: (m) => ctx.log.warn(m),
    signal: ctx.cancellationSignal,
  };
}
