/**
 * The config of upsert and CDC table entries (issue 31, config/table-entry.ts): `mode`,
 * `idColumns` and `cdc`, read from YAML text through the config loader (parseConfig) with every
 * problem naming its key; and the identifier fields the table's schema gets (ingest/tables.ts
 * schemaOf).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parse as parseYaml } from 'yaml';
import { ConfigError, parseConfig, type ColumnConfig, type TableConfig } from '../../config';
import { schemaOf } from '../../ingest/tables';

/** The config of YAML `text`. */
const load = (text: string) => parseConfig(parseYaml(text));

/** The only table entry of YAML `text`. */
const entry = (text: string): TableConfig => {
  const tables = load(text).tables;
  assert.equal(tables.length, 1);
  return tables[0]!;
};

/** Every problem of YAML `text` as `key: message` (none when it loads). */
function problemsOf(text: string): string[] {
  try {
    load(text);
  } catch (e) {
    if (e instanceof ConfigError) return e.problems.map((p) => `${p.key}: ${p.message}`);
    throw e;
  }
  return [];
}

/** Asserts YAML `text` is refused with a problem matching each of `res` (and nothing else unless `more`). */
function refused(text: string, ...res: RegExp[]): string[] {
  const problems = problemsOf(text);
  assert.ok(problems.length > 0, 'expected the config to be refused');
  for (const re of res)
    assert.ok(
      problems.some((p) => re.test(p)),
      `no problem matches ${re}: ${JSON.stringify(problems)}`,
    );
  return problems;
}

/** One table entry: the customers table, with `extra` (YAML lines at the entry's indentation). */
const customers = (extra: string, columns = COLUMNS) => `
tables:
  - table: shop.customers
    topic: customers
${columns}
${extra
  .split('\n')
  .filter((l) => l.trim() !== '')
  .map((l) => `    ${l}`)
  .join('\n')}
`;

const COLUMNS = `    columns:
      - { name: id, type: long }
      - { name: name, type: string }
      - { name: score, type: double }
      - { name: at, type: timestamptz }`;

