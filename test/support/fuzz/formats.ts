/**
 * A fuzz case in each value format: the table's config entry, the writer schema (registered with
 * the stack's Schema Registry for the framed formats), and every record as Kafka message bytes
 * with what must become of it: a row equal to its canonical value, a dead letter, or (inputs whose
 * fate the formats leave open: garbage bytes, values at a partition transform's limit) either, a row
 * still equal to its value when one is known.
 *
 * Encoders are the formats' own libraries (avsc, protobufjs, JSON text written exactly), never
 * floe's readers; spoilt values are written where the library cannot (invalid UTF-8 patched into
 * an encoded string of the same length, a decimal past its precision, a Timestamp with nanos).
 */
import avro from 'avsc';
import protobuf from 'protobufjs';
import type { MV, FField, FType, Canon } from './model';
import { MapValue, canon, decimalOf, fixedOf, typeText } from './model';
import { INT_MAX, INT_MIN, LONG_MIN, MICROS_PER_DAY, type FuzzCase, type FuzzPartition } from './arbitraries';

export type Expect = { kind: 'row'; canon: Canon } | { kind: 'dead' } | { kind: 'either'; canon?: Canon };

export interface FuzzMessage {
  key: Buffer | null;
  value: Buffer | null;
  expect: Expect;
  /** What was done to it, for the report. */
  note: string;
}

export interface EncodedCase {
  /** The table entry's format part: `value` and the config's own columns. */
  value: Record<string, unknown>;
  /** Columns for the JSON format (the registry formats derive theirs). */
  columns?: Array<Record<string, unknown>>;
  /** A registry format's schema to register under `<topic>-value` before the first record. */
  registry?: { schemaType: 'AVRO' | 'PROTOBUF' | 'JSON'; schema: string };
  /** The messages, given the registry id (0 for plain formats). */
  messages(schemaId: number): FuzzMessage[];
}

/** A small deterministic generator from a record's seed: the encoders' choices among equal forms. */
function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
}

// ---------- shared: what the record must become ----------

/** Whether a partition transform of the column may refuse `v` (ingest/formats/ranges.ts): then either fate is right. */
function atTransformLimit(t: FType, v: MV, parts: FuzzPartition[]): boolean {
  if (v === null || typeof t !== 'string') return false;
  for (const p of parts) {
    const w = /^truncate\[(\d+)\]$/.exec(p.transform);
    if (w) {
      const width = BigInt(w[1]!);
      if (t === 'int' && BigInt(v as number) < BigInt(INT_MIN) + width) return true;
      if (t === 'long' && (v as bigint) < LONG_MIN + width) return true;
      const d = decimalOf(t);
      if (d && (v as bigint) < -(10n ** BigInt(d.precision)) + width + 1n) return true;
    }
    if (p.transform === 'void' || p.transform.startsWith('bucket')) continue;
    if (t === 'date' && Math.abs(v as number) >= 100_000_000) return true;
    if (
      (t === 'timestamp' || t === 'timestamptz') &&
      ((v as bigint) > 7_700_000_000_000_000_000n || (v as bigint) < -7_700_000_000_000_000_000n)
    )
      return true;
  }
  return false;
}

function expectFor(c: FuzzCase, row: Record<string, MV>, rowCanon: Canon): Expect {
  for (const f of c.fields) {
    const parts = c.partitionBy.filter((p) => p.column === f.name);
    if (parts.length > 0 && atTransformLimit(f.type, row[f.name] ?? null, parts)) return { kind: 'either', canon: rowCanon };
  }
  return { kind: 'row', canon: rowCanon };
}

const structType = (fields: FField[]): FType => ({ type: 'struct', fields });

// ---------- JSON text, exactly ----------

const pad = (n: number | bigint, w: number): string => String(n).padStart(w, '0');

