/**
 * The local stack is real: each service does the one thing floe needs from it, through the
 * same clients floe uses (kafkajs, @temporalio/worker, @aws-sdk/client-s3, pg, venv Python).
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { Client as TemporalClient, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Client as PgClient } from 'pg';
import { Field, Int64, RecordBatch, Schema, Struct, Table, Utf8, makeData, tableToIPC, vectorFromArray } from 'apache-arrow';
import { ensureStack } from '../../stack/stack';
import { runPythonJson } from '../../stack/python';
import { stackS3Client } from '../../stack/services';
import type { StackEnv } from '../../stack/env';
import { stackProbe } from './fixtures/stack-workflow';
import { createTopicsReady } from '../../demo/topics';

// The Node build of parquet-wasm (sync wasm init); see iceberg/parquet/wasm.ts.
const parquetWasm = require('parquet-wasm') as typeof import('parquet-wasm');

const uniq = (p: string) => `${p}-${randomUUID().slice(0, 8)}`;

describe('local stack', () => {
  let env: StackEnv;
  before(async () => {
    // Worker INFO lines would bury the test report; the runtime is per process (one per file).
    try {
      Runtime.install({ logger: new DefaultLogger('WARN') });
    } catch {
      /* already installed */
    }
    env = await ensureStack();
  });

  it('kafka: a produced message is consumed back from a new topic', async () => {
    const kafka = new Kafka({ clientId: 'floe-stack-test', brokers: env.kafka.brokers, logLevel: logLevel.NOTHING });
    const topic = uniq('stack-test');
    const admin = kafka.admin();
    await admin.connect();
    await createTopicsReady(admin, [{ topic, numPartitions: 1 }]);
    await admin.disconnect();

    const producer = kafka.producer();
    await producer.connect();
    const sent = [
      { key: 'k1', value: 'hello' },
      { key: 'k2', value: 'floe' },
    ];
    await producer.send({ topic, messages: sent });
    await producer.disconnect();

    const consumer = kafka.consumer({ groupId: uniq('stack-test-group') });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const got: { key: string; value: string; offset: string }[] = [];
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`expected ${sent.length} messages within 30 s, got ${got.length}`)), 30_000);
        consumer
          .run({
            eachMessage: async ({ message }) => {
              got.push({ key: message.key?.toString() ?? '', value: message.value?.toString() ?? '', offset: message.offset });
              if (got.length === sent.length) {
                clearTimeout(timer);
                resolve();
              }
            },
          })
          .catch(reject);
      });
    } finally {
      await consumer.disconnect();
    }
    assert.deepEqual(
      got.map(({ key, value }) => ({ key, value })),
      sent,
    );
    assert.deepEqual(
      got.map((m) => m.offset),
      ['0', '1'],
      'offsets of a fresh single-partition topic',
    );
  });

  it('temporal: a workflow runs an activity on the dev server', async () => {
    const taskQueue = uniq('stack-test');
    const nativeConnection = await NativeConnection.connect({ address: env.temporal.address });
    const connection = await Connection.connect({ address: env.temporal.address });
    try {
      const worker = await Worker.create({
        connection: nativeConnection,
        namespace: env.temporal.namespace,
        taskQueue,
        workflowsPath: require.resolve('./fixtures/stack-workflow'),
        activities: { greet: async (name: string) => `hello ${name}` },
      });
      const client = new TemporalClient({ connection, namespace: env.temporal.namespace });
      const workflowId = uniq('stack-probe');
      const result = await worker.runUntil(client.workflow.execute(stackProbe, { args: ['floe'], taskQueue, workflowId }));
      assert.equal(result, 'hello floe (from workflow)');
      // The run is in the server's history (SQLite-backed), not only in the worker.
      const desc = await client.workflow.getHandle(workflowId).describe();
      assert.equal(desc.status.name, 'COMPLETED');
    } finally {
      await connection.close();
      await nativeConnection.close();
    }
  });

  it('s3: put, get and list an object; a wrong secret is rejected', async () => {
    const client = stackS3Client();
    const key = `${uniq('stack-test')}/hello.txt`;
    try {
      await client.send(new PutObjectCommand({ Bucket: env.s3.bucket, Key: key, Body: 'hello floe' }));
      const body = await (await client.send(new GetObjectCommand({ Bucket: env.s3.bucket, Key: key }))).Body?.transformToString();
      assert.equal(body, 'hello floe');
      const listed = await client.send(new ListObjectsV2Command({ Bucket: env.s3.bucket, Prefix: key.split('/')[0] }));
      assert.deepEqual(
        listed.Contents?.map((o) => o.Key),
        [key],
      );
    } finally {
      client.destroy();
    }
    const wrong = new S3Client({
      endpoint: env.s3.endpoint,
      region: env.s3.region,
      forcePathStyle: true,
      maxAttempts: 1,
      credentials: { accessKeyId: env.s3.accessKeyId, secretAccessKey: 'not-the-secret' },
    });
    try {
      await assert.rejects(
        wrong.send(new ListObjectsV2Command({ Bucket: env.s3.bucket })),
        /SignatureDoesNotMatch|AccessDenied|InvalidAccessKeyId/,
      );
    } finally {
      wrong.destroy();
    }
  });

  it('postgres: floe logs in to database floe on 127.0.0.1', async () => {
    const pg = new PgClient({ connectionString: env.postgres.url });
    await pg.connect();
    try {
      const r = await pg.query<{ db: string; usr: string; addr: string | null }>(
        'SELECT current_database() AS db, current_user AS usr, inet_server_addr()::text AS addr',
      );
      assert.deepEqual(r.rows[0], { db: 'floe', usr: 'floe', addr: '127.0.0.1/32' });
    } finally {
      await pg.end();
    }
  });

  it('parquet: field ids written by parquet-wasm are in the footer, read by pyarrow and DuckDB (also over S3)', async () => {
    // Iceberg resolves Parquet columns by field id, not by name (spec: "Column Projection").
    const withId = (f: Field, id: number) => new Field(f.name, f.type, f.nullable, new Map([['PARQUET:field_id', String(id)]]));
    const idField = withId(new Field('id', new Int64(), false), 1);
    const nameField = withId(new Field('name', new Utf8(), true), 2);
    const schema = new Schema([idField, nameField]);
    const ids = vectorFromArray([1n, 2n, 3n], new Int64());
    const names = vectorFromArray(['a', null, 'c'], new Utf8());
    const data = makeData({ type: new Struct(schema.fields), length: 3, nullCount: 0, children: [ids.data[0]!, names.data[0]!] });
    const table = new Table([new RecordBatch(schema, data)]);
    const wasmTable = parquetWasm.Table.fromIPCStream(tableToIPC(table, 'stream'));
    const bytes = parquetWasm.writeParquet(wasmTable);

    const dir = mkdtempSync(join(tmpdir(), 'floe-stack-test-'));
    const file = join(dir, 'ids.parquet');
    writeFileSync(file, bytes);
    const key = `${uniq('stack-test')}/ids.parquet`;
    const client = stackS3Client();
    try {
      await client.send(new PutObjectCommand({ Bucket: env.s3.bucket, Key: key, Body: bytes }));
    } finally {
      client.destroy();
    }

    const out = await runPythonJson<{
      pyarrowFieldIds: Record<string, string | null>;
      rows: unknown[][];
      footerFieldIds: Record<string, number | null>;
      s3Rows: number;
    }>(
      `
import json, sys
import pyarrow.parquet as pq
from floe_duckdb import connect
f = pq.ParquetFile(sys.argv[1])
# The Parquet schema itself, not the ARROW:schema blob a writer may also store.
arrow_from_parquet = f.metadata.schema.to_arrow_schema()
ids = {fld.name: (fld.metadata or {}).get(b"PARQUET:field_id", b"").decode() or None for fld in arrow_from_parquet}
con = connect()
footer = {r[0]: r[1] for r in con.execute("SELECT name, field_id FROM parquet_schema(?) WHERE num_children IS NULL OR num_children = 0", [sys.argv[1]]).fetchall()}
s3_rows = con.execute(f"SELECT count(*) FROM read_parquet('s3://{sys.argv[2]}')").fetchone()[0]
print(json.dumps({"pyarrowFieldIds": ids, "rows": [list(r.values()) for r in f.read().to_pylist()], "footerFieldIds": footer, "s3Rows": s3_rows}))
`,
      [file, `${env.s3.bucket}/${key}`],
      { timeoutMs: 120_000 },
    );

    assert.deepEqual(out.footerFieldIds, { id: 1, name: 2 }, 'field_id in the Parquet footer (DuckDB parquet_schema)');
    assert.deepEqual(out.pyarrowFieldIds, { id: '1', name: '2' }, 'PARQUET:field_id as pyarrow reads the Parquet schema');
    assert.deepEqual(out.rows, [
      [1, 'a'],
      [2, null],
      [3, 'c'],
    ]);
    assert.equal(out.s3Rows, 3, 'DuckDB httpfs reads the same file from SeaweedFS with the stack credentials');
  });
});
