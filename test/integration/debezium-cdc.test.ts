/**
 * A real Debezium connector feeding a `mode: cdc` table (issue 31): Debezium 3.6's PostgreSQL
 * connector (pgoutput) in the `debezium` stack profile's Kafka Connect worker reads a table in the
 * profile's PostgreSQL (wal_level=logical): initial rows as its snapshot (op r), then live inserts,
 * updates and deletes, a key deleted and inserted again (in two transactions and in one), and
 * primary-key updates (Debezium: a delete of the old key, its tombstone, a create of the new one).
 * The events are in the JSON converter's default {"schema", "payload"} form, with Debezium's default
 * encodings: timestamptz as io.debezium.time.ZonedTimestamp (an ISO-8601 string with Z),
 * timestamp as MicroTimestamp (epoch micros), date as Date (epoch days), time as MicroTime
 * (micros of the day), numeric(10,2) as Connect's Decimal (base64 unscaled bytes): floe reads each
 * by the schema's name. A floe worker ingests the topic and is SIGKILLed mid-stream, then
 * started again. The Iceberg table must equal what `SELECT` returns from PostgreSQL: every column
 * through DuckDB, and (id, version) through floe's reader, DuckDB and PyIceberg (verifyUpsertTable).
 * Skips, naming the command, when the profile is not installed.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Kafka, logLevel } from 'kafkajs';
import { Client } from 'pg';
import { connectClient, ingestStatus, startIngest, type FloeClient } from '../../client';
import { loadConfig } from '../../config';
import { verifyUpsertTable } from '../../demo/customers';
import { scenarioConfig } from '../../demo/config';
import { drain } from '../../demo/scenario';
import { debeziumEnv, debeziumInstalled, installDebezium } from '../../stack/debezium';
import { floeHome } from '../../stack/paths';
import { runPythonJson } from '../../stack/python';
import { stackEnv } from '../../stack/env';
import { ensureStack } from '../../stack/stack';
import { openTables } from '../../table/tables';
import { spawnWorker, type WorkerProcess } from '../../workers/process';

const skip = debeziumInstalled()
  ? false
  : 'the debezium stack profile is not installed (npx tsx cli/stack-main.ts stack up --profile debezium)';
const log = (m: string) => {
  if (process.env.FLOE_TEST_VERBOSE) console.log(m);
};

const run = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e4)}`;
const schema = `inventory_${run}`;
const connector = `floe-it-${run}`;
const prefix = `floe_it_${run}`;
const slot = `floe_it_${run}`;
const publication = `floe_it_${run}`;
const topic = `${prefix}.${schema}.customers`;
/** The last row inserted: once its event is in the topic, every change before it is too. */
const SENTINEL = 1_000_000;

interface Row {
  id: number;
  name: string | null;
  email: string | null;
  version: number;
  balance: string | null;
  /** microseconds since the epoch */
  updated_us: string | null;
  /** a timestamp without zone, a date and a time, as text */
  seen: string | null;
  born: string | null;
  opens: string | null;
}

async function connectorRequest(method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${debeziumEnv().connectUrl}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as unknown) : null };
}

/** Every column as PostgreSQL returns it (the source state), sorted by id. */
async function sourceRows(pg: Client): Promise<Row[]> {
  const r = await pg.query<Row>(
    `SELECT id, name, email, version, balance::text AS balance,
            (extract(epoch FROM updated_at) * 1000000)::bigint::text AS updated_us,
            to_char(seen, 'YYYY-MM-DD HH24:MI:SS.US') AS seen, born::text AS born, to_char(opens, 'HH24:MI:SS.US') AS opens
       FROM ${schema}.customers ORDER BY id`,
  );
  return r.rows;
}

/** Every column as DuckDB's iceberg_scan reads the table (position deletes applied), sorted by id. */
const DUCKDB_ROWS = `
import json, sys
from floe_duckdb import connect
rows = connect().sql(f"""SELECT id, name, email, version, balance::VARCHAR, epoch_us(updated_at)::VARCHAR,
  strftime(seen, '%Y-%m-%d %H:%M:%S.%f'), born::VARCHAR, strftime(DATE '2000-01-01' + opens, '%H:%M:%S.%f')
  FROM iceberg_scan('{sys.argv[1]}') ORDER BY id""").fetchall()
print(json.dumps([{"id": int(r[0]), "name": r[1], "email": r[2], "version": int(r[3]), "balance": r[4], "updated_us": r[5],
  "seen": r[6], "born": r[7], "opens": r[8]} for r in rows]))
`;