/** Proleptic Gregorian date of days since 1970-01-01 (H. Hinnant's civil_from_days). */
function civil(days: number): { y: number; m: number; d: number } {
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  return { y: era * 400 + yoe + (m <= 2 ? 1 : 0), m, d };
}
const isoDate = (days: number): string => {
  const { y, m, d } = civil(days);
  return `${pad(y, 4)}-${pad(m, 2)}-${pad(d, 2)}`;
};
function isoTime(us: bigint, r: () => number): string {
  const s = us / 1_000_000n,
    frac = us % 1_000_000n;
  const base = `${pad(s / 3600n, 2)}:${pad((s / 60n) % 60n, 2)}:${pad(s % 60n, 2)}`;
  if (frac === 0n && r() < 0.5) return base;
  const f = pad(frac, 6);
  const choice = r();
  // 1 to 9 fraction digits: trailing zeros may go, or be added past the micros
  return `${base}.${choice < 0.3 ? f.replace(/0+$/, '') || '0' : choice < 0.6 ? `${f}000` : f}`;
}
const floorDiv = (a: bigint, b: bigint): bigint => {
  const q = a / b;
  return q * b > a ? q - 1n : q;
};
/** ISO-8601 of a timestamp (µs), when its local time falls in years 0000-9999; `zone` in minutes, or undefined for none. */
function isoTimestamp(us: bigint, zone: number | undefined, r: () => number): string | undefined {
  const local = us + BigInt(zone ?? 0) * 60_000_000n;
  const days = floorDiv(local, MICROS_PER_DAY);
  if (days < -719_528n || days > 2_932_896n) return undefined;
  const rest = local - days * MICROS_PER_DAY;
  const sep = r() < 0.8 ? 'T' : ' ';
  const z =
    zone === undefined
      ? ''
      : zone === 0 && r() < 0.7
        ? 'Z'
        : `${zone < 0 ? '-' : '+'}${pad(Math.floor(Math.abs(zone) / 60), 2)}:${pad(Math.abs(zone) % 60, 2)}`;
  return `${isoDate(Number(days))}${sep}${isoTime(rest, r)}${z}`;
}

/** A decimal's literal at its scale: `-12.340` for unscaled -12340 at scale 3. */
function decimalText(u: bigint, scale: number): string {
  const neg = u < 0n;
  const digits = (neg ? -u : u).toString().padStart(scale + 1, '0');
  const int = digits.slice(0, digits.length - scale);
  const frac = digits.slice(digits.length - scale);
  return `${neg ? '-' : ''}${int}${scale > 0 ? `.${frac}` : ''}`;
}

const b64 = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64');

function jsonText(t: FType, v: MV, r: () => number): string {
  if (v === null) return 'null';
  if (typeof t !== 'string') {
    switch (t.type) {
      case 'struct': {
        const o = v as Record<string, MV>;
        const parts: string[] = [];
        for (const f of t.fields) {
          const x = o[f.name] ?? null;
          if (x === null && !f.required && r() < 0.5) continue; // absent = null
          parts.push(`${JSON.stringify(f.name)}:${jsonText(f.type, x, r)}`);
        }
        return `{${parts.join(',')}}`;
      }
      case 'list':
        return `[${(v as MV[]).map((e) => jsonText(t.element, e, r)).join(',')}]`;
      case 'map':
        return `{${(v as MapValue).entries.map(([k, e]) => `${JSON.stringify(k)}:${jsonText(t.value, e, r)}`).join(',')}}`;
    }
  }
  switch (t) {
    case 'boolean':
      return String(v);
    case 'int':
      return String(v);
    case 'long':
      return r() < 0.7 ? String(v) : `"${String(v)}"`;
    case 'float':
    case 'double': {
      const x = v as number;
      if (Number.isNaN(x)) return '"NaN"';
      if (x === Infinity) return '"Infinity"';
      if (x === -Infinity) return '"-Infinity"';
      return Object.is(x, -0) ? '-0' : String(x);
    }
    case 'string':
      return JSON.stringify(v);
    case 'binary':
      return JSON.stringify(b64(v as Uint8Array));
    case 'uuid':
      return JSON.stringify(r() < 0.3 ? (v as string).toUpperCase() : v);
    case 'date':
      return JSON.stringify(isoDate(v as number));
    case 'time':
      return JSON.stringify(isoTime(v as bigint, r));
    case 'timestamp':
    case 'timestamptz': {
      const us = v as bigint;
      const zone = t === 'timestamp' ? undefined : r() < 0.5 ? 0 : Math.floor(r() * 2 * 18 * 60) - 18 * 60;
      // a zone that moves the local time past year 9999 (or before 0000) falls back to Z
      const iso =
        r() < 0.8 || us % 1000n !== 0n ? (isoTimestamp(us, zone, r) ?? isoTimestamp(us, zone === undefined ? undefined : 0, r)) : undefined;
      if (iso !== undefined) return JSON.stringify(iso);
      if (us % 1000n === 0n) return String(us / 1000n); // epoch millis
      throw new Error(`fuzz: ${us} µs has no JSON form (generated out of domain)`);
    }
    default: {
      const d = decimalOf(t);
      if (d) {
        const text = decimalText(v as bigint, d.scale);
        return r() < 0.5 ? text : JSON.stringify(text);
      }
      return JSON.stringify(b64(v as Uint8Array)); // fixed
    }
  }
}

