/**
 * What a record of an upsert or CDC table says about its key (issue 31): the whole new row, or
 * the deletion of a key. Pure: no I/O.
 *
 * - `mode: upsert`: a record with a value is the new row of the key its identifier columns hold;
 *   a tombstone (null value) deletes the key its Kafka key names. For one identifier column the
 *   key is that column's value as text (`42`, `alice`), as Kafka's string and number serializers
 *   write it; for several (or any key that is a JSON object) a JSON object of them (`{"id": 42}`),
 *   also inside a JSON converter's `{"schema": …, "payload": …}`.
 * - `mode: cdc`, `cdc.format: debezium`: Debezium's change event in JSON, with or without the
 *   JSON converter's schema wrapper. `op` c (insert), r (snapshot read) and u (update) make
 *   `after` the key's row; d deletes the key of `before` (of the Kafka key when `before` is
 *   null: REPLICA IDENTITY DEFAULT on Postgres still gives the key). The flattened form of
 *   `ExtractNewRecordState` (`__deleted: "true"`, `__op: "d"`) deletes the key of the row it
 *   carries; otherwise the row is the key's new row. A tombstone deletes as in upsert mode
 *   (Debezium sends one after each delete: deleting a deleted key changes nothing).
 *   Truncate (`op: t`) and logical-decoding messages (`op: m`) change no key of their own: they
 *   are dead letters with the reason, so nothing is lost silently and nothing is guessed
 *   (a truncate applied as "delete every row" by a replayed history would delete newer rows).
 *
 * A record from which no key can be read (a missing or null identifier column, a tombstone
 * without a key) throws DecodeError: the caller makes it a dead letter with the reason.
 */
import type { ColumnConfig, TableConfig } from '../../config';
import { compileRowReader, type KafkaRecord, type Row } from '../decode';
import { NOT_A_CHANGE_EVENT, connectRewriter, debeziumOp, flattenedDeletes, isEnvelope, isFlattened } from '../formats/debezium';
import { DecodeError, DecoderConfigError } from '../formats/errors';
import { compileRecordValue } from '../formats/json';

export type Change = { kind: 'upsert'; row: Row } | { kind: 'delete'; key: Row };

const utf8 = new TextDecoder('utf-8', { fatal: true });
const hasOwn = Object.prototype.hasOwnProperty;

/** The reader of a table entry's changes (compile once per entry). */
export function compileChanges(
  t: Pick<TableConfig, 'table' | 'columns' | 'partitionBy' | 'mode' | 'idColumns'>,
): (rec: KafkaRecord) => Change {
  if (t.mode === 'append') throw new DecoderConfigError(`table ${t.table}: changes are for mode upsert or cdc`);
  const idColumns = t.idColumns ?? [];
  if (idColumns.length === 0) throw new DecoderConfigError(`table ${t.table}: mode ${t.mode} needs idColumns`);
  const rows = compileRowReader(t);
  const keyOf = compileKafkaKey(t.columns, idColumns);
  const keyFromRow = compileRowReader({ columns: idColumns.map((n) => keyColumn(t.columns, n)) }).row;
  if (t.mode === 'upsert')
    return (rec) =>
      rec.value === null ? { kind: 'delete', key: keyOf(rec) } : { kind: 'upsert', row: rows.row(rows.parse(rec.value), rec) };
  const parse = compileRecordValue(t.columns);
  // the top-level temporal columns of the row (by their name in the event)
  const temporal = t.columns
    .filter((c) => (c.source ?? 'value') === 'value' && ['timestamp', 'timestamptz', 'date', 'time'].includes(String(c.type)))
    .map((c) => c.path ?? c.name)
    .filter((p) => !p.includes('.'));
  // one rewriter per schema text: a topic's events repeat a few schemas
  const rewriters = new Map<string, ReturnType<typeof connectRewriter>>();
  const rewriterOf = (schema: unknown) => {
    const text = JSON.stringify(schema, (_k, x: unknown) => (typeof x === 'bigint' ? String(x) : x));
    if (!rewriters.has(text)) {
      if (rewriters.size > 64) rewriters.clear();
      rewriters.set(text, connectRewriter(schema));
    }
    return rewriters.get(text);
  };
  return (rec) => {
    if (rec.value === null) return { kind: 'delete', key: keyOf(rec) };
    let v = parse(rec.value);
    const wrapped = hasOwn.call(v, 'payload') && hasOwn.call(v, 'schema');
    // The JSON converter with schemas.enable wraps every event: {"schema": {...}, "payload": {...}}.
    if (wrapped) {
      const p = v.payload;
      if (p === null) return { kind: 'delete', key: keyOf(rec) };
      if (typeof p !== 'object' || Array.isArray(p)) throw new DecodeError('value: the payload of a schema-wrapped event is not an object');
      // Debezium's semantic types (MicroTimestamp, Date, Decimal…) read by the schema's names
      rewriterOf(v.schema)?.(p as Record<string, unknown>);
      v = p as Record<string, unknown>;
    }
    // The envelope: op with before/after (a flattened row may have a column named op of its own).
    if (isEnvelope(v)) return envelope(v, rec, wrapped);
    if (isFlattened(v)) {
      if (!wrapped) noBareTemporal(v);
      return flattenedDeletes(v) ? { kind: 'delete', key: keyFromRow(v, rec) } : { kind: 'upsert', row: rows.row(v, rec) };
    }
    throw new DecodeError(`value: ${NOT_A_CHANGE_EVENT}`);
  };

  /**
   * Without its schema a number in a temporal column is ambiguous: Debezium sends epoch micros
   * (MicroTimestamp), millis (Timestamp) or days (Date) by the connector's settings, and a JSON
   * column would read each as one unit. Refused, never guessed.
   */
  function noBareTemporal(row: Record<string, unknown>): void {
    for (const name of temporal) {
      const x = row[name];
      if (x !== null && x !== undefined && typeof x !== 'string')
        throw new DecodeError(
          `value: ${name} is the number ${String((x as { value?: unknown }).value ?? x)} in a Debezium event without its schema: its unit (micros, millis, days) is only known from the schema; enable the JSON converter's schemas (value.converter.schemas.enable=true)`,
        );
    }
  }

  function envelope(v: Record<string, unknown>, rec: KafkaRecord, wrapped: boolean): Change {
    const part = (name: 'before' | 'after'): Record<string, unknown> | null => {
      const x = v[name];
      if (x === null || x === undefined) return null;
      if (typeof x !== 'object' || Array.isArray(x)) throw new DecodeError(`value: ${name} of a Debezium event is not an object`);
      if (!wrapped) noBareTemporal(x as Record<string, unknown>);
      return x as Record<string, unknown>;
    };
    if (debeziumOp(v.op) === 'delete') {
      const before = part('before');
      return { kind: 'delete', key: before !== null ? keyFromRow(before, rec) : keyOf(rec) };
    }
    const after = part('after');
    if (after === null) throw new DecodeError(`value: a Debezium event with op ${String(v.op)} has no after`);
    return { kind: 'upsert', row: rows.row(after, rec) };
  }
}

