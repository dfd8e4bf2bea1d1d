/**
 * Records framed by Confluent's official serializers (confluent-kafka's AvroSerializer,
 * JSONSerializer, ProtobufSerializer in the stack's venv), so tests feed floe exactly what a
 * Confluent producer writes: magic byte 0, the schema id (4 bytes, big-endian), the payload.
 * The schema is registered on first use under TopicNameStrategy's subject (<topic>-value, or
 * <topic>-key with isKey). Input conventions are in confluent_serialize.py's docstring:
 *   avro      JSON values; {"$bytes": "<base64>"} for bytes/fixed, {"$decimal": "12.34"} for decimals
 *   json      the JSON value itself (validated against the schema)
 *   protobuf  the proto3 JSON mapping (int64 as string, bytes as base64); `message` picks the
 *             message (default: the first in the .proto); the payload starts with the message
 *             indexes (a single 0 byte for the first message)
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runPython } from '../../stack/python';

export const CONFLUENT_SERIALIZE_SCRIPT = join(__dirname, 'confluent_serialize.py');

export type RegistryFormat = 'avro' | 'json' | 'protobuf';

export interface ConfluentSerializeOptions {
  /** The Confluent-compatible base URL, e.g. stackEnv().schemaRegistry.url (…/apis/ccompat/v7). */
  registryUrl: string;
  topic: string;
  format: RegistryFormat;
  /** Avro schema JSON, JSON Schema JSON, or .proto text. */
  schema: string;
  /** At least one: the serializer registers the schema with the first record. */
  records: unknown[];
  isKey?: boolean;
  /** Protobuf only: the message to serialize (dotted for a nested one); default the first. */
  message?: string;
}

export interface ConfluentSerialized {
  /** One framed record per input record, in order. */
  records: Buffer[];
  /** The id in every record's frame (the registry's id of the schema as registered). */
  schemaId: number;
  subject: string;
}

/** Serializes `records` with Confluent's Python serializer for `format`, registering the schema. */
export async function serializeWithConfluent(opts: ConfluentSerializeOptions): Promise<ConfluentSerialized> {
  if (opts.records.length === 0) throw new Error('serializeWithConfluent: expected at least one record, found none');
  const dir = mkdtempSync(join(tmpdir(), 'floe-confluent-'));
  const file = join(dir, 'request.json');
  try {
    writeFileSync(
      file,
      JSON.stringify({
        registry_url: opts.registryUrl,
        topic: opts.topic,
        format: opts.format,
        schema: opts.schema,
        records: opts.records,
        is_key: opts.isKey ?? false,
        message: opts.message,
      }),
    );
    const { stdout } = await runPython([CONFLUENT_SERIALIZE_SCRIPT, file], { timeoutMs: 2 * 60_000 });
    const last = stdout.trim().split('\n').pop() ?? '';
    let answer: { subject: string; schema_id: number; records: string[] };
    try {
      answer = JSON.parse(last) as typeof answer;
    } catch {
      throw new Error(`confluent_serialize.py: expected JSON on the last stdout line, found ${JSON.stringify(last.slice(0, 300))}`);
    }
    return { subject: answer.subject, schemaId: answer.schema_id, records: answer.records.map((b) => Buffer.from(b, 'base64')) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The magic byte and schema id of a Confluent-framed record. */
export function confluentFrame(record: Buffer): { magic: number; schemaId: number; payload: Buffer } {
  if (record.length < 5) throw new Error(`a Confluent-framed record has at least 5 bytes, found ${record.length}`);
  return { magic: record.readUInt8(0), schemaId: record.readUInt32BE(1), payload: record.subarray(5) };
}