/** A bad JSON value for a field of type `t` (kind chosen by `bad`), and whether it is bad in every reading. */
function badJson(f: FField, bad: number): { text: string; note: string } {
  const t = f.type;
  if (bad % 4 === 2 && f.required) return { text: 'null', note: `null in required ${f.name}` };
  if (typeof t !== 'string') {
    const k = bad % 3;
    if (k === 0) return { text: '"a string"', note: `a string for ${t.type} ${f.name}` };
    if (k === 1) return { text: `${'['.repeat(20_000)}${']'.repeat(20_000)}`, note: `20,000 nested arrays for ${t.type} ${f.name}` };
    return { text: t.type === 'list' ? '{"a":1}' : '[1]', note: `wrong container for ${t.type} ${f.name}` };
  }
  if (bad % 4 === 0)
    return t === 'string' ||
      t === 'uuid' ||
      t === 'binary' ||
      t.startsWith('fixed') ||
      t === 'date' ||
      t === 'time' ||
      t.startsWith('timestamp')
      ? { text: '{"a":1}', note: `an object for ${t} ${f.name}` }
      : { text: '"not a number"', note: `a string for ${t} ${f.name}` };
  const sub = bad % 4 === 3;
  switch (t) {
    case 'boolean':
      return { text: '"true"', note: `"true" for boolean ${f.name}` };
    case 'int':
      return sub ? { text: '1.5', note: `1.5 for int ${f.name}` } : { text: String(INT_MAX + 1), note: `2^31 for int ${f.name}` };
    case 'long':
      return sub
        ? { text: '"12abc"', note: `digits and letters for long ${f.name}` }
        : { text: '9223372036854775808', note: `2^63 for long ${f.name}` };
    case 'float':
      return { text: '3.5e38', note: `3.5e38 for float ${f.name}` };
    case 'double':
      return { text: '1e400', note: `1e400 for double ${f.name}` };
    case 'string':
      return sub
        ? { text: '"a\\udc00b"', note: `lone low surrogate in ${f.name}` }
        : { text: '"\\ud800"', note: `lone surrogate in ${f.name}` };
    case 'binary':
      return { text: '"ab=c"', note: `non-canonical base64 in ${f.name}` };
    case 'uuid':
      return { text: '"0000-not-a-uuid"', note: `not a uuid in ${f.name}` };
    case 'date':
      return sub ? { text: '"2026-2-1"', note: `unpadded date in ${f.name}` } : { text: '"2026-02-30"', note: `Feb 30 in ${f.name}` };
    case 'time':
      return sub ? { text: '"12:00:00.0000001"', note: `sub-µs time in ${f.name}` } : { text: '"24:00:00"', note: `24:00 in ${f.name}` };
    case 'timestamp':
      return sub
        ? { text: '"2026-01-01T00:00:00.1234567"', note: `sub-µs timestamp in ${f.name}` }
        : { text: '"2026-13-01T00:00:00"', note: `month 13 in ${f.name}` };
    case 'timestamptz':
      return sub
        ? { text: '"2026-01-01T00:00:00"', note: `timestamptz without a zone in ${f.name}` }
        : { text: '"2026-01-01T00:00:00+19:00"', note: `zone +19:00 in ${f.name}` };
    default: {
      const d = decimalOf(t);
      if (d)
        return sub && d.scale < 38
          ? { text: `"${decimalText(1n, d.scale + 1)}"`, note: `more fraction digits than scale ${d.scale} in ${f.name}` }
          : { text: `"${decimalText(10n ** BigInt(d.precision), d.scale)}"`, note: `past precision ${d.precision} in ${f.name}` };
      const n = fixedOf(t)!;
      return { text: JSON.stringify(Buffer.alloc(n + 1, 7).toString('base64')), note: `${n + 1} bytes for ${t} ${f.name}` };
    }
  }
}

/** A whole message spoilt, for the JSON formats. */
function badJsonMessage(good: Buffer, bad: number, cut: number, fields: FField[]): { value: Buffer | null; expect: Expect; note: string } {
  switch (bad % 6) {
    case 0:
      return {
        value: good.subarray(0, Math.min(good.length - 1, Math.floor(cut * good.length))),
        expect: { kind: 'dead' },
        note: 'truncated JSON',
      };
    case 1: {
      // 0xff is never UTF-8; at a random place (inside a string or between tokens: both refused)
      const at = Math.floor(cut * good.length);
      return {
        value: Buffer.concat([good.subarray(0, at), Buffer.from([0xff]), good.subarray(at)]),
        expect: { kind: 'dead' },
        note: 'invalid UTF-8',
      };
    }
    case 2:
      return { value: Buffer.from(cut < 0.5 ? '[1,2]' : '42'), expect: { kind: 'dead' }, note: 'not an object' };
    case 3:
      return { value: null, expect: { kind: 'either' }, note: 'tombstone' };
    case 4:
      return {
        value: Buffer.from(`{${JSON.stringify(fields[0]!.name)}:${'['.repeat(100_000)}${']'.repeat(100_000)}}`),
        expect: { kind: 'dead' },
        note: '100,000 nested arrays',
      };
    default:
      return { value: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), good]), expect: { kind: 'either' }, note: 'a UTF-8 BOM first' };
  }
}