/** Waits until the topic holds the sentinel row's create event (Debezium has sent everything before it). */
async function waitForSentinel(
  brokers: string[],
  timeoutMs: number,
): Promise<{ ops: Record<string, number>; tombstones: number; sample?: Record<string, unknown> }> {
  const kafka = new Kafka({ clientId: 'floe-debezium-it', brokers, logLevel: logLevel.NOTHING });
  const consumer = kafka.consumer({ groupId: `floe-it-check-${run}` });
  const ops: Record<string, number> = {};
  let tombstones = 0;
  let sample: Record<string, unknown> | undefined;
  let found = false;
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        if (!message.value) {
          tombstones++;
          return;
        }
        const v = JSON.parse(message.value.toString()) as {
          schema: Record<string, unknown>;
          payload: { op: string; after: { id: number } | null };
        };
        ops[v.payload.op] = (ops[v.payload.op] ?? 0) + 1;
        if (v.payload.op === 'u' && !sample) sample = v;
        if (v.payload.after?.id === SENTINEL) found = true;
      },
    });
    const deadline = Date.now() + timeoutMs;
    while (!found) {
      if (Date.now() > deadline)
        throw new Error(`no event of the sentinel row ${SENTINEL} in ${topic} after ${timeoutMs / 1000} s (${JSON.stringify(ops)})`);
      await sleep(250);
    }
    return { ops, tombstones, sample };
  } finally {
    await consumer.disconnect().catch(() => undefined);
  }
}

