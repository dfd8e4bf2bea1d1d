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
import { formatDecimal } from '../../iceberg';
import { decimalOf, type Derived } from './convert';
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

/**
 * Kafka Connect's JSON converter (`schemas.enable`) sends each value with its schema. Debezium
 * gives temporal and decimal columns semantic types whose payload is not what the value means as
 * JSON: `MicroTimestamp` is epoch microseconds (a JSON timestamp column reads a number as epoch
 * millis), `Date` is epoch days, `MicroTime` microseconds of the day, `Decimal` the unscaled
 * two's-complement bytes in base64, `VariableScaleDecimal` a {scale, value} struct. Read by the
 * column's type alone they would land 1000x off or be dead letters; so the schema's `name` decides,
 * and each such payload is rewritten into the text floe's JSON columns read exactly (an ISO-8601
 * timestamp, a date, a time, a decimal string). Other names (ZonedTimestamp, an ISO string; the
 * millisecond Timestamp, which a JSON column reads as millis) stay as they are.
 */
const SEMANTIC: Record<string, (v: unknown, schema: ConnectField) => unknown> = {
  'io.debezium.time.MicroTimestamp': (v) => isoTimestamp(integer(v), 6),
  'io.debezium.time.NanoTimestamp': (v) => isoTimestamp(integer(v), 9),
  'io.debezium.time.Date': (v) => isoTimestamp(integer(v) * 86_400n, 0).slice(0, 10),
  'org.apache.kafka.connect.data.Date': (v) => isoTimestamp(integer(v) * 86_400n, 0).slice(0, 10),
  'io.debezium.time.Time': (v) => isoTimestamp(integer(v), 3).slice(11),
  'org.apache.kafka.connect.data.Time': (v) => isoTimestamp(integer(v), 3).slice(11),
  'io.debezium.time.MicroTime': (v) => isoTimestamp(integer(v), 6).slice(11),
  'io.debezium.time.NanoTime': (v) => isoTimestamp(integer(v), 9).slice(11),
  'org.apache.kafka.connect.data.Decimal': (v, f) => decimalText(v, Number(f.parameters?.scale ?? 0)),
  'io.debezium.data.VariableScaleDecimal': (v) => {
    const o = v as { scale?: unknown; value?: unknown };
    if (o === null || typeof o !== 'object') throw new DecodeError(`value: a VariableScaleDecimal is not a {scale, value} object`);
    return decimalText(o.value, Number(o.scale));
  },
};

interface ConnectField {
  field?: string;
  type?: string;
  name?: string;
  parameters?: Record<string, string>;
  fields?: ConnectField[];
}

function integer(v: unknown): bigint {
  if (typeof v === 'bigint') return v;
  // floe's exact JSON parser keeps large numbers as lossless-json's LosslessNumber
  if (v !== null && typeof v === 'object' && (v as { isLosslessNumber?: unknown }).isLosslessNumber === true)
    return integer((v as { value: string }).value);
  if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v);
  if (typeof v === 'string' && /^-?\d+$/.test(v)) return BigInt(v);
  throw new DecodeError(`value: ${JSON.stringify(v)} is not an integer`);
}

/** `units` since the epoch, at 10^-digits seconds each, as ISO-8601 without a zone. */
function isoTimestamp(units: bigint, digits: number): string {
  const per = 10n ** BigInt(digits);
  let sec = units / per;
  let frac = units % per;
  if (frac < 0n) {
    frac += per;
    sec -= 1n;
  }
  const ms = Number(sec) * 1000;
  if (!Number.isSafeInteger(ms) || Math.abs(ms) > 8.64e15) throw new DecodeError(`value: ${units} is out of range for a timestamp`);
  const base = new Date(ms).toISOString().slice(0, 19);
  return digits === 0 ? base : `${base}.${frac.toString().padStart(digits, '0')}`;
}

/** Base64 two's-complement big-endian bytes of an unscaled value, as a decimal string. */
function decimalText(v: unknown, scale: number): string {
  if (typeof v !== 'string') throw new DecodeError(`value: a Connect Decimal is not base64 text: ${JSON.stringify(v)}`);
  return formatDecimal(decimalOf(Buffer.from(v, 'base64')), scale);
}

/** The rewriting of one struct's fields by their semantic names; undefined when none needs it. */
function structRewriter(s: ConnectField | undefined): ((o: Record<string, unknown>) => void) | undefined {
  const rewrites: Array<[string, (v: unknown, f: ConnectField) => unknown, ConnectField]> = [];
  for (const f of s?.fields ?? []) {
    const r = f.name ? SEMANTIC[f.name] : undefined;
    if (r && f.field) rewrites.push([f.field, r, f]);
  }
  if (rewrites.length === 0) return undefined;
  return (o) => {
    for (const [name, r, f] of rewrites) {
      const v = o[name];
      if (v !== null && v !== undefined) o[name] = r(v, f);
    }
  };
}

/**
 * The rewriting of a change event's payload by its JSON converter schema (see SEMANTIC): the
 * envelope's before and after, or the flattened row's own fields. Undefined when nothing needs it.
 */
export function connectRewriter(schema: unknown): ((payload: Record<string, unknown>) => void) | undefined {
  if (schema === null || typeof schema !== 'object') return undefined;
  const s = schema as ConnectField;
  const part = (name: string) => structRewriter(s.fields?.find((f) => f.field === name));
  const before = part('before'),
    after = part('after'),
    own = structRewriter(s);
  if (!before && !after && !own) return undefined;
  return (p) => {
    const b = p.before,
      a = p.after;
    if (before && b !== null && typeof b === 'object') before(b as Record<string, unknown>);
    if (after && a !== null && typeof a === 'object') after(a as Record<string, unknown>);
    own?.(p);
  };
}