function jsonMessages(c: FuzzCase, frame: (payload: Buffer) => Buffer, canonOf: (row: Record<string, MV>) => Canon): FuzzMessage[] {
  return c.records.map((rec, i) => {
    const r = rng(i * 7919 + 17);
    const rowCanon = canonOf(rec.value);
    const s = rec.spoil;
    if (s.kind === 'field') {
      const f = c.fields.find((x) => x.name === s.field)!;
      const b = badJson(f, s.bad);
      const others = c.fields
        .filter((x) => x.name !== f.name)
        .map((x) => `${JSON.stringify(x.name)}:${jsonText(x.type, rec.value[x.name] ?? null, r)}`);
      const text = `{${[...others, `${JSON.stringify(f.name)}:${b.text}`].join(',')}}`;
      return { key: null, value: frame(Buffer.from(text)), expect: { kind: 'dead' }, note: b.note };
    }
    const good = Buffer.from(jsonText(structType(c.fields), rec.value, r));
    if (s.kind === 'message') {
      const b = badJsonMessage(good, s.bad, s.cut, c.fields);
      return { key: null, value: b.value === null ? null : frame(b.value), expect: b.expect, note: b.note };
    }
    return { key: null, value: frame(good), expect: expectFor(c, rec.value, rowCanon), note: 'good' };
  });
}

const confluent = (id: number, payload: Buffer, indexes?: Buffer): Buffer => {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(id, 1);
  return Buffer.concat([head, ...(indexes ? [indexes] : []), payload]);
};

function jsonCase(c: FuzzCase): EncodedCase {
  const rowType = structType(c.fields);
  return {
    value: { format: 'json' },
    columns: c.fields.map((f) => ({ name: f.name, type: typeText(f.type), required: f.required })),
    messages: () =>
      jsonMessages(
        c,
        (b) => b,
        (row) => canon(rowType, row),
      ),
  };
}

// ---------- JSON Schema ----------

function jsonSchemaOf(t: FType, required: boolean): Record<string, unknown> {
  const node = ((): Record<string, unknown> => {
    if (typeof t !== 'string') {
      switch (t.type) {
        case 'struct':
          return {
            type: 'object',
            properties: Object.fromEntries(t.fields.map((f) => [f.name, jsonSchemaOf(f.type, f.required)])),
            required: t.fields.filter((f) => f.required).map((f) => f.name),
          };
        case 'list':
          return { type: 'array', items: jsonSchemaOf(t.element, t.elementRequired) };
        case 'map':
          return { type: 'object', additionalProperties: jsonSchemaOf(t.value, t.valueRequired) };
      }
    }
    switch (t) {
      case 'boolean':
        return { type: 'boolean' };
      case 'long':
        return { type: 'integer' };
      case 'double':
        return { type: 'number' };
      case 'string':
        return { type: 'string' };
      case 'binary':
        return { type: 'string', contentEncoding: 'base64' };
      case 'date':
        return { type: 'string', format: 'date' };
      case 'time':
        return { type: 'string', format: 'time' };
      case 'timestamptz':
        return { type: 'string', format: 'date-time' };
      case 'uuid':
        return { type: 'string', format: 'uuid' };
      default:
        throw new Error(`fuzz: JSON Schema has no ${t}`);
    }
  })();
  return required ? node : { oneOf: [{ type: 'null' }, node] };
}

function jsonSchemaCase(c: FuzzCase): EncodedCase {
  const rowType = structType(c.fields);
  const schema = { $schema: 'http://json-schema.org/draft-07/schema#', title: 'Fuzz', ...jsonSchemaOf(rowType, true) };
  return {
    value: { format: 'json-schema' },
    registry: { schemaType: 'JSON', schema: JSON.stringify(schema) },
    messages: (id) =>
      jsonMessages(
        c,
        (b) => confluent(id, b),
        (row) => canon(rowType, row),
      ).map((m) =>
        // a null in a schema-required field: the derived column is optional, so either fate is the format's choice
        m.note.startsWith('null in required') ? { ...m, expect: { kind: 'either' } } : m,
      ),
  };
}

