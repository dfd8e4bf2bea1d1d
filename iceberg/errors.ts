/**
 * One error type for the whole Iceberg library (after iceberg-rust's `Error` with a `kind`).
 *
 * `retryable` answers one question for callers: can the *same* operation succeed if tried again
 * (after a reload)? Commit conflicts are retryable; invalid data and unknown commit state are not.
 */
export type IcebergErrorKind =
  | 'DataInvalid' // input violates the spec or the table's schema
  | 'FeatureUnsupported' // valid Iceberg, but not implemented here
  | 'NotFound' // table, namespace, file or snapshot missing
  | 'AlreadyExists' // create of something that exists
  | 'CommitConflict' // a requirement failed / CAS lost: reload, re-validate, retry
  | 'CommitFailed' // the commit definitely did not land and cannot land as built (e.g. replaced files vanished)
  | 'CommitStateUnknown' // the commit may or may not have landed: never clean up written files
  | 'Io' // storage or catalog transport failure
  | 'Unexpected';

export class IcebergError extends Error {
  readonly kind: IcebergErrorKind;
  readonly retryable: boolean;
  readonly context: Record<string, unknown>;

  constructor(
    kind: IcebergErrorKind,
    message: string,
    opts: { retryable?: boolean; context?: Record<string, unknown>; cause?: unknown } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'IcebergError';
    this.kind = kind;
    this.retryable = opts.retryable ?? (kind === 'CommitConflict' || kind === 'Io');
    this.context = opts.context ?? {};
  }

  /** "expected X, found Y" errors: the shape every requirement failure takes. */
  static mismatch(kind: IcebergErrorKind, what: string, expected: unknown, found: unknown, retryable?: boolean): IcebergError {
    return new IcebergError(kind, `${what}: expected ${String(expected)}, found ${String(found)}`, {
      retryable,
      context: { expected, found },
    });
  }
}

export const isIcebergError = (e: unknown, kind?: IcebergErrorKind): e is IcebergError =>
  e instanceof IcebergError && (kind === undefined || e.kind === kind);
