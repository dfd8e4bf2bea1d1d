import { test } from 'node:test';
import assert from 'node:assert/strict';
import protobuf from 'protobufjs';
import { avroType } from '../../ingest/formats/avro';
import { decimalOf } from '../../ingest/formats/convert';
import { unframe, writerSchema } from '../../ingest/formats/registry';
import { planUnion, withDerived } from '../../ingest/formats/union';
import { DecodeError } from '../../ingest/formats/errors';
import type { Schema, TableMetadata } from '../../iceberg';

const ORDER_AVRO = {
  type: 'record',
  name: 'Order',
  namespace: 'shop',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'note', type: ['null', 'string'], default: null },
    { name: 'total', type: { type: 'bytes', logicalType: 'decimal', precision: 10, scale: 2 } },
    { name: 'at', type: { type: 'long', logicalType: 'timestamp-millis' } },
    { name: 'day', type: { type: 'int', logicalType: 'date' } },
    { name: 'ref', type: { type: 'string', logicalType: 'uuid' } },
    { name: 'status', type: { type: 'enum', name: 'Status', symbols: ['NEW', 'PAID'] } },
    { name: 'hash', type: { type: 'fixed', name: 'Hash', size: 4 } },
    {
      name: 'customer',
      type: {
        type: 'record',
        name: 'Customer',
        fields: [
          { name: 'id', type: 'long' },
          { name: 'name', type: 'string' },
        ],
      },
    },
    {
      name: 'items',
      type: {
        type: 'array',
        items: {
          type: 'record',
          name: 'Item',
          fields: [
            { name: 'sku', type: 'string' },
            { name: 'price', type: { type: 'bytes', logicalType: 'decimal', precision: 9, scale: 2 } },
          ],
        },
      },
    },
    { name: 'attrs', type: { type: 'map', values: 'long' } },
  ],
};

/** Two's-complement big-endian bytes of an unscaled decimal (what Avro's decimal carries). */
function decBytes(u: bigint): Buffer {
  let n = 1;
  while (u >= 1n << BigInt(8 * n - 1) || u < -(1n << BigInt(8 * n - 1))) n++;
  const hex = (u < 0n ? (1n << BigInt(8 * n)) + u : u).toString(16).padStart(2 * n, '0');
  return Buffer.from(hex, 'hex');
}

/** A table's metadata holding `schema` (what planUnion and the converters read). */
function tableWith(schema: Schema): TableMetadata {
  const ids: number[] = [];
  JSON.stringify(schema, (k, v: unknown) => {
    if ((k === 'id' || k === 'element-id' || k === 'key-id' || k === 'value-id') && typeof v === 'number') ids.push(v);
    return v;
  });
  return { 'current-schema-id': 0, schemas: [schema], 'last-column-id': Math.max(0, ...ids) } as unknown as TableMetadata;
}

test('decimalOf reads two-complement big-endian bytes', () => {
  for (const u of [0n, 1n, -1n, 127n, 128n, -128n, -129n, 123456789012345678n, -(10n ** 30n)]) assert.equal(decimalOf(decBytes(u)), u);
});

test('Avro: derived columns, fresh ids at every level, and a record read back exactly', () => {
  const w = writerSchema('7', 'avro', JSON.stringify(ORDER_AVRO));
  assert.ok(!(w.derived instanceof Error), String(w.derived));
  const schema = withDerived(
    { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'offset', required: true, type: 'long' }] },
    w.derived,
  );
  const byName = Object.fromEntries(schema.fields.map((f) => [f.name, f]));
  assert.equal(byName.total!.type, 'decimal(10, 2)');
  assert.equal(byName.at!.type, 'timestamptz');
  assert.equal(byName.day!.type, 'date');
  assert.equal(byName.ref!.type, 'uuid');
  assert.equal(byName.status!.type, 'string');
  assert.equal(byName.hash!.type, 'fixed[4]');
  assert.ok(
    schema.fields.every((f) => f.name === 'offset' || !f.required),
    'derived columns are optional',
  );
  const ids = JSON.stringify(schema)
    .match(/"(?:id|element-id|key-id|value-id)":(\d+)/g)!
    .map((s) => Number(s.split(':')[1]));
  assert.equal(new Set(ids).size, ids.length, 'every id is unique');
  assert.ok(!ids.includes(0));

  const record = {
    id: 9007199254740993n, // 2^53 + 1: not a double
    note: null,
    total: decBytes(-12345n),
    at: 1_700_000_000_123n,
    day: 19_000,
    ref: 'AB6D3F2A-1C2B-4E5F-8A9B-0C1D2E3F4A5B',
    status: 'PAID',
    hash: Buffer.from([1, 2, 3, 4]),
    customer: { id: 42n, name: 'Ada' },
    items: [{ sku: 'a', price: decBytes(199n) }],
    attrs: { x: -5n },
  };
  const bytes = avroType(ORDER_AVRO).toBuffer(record);
  const target = { type: 'struct' as const, fields: schema.fields.filter((f) => f.name !== 'offset') };
  const row = w.converter(target)(w.decode(bytes), 'value') as Record<string, unknown>;
  assert.equal(row.id, 9007199254740993n);
  assert.equal(row.note, null);
  assert.equal(row.total, -12345n);
  assert.equal(row.at, 1_700_000_000_123_000n);
  assert.equal(row.day, 19_000);
  assert.equal(row.ref, 'ab6d3f2a-1c2b-4e5f-8a9b-0c1d2e3f4a5b');
  assert.equal(row.status, 'PAID');
  assert.deepEqual([...(row.hash as Uint8Array)], [1, 2, 3, 4]);
  assert.deepEqual(row.customer, { id: 42n, name: 'Ada' });
  assert.deepEqual(row.items, [{ sku: 'a', price: 199n }]);
  assert.deepEqual(row.attrs, [['x', -5n]]);
});