// ---------- Avro ----------

/** avsc's long as a bigint (test-side copy: the encoder must not be floe's reader). */
const LongAsBigInt = avro.types.LongType.__with({
  fromBuffer: (buf: Buffer) => buf.readBigInt64LE(),
  toBuffer: (n: bigint) => {
    const buf = Buffer.alloc(8);
    buf.writeBigInt64LE(BigInt(n));
    return buf;
  },
  fromJSON: (n: unknown) => BigInt(n as string),
  toJSON: (n: bigint) => Number(n),
  isValid: (n: unknown) => typeof n === 'bigint',
  compare: (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0),
});

/** The Avro schema of `t`: `logical` (registered / configured) and `plain` (what avsc encodes: logical longs as "long"). */
function avroSchemas(t: FType, required: boolean, names: { n: number }): { logical: unknown; plain: unknown } {
  const one = ((): { logical: unknown; plain: unknown } => {
    if (typeof t !== 'string') {
      switch (t.type) {
        case 'struct': {
          const name = `R${names.n++}`;
          const fs = t.fields.map((f) => ({ f, s: avroSchemas(f.type, f.required, names) }));
          return {
            logical: { type: 'record', name, fields: fs.map(({ f, s }) => ({ name: f.name, type: s.logical })) },
            plain: { type: 'record', name, fields: fs.map(({ f, s }) => ({ name: f.name, type: s.plain })) },
          };
        }
        case 'list': {
          const s = avroSchemas(t.element, t.elementRequired, names);
          return { logical: { type: 'array', items: s.logical }, plain: { type: 'array', items: s.plain } };
        }
        case 'map': {
          const s = avroSchemas(t.value, t.valueRequired, names);
          return { logical: { type: 'map', values: s.logical }, plain: { type: 'map', values: s.plain } };
        }
      }
    }
    const same = (s: unknown) => ({ logical: s, plain: s });
    switch (t) {
      case 'boolean':
      case 'int':
      case 'long':
      case 'float':
      case 'double':
      case 'string':
        return same(t);
      case 'binary':
        return same('bytes');
      case 'uuid':
        return { logical: { type: 'string', logicalType: 'uuid' }, plain: 'string' };
      case 'date':
        return { logical: { type: 'int', logicalType: 'date' }, plain: 'int' };
      case 'time':
        return { logical: { type: 'long', logicalType: 'time-micros' }, plain: 'long' };
      case 'timestamptz':
        return { logical: { type: 'long', logicalType: 'timestamp-micros' }, plain: 'long' };
      case 'timestamp':
        return { logical: { type: 'long', logicalType: 'local-timestamp-micros' }, plain: 'long' };
      default: {
        const d = decimalOf(t);
        if (d) return { logical: { type: 'bytes', logicalType: 'decimal', precision: d.precision, scale: d.scale }, plain: 'bytes' };
        const size = fixedOf(t)!;
        const s = { type: 'fixed', name: `F${names.n++}`, size };
        return same(s);
      }
    }
  })();
  return required ? one : { logical: ['null', one.logical], plain: ['null', one.plain] };
}

/** Two's-complement big-endian bytes of the fewest length (Avro's decimal). */
function twos(u: bigint): Buffer {
  let n = 1;
  while (u >= 1n << BigInt(8 * n - 1) || u < -(1n << BigInt(8 * n - 1))) n++;
  const b = Buffer.alloc(n);
  let x = BigInt.asUintN(8 * n, u);
  for (let i = n - 1; i >= 0; i--) {
    b[i] = Number(x & 0xffn);
    x >>= 8n;
  }
  return b;
}

/** A map as a plain object whose own keys are exactly the entries' ("__proto__" too). */
function ownObject(entries: Array<[string, unknown]>): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (const [k, v] of entries) Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
  return o;
}

function avroValue(t: FType, v: MV): unknown {
  if (v === null) return null;
  if (typeof t !== 'string') {
    switch (t.type) {
      case 'struct': {
        const o = v as Record<string, MV>;
        return Object.fromEntries(t.fields.map((f) => [f.name, avroValue(f.type, o[f.name] ?? null)]));
      }
      case 'list':
        return (v as MV[]).map((e) => avroValue(t.element, e));
      case 'map':
        return ownObject((v as MapValue).entries.map(([k, e]) => [k, avroValue(t.value, e)]));
    }
  }
  if (t === 'binary' || t.startsWith('fixed')) return Buffer.from(v as Uint8Array);
  if (decimalOf(t)) return twos(v as bigint);
  return v;
}

const MARKER = 'QQfuzzUTF8QQ';

