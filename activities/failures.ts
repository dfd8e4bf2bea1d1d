/**
 * The one place that turns errors into Temporal failures. Temporal matches a workflow's
 * `nonRetryableErrorTypes` against the failure *type*, which for a plain Error is its `name`:
 * every IcebergError arrived as type 'IcebergError' and no 'DataInvalid' entry ever matched, so an
 * invalid batch retried forever. Here an IcebergError becomes an ApplicationFailure typed by its
 * kind, non-retryable when its kind says a retry cannot help.
 */
import { ApplicationFailure } from '@temporalio/common';
import { FailureType } from '../contract';
import { IcebergError } from '../iceberg/errors';

const NON_RETRYABLE_KINDS = new Set<string>([FailureType.DataInvalid, FailureType.FeatureUnsupported]);

export function toFailure(e: unknown): unknown {
  if (e instanceof ApplicationFailure) return e;
  if (e instanceof IcebergError) {
    return ApplicationFailure.create({
      message: e.message, type: e.kind, nonRetryable: NON_RETRYABLE_KINDS.has(e.kind), cause: e,
    });
  }
  return e;
}

export const nonRetryable = (type: FailureType, message: string): ApplicationFailure =>
  ApplicationFailure.nonRetryable(message, type);

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