describe('a Debezium PostgreSQL connector into a cdc table (debezium profile)', { skip, timeout: 8 * 60_000 }, () => {
  let pg: Client;
  let fc: FloeClient | undefined;
  const workers: WorkerProcess[] = [];

  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3']);
    // Installed: start its services if they are down (a no-op when they answer).
    await installDebezium();
    const e = debeziumEnv().postgres;
    pg = new Client({ host: e.host, port: e.port, user: e.user, password: e.password, database: e.database });
    await pg.connect();
  });

  after(async () => {
    for (const w of workers) await w.kill('SIGKILL').catch(() => undefined);
    await fc?.close().catch(() => undefined);
    // The connector, then its replication slot (once the task has let go of it) and publication.
    await connectorRequest('DELETE', `/connectors/${connector}`).catch(() => undefined);
    if (pg) {
      for (let i = 0; i < 60; i++) {
        const r = await pg.query<{ active: boolean }>('SELECT active FROM pg_replication_slots WHERE slot_name = $1', [slot]);
        if (r.rowCount === 0) break;
        if (!r.rows[0]!.active) {
          await pg.query('SELECT pg_drop_replication_slot($1)', [slot]);
          break;
        }
        await sleep(500);
      }
      await pg.query(`DROP PUBLICATION IF EXISTS ${publication}`).catch(() => undefined);
      await pg.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
      await pg.end().catch(() => undefined);
    }
    const admin = new Kafka({ clientId: 'floe-debezium-it', brokers: stackEnv().kafka.brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();
  });

  it('snapshot, inserts, updates, deletes and key changes, through a worker SIGKILL, equal the PostgreSQL table', async () => {
    const t0 = Date.now();
    const secs = () => `${((Date.now() - t0) / 1000).toFixed(1)} s`;
    await pg.query(`CREATE SCHEMA ${schema}`);
    await pg.query(
      `CREATE TABLE ${schema}.customers (id int PRIMARY KEY, name text, email text, version int NOT NULL,
         balance numeric(10, 2), updated_at timestamptz, seen timestamp, born date, opens time)`,
    );
    // Initial rows: Debezium's snapshot reads them (op r).
    await pg.query(
      `INSERT INTO ${schema}.customers
         SELECT i, 'customer ' || i, 'c' || i || '@example.com', 1, i * 1.25, timestamptz '2026-07-01 00:00:00.123456+00' + i * interval '1 second'
                , timestamp '2026-07-01 12:34:56.123456' + i * interval '1 hour', date '1969-12-25' + i, time '08:00:00.000001' + i * interval '1 minute'
           FROM generate_series(1, 40) i`,
    );
    const e = debeziumEnv().postgres;
    const created = await connectorRequest('POST', '/connectors', {
      name: connector,
      config: {
        'connector.class': 'io.debezium.connector.postgresql.PostgresConnector',
        'tasks.max': '1',
        'database.hostname': e.host,
        'database.port': String(e.port),
        'database.user': e.user,
        'database.password': e.password,
        'database.dbname': e.database,
        'topic.prefix': prefix,
        'plugin.name': 'pgoutput',
        'slot.name': slot,
        'publication.name': publication,
        'publication.autocreate.mode': 'filtered',
        'table.include.list': `${schema}.customers`,
        'snapshot.mode': 'initial',
        'topic.creation.default.partitions': '2',
        'topic.creation.default.replication.factor': '1',
      },
    });
    assert.equal(created.status, 201, JSON.stringify(created.json));

    const name = `it_debezium_${run}`;
    const cfgPath = scenarioConfig(
      name,
      2,
      '2s',
      {
        topic,
        mode: 'cdc',
        cdc: { format: 'debezium' },
        idColumns: ['id'],
        columns: [
          { name: 'id', type: 'int', required: true },
          { name: 'name', type: 'string' },
          { name: 'email', type: 'string' },
          { name: 'version', type: 'int', required: true },
          { name: 'balance', type: 'decimal(10, 2)' },
          { name: 'updated_at', type: 'timestamptz' },
          { name: 'seen', type: 'timestamp' },
          { name: 'born', type: 'date' },
          { name: 'opens', type: 'time' },
        ],
      },
      'customers.yaml',
    );
    const cfg = loadConfig(cfgPath.path);
    const table = cfgPath.table;
    const logDir = join(floeHome(), 'logs');
    workers.push(spawnWorker(cfgPath.path, join(logDir, `${name}-worker-1.log`)));
    fc = await connectClient(cfg);
    await startIngest(fc, table);

    // Live changes, one statement (or transaction) at a time, beside the ingest.
    let next = 41;
    let n = 0;
    const change = async () => {
      const k = n++;
      // ids 1 to 10 are left to the statements below
      const id = 11 + ((k * 7) % (next - 11));
      if (k % 5 === 4) {
        await pg.query(`DELETE FROM ${schema}.customers WHERE id = $1`, [id]);
      } else if (k % 5 === 1) {
        await pg.query(`INSERT INTO ${schema}.customers VALUES ($1, $2, NULL, 1, NULL, now())`, [next, `new ${next} Zoë`]);
        next++;
      } else {
        await pg.query(
          `UPDATE ${schema}.customers SET name = $2, version = version + 1, balance = coalesce(balance, 0) + 0.01, updated_at = now(), seen = localtimestamp, born = coalesce(born, date '1950-01-01') + 1 WHERE id = $1`,
          [id, `customer ${id} at ${k}`],
        );
      }
    };
    const burst = async (count: number) => {
      for (let i = 0; i < count; i++) {
        await change();
        await sleep(40);
      }
    };
    await burst(60);
    // The worker is killed once it has committed, while changes keep coming.
    let commitsBeforeKill = 0;
    for (let i = 0; ; i++) {
      const s = await ingestStatus(fc, table);
      commitsBeforeKill = s?.commits ?? 0;
      if (commitsBeforeKill > 0) break;
      if (i > 240) throw new Error(`no commit after 120 s: ${JSON.stringify(s)}`);
      await burst(5);
    }
    const killing = burst(40);
    await sleep(500);
    await workers[0]!.kill('SIGKILL');
    log(`${secs()}: worker ${workers[0]!.pid} SIGKILLed after ${n} changes`);
    await killing;
    // A key deleted and inserted again: in two transactions, and in one.
    await pg.query(`DELETE FROM ${schema}.customers WHERE id = 2`);
    await pg.query(`INSERT INTO ${schema}.customers VALUES (2, 'back again', 'again@example.com', 100, 2.50, now())`);
    await pg.query('BEGIN');
    await pg.query(`DELETE FROM ${schema}.customers WHERE id = 3`);
    await pg.query(`INSERT INTO ${schema}.customers VALUES (3, 'reborn', NULL, 200, 3.00, now())`);
    await pg.query('COMMIT');
    // Primary-key updates: the old key is deleted, the new one created (one moves onto a key deleted before).
    await pg.query(`UPDATE ${schema}.customers SET id = 500, version = version + 1 WHERE id = 6`);
    await pg.query(`DELETE FROM ${schema}.customers WHERE id = 8`);
    await pg.query(`UPDATE ${schema}.customers SET id = 8, version = version + 1 WHERE id = 10`);
    workers.push(spawnWorker(cfgPath.path, join(logDir, `${name}-worker-2.log`)));
    log(`${secs()}: worker restarted`);
    await burst(40);
    await pg.query(`INSERT INTO ${schema}.customers VALUES ($1, 'sentinel', NULL, 1, NULL, now())`, [SENTINEL]);
    const topicState = await waitForSentinel(cfg.kafka.brokers, 120_000);
    log(`${secs()}: Debezium events in ${topic}: ${JSON.stringify(topicState.ops)}, ${topicState.tombstones} tombstones`);
    // The snapshot's 40 rows (op r; a live insert that committed before the snapshot's read is in
    // it too), and live creates, updates and deletes (each delete with its tombstone).
    assert.ok(topicState.ops.r! >= 40 && topicState.ops.r! <= 45, JSON.stringify(topicState.ops));
    assert.ok(topicState.ops.c! > 5 && topicState.ops.u! > 5 && topicState.ops.d! > 3, JSON.stringify(topicState.ops));
    assert.equal(topicState.tombstones, topicState.ops.d);

    // Debezium's encodings the table's column types take (the JSON converter's schema of an update).
    const fields = (
      topicState.sample?.schema as { fields: Array<{ field: string; fields?: Array<{ field: string; type: string; name?: string }> }> }
    ).fields.find((f) => f.field === 'after')!.fields!;
    assert.deepEqual(
      fields.map((f) => [f.field, f.type, f.name ?? null]),
      [
        ['id', 'int32', null],
        ['name', 'string', null],
        ['email', 'string', null],
        ['version', 'int32', null],
        ['balance', 'bytes', 'org.apache.kafka.connect.data.Decimal'],
        ['updated_at', 'string', 'io.debezium.time.ZonedTimestamp'],
        ['seen', 'int64', 'io.debezium.time.MicroTimestamp'],
        ['born', 'int32', 'io.debezium.time.Date'],
        ['opens', 'int64', 'io.debezium.time.MicroTime'],
      ],
    );

    const status = await drain(fc, table, 180);
    log(`${secs()}: drained after ${status.commits} commits (${commitsBeforeKill} before the kill)`);
    assert.ok(status.commits > commitsBeforeKill, 'the restarted worker committed');
    const expected = await sourceRows(pg);
    assert.ok(expected.length > 50, `${expected.length} rows in PostgreSQL`);
    assert.ok(expected.some((r) => r.id === 500) && expected.some((r) => r.id === 8 && r.version === 2));
    assert.ok(!expected.some((r) => r.id === 6 || r.id === 10));

    // (id, version) through floe's reader, DuckDB and PyIceberg; no dead letters.
    const v = await verifyUpsertTable(cfg, table, new Map(expected.map((r) => [r.id, { version: r.version }])));
    assert.deepEqual(v.problems, [], JSON.stringify(v));
    // Every column through DuckDB.
    const duck = await runPythonJson<Row[]>(DUCKDB_ROWS, [v.metadataLocation], { timeoutMs: 120_000 });
    assert.deepEqual(duck, expected);
    // The table's identifier field is the primary key, and the killed worker's restart committed.
    const tables = await openTables(cfg);
    try {
      const { metadata } = await tables.load(table);
      const sch = metadata.schemas.find((s) => s['schema-id'] === metadata['current-schema-id'])!;
      assert.deepEqual(sch['identifier-field-ids'], [sch.fields.find((f) => f.name === 'id')!.id]);
      const deletes = metadata.snapshots.reduce((x, s) => x + Number(s.summary['added-position-deletes'] ?? '0'), 0);
      assert.ok(deletes > 0, 'position deletes were committed');
    } finally {
      await tables.close();
    }
    log(`${secs()}: ${expected.length} rows equal in PostgreSQL, floe, DuckDB and PyIceberg`);
  });
});