function avroCase(c: FuzzCase, framed: boolean): EncodedCase {
  const rowType = structType(c.fields);
  const s = avroSchemas(rowType, true, { n: 0 });
  const type = avro.Type.forSchema(s.plain as avro.Schema, { registry: { long: LongAsBigInt as unknown as avro.Type } });
  const schemaText = JSON.stringify(s.logical);
  return {
    value: framed ? { format: 'avro' } : { format: 'avro', schema: schemaText },
    ...(framed ? { registry: { schemaType: 'AVRO' as const, schema: schemaText } } : {}),
    messages: (id) =>
      c.records.map((rec, i): FuzzMessage => {
        const frame = (b: Buffer) => (framed ? confluent(id, b) : b);
        const rowCanon = canon(rowType, rec.value);
        const good = () => type.toBuffer(avroValue(rowType, rec.value));
        const sp = rec.spoil;
        if (sp.kind === 'field') {
          const f = c.fields.find((x) => x.name === sp.field)!;
          const bad = badAvroField(type, rowType, rec.value, f, sp.bad);
          if (bad) return { key: null, value: frame(bad.bytes), expect: { kind: 'dead' }, note: bad.note };
        }
        if (sp.kind !== 'none')
          return badBinaryMessage(
            good(),
            sp.kind === 'message' ? sp.bad : sp.bad + i,
            sp.kind === 'message' ? sp.cut : 0.5,
            framed,
            id,
            frame,
          );
        return { key: null, value: frame(good()), expect: expectFor(c, rec.value, rowCanon), note: 'good' };
      }),
  };
}

/** Replaces the first byte of `marker`'s bytes in `buf` by 0xff (never UTF-8), keeping every length. */
function patchMarker(buf: Buffer, marker: string): Buffer | undefined {
  const at = buf.indexOf(Buffer.from(marker));
  if (at < 0) return undefined;
  const out = Buffer.from(buf);
  out[at + 3] = 0xff;
  return out;
}

/** A top-level field spoilt in a way avsc cannot write on its own; undefined when the type has none. */
function badAvroField(
  type: avro.Type,
  rowType: FType,
  row: Record<string, MV>,
  f: FField,
  bad: number,
): { bytes: Buffer; note: string } | undefined {
  const t = f.type;
  const withValue = (x: unknown) => ({ ...(avroValue(rowType, row) as Record<string, unknown>), [f.name]: x });
  if (t === 'string' || t === 'uuid') {
    const b = patchMarker(type.toBuffer(withValue(MARKER)), MARKER);
    if (b) return { bytes: b, note: `invalid UTF-8 in ${t} ${f.name}` };
  }
  if (typeof t !== 'string' && t.type === 'map' && (row[f.name] as MapValue | null)?.entries.length) {
    const m = row[f.name] as MapValue;
    const entries: Array<[string, unknown]> = m.entries.map(([k, e]) => [k, avroValue(t.value, e)]);
    entries[0] = [MARKER, entries[0]![1]];
    const b = patchMarker(type.toBuffer(withValue(ownObject(entries))), MARKER);
    if (b) return { bytes: b, note: `invalid UTF-8 in a map key of ${f.name}` };
  }
  if (t === 'uuid') return { bytes: type.toBuffer(withValue('0000-not-a-uuid')), note: `not a uuid in ${f.name}` };
  if (t === 'time')
    return {
      bytes: type.toBuffer(withValue(bad % 2 ? MICROS_PER_DAY : -1n)),
      note: `time-micros ${bad % 2 ? '86400e6' : '-1'} in ${f.name}`,
    };
  const d = typeof t === 'string' ? decimalOf(t) : undefined;
  if (d)
    return {
      bytes: type.toBuffer(withValue(twos(10n ** BigInt(d.precision) * (bad % 2 ? 1n : -1n)))),
      note: `decimal past precision ${d.precision} in ${f.name}`,
    };
  return undefined;
}

