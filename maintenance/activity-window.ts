/**
 * The activity side of maintenance-window validation (defence in depth: the CLI, the client and
 * the workflows check too). A refused window is a non-retryable `InvalidWindow` failure.
 */
import { ApplicationFailure } from '@temporalio/common';
import { checkAsOf, INVALID_WINDOW, InvalidWindowError, parseOptionalWindow } from './window';

const asFailure = <T>(fn: () => T): T => {
  try {
    return fn();
  } catch (e) {
    if (e instanceof InvalidWindowError) throw ApplicationFailure.nonRetryable(e.message, INVALID_WINDOW);
    throw e;
  }
};

/** Throws `InvalidWindow` unless `asOfMs` is a finite time not in the future. */
export const checkAsOfActivity = (asOfMs: number, what: string): void => asFailure(() => checkAsOf(asOfMs, Date.now(), what));

/** The window's time (null when none), or `InvalidWindow`. */
export const windowMsActivity = (window: string | null | undefined, what: string): number | null =>
  asFailure(() => parseOptionalWindow(window, Date.now(), what));
