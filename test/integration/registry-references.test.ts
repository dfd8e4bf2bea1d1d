/**
 * Schema references against the stack's real registry (Apicurio's Confluent API): an Avro schema
 * whose field's type is a named record registered under another subject, and a Protobuf schema
 * importing another subject's .proto. floe's client resolves every level of references, derives
 * the nested columns from the referenced types and decodes a framed record exactly. (A reference
 * the registry does not have cannot be made on Apicurio, which refuses both a dangling reference
 * and deleting a referenced version: test/unit/formats.test.ts covers it against an HTTP stub.)
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import protobuf from 'protobufjs';
import { ensureStack } from '../../stack/stack';
import { stackEnv } from '../../stack/env';
import { SchemaRegistryClient, type WriterSchema } from '../../ingest/formats/registry';
import { avroType } from '../../ingest/formats/avro';

async function register(url: string, subject: string, body: Record<string, unknown>): Promise<number> {
  const r = await fetch(`${url}/subjects/${subject}/versions`, {
    method: 'POST',
    headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
    body: JSON.stringify(body),
  });
  assert.equal(r.status, 200, await r.clone().text());
  return ((await r.json()) as { id: number }).id;
}

async function writer(c: SchemaRegistryClient, id: number, format: 'avro' | 'protobuf', indexes: number[] = []): Promise<WriterSchema> {
  const f = { id, indexes, payload: Buffer.alloc(0) };
  const first = c.writerOf(f, format);
  if (first instanceof Promise) await first;
  const w = c.writerOf(f, format);
  assert.ok(typeof w === 'object' && !(w instanceof Promise));
  return w;
}

describe('Schema Registry references (real registry)', () => {
  let url: string;
  before(async () => {
    await ensureStack(['schema-registry']);
    url = stackEnv().schemaRegistry.url;
  });

  it('Avro: a field of a named type from another subject (two levels) derives and decodes', async () => {
    const run = `ref-${Date.now().toString(36)}`;
    const geo = { type: 'record', name: 'Geo', namespace: 'shop', fields: [{ name: 'lat', type: 'double' }] };
    const address = {
      type: 'record',
      name: 'Address',
      namespace: 'shop',
      fields: [
        { name: 'city', type: 'string' },
        { name: 'geo', type: 'shop.Geo' },
      ],
    };
    const order = {
      type: 'record',
      name: 'Order',
      namespace: 'shop',
      fields: [
        { name: 'id', type: 'long' },
        { name: 'to', type: 'shop.Address' },
      ],
    };
    await register(url, `${run}-geo`, { schema: JSON.stringify(geo) });
    await register(url, `${run}-address`, {
      schema: JSON.stringify(address),
      references: [{ name: 'shop.Geo', subject: `${run}-geo`, version: 1 }],
    });
    const id = await register(url, `${run}-value`, {
      schema: JSON.stringify(order),
      references: [{ name: 'shop.Address', subject: `${run}-address`, version: 1 }],
    });
    const w = await writer(new SchemaRegistryClient({ url }), id, 'avro');
    assert.ok(!(w.derived instanceof Error), String(w.derived));
    assert.deepEqual(
      w.derived.map((d) => [d.name, typeof d.type === 'string' ? d.type : d.type.type]),
      [
        ['id', 'long'],
        ['to', 'struct'],
      ],
    );
    const payload = avroType(order, [geo, address]).toBuffer({ id: 7n, to: { city: 'Oslo', geo: { lat: 59.9 } } });
    const target = {
      type: 'struct' as const,
      fields: [
        { id: 1, name: 'id', required: false, type: 'long' as const },
        {
          id: 2,
          name: 'to',
          required: false,
          type: {
            type: 'struct' as const,
            fields: [
              { id: 3, name: 'city', required: false, type: 'string' as const },
              {
                id: 4,
                name: 'geo',
                required: false,
                type: { type: 'struct' as const, fields: [{ id: 5, name: 'lat', required: false, type: 'double' as const }] },
              },
            ],
          },
        },
      ],
    };
    assert.deepEqual(w.converter(target)(w.decode(payload), 'value'), { id: 7n, to: { city: 'Oslo', geo: { lat: 59.9 } } });
  });

  it("Protobuf: an import registered under another subject resolves, and message indexes count only the file's own messages", async () => {
    const run = `refp-${Date.now().toString(36)}`;
    const common = 'syntax = "proto3";\npackage shop;\nmessage Money { string currency = 1; int64 units = 2; }\n';
    const main = 'syntax = "proto3";\npackage shop;\nimport "money.proto";\nmessage Payment { string id = 1; Money amount = 2; }\n';
    await register(url, `${run}-money`, { schemaType: 'PROTOBUF', schema: common });
    const id = await register(url, `${run}-value`, {
      schemaType: 'PROTOBUF',
      schema: main,
      references: [{ name: 'money.proto', subject: `${run}-money`, version: 1 }],
    });
    const c = new SchemaRegistryClient({ url });
    const w = await writer(c, id, 'protobuf');
    assert.ok(!(w.derived instanceof Error), String(w.derived));
    const root = new protobuf.Root();
    protobuf.parse(common, root, { keepCase: true });
    protobuf.parse(main.replace('import "money.proto";\n', ''), root, { keepCase: true });
    const Payment = root.lookupType('shop.Payment');
    const payload = Buffer.from(
      Payment.encode(Payment.fromObject({ id: 'p1', amount: { currency: 'EUR', units: '9007199254740993' } })).finish(),
    );
    const target = {
      type: 'struct' as const,
      fields: [
        { id: 1, name: 'id', required: false, type: 'string' as const },
        {
          id: 2,
          name: 'amount',
          required: false,
          type: {
            type: 'struct' as const,
            fields: [
              { id: 3, name: 'currency', required: false, type: 'string' as const },
              { id: 4, name: 'units', required: false, type: 'long' as const },
            ],
          },
        },
      ],
    };
    assert.deepEqual(w.converter(target)(w.decode(payload), 'value'), { id: 'p1', amount: { currency: 'EUR', units: 9007199254740993n } });
  });
});