/** A binary message (Avro, Protobuf) spoilt as a whole. */
function badBinaryMessage(good: Buffer, bad: number, cut: number, framed: boolean, id: number, frame: (b: Buffer) => Buffer): FuzzMessage {
  const k = bad % (framed ? 5 : 4);
  if (k === 0 && good.length > 0)
    return {
      key: null,
      value: frame(good.subarray(0, Math.min(good.length - 1, Math.floor(cut * good.length)))),
      expect: { kind: 'either' },
      note: 'truncated',
    };
  if (k === 1)
    return {
      key: null,
      value: frame(Buffer.concat([good, Buffer.from([0x02, 0xff, 0x80])])),
      expect: { kind: 'either' },
      note: 'trailing bytes',
    };
  if (k === 2) {
    const junk = Buffer.alloc(1 + Math.floor(cut * 64));
    for (let i = 0; i < junk.length; i++) junk[i] = (i * 131 + bad * 17) & 0xff;
    return { key: null, value: frame(junk), expect: { kind: 'either' }, note: 'random bytes' };
  }
  if (k === 3) return { key: null, value: null, expect: { kind: 'dead' }, note: 'tombstone' };
  // framed only: a frame the registry cannot resolve
  const v = confluent(cut < 0.5 ? 2_147_000_000 + (bad % 1000) : id, good);
  if (cut >= 0.5) v[0] = 1;
  return { key: null, value: v, expect: { kind: 'dead' }, note: cut < 0.5 ? 'unknown schema id' : 'magic byte 1' };
}

// ---------- Protobuf ----------

function protoText(fields: FField[]): { text: string } {
  const messages: string[] = [];
  let n = 0;
  const scalar = (t: string): string => {
    switch (t) {
      case 'boolean':
        return 'bool';
      case 'int':
        return 'int32';
      case 'long':
        return 'int64';
      case 'float':
        return 'float';
      case 'double':
        return 'double';
      case 'string':
        return 'string';
      case 'binary':
        return 'bytes';
      case 'timestamptz':
        return 'google.protobuf.Timestamp';
      default:
        throw new Error(`fuzz: protobuf has no ${t}`);
    }
  };
  const typeName = (t: FType): string => {
    if (typeof t === 'string') return scalar(t);
    if (t.type === 'struct') return message(t.fields);
    throw new Error('fuzz: a protobuf container inside a container');
  };
  const message = (fs: FField[], name = `M${n++}`): string => {
    const body = fs.map((f, i) => {
      const t = f.type;
      if (typeof t !== 'string' && t.type === 'list') return `  repeated ${typeName(t.element)} ${f.name} = ${i + 1};`;
      if (typeof t !== 'string' && t.type === 'map') return `  map<string, ${typeName(t.value)}> ${f.name} = ${i + 1};`;
      return `  ${typeName(t)} ${f.name} = ${i + 1};`;
    });
    messages.push(`message ${name} {\n${body.join('\n')}\n}`);
    return name;
  };
  const top = message(fields, 'Fuzz');
  // the record's message first: message index 0
  const ordered = [messages.find((m) => m.startsWith(`message ${top} `))!, ...messages.filter((m) => !m.startsWith(`message ${top} `))];
  return { text: `syntax = "proto3";\npackage fuzz;\nimport "google/protobuf/timestamp.proto";\n\n${ordered.join('\n\n')}\n` };
}

/** What proto3 reads back: an unset scalar is its default, a repeated or map field never null. */
function protoModel(t: FType, v: MV): MV {
  if (typeof t !== 'string') {
    switch (t.type) {
      case 'struct': {
        if (v === null) return null;
        const o = v as Record<string, MV>;
        return Object.fromEntries(t.fields.map((f) => [f.name, protoModel(f.type, o[f.name] ?? null)]));
      }
      case 'list':
        return v === null ? [] : (v as MV[]).map((e) => protoModel(t.element, e));
      case 'map':
        return new MapValue(v === null ? [] : (v as MapValue).entries.map(([k, e]) => [k, protoModel(t.value, e)]));
    }
  }
  if (v !== null) return v;
  switch (t) {
    case 'boolean':
      return false;
    case 'int':
    case 'float':
    case 'double':
      return 0;
    case 'long':
      return 0n;
    case 'string':
      return '';
    case 'binary':
      return new Uint8Array(0);
    default:
      return null; // Timestamp: a message, absent
  }
}

function protoObject(t: FType, v: MV): unknown {
  if (v === null) return undefined;
  if (typeof t !== 'string') {
    switch (t.type) {
      case 'struct': {
        const o = v as Record<string, MV>;
        const out: Record<string, unknown> = {};
        for (const f of t.fields) {
          const x = protoObject(f.type, o[f.name] ?? null);
          if (x !== undefined) out[f.name] = x;
        }
        return out;
      }
      case 'list':
        return (v as MV[]).map((e) => protoObject(t.element, e));
      case 'map':
        return ownObject((v as MapValue).entries.map(([k, e]) => [k, protoObject(t.value, e)]));
    }
  }
  switch (t) {
    case 'long':
      return String(v);
    case 'binary':
      return Buffer.from(v as Uint8Array);
    case 'timestamptz': {
      const us = v as bigint;
      const s = floorDiv(us, 1_000_000n);
      return { seconds: String(s), nanos: Number(us - s * 1_000_000n) * 1000 };
    }
    default:
      return v;
  }
}