describe('config: mode, idColumns, cdc', () => {
  it('an append entry by default: mode append, no idColumns, no cdc', () => {
    const t = entry(customers(''));
    assert.equal(t.mode, 'append');
    assert.equal(t.idColumns, undefined);
    assert.equal(t.cdc, undefined);
    assert.equal(t.columns.find((c) => c.name === 'id')!.required, false);
  });

  it('mode upsert with idColumns [id] loads; the id column becomes required, the others stay as written', () => {
    const t = entry(customers('mode: upsert\nidColumns: [id]'));
    assert.equal(t.mode, 'upsert');
    assert.deepEqual(t.idColumns, ['id']);
    assert.equal(t.cdc, undefined);
    assert.deepEqual(
      t.columns.map((c) => [c.name, c.required]),
      [
        ['id', true],
        ['name', false],
        ['score', false],
        ['at', false],
      ],
    );
  });

  it('several id columns of the key index types (string, timestamptz, …) in any order', () => {
    const t = entry(customers('mode: upsert\nidColumns: [name, at]'));
    assert.deepEqual(t.idColumns, ['name', 'at']);
    assert.deepEqual(
      t.columns.filter((c) => c.required).map((c) => c.name),
      ['name', 'at'],
    );
  });

  it('mode upsert without idColumns fails naming idColumns', () => {
    assert.deepEqual(problemsOf(customers('mode: upsert')), [
      "tables[0].idColumns: expected the row key's columns (mode upsert; JSON values have no key schema to take them from), found undefined",
    ]);
    refused(customers('mode: cdc'), /^tables\[0\]\.idColumns: expected the row key's columns \(mode cdc; /);
    refused(customers('mode: upsert\nidColumns: []'), /^tables\[0\]\.idColumns: expected a non-empty list of strings, found \[\]$/);
  });

  it('an id column that is not a column fails naming the key and listing the columns', () => {
    assert.deepEqual(problemsOf(customers('mode: upsert\nidColumns: [id, nope]')), [
      'tables[0].idColumns[1]: expected one of the columns (id, name, score, at), found "nope"',
    ]);
  });

  it('an id column of type double (or a nested type) is refused', () => {
    refused(
      customers('mode: upsert\nidColumns: [score]'),
      /^tables\[0\]\.idColumns\[0\]: expected a column of type int, long, string, date, timestamp, timestamptz, decimal\(P, S\), uuid or boolean, found "score"$/,
    );
    const nested = `    columns:
      - { name: id, type: long }
      - { name: o, type: "struct<a: int>" }`;
    refused(customers('mode: upsert\nidColumns: [o]', nested), /^tables\[0\]\.idColumns\[0\]: expected a column of type int, long/);
  });

  it('an id column named twice is refused', () => {
    refused(customers('mode: upsert\nidColumns: [id, id]'), /^tables\[0\]\.idColumns\[1\]: expected each column once, found "id"$/);
  });

  it('idColumns with mode append (the default) is refused', () => {
    assert.deepEqual(problemsOf(customers('idColumns: [id]')), [
      'tables[0].idColumns: only with mode upsert or cdc (the row key of a table whose rows change)',
    ]);
    refused(customers('mode: append\nidColumns: [id]'), /^tables\[0\]\.idColumns: only with mode upsert or cdc/);
  });

  it('cdc with mode upsert (or append) is refused', () => {
    assert.deepEqual(problemsOf(customers('mode: upsert\nidColumns: [id]\ncdc: { format: debezium }')), [
      'tables[0].cdc: only with mode cdc',
    ]);
    refused(customers('cdc: { format: debezium }'), /^tables\[0\]\.cdc: only with mode cdc$/);
  });

  it('mode cdc defaults cdc.format to debezium; the id column becomes required', () => {
    const t = entry(customers('mode: cdc\nidColumns: [id]'));
    assert.equal(t.mode, 'cdc');
    assert.deepEqual(t.cdc, { format: 'debezium' });
    assert.deepEqual(t.idColumns, ['id']);
    assert.equal(t.columns.find((c) => c.name === 'id')!.required, true);
    assert.deepEqual(entry(customers('mode: cdc\nidColumns: [id]\ncdc: {}')).cdc, { format: 'debezium' });
    assert.deepEqual(entry(customers('mode: cdc\nidColumns: [id]\ncdc: { format: debezium }')).cdc, { format: 'debezium' });
  });

  it('a cdc format other than debezium is refused', () => {
    refused(
      customers('mode: cdc\nidColumns: [id]\ncdc: { format: maxwell }'),
      /^tables\[0\]\.cdc\.format: expected debezium, found "maxwell"$/,
    );
  });

  it('mode upsert reads one topic: topics [a, b] and topicPattern are refused', () => {
    const several = (topicLine: string) => `
tables:
  - table: shop.customers
    ${topicLine}
${COLUMNS}
    mode: upsert
    idColumns: [id]
`;
    refused(several('topics: [a, b]'), /^tables\[0\]\.topics: mode upsert reads one topic/);
    refused(several('topicPattern: "customers-.*"'), /^tables\[0\]\.topicPattern: mode upsert reads one topic/);
  });

  it('mode upsert with a route is refused', () => {
    refused(
      customers('mode: upsert\nidColumns: [id]\nroute: { field: name, tables: { a: shop.a } }'),
      /^tables\[0\]\.route: a route cannot be combined with mode upsert/,
    );
  });

  it('mode upsert and cdc take schema formats: idColumns optional (the key schema names them), checked only for repeats', () => {
    const avro = (extra: string) => `
schemaRegistry: { url: "http://127.0.0.1:8081" }
tables:
  - table: shop.customers
    topic: customers
    value: { format: avro }
${extra
  .split('\n')
  .map((l) => `    ${l}`)
  .join('\n')}
`;
    const t = entry(avro('mode: cdc'));
    assert.equal(t.mode, 'cdc');
    assert.equal(t.idColumns, undefined);
    assert.deepEqual(t.keyIndex, { maxMemoryKeys: 5_000_000 });
    assert.deepEqual(entry(avro('mode: upsert\nidColumns: [id, region]')).idColumns, ['id', 'region']);
    refused(avro('mode: upsert\nidColumns: [id, id]'), /^tables\[0\]\.idColumns\[1\]: expected each column once, found "id"$/);
    refused(avro('mode: upsert\nkeyIndex: { maxMemoryKeys: 0 }'), /^tables\[0\]\.keyIndex\.maxMemoryKeys: /);
    refused(avro('keyIndex: { maxMemoryKeys: 10 }'), /^tables\[0\]\.keyIndex: only with mode upsert or cdc$/);
  });

  it('mode merge is refused, listing the valid modes', () => {
    assert.deepEqual(problemsOf(customers('mode: merge\nidColumns: [id]')), [
      'tables[0].mode: expected append, upsert, cdc, found "merge"',
    ]);
  });

  it('the problems are reported as a ConfigError naming the key', () => {
    assert.throws(
      () => load(customers('mode: upsert')),
      (e: unknown) => e instanceof ConfigError && e.key === 'tables[0].idColumns' && /^config tables\[0\]\.idColumns: /.test(e.message),
    );
  });
});

describe('schemaOf: identifier fields', () => {
  const columns: ColumnConfig[] = [
    { name: 'a', type: 'string', required: false, source: 'value' },
    { name: 'id', type: 'long', required: true, source: 'value' },
    { name: 'o', type: { type: 'struct', fields: [{ name: 'x', type: 'int', required: false }] }, required: false, source: 'value' },
    { name: 'region', type: 'string', required: true, source: 'value' },
  ];

  it("sets identifier-field-ids to the id columns' 1-based ids, in idColumns order", () => {
    assert.deepEqual(schemaOf(columns, ['id'])['identifier-field-ids'], [2]);
    assert.deepEqual(schemaOf(columns, ['region', 'id'])['identifier-field-ids'], [4, 2]);
    const s = schemaOf(columns, ['id']);
    assert.deepEqual(
      s.fields.map((f) => [f.id, f.name]),
      [
        [1, 'a'],
        [2, 'id'],
        [3, 'o'],
        [4, 'region'],
      ],
    );
  });

  it('no identifier-field-ids without idColumns (or with none)', () => {
    assert.equal('identifier-field-ids' in schemaOf(columns), false);
    assert.equal('identifier-field-ids' in schemaOf(columns, []), false);
  });

  it('from a loaded upsert entry: the id field is required and is the identifier', () => {
    const t = entry(customers('mode: upsert\nidColumns: [id]'));
    const s = schemaOf(t.columns, t.idColumns);
    assert.deepEqual(s['identifier-field-ids'], [1]);
    assert.equal(s.fields[0]!.name, 'id');
    assert.equal(s.fields[0]!.required, true);
  });
});
