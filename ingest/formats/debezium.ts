/**
 * Debezium's change events, whatever their format (JSON, or Avro, Protobuf and JSON Schema through
 * a Schema Registry): what an `op` means, and which fields of a value schema are the row.
 *
 * - The envelope: `before`, `after`, `op`, `source`, `ts_ms`. `op` c (insert), r (snapshot read)
 *   and u (update) make `after` the key's row; d deletes the key of `before` (of the Kafka key when
 *   `before` is null). Truncate (`op: t`) and logical decoding messages (`op: m`) change no key of
 *   their own: refused with the reason, so nothing is lost silently and nothing is guessed (a
 *   truncate applied as "delete every row" by a replayed history would delete newer rows).
 * - The flattened form of `ExtractNewRecordState`: the row itself, with `__deleted: "true"` or
 *   `__op: "d"` on a delete. Those two fields say what happened to the row; they are not columns.
 */
import type { Derived } from './convert';
import { DecodeError, SchemaMappingError } from './errors';

const hasOwn = Object.prototype.hasOwnProperty;

/** What an envelope's `op` does to its key: `row` (after is its row) or `delete` (before's key goes). */
export function debeziumOp(op: unknown): 'row' | 'delete' {
  switch (op) {
    case 'c':
    case 'r':
    case 'u':
      return 'row';
    case 'd':
      return 'delete';
    case 't':
      throw new DecodeError(
        'value: a Debezium truncate event (op t) is not applied: it names no key, and floe deletes rows by key only; truncate the table with an engine of your choice if you mean it',
      );
    case 'm':
      throw new DecodeError('value: a Debezium logical decoding message (op m) changes no row');
    default:
      throw new DecodeError(`value: Debezium op ${JSON.stringify(op)} is none of c, r, u, d, t, m`);
  }
}

/** The envelope (op with before/after; truncates and messages carry only op and source). */
export function isEnvelope(v: Record<string, unknown>): boolean {
  return (
    hasOwn.call(v, 'op') && (hasOwn.call(v, 'after') || hasOwn.call(v, 'before') || hasOwn.call(v, 'source') || hasOwn.call(v, 'message'))
  );
}

/** The flattened form's fields that say what happened to the row. */
const FLATTENED = new Set(['__deleted', '__op']);

export function isFlattened(v: Record<string, unknown>): boolean {
  return hasOwn.call(v, '__deleted') || hasOwn.call(v, '__op');
}

/** Whether a flattened event deletes its row. */
export function flattenedDeletes(v: Record<string, unknown>): boolean {
  return v.__deleted === true || v.__deleted === 'true' || v.__op === 'd';
}

export const NOT_A_CHANGE_EVENT = 'not a Debezium change event (neither op with before/after, nor the flattened __op/__deleted fields)';

/**
 * The row's columns of a Debezium value schema's columns: `after`'s fields for the envelope (also
 * `before`'s, when a schema has only that), the schema's own less `__deleted`/`__op` for the
 * flattened form.
 */
export function debeziumRowColumns(
  derived: readonly Derived[],
): { shape: 'envelope' | 'flattened'; fields: Derived[] } | SchemaMappingError {
  const by = new Map(derived.map((d) => [d.name, d]));
  const row = by.get('after') ?? by.get('before');
  if (by.has('op') && row) {
    if (typeof row.type === 'string' || row.type.type !== 'struct')
      return new SchemaMappingError(
        `a Debezium envelope's ${row.name} is ${typeof row.type === 'string' ? row.type : row.type.type}, not a record`,
      );
    const fields = row.fields ?? row.type.fields.map((f) => ({ name: f.name, type: f.type, required: f.required }));
    return { shape: 'envelope', fields };
  }
  if (derived.some((d) => FLATTENED.has(d.name))) return { shape: 'flattened', fields: derived.filter((d) => !FLATTENED.has(d.name)) };
  return new SchemaMappingError(`the schema is ${NOT_A_CHANGE_EVENT}`);
}
