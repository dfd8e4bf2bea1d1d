/**
 * What goes wrong turning a Kafka record into a row, by whose fault: one record (DecodeError: a
 * dead letter), the table's config (DecoderConfigError: no record can decode, the cycle fails),
 * or a record schema (SchemaMappingError: it does not map to the table). And how a message shows
 * the value it refuses.
 */
import { LosslessNumber, stringify as stringifyLossless } from 'lossless-json';
import { FailureType, FloeFailure } from '../../contract';

/** One record cannot become a row; the message says which column and value, and why. */
export class DecodeError extends Error {
  override name = 'DecodeError';
}

/**
 * The table's config cannot decode any record (a column type its source cannot fill, a partition
 * transform its column type does not allow). Not one record's fault: the caller fails the cycle
 * with it instead of dead-lettering the whole stream. A FloeFailure of type ConfigError, so it
 * reaches Temporal through activities/failures.ts `toFailure`, not by its class name.
 */
export class DecoderConfigError extends FloeFailure {
  constructor(message: string) {
    super(FailureType.ConfigError, message);
    this.name = FailureType.ConfigError;
  }
}

/** A schema (or a record's schema against the table) that floe cannot map: names the field and both types. */
export class SchemaMappingError extends Error {
  override name = 'SchemaMappingError';
}

const MAX_SHOWN = 120;

/** `s` cut to a length an error message can carry. */
export const clip = (s: string): string => (s.length > MAX_SHOWN ? `${s.slice(0, MAX_SHOWN)}… (${s.length} chars)` : s);

/** A value as an error message shows it: JSON-ish and bounded (a 1 MiB string must not become a 1 MiB reason). */
export function show(v: unknown): string {
  let s: string;
  if (typeof v === 'string') s = JSON.stringify(v);
  else if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') s = String(v);
  else if (v instanceof LosslessNumber) s = v.value;
  else if (v === undefined) s = 'nothing';
  else {
    try {
      s = stringifyLossless(v) ?? String(v);
    } catch {
      s = Object.prototype.toString.call(v);
    }
  }
  return clip(s);
}

/** The first bytes of `b` as hex, for an error message about bytes that are not text. */
export const hexPrefix = (b: Uint8Array): string => Buffer.from(b.subarray(0, 24)).toString('hex') + (b.length > 24 ? '…' : '');