test('Avro: a decimal wider than its declared precision is a DecodeError naming the path', () => {
  const w = writerSchema('7', 'avro', JSON.stringify(ORDER_AVRO));
  const schema = withDerived({ type: 'struct', 'schema-id': 0, fields: [] }, w.derived as never);
  const rec = {
    id: 1n,
    note: 'x',
    total: decBytes(10n ** 12n),
    at: 0n,
    day: 0,
    ref: 'ab6d3f2a-1c2b-4e5f-8a9b-0c1d2e3f4a5b',
    status: 'NEW',
    hash: Buffer.alloc(4),
    customer: { id: 1n, name: '' },
    items: [],
    attrs: {},
  };
  const convert = w.converter({ type: 'struct', fields: schema.fields });
  assert.throws(
    () => convert(w.decode(avroType(ORDER_AVRO).toBuffer(rec)), 'value'),
    (e: Error) => e instanceof DecodeError && /value\.total/.test(e.message),
  );
});

test('Avro: unions of several types are refused with the field named', () => {
  const w = writerSchema(
    '3',
    'avro',
    JSON.stringify({ type: 'record', name: 'R', fields: [{ name: 'u', type: ['null', 'int', 'string'] }] }),
  );
  assert.ok(w.derived instanceof Error);
  assert.match(w.derived.message, /value\.u: an Avro union of 2 non-null types/);
});

const PROTO = `
syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
message Ignored { string x = 1; }
message Order {
  int64 id = 1;
  uint64 big = 2;
  string note = 3;
  repeated Item items = 4;
  map<string, int32> counts = 5;
  google.protobuf.Timestamp at = 6;
  Status status = 7;
  message Item { string sku = 1; double price = 2; }
  enum Status { NEW = 0; PAID = 1; }
}`;

test('Protobuf: message indexes pick the message; fields derive and convert exactly', () => {
  const root = protobuf.parse(PROTO, { keepCase: true }).root;
  root.addJSON(protobuf.common.get('google/protobuf/timestamp.proto')!.nested!);
  const Order = root.lookupType('shop.Order');
  const payload = Buffer.from(
    Order.encode(
      Order.fromObject({
        id: '9007199254740993',
        big: '18446744073709551615',
        note: 'hi',
        items: [{ sku: 'a', price: 1.5 }],
        counts: { k: 3 },
        at: { seconds: 1_700_000_000, nanos: 123_000 },
        status: 1,
      }),
    ).finish(),
  );
  // magic, id 5, message indexes [1] (count 1, index 1, both zigzag), payload
  const framed = Buffer.concat([Buffer.from([0, 0, 0, 0, 5, 2, 2]), payload]);
  const f = unframe(framed, 'protobuf');
  assert.deepEqual(f.indexes, [1]);
  const w = writerSchema('5:1', 'protobuf', PROTO, f.indexes);
  assert.ok(!(w.derived instanceof Error), String(w.derived));
  const schema = withDerived({ type: 'struct', 'schema-id': 0, fields: [] }, w.derived);
  const types = Object.fromEntries(schema.fields.map((f) => [f.name, typeof f.type === 'string' ? f.type : f.type.type]));
  assert.deepEqual(types, { id: 'long', big: 'long', note: 'string', items: 'list', counts: 'map', at: 'timestamptz', status: 'string' });
  // uint64 above 2^63 - 1 is a dead letter, not a wrapped negative
  assert.throws(
    () => w.converter({ type: 'struct', fields: schema.fields })(w.decode(f.payload), 'value'),
    /value\.big: 18446744073709551615 \(uint64\) does not fit/,
  );
  const ok = Buffer.from(
    Order.encode(Order.fromObject({ id: '-7', big: '5', items: [{ sku: 'b', price: 2 }], counts: { z: -1 }, status: 'PAID' })).finish(),
  );
  const row = w.converter({ type: 'struct', fields: schema.fields })(w.decode(ok), 'value') as Record<string, unknown>;
  assert.equal(row.id, -7n);
  assert.equal(row.big, 5n);
  assert.equal(row.note, ''); // proto3: an unset string reads as its default
  assert.deepEqual(row.items, [{ sku: 'b', price: 2 }]);
  assert.deepEqual(row.counts, [['z', -1]]);
  assert.equal(row.at, null);
  assert.equal(row.status, 'PAID');
});

