/**
 * `formatVersion` on a table entry (issue 31): a new table is created at it, an existing older one
 * is upgraded to it when the ingest ensures its tables (2 -> 3: row lineage from next-row-id 0),
 * a v3 table stays v3 under an entry that says 2, and the dead-letter table stays v2. Through the
 * real SQL catalog on SQLite in memory.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseConfig, ConfigError } from '../../config';
import { ensureIngestTables } from '../../ingest/tables';
import { openTables } from '../../table/tables';

const entry = (formatVersion?: number) => ({
  table: 'shop.customers',
  topic: 'customers',
  mode: 'upsert',
  idColumns: ['id'],
  columns: [
    { name: 'id', type: 'long', required: true },
    { name: 'name', type: 'string' },
  ],
  ...(formatVersion === undefined ? {} : { formatVersion }),
});
const config = (formatVersion?: number) =>
  parseConfig({ catalog: { uri: 'sqlite:///:memory:', warehouse: 'memory://wh' }, tables: [entry(formatVersion)] });

test('a new table at the entry’s format version; an existing v2 table upgraded to 3; never downgraded', async () => {
  const v2 = config();
  assert.equal(v2.tables[0]!.formatVersion, 2, 'the default');
  const tables = await openTables(v2);
  try {
    await ensureIngestTables(tables, v2.tables[0]!, undefined);
    assert.equal((await tables.load('shop.customers')).metadata['format-version'], 2);

    const v3 = config(3).tables[0]!;
    await ensureIngestTables(tables, v3, undefined);
    const m = (await tables.load('shop.customers')).metadata;
    assert.equal(m['format-version'], 3, 'upgraded');
    assert.equal(m['next-row-id'], 0n, 'row lineage starts at 0');
    assert.equal((await tables.load('shop.customers_dead_letters')).metadata['format-version'], 2, 'dead letters stay v2');
    assert.equal(await tables.upgradeFormatVersion('shop.customers', 3), 3, 'a second upgrade changes nothing');

    // the v3 table under an entry that says 2 (the default) stays v3
    await ensureIngestTables(tables, v2.tables[0]!, undefined);
    assert.equal((await tables.load('shop.customers')).metadata['format-version'], 3);
  } finally {
    await tables.close();
  }
});

test('a new table created at v3 directly; formatVersion 4 is refused naming the key', async () => {
  const cfg = config(3);
  const tables = await openTables(cfg);
  try {
    await ensureIngestTables(tables, cfg.tables[0]!, undefined);
    const m = (await tables.load('shop.customers')).metadata;
    assert.equal(m['format-version'], 3);
    assert.deepEqual(m.schemas[0]!['identifier-field-ids'], [1]);
  } finally {
    await tables.close();
  }
  assert.throws(
    () => config(4),
    (e: unknown) => e instanceof ConfigError && /tables\[0\]\.formatVersion: expected 2 or 3/.test(e.message),
  );
});
