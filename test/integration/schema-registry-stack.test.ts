/**
 * The stack's Schema Registry (Apicurio Registry 2.6, in memory) through the Confluent API, and
 * records framed by Confluent's official Python serializers (test/support/registry.ts): each
 * frame's id resolves to the schema registered under TopicNameStrategy's subject.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Type } from 'avsc';
import { ensureStack } from '../../stack/stack';
import { confluentFrame, serializeWithConfluent, type ConfluentSerialized } from '../support/registry';

const uniq = (p: string) => `${p}-${randomUUID().slice(0, 8)}`;

interface RegisteredSchema {
  schema: string;
  schemaType?: string;
  references?: unknown[];
}
interface SubjectVersion extends RegisteredSchema {
  subject: string;
  version: number;
  id: number;
}

const orderV1 = {
  type: 'record',
  name: 'Order',
  namespace: 'floe.test',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'raw', type: 'bytes' },
    { name: 'amount', type: { type: 'bytes', logicalType: 'decimal', precision: 10, scale: 2 } },
    { name: 'note', type: ['null', 'string'], default: null },
  ],
};
// Backward compatible: one optional field more, with a default.
const orderV2 = { ...orderV1, fields: [...orderV1.fields, { name: 'channel', type: ['null', 'string'], default: null }] };

describe('schema registry (Apicurio, Confluent API) with Confluent serializers', { timeout: 60_000 }, () => {
  let url: string;
  const api = async <T>(path: string, init?: RequestInit): Promise<T> => {
    const res = await fetch(`${url}${path}`, {
      ...init,
      headers: { 'content-type': 'application/vnd.schemaregistry.v1+json', accept: 'application/vnd.schemaregistry.v1+json' },
    });
    const body = await res.text();
    assert.ok(res.ok, `${init?.method ?? 'GET'} ${path}: HTTP ${res.status} ${body}`);
    return JSON.parse(body) as T;
  };

  /** Every record is framed with magic 0 and the id of the subject's latest schema; returns that schema. */
  async function assertFramedWithSubjectSchema(out: ConfluentSerialized, subject: string): Promise<RegisteredSchema> {
    assert.equal(out.subject, subject);
    for (const r of out.records) {
      const frame = confluentFrame(r);
      assert.equal(frame.magic, 0, 'magic byte');
      assert.equal(frame.schemaId, out.schemaId, 'the id the helper reports is the one in the frame');
    }
    const latest = await api<SubjectVersion>(`/subjects/${subject}/versions/latest`);
    const byId = await api<RegisteredSchema>(`/schemas/ids/${out.schemaId}`);
    assert.equal(latest.id, out.schemaId, `${subject}'s latest version has the frame's id`);
    assert.equal(byId.schema, latest.schema, `id ${out.schemaId} resolves to ${subject}'s schema`);
    assert.equal(byId.schemaType ?? 'AVRO', latest.schemaType ?? 'AVRO');
    return byId;
  }

  before(async () => {
    url = (await ensureStack(['schema-registry'])).schemaRegistry.url;
  });

  it('registers an Avro schema and reads it back by id and as the subject latest version', async () => {
    const subject = `${uniq('sr-register')}-value`;
    const { id } = await api<{ id: number }>(`/subjects/${subject}/versions`, {
      method: 'POST',
      body: JSON.stringify({ schema: JSON.stringify(orderV1) }),
    });
    assert.ok(Number.isInteger(id) && id > 0, `an id, found ${id}`);
    const byId = await api<RegisteredSchema>(`/schemas/ids/${id}`);
    assert.deepEqual(JSON.parse(byId.schema), orderV1);
    assert.deepEqual(await api<number[]>(`/subjects/${subject}/versions`), [1]);
    // `GET /subjects` lists at most 1,000 subjects (Apicurio's cap; a long-lived stack registry holds
    // more), so the subject is looked up by its schema, as Confluent's clients check a registration.
    assert.ok(Array.isArray(await api<string[]>('/subjects')));
    const found = await api<{ subject: string; version: number; id: number }>(`/subjects/${subject}`, {
      method: 'POST',
      body: JSON.stringify({ schema: JSON.stringify(orderV1) }),
    });
    assert.deepEqual([found.subject, found.version, found.id], [subject, 1, id]);
    // The same schema again is the same version and id, as in Confluent's registry.
    assert.deepEqual(
      await api(`/subjects/${subject}/versions`, { method: 'POST', body: JSON.stringify({ schema: JSON.stringify(orderV1) }) }),
      {
        id,
      },
    );
  });

  it("Avro: AvroSerializer frames the subject's schema id; $bytes and $decimal become bytes and decimals", async () => {
    const topic = uniq('sr-avro');
    const out = await serializeWithConfluent({
      registryUrl: url,
      topic,
      format: 'avro',
      schema: JSON.stringify(orderV1),
      records: [
        { id: 1, raw: { $bytes: Buffer.from([0, 1, 2]).toString('base64') }, amount: { $decimal: '12.34' }, note: null },
        { id: -2, raw: { $bytes: '' }, amount: { $decimal: '-0.05' }, note: 'hi' },
      ],
    });
    const registered = await assertFramedWithSubjectSchema(out, `${topic}-value`);
    assert.deepEqual(JSON.parse(registered.schema), orderV1);
    // Decoded independently (avsc): the decimal is its unscaled value, two's complement big-endian.
    const type = Type.forSchema(orderV1 as Parameters<typeof Type.forSchema>[0]);
    const rows = out.records.map((r) => ({ ...(type.fromBuffer(confluentFrame(r).payload) as Record<string, unknown>) }));
    assert.deepEqual(rows[0], { id: 1, raw: Buffer.from([0, 1, 2]), amount: Buffer.from([0x04, 0xd2]), note: null });
    assert.deepEqual(rows[1], { id: -2, raw: Buffer.alloc(0), amount: Buffer.from([0xfb]), note: 'hi' });

    // A second, backward-compatible version of the subject gets its own id.
    const v2 = await serializeWithConfluent({
      registryUrl: url,
      topic,
      format: 'avro',
      schema: JSON.stringify(orderV2),
      records: [{ id: 3, raw: { $bytes: 'AA==' }, amount: { $decimal: '1.00' }, note: null, channel: 'web' }],
    });
    assert.notEqual(v2.schemaId, out.schemaId, 'a new schema version has a new id');
    assert.deepEqual(JSON.parse((await assertFramedWithSubjectSchema(v2, `${topic}-value`)).schema), orderV2);
    assert.deepEqual(await api<number[]>(`/subjects/${topic}-value/versions`), [1, 2]);
    assert.deepEqual(
      JSON.parse((await api<RegisteredSchema>(`/schemas/ids/${out.schemaId}`)).schema),
      orderV1,
      'the old id still resolves',
    );
  });

  it("JSON Schema: JSONSerializer frames the key subject's schema id; the payload is the JSON text", async () => {
    const topic = uniq('sr-json');
    const schema = {
      $schema: 'http://json-schema.org/draft-07/schema#',
      title: 'OrderKey',
      type: 'object',
      properties: { id: { type: 'integer' }, region: { type: 'string' } },
      required: ['id'],
    };
    const records = [{ id: 1, region: 'eu' }, { id: 2 }];
    const out = await serializeWithConfluent({
      registryUrl: url,
      topic,
      format: 'json',
      schema: JSON.stringify(schema),
      records,
      isKey: true,
    });
    const registered = await assertFramedWithSubjectSchema(out, `${topic}-key`);
    assert.equal(registered.schemaType, 'JSON');
    assert.deepEqual(JSON.parse(registered.schema), schema);
    assert.deepEqual(
      out.records.map((r) => JSON.parse(confluentFrame(r).payload.toString('utf8')) as unknown),
      records,
    );
  });

  it("Protobuf: ProtobufSerializer frames the subject's schema id, message indexes first", async () => {
    const topic = uniq('sr-proto');
    const proto = [
      'syntax = "proto3";',
      'package floe.test;',
      'import "google/protobuf/timestamp.proto";',
      'message Order {',
      '  int64 id = 1;',
      '  string name = 2;',
      '  bytes raw = 3;',
      '  google.protobuf.Timestamp at = 4;',
      '}',
      'message Refund { int64 order_id = 1; }',
      '',
    ].join('\n');
    const out = await serializeWithConfluent({
      registryUrl: url,
      topic,
      format: 'protobuf',
      schema: proto,
      records: [{ id: '9007199254740993', name: 'a', raw: 'AAE=', at: '2024-01-01T00:00:00Z' }, { id: '2' }],
    });
    const registered = await assertFramedWithSubjectSchema(out, `${topic}-value`);
    assert.equal(registered.schemaType, 'PROTOBUF');
    // confluent-kafka registers the FileDescriptorProto, base64; Apicurio keeps it as sent (Confluent's
    // own registry answers .proto text), so a reader must accept both forms.
    const descriptor = Buffer.from(registered.schema, 'base64').toString('latin1');
    for (const name of ['floe.test', 'Order', 'Refund', 'google/protobuf/timestamp.proto'])
      assert.ok(descriptor.includes(name), `the registered descriptor names ${name}`);
    // The first message's index list [0] is one 0 byte; then field 1 (varint) of the payload.
    for (const r of out.records) assert.deepEqual([...confluentFrame(r).payload.subarray(0, 2)], [0x00, 0x08]);

    const refund = await serializeWithConfluent({
      registryUrl: url,
      topic: uniq('sr-proto-refund'),
      format: 'protobuf',
      schema: proto,
      message: 'Refund',
      records: [{ orderId: '5' }],
    });
    assert.equal(refund.schemaId, out.schemaId, 'the same .proto in another subject has the same (content) id');
    // Index list [1]: count 1, index 1, both zigzag varints.
    assert.deepEqual([...confluentFrame(refund.records[0]!).payload.subarray(0, 2)], [0x02, 0x02]);
  });
});
