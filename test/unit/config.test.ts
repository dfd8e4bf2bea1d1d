import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig, parseConfig, ConfigError } from '../../config';

const table = (over: Record<string, unknown> = {}) => ({
  table: 'demo.orders', topic: 'orders',
  columns: [{ name: 'id', type: 'long', required: true }, { name: 'ts', type: 'timestamptz' }],
  ...over,
});

describe('config', () => {
  it('loads the example with defaults filled', () => {
    const cfg = loadConfig('examples/orders.yaml');
    const t = cfg.tables[0]!;
    assert.equal(t.table, 'demo.orders');
    assert.equal(t.deadLetterTable, 'demo.orders_dead_letters');
    assert.equal(t.commitIntervalMs, 5000);
    assert.equal(t.maintenance.expire.olderThanMs, 5 * 86_400_000);
    assert.deepEqual(t.partitionBy.map((p) => p.transform), ['day', 'identity']);
  });

  const bad: Array<[string, unknown, RegExp]> = [
    ['unknown type', { tables: [table({ columns: [{ name: 'x', type: 'varchar' }] })] }, /tables\[0\]\.columns\[0\]\.type: expected an Iceberg primitive type/],
    ['bad interval', { tables: [table({ commitInterval: 'soon' })] }, /tables\[0\]\.commitInterval: expected a duration/],
    ['bad identifier', { tables: [table({ table: 'orders' })] }, /tables\[0\]\.table: expected an identifier "namespace\.table", found "orders"/],
    ['partition on unknown column', { tables: [table({ partitionBy: [{ column: 'nope', transform: 'day' }] })] }, /tables\[0\]\.partitionBy\[0\]\.column: expected one of the columns \(id, ts\)/],
    ['bad transform', { tables: [table({ partitionBy: [{ column: 'ts', transform: 'week' }] })] }, /partitionBy\[0\]\.transform/],
    ['zero parallelism', { tables: [table({ parallelism: 0 })] }, /tables\[0\]\.parallelism: expected a positive integer, found 0/],
    ['duplicate column', { tables: [table({ columns: [{ name: 'a', type: 'int' }, { name: 'a', type: 'int' }] })] }, /unique column names/],
    ['bad catalog type', { catalog: { type: 'hive' } }, /catalog\.type: expected sql or rest, found "hive"/],
    ['bad warehouse', { catalog: { warehouse: 'floe/warehouse' } }, /catalog\.warehouse: expected a URI/],
    ['duplicate ingest', { tables: [table(), table()] }, /unique \(table, ingestId\)/],
  ];
  for (const [name, raw, re] of bad) {
    it(`fails fast naming the key: ${name}`, () => {
      assert.throws(() => parseConfig(raw), (e: Error) => e instanceof ConfigError && re.test(e.message));
    });
  }
});
