import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { COMMIT_INTERVAL_LIMIT_MS, loadConfig, nearestKey, parseConfig, ConfigError } from '../../config';

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
      /^config tables\[0\]\.zzz: unknown key; expected one of table, topic, ingestId, columns, /,
    ],
    [
      'typo in the second table',
      { tables: [table(), table({ table: 'demo.b', topc: 'b' })] },
      /^config tables\[1\]\.topc: unknown key; did you mean "topic"\?$/,
    ],
  ];
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
