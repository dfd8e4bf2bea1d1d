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

export function toFailure(e: unknown): unknown {
  if (e instanceof ApplicationFailure) return e;
  if (e instanceof FloeFailure) return ApplicationFailure.create({ message: e.message, type: e.type, nonRetryable: !e.retryable });
  if (e instanceof StepCancelled) return new CancelledFailure(e.message);
  if (e instanceof InvalidWindowError) return ApplicationFailure.nonRetryable(e.message, e.type);
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