test('the Confluent framing: a wrong magic byte or a short value is a DecodeError', () => {
  assert.throws(() => unframe(Buffer.from('{"a":1}'), 'avro'), /not in the Confluent wire format \(magic byte 0x7b/);
  assert.throws(() => unframe(Buffer.from([0, 0, 1]), 'avro'), /3 bytes/);
  assert.throws(() => unframe(null, 'avro'), /tombstone/);
  assert.deepEqual(unframe(Buffer.from([0, 0, 0, 1, 0, 9]), 'avro'), { id: 256, indexes: [], payload: Buffer.from([9]) });
  assert.deepEqual(unframe(Buffer.from([0, 0, 0, 0, 1, 0, 8]), 'protobuf').indexes, []);
});

test('JSON Schema: nested objects, formats and exact 64-bit integers', () => {
  const schema = {
    type: 'object',
    required: ['id'],
    properties: {
      id: { type: 'integer' },
      at: { type: 'string', format: 'date-time' },
      tags: { type: 'array', items: { type: 'string' } },
      customer: { $ref: '#/definitions/Customer' },
      extra: { type: 'object', additionalProperties: { type: 'number' } },
      note: { type: ['string', 'null'] },
    },
    definitions: { Customer: { type: 'object', properties: { name: { type: 'string' } } } },
  };
  const w = writerSchema('11', 'json-schema', JSON.stringify(schema));
  assert.ok(!(w.derived instanceof Error), String(w.derived));
  assert.equal(w.derived.find((d) => d.name === 'id')!.required, true);
  const table = withDerived({ type: 'struct', 'schema-id': 0, fields: [] }, w.derived);
  const convert = w.converter({ type: 'struct', fields: table.fields });
  const row = convert(
    w.decode(
      Buffer.from(
        '{"id": 9007199254740993, "at": "2024-01-02T03:04:05.123456Z", "tags": ["a"], "customer": {"name": "Ada"}, "extra": {"k": 1.5}}',
      ),
    ),
    'value',
  ) as Record<string, unknown>;
  assert.equal(row.id, 9007199254740993n);
  assert.equal(row.at, 1704164645123456n);
  assert.deepEqual(row.tags, ['a']);
  assert.deepEqual(row.customer, { name: 'Ada' });
  assert.deepEqual(row.extra, [['k', 1.5]]);
  assert.equal(row.note, null);
  assert.throws(() => convert(w.decode(Buffer.from('{"id": "x1"}')), 'value'), /value\.id: expected an integer/);
});

test('planUnion: new optional fields and promotions evolve; other changes are problems', () => {
  const base: Schema = {
    type: 'struct',
    'schema-id': 0,
    fields: [
      { id: 1, name: 'offset', required: true, type: 'long' },
      { id: 2, name: 'qty', required: false, type: 'int' },
      { id: 3, name: 'name', required: false, type: 'string' },
      {
        id: 4,
        name: 'customer',
        required: false,
        type: { type: 'struct', fields: [{ id: 5, name: 'id', required: false, type: 'long' }] },
      },
    ],
  };
  const m = tableWith(base);
  const reserved = new Set(['offset']);
  const same = planUnion(m, [{ name: 'qty', type: 'int', required: true }], reserved);
  assert.deepEqual([same.changes, same.problems], [[], []]);
  const grow = planUnion(
    m,
    [
      { name: 'qty', type: 'long', required: true },
      {
        name: 'customer',
        type: { type: 'struct', fields: [] },
        required: false,
        fields: [
          { name: 'id', type: 'long', required: true },
          { name: 'tier', type: 'string', required: false },
        ],
      },
      { name: 'note', type: 'string', required: false },
    ],
    reserved,
  );
  assert.deepEqual(grow.problems, []);
  assert.deepEqual(grow.changes, ['promoted qty int -> long', 'added customer.tier', 'added note']);
  assert.equal(grow.lastColumnId, 7);
  const bad = planUnion(
    m,
    [
      { name: 'name', type: 'int', required: false },
      { name: 'must', type: 'string', required: true },
      { name: 'offset', type: 'string', required: false },
    ],
    reserved,
  );
  assert.equal(bad.problems.length, 3);
  assert.match(bad.problems.join('\n'), /name: the table has string, the record's schema int/);
  assert.match(bad.problems.join('\n'), /must: a new field the schema requires/);
  assert.match(bad.problems.join('\n'), /offset: the record's schema has a field of the name the config gives a column from Kafka/);
  // the first schema of a table without value columns takes required fields whole
  const first = planUnion(
    tableWith({ type: 'struct', 'schema-id': 0, fields: [base.fields[0]!] }),
    [{ name: 'must', type: 'string', required: true }],
    reserved,
  );
  assert.deepEqual(first.problems, []);
});

test('Avro timestamp-nanos: whole microseconds land, sub-microsecond digits are a dead letter', () => {
  const schema = { type: 'record', name: 'N', fields: [{ name: 't', type: { type: 'long', logicalType: 'timestamp-nanos' } }] };
  const w = writerSchema('9', 'avro', JSON.stringify(schema));
  assert.ok(!(w.derived instanceof Error));
  assert.equal(w.derived[0]!.type, 'timestamptz');
  const convert = w.converter({ type: 'struct', fields: [{ id: 1, name: 't', required: false, type: 'timestamptz' }] });
  const type = avroType(schema);
  assert.deepEqual(convert(w.decode(type.toBuffer({ t: 1_700_000_000_123_456_000n })), 'value'), { t: 1_700_000_000_123_456n });
  assert.throws(
    () => convert(w.decode(type.toBuffer({ t: 1_700_000_000_123_456_789n })), 'value'),
    /value\.t: 1700000000123456789 ns has sub-microsecond digits/,
  );
});

test('a schema whose reference the registry does not have maps to nothing (its records refused), never a retry loop', async () => {
  const { createServer } = await import('node:http');
  const { SchemaRegistryClient } = await import('../../ingest/formats/registry');
  const server = createServer((req, res) => {
    res.setHeader('content-type', 'application/vnd.schemaregistry.v1+json');
    if (req.url === '/schemas/ids/5') {
      res.end(
        JSON.stringify({
          schema: '{"type":"record","name":"R","fields":[{"name":"a","type":"shop.A"}]}',
          references: [{ name: 'shop.A', subject: 'gone', version: 1 }],
        }),
      );
      return;
    }
    res.statusCode = 404;
    res.end(JSON.stringify({ error_code: 40401, message: 'Subject not found' }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const c = new SchemaRegistryClient({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}` });
    const f = { id: 5, indexes: [], payload: Buffer.alloc(0) };
    const first = c.writerOf(f, 'avro');
    assert.ok(first instanceof Promise);
    await first;
    const w = c.writerOf(f, 'avro');
    assert.ok(typeof w === 'object' && !(w instanceof Promise) && w.derived instanceof Error);
    assert.match((w.derived as Error).message, /schema 5 references shop\.A \(gone version 1\), which the registry does not have/);
  } finally {
    server.close();
  }
});

/** `buf` with the first occurrence of `from` (same length) replaced by `to`. */
function patched(buf: Buffer, from: string, to: number[]): Buffer {
  const at = buf.indexOf(Buffer.from(from));
  assert.ok(at >= 0, `${from} is in the encoded record`);
  const out = Buffer.from(buf);
  Buffer.from(to).copy(out, at);
  return out;
}

test('Avro: a string or map key that is not valid UTF-8 fails to decode (a dead letter) instead of becoming U+FFFD', () => {
  const w = writerSchema('7', 'avro', JSON.stringify(ORDER_AVRO));
  const rec = {
    id: 1n,
    note: 'ok \ufffd stays', // a real U+FFFD sent by the producer is valid text
    total: decBytes(1n),
    at: 0n,
    day: 0,
    ref: 'ab6d3f2a-1c2b-4e5f-8a9b-0c1d2e3f4a5b',
    status: 'NEW',
    hash: Buffer.alloc(4),
    customer: { id: 1n, name: 'Ada' },
    items: [],
    attrs: { qz: 1n },
  };
  const bytes = avroType(ORDER_AVRO).toBuffer(rec);
  assert.equal((w.decode(bytes) as { note: string }).note, 'ok \ufffd stays');
  const invalid = (b: Buffer) =>
    assert.throws(
      () => w.decode(b),
      (e: Error) => e instanceof DecodeError && /not valid UTF-8/.test(e.message),
    );
  invalid(patched(bytes, 'Ada', [0x41, 0xff, 0x61])); // a string field
  invalid(patched(bytes, 'qz', [0xc3, 0x28])); // a map key
  // A plain (non-registry) Avro type decodes through the same strict reader.
  assert.throws(() => avroType(ORDER_AVRO).fromBuffer(patched(bytes, 'Ada', [0xed, 0xa0, 0x80])), /not valid UTF-8/);
});

test('Protobuf: a string field or map key that is not valid UTF-8 fails to decode instead of becoming U+FFFD', () => {
  const root = protobuf.parse(PROTO, { keepCase: true }).root;
  root.addJSON(protobuf.common.get('google/protobuf/timestamp.proto')!.nested!);
  const Order = root.lookupType('shop.Order');
  const payload = Buffer.from(
    Order.encode(Order.fromObject({ id: '1', note: 'Ada \ufffd', items: [{ sku: 'sk' }], counts: { qz: 3 } })).finish(),
  );
  const w = writerSchema('5:1', 'protobuf', PROTO, [1]);
  assert.equal((w.decode(payload) as { note: string }).note, 'Ada \ufffd');
  for (const [from, to] of [
    ['Ada', [0x41, 0xff, 0x61]], // a string field
    ['sk', [0xc0, 0xaf]], // a nested message's string (overlong encoding)
    ['qz', [0xc3, 0x28]], // a map key
  ] as const)
    assert.throws(
      () => w.decode(patched(payload, from, [...to])),
      (e: Error) => e instanceof DecodeError && /not valid UTF-8/.test(e.message),
      from,
    );
});

test('Avro: a map key "__proto__" is an entry like any other, not lost (found by the fuzzer)', () => {
  // avsc read maps into {} with val[key] = value: this key set the prototype and the entry vanished
  const schema = { type: 'record', name: 'R', fields: [{ name: 'm', type: { type: 'map', values: 'long' } }] };
  const m: Record<string, bigint> = {};
  for (const [k, v] of [
    ['__proto__', 1n],
    ['a', 2n],
  ] as const)
    Object.defineProperty(m, k, { value: v, enumerable: true });
  const bytes = avroType(schema).toBuffer({ m });
  const w = writerSchema('9', 'avro', JSON.stringify(schema));
  const doc = w.decode(bytes) as { m: Record<string, unknown> };
  assert.deepEqual(Object.entries(doc.m), [
    ['__proto__', 1n],
    ['a', 2n],
  ]);
  const row = w.converter({
    type: 'struct',
    fields: [
      {
        id: 1,
        name: 'm',
        required: false,
        type: { type: 'map', 'key-id': 2, key: 'string', 'value-id': 3, value: 'long', 'value-required': false },
      },
    ],
  })(doc, 'value') as { m: unknown };
  assert.deepEqual(row.m, [
    ['__proto__', 1n],
    ['a', 2n],
  ]);
});

test('Protobuf: a Timestamp whose nanos are outside 0..999,999,999 is a dead letter, not carried into the seconds (found by the fuzzer)', () => {
  const root = protobuf.parse(PROTO, { keepCase: true }).root;
  root.addJSON(protobuf.common.get('google/protobuf/timestamp.proto')!.nested!);
  const Order = root.lookupType('shop.Order');
  const w = writerSchema('5:1', 'protobuf', PROTO, [1]);
  assert.ok(!(w.derived instanceof Error), String(w.derived));
  const fields = withDerived({ type: 'struct', 'schema-id': 0, fields: [] }, w.derived).fields;
  const read = (nanos: number) =>
    (
      w.converter({ type: 'struct', fields })(
        w.decode(Buffer.from(Order.encode(Order.fromObject({ at: { seconds: 0, nanos } })).finish())),
        'value',
      ) as {
        at: unknown;
      }
    ).at;
  assert.equal(read(999_999_000), 999_999n);
  for (const nanos of [1_000_000_000, -1000])
    assert.throws(
      () => read(nanos),
      (e: Error) => e instanceof DecodeError && /nanos must be from 0 to 999,999,999/.test(e.message),
      String(nanos),
    );
});
