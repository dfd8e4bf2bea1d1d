import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  COMMIT_INTERVAL_LIMIT_MS,
  columnTypeString,
  loadConfig,
  nearestKey,
  parseColumnType,
  parseConfig,
  ConfigError,
} from '../../config';
import type { ColumnConfig } from '../../config';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';

/** A type without what the string form cannot say (a field's path and doc). */
const stripPathsAndDocs = (t: ColumnConfig['type']): ColumnConfig['type'] =>
  typeof t === 'string'
    ? t
    : t.type === 'struct'
      ? {
          type: 'struct',
          fields: t.fields.map(({ path: _p, doc: _d, ...f }) => ({ ...f, type: stripPathsAndDocs(f.type) as typeof f.type })),
        }
      : t.type === 'list'
        ? { ...t, element: stripPathsAndDocs(t.element) as typeof t.element }
        : { ...t, value: stripPathsAndDocs(t.value) as typeof t.value };

const table = (over: Record<string, unknown> = {}) => ({
  table: 'demo.orders',
  topic: 'orders',
  columns: [
    { name: 'id', type: 'long', required: true },
    { name: 'ts', type: 'timestamptz' },
  ],
  ...over,
});

describe('config', () => {
  it('loads the example with defaults filled', () => {
    const cfg = loadConfig('examples/orders.yaml');
    const t = cfg.tables[0]!;
    assert.equal(t.table, 'demo.orders');
    assert.equal(t.deadLetterTable, 'demo.orders_dead_letters');
    assert.equal(t.commitIntervalMs, 5000);
    assert.equal(t.maintenance.expire.olderThanMs, 2 * 3_600_000, 'a streaming sink needs frequent expiry to keep metadata.json small');
    assert.deepEqual(
      t.partitionBy.map((p) => p.transform),
      ['day', 'identity'],
    );
  });

  const bad: Array<[string, unknown, RegExp]> = [
    [
      'unknown type',
      { tables: [table({ columns: [{ name: 'x', type: 'varchar' }] })] },
      /tables\[0\]\.columns\[0\]\.type: expected an Iceberg primitive type/,
    ],
    ['bad interval', { tables: [table({ commitInterval: 'soon' })] }, /tables\[0\]\.commitInterval: expected a duration/],
    [
      'unknown column source',
      { tables: [table({ columns: [{ name: 'x', type: 'string', source: 'metadata' }] })] },
      /tables\[0\]\.columns\[0\]\.source: expected one of value, key, header, headers, topic, partition, offset, timestamp, found "metadata"/,
    ],
    [
      'headers column of a primitive type',
      { tables: [table({ columns: [{ name: 'h', type: 'string', source: 'headers' }] })] },
      /tables\[0\]\.columns\[0\]\.type: expected map<string, string> or map<string, binary> \(source: headers\), found "string"/,
    ],
    [
      'partition on the headers map',
      {
        tables: [
          table({
            columns: [{ name: 'h', type: 'map<string, binary>', source: 'headers' }],
            partitionBy: [{ column: 'h', transform: 'identity' }],
          }),
        ],
      },
      /tables\[0\]\.partitionBy\[0\]\.column: expected a column of a primitive type \(not the headers map\), found "h"/,
    ],
    [
      'nested type: a trailing comma in a struct',
      { tables: [table({ columns: [{ name: 'o', type: 'struct<a: int, >' }] })] },
      /tables\[0\]\.columns\[0\]\.type: expected a field name \(\[A-Za-z_\]\[A-Za-z0-9_\]\*\) at character 16 of "struct<a: int, >", found ">"/,
    ],
    [
      'nested type: an unclosed list',
      { tables: [table({ columns: [{ name: 'o', type: 'list<string' }] })] },
      /tables\[0\]\.columns\[0\]\.type: expected ">" or "not null" after the element type at character 12 of "list<string", found the end/,
    ],
    [
      'nested type: an unknown element type',
      { tables: [table({ columns: [{ name: 'o', type: 'list<varchar>' }] })] },
      /tables\[0\]\.columns\[0\]\.type: expected the element type of the list at character 6 of "list<varchar>", found "varchar>"/,
    ],
    [
      'nested type: a map key that is not a primitive convertible from text',
      { tables: [table({ columns: [{ name: 'o', type: 'map<double, string>' }] })] },
      /tables\[0\]\.columns\[0\]\.type: expected a map key type \(string, int, long, uuid, date, time, timestamp, timestamptz, decimal\(P, S\)\) at character 5/,
    ],
    [
      'nested type: a struct key in the mapping form',
      { tables: [table({ columns: [{ name: 'o', type: { type: 'map', key: 'struct<a: int>', value: 'int' } }] })] },
      /tables\[0\]\.columns\[0\]\.type\.key: expected a map key type \(string, int, long, uuid, date, time, timestamp, timestamptz, decimal\(P, S\)\), found "struct<a: int>"/,
    ],
    [
      'nested type: a field named twice',
      { tables: [table({ columns: [{ name: 'o', type: 'struct<a: int, a: long>' }] })] },
      /tables\[0\]\.columns\[0\]\.type: expected a field name not used before in the struct at character 16/,
    ],
    [
      'nested type: not null on a whole column',
      { tables: [table({ columns: [{ name: 'o', type: 'list<string> not null' }] })] },
      /tables\[0\]\.columns\[0\]\.type: expected the end of the type \(required: true makes a column or field required\) at character 14/,
    ],
    [
      'nested type: the key path names the nested type (mapping form)',
      {
        tables: [
          table({
            columns: [
              { name: 'id', type: 'long' },
              { name: 'x', type: 'int' },
              {
                name: 'o',
                type: {
                  type: 'struct',
                  fields: [
                    { name: 'a', type: 'int' },
                    { name: 'b', type: { type: 'list', element: 'lst<int>' } },
                  ],
                },
              },
            ],
          }),
        ],
      },
      /tables\[0\]\.columns\[2\]\.type\.fields\[1\]\.type\.element: expected an Iceberg primitive type \(long, string, timestamptz, decimal\(9, 2\), …\) or a nested type \(list<string>, map<string, long>, struct<id: long not null, …>, or a mapping \{type: struct\|list\|map, …\}\), found "lst<int>"/,
    ],
    [
      'nested type: a misspelled key of the mapping form',
      { tables: [table({ columns: [{ name: 'o', type: { type: 'list', elements: 'int' } }] })] },
      /tables\[0\]\.columns\[0\]\.type\.elements: unknown key; did you mean "element"\?/,
    ],
    [
      'nested type: a primitive in the mapping form',
      { tables: [table({ columns: [{ name: 'o', type: { type: 'long' } }] })] },
      /tables\[0\]\.columns\[0\]\.type\.type: expected struct, list or map \(a primitive type is written as a string: type: long\), found "long"/,
    ],
    [
      'nested type: a struct without fields',
      { tables: [table({ columns: [{ name: 'o', type: { type: 'struct', fields: [] } }] })] },
      /tables\[0\]\.columns\[0\]\.type\.fields: expected at least one field, found \[\]/,
    ],
    [
      'nested type: a field name that is not an identifier',
      { tables: [table({ columns: [{ name: 'o', type: { type: 'struct', fields: [{ name: 'a-b', type: 'int' }] } }] })] },
      /tables\[0\]\.columns\[0\]\.type\.fields\[0\]\.name: expected a field name \(\[A-Za-z_\]\[A-Za-z0-9_\]\*\), found "a-b"/,
    ],
    [
      'nested type from the record key',
      { tables: [table({ columns: [{ name: 'o', type: 'list<string>', source: 'key' }] })] },
      /tables\[0\]\.columns\[0\]\.type: expected an Iceberg primitive type \(long, string, timestamptz, decimal\(9, 2\), …\); nested types are for source: value, found "list<string>"/,
    ],
    [
      'partition on a nested column',
      { tables: [table({ columns: [{ name: 'o', type: 'struct<a: int>' }], partitionBy: [{ column: 'o' }] })] },
      /tables\[0\]\.partitionBy\[0\]\.column: expected a column of a primitive type \(not a struct, list or map\), found "o"/,
    ],
    [
      'header column without its name',
      { tables: [table({ columns: [{ name: 'x', type: 'string', source: 'header' }] })] },
      /tables\[0\]\.columns\[0\]\.header: expected the header's name \(source: header\)/,
    ],
    [
      'header name on a value column',
      { tables: [table({ columns: [{ name: 'x', type: 'string', header: 'trace-id' }] })] },
      /tables\[0\]\.columns\[0\]\.header: expected no header name unless source is header, found "trace-id"/,
    ],
    [
      'bad identifier',
      { tables: [table({ table: 'orders' })] },
      /tables\[0\]\.table: expected an identifier "namespace\.table", found "orders"/,
    ],
    [
      'partition on unknown column',
      { tables: [table({ partitionBy: [{ column: 'nope', transform: 'day' }] })] },
      /tables\[0\]\.partitionBy\[0\]\.column: expected one of the columns \(id, ts\)/,
    ],
    ['bad transform', { tables: [table({ partitionBy: [{ column: 'ts', transform: 'week' }] })] }, /partitionBy\[0\]\.transform/],
    ['zero parallelism', { tables: [table({ parallelism: 0 })] }, /tables\[0\]\.parallelism: expected a positive integer, found 0/],
    [
      'duplicate column',
      {
        tables: [
          table({
            columns: [
              { name: 'a', type: 'int' },
              { name: 'a', type: 'int' },
            ],
          }),
        ],
      },
      /unique column names/,
    ],
    ['bad catalog type', { catalog: { type: 'hive' } }, /catalog\.type: expected sql or rest, found "hive"/],
    ['bad warehouse', { catalog: { warehouse: 'floe/warehouse' } }, /catalog\.warehouse: expected a URI/],
    // One entry per table, whatever its ingest id: workflow ids, findTable and cursors key on the table.
    [
      'duplicate table',
      { tables: [table(), table({ ingestId: 'other' })] },
      /^config tables\[1\]\.table: "demo\.orders" is already tables\[0\]\.table; one entry per table$/,
    ],
    [
      'shared dead-letter table',
      { tables: [table({ deadLetterTable: 'demo.dl' }), table({ table: 'demo.refunds', deadLetterTable: 'demo.dl' })] },
      /^config tables\[1\]\.deadLetterTable: "demo\.dl" is already tables\[0\]\.deadLetterTable; each entry needs its own dead-letter table$/,
    ],
    [
      "dead-letter table is another entry's table",
      { tables: [table(), table({ table: 'demo.refunds', deadLetterTable: 'demo.orders' })] },
      /^config tables\[1\]\.deadLetterTable: "demo\.orders" is already tables\[0\]\.table/,
    ],
    [
      'dead-letter table is its own table',
      { tables: [table({ deadLetterTable: 'demo.orders' })] },
      /tables\[0\]\.deadLetterTable: "demo\.orders" is the entry's own table/,
    ],
    // A poll runs for a commit interval: one at or above the poll activity's timeout never commits.
    [
      'commit interval at the bound',
      { tables: [table({ commitInterval: '10m' })] },
      /^config tables\[0\]\.commitInterval: expected a duration below 10m \(a poll lasts up to one interval; .* never commits\), found "10m"$/,
    ],
    [
      'commit interval above the bound',
      { tables: [table({ commitInterval: 3_600_000 })] },
      /tables\[0\]\.commitInterval: expected a duration below 10m .*, found 3600000$/,
    ],
    // Unknown keys at every level, with the nearest valid key.
    [
      'typo in a table key',
      { tables: [table({ comitInterval: '5s' })] },
      /^config tables\[0\]\.comitInterval: unknown key; did you mean "commitInterval"\?$/,
    ],
    ['typo at the top level', { table: [table()] }, /^config table: unknown key; did you mean "tables"\?$/],
    ['typo in kafka', { kafka: { broker: ['a:9092'] } }, /^config kafka\.broker: unknown key; did you mean "brokers"\?$/],
    ['typo in s3', { s3: { endpiont: 'http://x' } }, /^config s3\.endpiont: unknown key; did you mean "endpoint"\?$/],
    [
      'snake_case in s3',
      { s3: { access_key_id_env: 'X' } },
      /^config s3\.access_key_id_env: unknown key; did you mean "accessKeyIdEnv"\?$/,
    ],
    [
      'an inline S3 secret',
      { s3: { secretAccessKey: 'shh' } },
      /^config s3\.secretAccessKey: keys are never written in the config: name an environment variable \(secretAccessKeyEnv\)/,
    ],
    [
      'an S3 key id without its secret',
      { s3: { accessKeyIdEnv: 'K' } },
      /^config s3\.secretAccessKeyEnv: an access key needs its id and its secret/,
    ],
    [
      'S3 keys and a profile',
      { s3: { accessKeyIdEnv: 'K', secretAccessKeyFile: '/s', profile: 'p' } },
      /^config s3\.profile: give either keys or a profile/,
    ],
    [
      'an S3 endpoint that is no URL',
      { s3: { endpoint: 'localhost:8333' } },
      /^config s3\.endpoint: expected an http\(s\):\/\/host\[:port\] URL/,
    ],
    ['typo in catalog', { catalog: { warehose: 's3://x' } }, /^config catalog\.warehose: unknown key; did you mean "warehouse"\?$/],
    ['typo in temporal', { temporal: { taskqueue: 'q' } }, /^config temporal\.taskqueue: unknown key; did you mean "taskQueue"\?$/],
    [
      'typo in a column',
      { tables: [table({ columns: [{ name: 'id', type: 'long', requird: true }] })] },
      /^config tables\[0\]\.columns\[0\]\.requird: unknown key; did you mean "required"\?$/,
    ],
    [
      'typo in partitionBy',
      { tables: [table({ partitionBy: [{ column: 'ts', tranform: 'day' }] })] },
      /^config tables\[0\]\.partitionBy\[0\]\.tranform: unknown key; did you mean "transform"\?$/,
    ],
    [
      'typo in maintenance',
      { tables: [table({ maintenance: { compaction: {} } })] },
      /^config tables\[0\]\.maintenance\.compaction: unknown key; did you mean "compact"\?$/,
    ],
    [
      'typo in maintenance.expire',
      { tables: [table({ maintenance: { expire: { retain_last: 3 } } })] },
      /^config tables\[0\]\.maintenance\.expire\.retain_last: unknown key; did you mean "retainLast"\?$/,
    ],
    [
      'unrelated key',
      { tables: [table({ zzz: 1 })] },
      /^config tables\[0\]\.zzz: unknown key; expected one of table, topic, topics, topicPattern, topicRefresh, ingestId, columns, /,
    ],
    [
      'typo in the second table',
      { tables: [table(), table({ table: 'demo.b', topc: 'b' })] },
      /^config tables\[1\]\.topc: unknown key; did you mean "topic"\?$/,
    ],
  ];
  it('reads nested column types in the string form and the mapping form, mixed at will, into one object form', () => {
    const cfg = parseConfig({
      tables: [
        table({
          columns: [
            { name: 'customer', type: 'struct<id: long not null, name: string>' },
            { name: 'items', type: 'list< struct< sku:string NOT NULL, qty: int not null, price: decimal(10,2) > not null >' },
            { name: 'counts', type: 'map<string, long>' },
            { name: 'scores', type: 'map<date, list<double not null>> ' },
            {
              name: 'order',
              required: true,
              path: 'payload.order',
              type: {
                type: 'struct',
                fields: [
                  { name: 'id', type: 'long', required: true, doc: 'order id' },
                  { name: 'note', type: 'string', path: 'meta.note' },
                  { name: 'tags', type: { type: 'list', element: 'string', elementRequired: true } },
                  { name: 'attrs', type: { type: 'map', key: 'uuid', value: 'struct<v: int>', valueRequired: true } },
                ],
              },
            },
          ],
        }),
      ],
    });
    const [customer, items, counts, scores, order] = cfg.tables[0]!.columns;
    assert.deepEqual(customer!.type, {
      type: 'struct',
      fields: [
        { name: 'id', type: 'long', required: true },
        { name: 'name', type: 'string', required: false },
      ],
    });
    assert.deepEqual(items!.type, {
      type: 'list',
      element: {
        type: 'struct',
        fields: [
          { name: 'sku', type: 'string', required: true },
          { name: 'qty', type: 'int', required: true },
          { name: 'price', type: 'decimal(10, 2)', required: false },
        ],
      },
      elementRequired: true,
    });
    assert.deepEqual(counts!.type, { type: 'map', key: 'string', value: 'long', valueRequired: false });
    assert.deepEqual(scores!.type, {
      type: 'map',
      key: 'date',
      value: { type: 'list', element: 'double', elementRequired: true },
      valueRequired: false,
    });
    assert.deepEqual(order, {
      name: 'order',
      required: true,
      path: 'payload.order',
      source: 'value',
      doc: undefined,
      type: {
        type: 'struct',
        fields: [
          { name: 'id', type: 'long', required: true, doc: 'order id' },
          { name: 'note', type: 'string', required: false, path: 'meta.note' },
          { name: 'tags', type: { type: 'list', element: 'string', elementRequired: true }, required: false },
          {
            name: 'attrs',
            type: {
              type: 'map',
              key: 'uuid',
              value: { type: 'struct', fields: [{ name: 'v', type: 'int', required: false }] },
              valueRequired: true,
            },
            required: false,
          },
        ],
      },
    });
    // the string form prints back in the same grammar and parses to the same type
    assert.equal(columnTypeString(items!.type), 'list<struct<sku: string not null, qty: int not null, price: decimal(10, 2)> not null>');
    for (const c of cfg.tables[0]!.columns) assert.deepEqual(parseColumnType(columnTypeString(c.type), 'k'), stripPathsAndDocs(c.type));
    // the headers map keeps its string type
    const h = parseConfig({ tables: [table({ columns: [{ name: 'h', type: 'map<string,binary>', source: 'headers' }] })] });
    assert.equal(h.tables[0]!.columns[0]!.type, 'map<string, binary>');
  });

  it("the README's nested columns example loads", () => {
    const readme = readFileSync(resolve(__dirname, '../../README.md'), 'utf8');
    const block = /\*\*Nested columns\.\*\*[\s\S]*?```yaml\n([\s\S]*?)```/.exec(readme)![1]!;
    const { columns } = parseYaml(block) as { columns: unknown[] };
    const t = parseConfig({ tables: [table({ columns })] }).tables[0]!;
    assert.deepEqual(
      t.columns.map((c) => columnTypeString(c.type)),
      [
        'long',
        'struct<id: long not null, name: string>',
        'list<struct<sku: string not null, qty: int not null, price: decimal(10, 2)> not null>',
        'map<string, long>',
        'map<date, list<double not null>>',
        'struct<city: string, zip: string>',
      ],
    );
  });

  it('accepts a commit interval just below the bound and exports the bound', () => {
    assert.equal(COMMIT_INTERVAL_LIMIT_MS, 10 * 60_000);
    assert.equal(parseConfig({ tables: [table({ commitInterval: '9m' })] }).tables[0]!.commitIntervalMs, 9 * 60_000);
    assert.equal(
      parseConfig({ tables: [table({ commitInterval: COMMIT_INTERVAL_LIMIT_MS - 1 })] }).tables[0]!.commitIntervalMs,
      COMMIT_INTERVAL_LIMIT_MS - 1,
    );
  });

  it('reads every documented key (free-form properties are not checked)', () => {
    const cfg = parseConfig({
      catalog: { type: 'sql', uri: 'sqlite:////tmp/c.db', warehouse: 'file:///tmp/w', name: 'c', token: 't' },
      s3: {
        endpoint: 'http://s3',
        region: 'eu-west-1',
        accessKeyIdEnv: 'A',
        secretAccessKeyFile: '/run/secrets/s3',
        sessionTokenEnv: 'T',
        forcePathStyle: false,
      },
      kafka: { brokers: ['k:9092'], clientId: 'c' },
      temporal: { address: 't:7233', namespace: 'n', taskQueue: 'q' },
      tables: [
        table({
          ingestId: 'x',
          deadLetterTable: 'demo.dl',
          commitInterval: '1s',
          maxRecordsPerCycle: 1,
          maxBytesPerCycle: 1,
          targetFileSizeBytes: 1,
          parallelism: 1,
          cyclesPerRun: 1,
          properties: { 'any.key-at_all': 'v' },
          columns: [{ name: 'id', type: 'long', required: true, path: 'a.b', source: 'value', doc: 'd' }],
          partitionBy: [{ column: 'id', transform: 'bucket[4]', name: 'id_b' }],
          maintenance: {
            compact: { cron: '* * * * *', targetFileSizeBytes: 1, minInputFiles: 1, lookbackPartitions: 1, paused: true },
            expire: { cron: '* * * * *', olderThan: '1d', retainLast: 1, paused: true },
            orphans: { cron: '* * * * *', olderThan: '1d', paused: true },
          },
        }),
      ],
    });
    assert.equal(cfg.tables[0]!.properties['any.key-at_all'], 'v');
    assert.equal(cfg.tables[0]!.maintenance.compact.lookbackPartitions, 1);
  });

  it('suggests only close keys', () => {
    const keys = ['commitInterval', 'topic', 'table', 'tables'];
    assert.equal(nearestKey('comitInterval', keys), 'commitInterval');
    assert.equal(nearestKey('COMMIT_INTERVAL', keys), 'commitInterval');
    assert.equal(nearestKey('tabel', keys), 'table');
    assert.equal(nearestKey('foo', keys), undefined);
    assert.equal(nearestKey('x', keys), undefined);
  });

  for (const [name, raw, re] of bad) {
    it(`fails fast naming the key: ${name}`, () => {
      assert.throws(
        () => parseConfig(raw),
        (e: Error) => e instanceof ConfigError && re.test(e.message),
      );
    });
  }
});

