/**
 * A schema-evolution race (issue 29 item 5): a poll's reader saw the table before another writer
 * (another topic of the same entry, another engine) changed it into a schema the record's cannot
 * join. The evolution commit then fails; with `onIncompatibleSchema: dead-letter` the record is a
 * dead letter with the reason and the poll goes on under the table's new schema (it raised
 * SchemaIncompatible, stopping the table, whatever the policy); with `fail` the table stops.
 * A real SQLite catalog and a file:// warehouse in a temporary directory.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import avro from 'avsc';
import { findTable, loadConfig } from '../../config';
import { currentSchema, newTableMetadata, Transaction } from '../../iceberg';
import { AddColumns } from '../../ingest/evolve';
import { schemaOf } from '../../ingest/tables';
import { TableSink } from '../../ingest/table-sink';
import type { Deps } from '../../ingest/deps';
import type { KafkaRecord } from '../../ingest/decode';
import { openTables } from '../../table/tables';

const writerSchema = {
  type: 'record',
  name: 'Event',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'x', type: ['null', 'string'], default: null },
  ],
};

async function setup(dir: string, policy: 'fail' | 'dead-letter') {
  const path = join(dir, `floe-${policy}.yaml`);
  writeFileSync(
    path,
    JSON.stringify({
      catalog: { type: 'sql', uri: `sqlite:///${join(dir, 'catalog.db')}`, warehouse: pathToFileURL(join(dir, 'wh')).href },
      tables: [
        {
          table: `db.race_${policy.replace('-', '_')}`,
          topic: 'race',
          value: { format: 'avro', schema: JSON.stringify(writerSchema), onIncompatibleSchema: policy },
        },
      ],
    }),
  );
  const cfg = loadConfig(path);
  const t = findTable(cfg, cfg.tables[0]!.table);
  const tables = await openTables(cfg);
  const id = { namespace: ['db'], name: t.table.split('.')[1]! };
  await tables.catalog.createNamespace(['db']).catch(() => undefined);
  // The table as the poll's reader first sees it: only `id`.
  await tables.catalog.createTable(
    id,
    newTableMetadata({
      location: `${pathToFileURL(join(dir, 'wh')).href}/db/${id.name}`,
      schema: schemaOf([{ name: 'id', type: 'long', required: true }]),
      tableUuid: randomUUID(),
    }),
  );
  const warnings: string[] = [];
  const sink = await TableSink.open(
    { cfg, tables } as unknown as Deps,
    t,
    (suffix) => tables.openRowWriter(t.table, `p${suffix}`, { targetFileSizeBytes: 1 << 20 }),
    (m) => warnings.push(m),
  );
  // Then another writer adds `x` as a long: the record's `x` is a string.
  await new Transaction(id)
    .add(
      new AddColumns([
        { name: 'id', type: 'long', required: true },
        { name: 'x', type: 'long', required: false },
      ]),
    )
    .commit(tables.catalog, tables.io);
  return { sink, tables, t };
}

const type = avro.Type.forSchema(writerSchema as avro.Schema);
const record = (offset: number): KafkaRecord => ({
  topic: 'race',
  partition: 0,
  offset: String(offset),
  timestamp: '1700000000000',
  key: null,
  value: type.toBuffer({ id: offset, x: `s${offset}` }),
  headers: {},
});

describe('a schema-evolution race between two writers of one table', () => {
  const dir = mkdtempSync(join(tmpdir(), 'floe-race-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('onIncompatibleSchema: dead-letter: the record is a dead letter naming the change, and the poll goes on', async () => {
    const { sink, tables, t } = await setup(dir, 'dead-letter');
    const dead: { offset: string; reason: string }[] = [];
    const deadLetter = (rec: KafkaRecord, e: unknown) => void dead.push({ offset: rec.offset, reason: (e as Error).message });
    await sink.add(record(0), deadLetter);
    await sink.add(record(1), deadLetter);
    const files = await sink.close();
    assert.deepEqual(
      dead.map((d) => d.offset),
      ['0', '1'],
      'both records are refused, the second by the reader under the new schema',
    );
    assert.match(dead[0]!.reason, /changed meanwhile and cannot take this record's/);
    assert.match(dead[0]!.reason, /\bx\b/);
    assert.equal(sink.rows, 0);
    assert.equal(files.length, 0);
    // The other writer's schema stands.
    const s = currentSchema((await tables.load(t.table)).metadata);
    assert.deepEqual(
      s.fields.map((f) => [f.name, f.type]),
      [
        ['id', 'long'],
        ['x', 'long'],
      ],
    );
  });

  it('onIncompatibleSchema: fail: the table stops with SchemaIncompatible', async () => {
    const { sink } = await setup(dir, 'fail');
    await assert.rejects(
      async () => sink.add(record(0), () => assert.fail('no dead letter under fail')),
      (e: unknown) => (e as { type?: string }).type === 'SchemaIncompatible',
    );
  });
});