function protobufCase(c: FuzzCase): EncodedCase {
  const rowType = structType(c.fields);
  const { text } = protoText(c.fields);
  const root = new protobuf.Root();
  protobuf.parse(text, root, { keepCase: true });
  // the well-known Timestamp, from protobufjs' own copy of google/protobuf/timestamp.proto
  root.addJSON((protobuf.common as unknown as Record<string, protobuf.INamespace>)['google/protobuf/timestamp.proto']!.nested!);
  root.resolveAll();
  const fuzzType = root.lookupType('fuzz.Fuzz');
  // map keys and fields named like Object.prototype's are written through a placeholder of the same length
  const encode = (obj: unknown): Buffer => Buffer.from(fuzzType.encode(fuzzType.fromObject(obj as Record<string, unknown>)).finish());
  return {
    value: { format: 'protobuf' },
    registry: { schemaType: 'PROTOBUF', schema: text },
    messages: (id) =>
      c.records.map((rec, i): FuzzMessage => {
        const frame = (b: Buffer) => confluent(id, b, Buffer.from([0]));
        const expected = protoModel(rowType, rec.value) as Record<string, MV>;
        const rowCanon = canon(rowType, expected);
        const good = () => encodeProto(encode, rowType, rec.value);
        const sp = rec.spoil;
        if (sp.kind === 'field') {
          const f = c.fields.find((x) => x.name === sp.field)!;
          if (f.type === 'string') {
            const b = patchMarker(encodeProto(encode, rowType, { ...rec.value, [f.name]: MARKER }), MARKER);
            if (b) return { key: null, value: frame(b), expect: { kind: 'dead' }, note: `invalid UTF-8 in string ${f.name}` };
          }
          if (f.type === 'timestamptz') {
            const obj = protoObject(rowType, rec.value) as Record<string, unknown>;
            obj[f.name] = { seconds: '0', nanos: sp.bad % 2 ? 1 : 1_000_000_000 };
            return {
              key: null,
              value: frame(encode(obj)),
              expect: { kind: 'dead' },
              note: `Timestamp nanos ${sp.bad % 2 ? 1 : '1e9'} in ${f.name}`,
            };
          }
        }
        if (sp.kind !== 'none')
          return badBinaryMessage(
            good(),
            sp.kind === 'message' ? sp.bad : sp.bad + i,
            sp.kind === 'message' ? sp.cut : 0.5,
            true,
            id,
            frame,
          );
        return { key: null, value: frame(good()), expect: expectFor(c, expected, rowCanon), note: 'good' };
      }),
  };
}

/**
 * protobufjs' fromObject assigns map keys with `obj[key] =`, so a key "__proto__" would vanish on
 * the producer's side: such keys are written as placeholders of the same length, patched after.
 */
function encodeProto(encode: (o: unknown) => Buffer, rowType: FType, row: Record<string, MV>): Buffer {
  const swaps: Array<[string, string]> = [];
  const sub = (t: FType, v: MV): MV => {
    if (v === null || typeof t === 'string') return v;
    if (t.type === 'struct')
      return Object.fromEntries(t.fields.map((f) => [f.name, sub(f.type, (v as Record<string, MV>)[f.name] ?? null)]));
    if (t.type === 'list') return (v as MV[]).map((e) => sub(t.element, e));
    return new MapValue(
      (v as MapValue).entries.map(([k, e]) => {
        if (k in Object.prototype || k === '__proto__') {
          const ph = `Z${String(swaps.length).padStart(k.length - 1, '0')}`.slice(0, k.length);
          swaps.push([ph, k]);
          return [ph, sub(t.value, e)];
        }
        return [k, sub(t.value, e)];
      }),
    );
  };
  let buf = encode(protoObject(rowType, sub(rowType, row)));
  for (const [ph, k] of swaps) {
    const at = buf.indexOf(Buffer.from(`${ph}`));
    if (at < 0 || ph.length !== k.length) throw new Error(`fuzz: placeholder ${ph} for map key ${k} not found`);
    buf = Buffer.concat([buf.subarray(0, at), Buffer.from(k), buf.subarray(at + ph.length)]);
  }
  return buf;
}

// ---------- entry ----------

export function encodeCase(c: FuzzCase): EncodedCase {
  switch (c.format) {
    case 'json':
      return jsonCase(c);
    case 'json-schema':
      return jsonSchemaCase(c);
    case 'avro':
      return avroCase(c, false);
    case 'avro-registry':
      return avroCase(c, true);
    case 'protobuf':
      return protobufCase(c);
  }
}