describe('value and key formats, schemaRegistry', () => {
  const sr = { url: 'http://127.0.0.1:8081/apis/ccompat/v7' };
  const meta = [{ name: 'kafka_offset', type: 'long', source: 'offset', required: true }];
  const fails = (raw: unknown, re: RegExp) =>
    assert.throws(
      () => parseConfig(raw),
      (e: Error) => re.test(e.message),
    );

  it('a registry format takes its columns from the schema: only Kafka columns in the config, partitions on schema fields', () => {
    const t = parseConfig({
      schemaRegistry: sr,
      tables: [table({ value: { format: 'avro' }, columns: meta, partitionBy: [{ column: 'at', transform: 'day' }] })],
    }).tables[0]!;
    assert.deepEqual(t.value, { format: 'avro', registry: true, onIncompatibleSchema: 'fail' });
    assert.deepEqual(
      parseConfig({ schemaRegistry: sr, tables: [table({ value: { format: 'protobuf' }, columns: undefined })] }).tables[0]!.columns,
      [],
    );
    fails(
      { schemaRegistry: sr, tables: [table({ value: { format: 'avro' } })] },
      /tables\[0\]\.columns: column id: with format avro the value's columns come from its schema/,
    );
  });

  it('refuses a registry format without schemaRegistry, unknown formats and options, and misplaced keys', () => {
    fails({ tables: [table({ value: { format: 'avro' }, columns: meta })] }, /tables\[0\]\.value\.format: .*configure schemaRegistry\.url/);
    fails({ tables: [table({ value: { format: 'xml' } })] }, /tables\[0\]\.value\.format: expected json, avro, protobuf, json-schema/);
    fails(
      { schemaRegistry: sr, tables: [table({ value: { format: 'avro', onIncompatibleSchema: 'ignore' }, columns: meta })] },
      /onIncompatibleSchema: expected fail or dead-letter/,
    );
    fails({ tables: [table({ value: { format: 'protobuf', schema: '{}' }, columns: meta })] }, /a schema in the config is for format avro/);
    fails(
      { tables: [table({ value: { format: 'avro', schema: 'not json' }, columns: meta })] },
      /value\.schema: not an Avro schema in JSON/,
    );
    fails({ tables: [table({ value: { fields: ['a'] } })] }, /value\.fields: fields and rename shape a schema format/);
    fails(
      { schemaRegistry: sr, tables: [table({ value: { format: 'avro', rename: { a: 'bad-name' } }, columns: meta })] },
      /value\.rename\.a: expected a column name/,
    );
    fails({ schemaRegistry: { url: 'ftp://x' }, tables: [] }, /schemaRegistry\.url: expected an http\(s\):\/\/host\[:port\] URL/);
    fails({ schemaRegistry: { url: 'http://x', username: 'u' }, tables: [] }, /basic auth needs a username and a password/);
    fails(
      { schemaRegistry: { url: 'http://x', password: 'p' }, tables: [] },
      /schemaRegistry\.password: a password is never written in the config: name an environment variable \(passwordEnv\)/,
    );
    fails(
      { schemaRegistry: { url: 'http://x', username: 'u', passwordEnv: 'P', tokenEnv: 'T' }, tables: [] },
      /one way to authenticate: basic .* or a bearer token, not both/,
    );
    fails(
      { schemaRegistry: sr, tables: [table({ key: { format: 'avro' } })] },
      /a key in a schema format goes with a value in a schema format/,
    );
  });

  it('plain Avro needs no registry; keys, fields and rename are read; secrets stay references', () => {
    const schema = JSON.stringify({ type: 'record', name: 'R', fields: [{ name: 'a', type: 'int' }] });
    const cfg = parseConfig({
      schemaRegistry: { url: 'https://sr.example.com', username: 'floe', passwordEnv: 'SR_PASSWORD' },
      tables: [
        table({ value: { format: 'avro', schema }, columns: meta }),
        table({
          table: 'demo.other',
          value: { format: 'json-schema', fields: ['a', 'b'], rename: { b: 'bee' } },
          key: { format: 'avro', column: 'k' },
          columns: meta,
        }),
      ],
    });
    assert.deepEqual(cfg.schemaRegistry, {
      url: 'https://sr.example.com',
      basic: { username: { value: 'floe' }, password: { env: 'SR_PASSWORD' } },
    });
    assert.equal(cfg.tables[0]!.value.registry, false);
    assert.equal(cfg.tables[0]!.value.schema, schema);
    const t = cfg.tables[1]!;
    assert.deepEqual(
      [t.value.fields, t.value.rename, t.key?.column, t.key?.format, t.key?.registry],
      [['a', 'b'], { b: 'bee' }, 'k', 'avro', true],
    );
  });
});

describe("the README's per-format value examples", () => {
  it('each loads as a table of a config with the stack registry', () => {
    const readme = readFileSync(resolve(__dirname, '../../README.md'), 'utf8');
    for (const heading of [
      '**JSON** (default)',
      '**Avro** (Confluent',
      '**Protobuf** (Confluent',
      '**JSON Schema** (Confluent',
      '**Plain Avro**',
    ]) {
      const at = readme.indexOf(heading);
      assert.ok(at > 0, heading);
      const block = /```yaml\n([\s\S]*?)```/.exec(readme.slice(at))![1]!;
      const cfg = parseConfig({
        schemaRegistry: { url: 'http://127.0.0.1:8081/apis/ccompat/v7' },
        ...(parseYaml(`tables:\n${block}`) as object),
      });
      assert.equal(cfg.tables.length, 1, heading);
    }
  });
});