/** An identifier column as read from a key object: from the value, by its name, never null. */
function keyColumn(columns: readonly ColumnConfig[], name: string): ColumnConfig {
  const c = columns.find((x) => x.name === name);
  if (!c) throw new DecoderConfigError(`idColumns: ${name} is not a column`);
  const { header: _h, ...rest } = c;
  return { ...rest, source: 'value', path: c.source === 'value' || c.source === undefined ? (c.path ?? c.name) : c.name, required: true };
}

/**
 * The key a record's Kafka key names. A JSON object (also schema-wrapped) gives each identifier
 * column by its name (or its value path); with one identifier column any other key is that
 * column's value as text.
 */
export function compileKafkaKey(columns: readonly ColumnConfig[], idColumns: readonly string[]): (rec: KafkaRecord) => Row {
  const objectColumns = idColumns.map((n) => keyColumn(columns, n));
  const fromObject = compileRowReader({ columns: objectColumns });
  const parseObject = compileRecordValue(objectColumns);
  // One column: the key's bytes as that column's text (as a `source: key` column reads them).
  const textual = ['string', 'uuid', 'int', 'long'].includes(String(objectColumns[0]!.type));
  const single =
    idColumns.length === 1 && textual
      ? compileRowReader({ columns: [{ ...objectColumns[0]!, source: 'key', path: undefined }] }).row
      : undefined;
  const empty: Record<string, unknown> = {};
  return (rec) => {
    if (rec.key === null) throw new DecodeError('key: a tombstone (null value) needs the record key to name the row it deletes');
    if (rec.key[0] === 0x7b /* { */) {
      let text: string;
      try {
        text = utf8.decode(rec.key);
      } catch {
        throw new DecodeError('key: not valid UTF-8');
      }
      if (text.trimEnd().endsWith('}')) {
        let v: Record<string, unknown>;
        try {
          v = parseObject(rec.key);
        } catch (e) {
          // the parser names what it parses "value"; here it is the key
          throw e instanceof DecodeError ? new DecodeError(e.message.replace(/^value:/, 'key:')) : e;
        }
        if (hasOwn.call(v, 'payload') && hasOwn.call(v, 'schema') && v.payload !== null && typeof v.payload === 'object')
          v = v.payload as Record<string, unknown>;
        return fromObject.row(v, rec);
      }
    }
    if (!single)
      throw new DecodeError(
        `key: must be a JSON object of the identifier columns (${idColumns.join(', ')}): a key as plain text names one string, uuid, int or long column`,
      );
    return single(empty, rec);
  };
}
