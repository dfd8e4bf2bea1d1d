/**
 * The config as one schema (config/schema.ts): every problem reported at once with its key and
 * line; `${…}` references, where they resolve and what they never reach; the JSON Schema; one
 * duration and size rule for the file and the command line; `floe config validate` and `schema`.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { checkConfigFile, ConfigError, configJsonSchema, loadConfig, parseConfig, parseDuration, parseSize } from '../../config';
import { parseDurationOption } from '../../cli/common';
import { CliError, EXIT } from '../../cli/exit';

const dir = mkdtempSync(join(tmpdir(), 'floe-config-schema-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, text: string) => {
  writeFileSync(join(dir, name), text);
  return join(dir, name);
};
const table = (over: Record<string, unknown> = {}) => ({
  table: 'demo.orders',
  topic: 'orders',
  columns: [{ name: 'id', type: 'long' }],
  ...over,
});
/** `fn` with these variables set (and restored). */
function withEnv<T>(vars: Record<string, string>, fn: () => T): T {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  try {
    return fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}
const problemsOf = (raw: unknown) => {
  try {
    parseConfig(raw);
  } catch (e) {
    if (e instanceof ConfigError) return e.problems.map((p) => `${p.key}: ${p.message}`);
    throw e;
  }
  return [];
};

const BAD = `# every kind of problem, one per line
catalog:
  type: sql
  warehouse: lake
kafka:
  sasl: { mechanism: scram-sha-256, username: floe }
tables:
  - table: demo.orders
    topic: orders
    comitInterval: 5s
    columns:
      - { name: id, type: long, required: yes }
      - { name: o, type: "list<strin>" }
    partitionBy:
      - { column: id, transform: week }
  - table: demo.refunds
    topic: refunds
    columns: [{ name: id, type: long }]
    maxBytesPerCycle: 12QB
`;

describe('every problem at once', () => {
  it('a file: each problem with its key path and line, in file order', () => {
    const r = checkConfigFile(file('bad.yaml', BAD));
    assert.deepEqual(
      r.problems?.map((p) => [p.line, p.key]),
      [
        [4, 'catalog.warehouse'],
        [6, 'kafka.sasl.passwordEnv'],
        [10, 'tables[0].comitInterval'],
        [12, 'tables[0].columns[0].required'],
        [13, 'tables[0].columns[1].type'],
        [15, 'tables[0].partitionBy[0].transform'],
        [19, 'tables[1].maxBytesPerCycle'],
      ],
    );
    assert.throws(
      () => loadConfig(join(dir, 'bad.yaml')),
      (e: Error) =>
        e instanceof ConfigError &&
        e.problems.length === 7 &&
        e.message.split('\n')[0] === 'config catalog.warehouse: expected a URI s3://bucket/prefix or file:///dir, found "lake" (line 4)' &&
        e.message.split('\n')[2] === 'config tables[0].comitInterval: unknown key; did you mean "commitInterval"? (line 10)',
    );
  });

  it('rules between keys still run when an unrelated key failed; not in a mapping with a misspelled key', () => {
    assert.deepEqual(problemsOf({ s3: { accessKeyIdEnv: 'K', region: 7 }, tables: [table({ parallelism: 0 }), table()] }), [
      's3.region: expected a non-empty string, found 7',
      's3.secretAccessKeyEnv: an access key needs its id and its secret: give secretAccessKeyEnv or secretAccessKeyFile too',
      'tables[0].parallelism: expected a positive integer, found 0',
    ]);
    // passwordEnv misspelled: "needs a password" would only repeat it.
    assert.deepEqual(problemsOf({ kafka: { sasl: { mechanism: 'plain', username: 'u', paswordEnv: 'P' } } }), [
      'kafka.sasl.paswordEnv: unknown key; did you mean "passwordEnv"?',
    ]);
  });

  it('a YAML syntax error names the file and line, with no key to name', () => {
    assert.throws(
      () => loadConfig(file('syntax.yaml', 'tables:\n  - table: [a\n')),
      /config file .*syntax\.yaml is not valid YAML\/JSON: .*line/,
    );
  });
});

describe('${…} references', () => {
  const secretFile = file('pg-password', 'pa55-from-file\n');

  it('resolve in connection settings: ${NAME}, ${file:/path}, $${ for a literal', () => {
    const cfg = withEnv({ FLOE_TEST_BROKERS: 'k1:9092,k2:9092', FLOE_TEST_REGION: 'eu-west-1' }, () =>
      parseConfig({
        catalog: { type: 'sql', uri: `postgresql://floe:\${file:${secretFile}}@db:5432/floe`, warehouse: 's3://b/w' },
        s3: { region: '${FLOE_TEST_REGION}', endpoint: 'http://minio:9000/$${literal}' },
        kafka: { brokers: '${FLOE_TEST_BROKERS}' },
      }),
    );
    assert.equal(cfg.catalog.uri, 'postgresql://floe:pa55-from-file@db:5432/floe');
    assert.deepEqual(cfg.kafka.brokers, ['k1:9092', 'k2:9092']);
    assert.equal(cfg.s3.region, 'eu-west-1');
    assert.equal(cfg.s3.endpoint, 'http://minio:9000/${literal}');
  });

  it('a variable not set or a file not there is a problem naming the key and the reference', () => {
    assert.deepEqual(
      problemsOf({
        catalog: { uri: 'postgresql://floe:${FLOE_TEST_UNSET}@db/floe' },
        temporal: { address: '${file:/nonexistent/floe-address}' },
        schemaRegistry: { url: '${FLOE_TEST_UNCLOSED' },
      }),
      [
        'catalog.uri: ${FLOE_TEST_UNSET}: environment variable FLOE_TEST_UNSET is not set',
        'temporal.address: ${file:/nonexistent/floe-address}: cannot read /nonexistent/floe-address: ENOENT',
        'schemaRegistry.url: ${FLOE_TEST_UNCLOSED: expected ${NAME} or ${file:/path}, with its closing "}"',
      ],
    );
  });

  it('a problem quotes the value as written, never what a reference resolved to', () => {
    const problems = withEnv({ FLOE_TEST_ENDPOINT: 'not-a-url-hunter2' }, () => problemsOf({ s3: { endpoint: '${FLOE_TEST_ENDPOINT}' } }));
    assert.deepEqual(problems, ['s3.endpoint: expected an http(s)://host[:port] URL, found "${FLOE_TEST_ENDPOINT}"']);
  });

  it('are refused where a value reaches workflow ids, inputs, histories or table metadata', () => {
    const refused = /references are resolved only in connection settings/;
    const at = (raw: unknown) =>
      problemsOf(raw)
        .filter((p) => refused.test(p))
        .map((p) => p.slice(0, p.indexOf(':')));
    assert.deepEqual(
      at({
        catalog: { warehouse: 's3://${FLOE_TEST_BUCKET}/w', name: '${N}', properties: { 'header.X-Key': '${K}' } },
        temporal: { taskQueue: '${Q}' },
        tables: [table({ topic: '${TOPIC}', properties: { 'write.x': '${P}' }, columns: [{ name: 'id', type: 'long', doc: '${D}' }] })],
      }),
      [
        'catalog.warehouse',
        'catalog.name',
        'catalog.properties.header.X-Key',
        'temporal.taskQueue',
        'tables[0].topic',
        'tables[0].columns[0].doc',
        'tables[0].properties.write.x',
      ],
    );
  });

  it('elsewhere $${ is a literal ${; a token command is taken literally (its shell expands its own)', () => {
    const cfg = parseConfig({
      kafka: { sasl: { mechanism: 'oauthbearer', tokenCommand: ['sh', '-c', 'get-token --key "${KAFKA_KEY}"'] } },
      tables: [table({ columns: [{ name: 'id', type: 'long', doc: 'an id, not $${id}' }] })],
    });
    assert.deepEqual(cfg.kafka.sasl?.tokenCommand, ['sh', '-c', 'get-token --key "${KAFKA_KEY}"']);
    assert.equal(cfg.tables[0]!.columns[0]!.doc, 'an id, not ${id}');
  });

  it('resolve in exactly these keys (the schema marks them), none of which a workflow carries', () => {
    const marked: string[] = [];
    const walk = (s: Record<string, any>, path: string) => {
      if (typeof s.description === 'string' && s.description.includes('May hold ${NAME}')) marked.push(path);
      for (const [k, v] of Object.entries(s.properties ?? {})) walk(v as Record<string, any>, path ? `${path}.${k}` : k);
      if (s.items) walk(s.items, `${path}[]`);
      for (const branch of s.anyOf ?? []) walk(branch, path);
    };
    walk(configJsonSchema(), '');
    assert.deepEqual(marked.sort(), [
      'catalog.uri',
      'kafka.brokers',
      'kafka.brokers[]',
      'kafka.sasl.region',
      'kafka.sasl.username',
      'kafka.ssl.servername',
      's3.endpoint',
      's3.profile',
      's3.region',
      'schemaRegistry.url',
      'schemaRegistry.username',
      'temporal.address',
      'temporal.namespace',
      'temporal.profile',
    ]);
    // What workflows carry is a table entry's (ids, topics, maintenance settings): no resolved value is in one.
    const secret = 'Zx9-resolved-secret';
    const cfg = withEnv({ FLOE_TEST_SECRET: secret }, () =>
      parseConfig({
        catalog: { uri: 'postgresql://floe:${FLOE_TEST_SECRET}@db/floe' },
        s3: { endpoint: 'http://${FLOE_TEST_SECRET}:9000', region: '${FLOE_TEST_SECRET}', profile: '${FLOE_TEST_SECRET}' },
        kafka: { brokers: ['${FLOE_TEST_SECRET}:9092'], ssl: { servername: '${FLOE_TEST_SECRET}' } },
        temporal: { address: '${FLOE_TEST_SECRET}:7233', namespace: '${FLOE_TEST_SECRET}', profile: '${FLOE_TEST_SECRET}' },
        schemaRegistry: { url: 'https://${FLOE_TEST_SECRET}', username: '${FLOE_TEST_SECRET}', passwordEnv: 'SR_PASSWORD' },
        tables: [table({ route: { field: 'type', tables: { a: 'demo.a' } } })],
      }),
    );
    assert.equal(cfg.catalog.uri, `postgresql://floe:${secret}@db/floe`);
    assert.ok(!JSON.stringify(cfg.tables).includes(secret));
  });
});

describe('the JSON Schema', () => {
  const schema = configJsonSchema() as Record<string, any>;

  it('closes every mapping, names the recursive column type, and keeps the defaults as written', () => {
    assert.equal(schema.title, 'floe config');
    assert.equal(schema.additionalProperties, false);
    assert.deepEqual(Object.keys(schema.properties), ['catalog', 's3', 'kafka', 'temporal', 'schemaRegistry', 'tables']);
    const entry = schema.properties.tables.items;
    assert.equal(entry.additionalProperties, false);
    assert.deepEqual(entry.required, ['table']);
    assert.equal(entry.properties.commitInterval.default, '10s');
    assert.equal(entry.properties.maxBytesPerCycle.default, '256MiB');
    assert.ok(schema.$defs.ColumnType, 'the recursive column type is one definition');
  });

  it('does not depend on the environment (defaults read from FLOE_* are described, not baked in)', () => {
    const other = withEnv({ FLOE_CATALOG_URI: 'postgresql://x/y', FLOE_KAFKA_BROKERS: 'elsewhere:9092', FLOE_TASK_QUEUE: 'q' }, () =>
      configJsonSchema(),
    );
    assert.deepEqual(other, schema);
  });

  it('declares every key the examples use', () => {
    const examples = resolve(__dirname, '../../examples');
    const missing: string[] = [];
    const walk = (value: unknown, s: Record<string, any> | undefined, path: string) => {
      if (!s || typeof value !== 'object' || value === null) return;
      if (s.$ref) return walk(value, schema.$defs[String(s.$ref).split('/').pop()!], path);
      if (s.anyOf) return s.anyOf.forEach((b: Record<string, any>) => walk(value, b, path));
      if (Array.isArray(value)) return value.forEach((v, i) => walk(v, s.items, `${path}[${i}]`));
      if (s.type !== 'object' || !s.properties) return;
      for (const [k, v] of Object.entries(value)) {
        if (!(k in s.properties)) missing.push(`${path}.${k}`);
        walk(v, s.properties[k], `${path}.${k}`);
      }
    };
    for (const f of ['orders.yaml', 'production.yaml', 'registry.yaml', 'routing.yaml', 'topics.yaml'])
      walk(parseYaml(readFileSync(join(examples, f), 'utf8')), schema, f);
    assert.deepEqual(missing, []);
  });
});

describe('one duration and size rule for the file and the command line', () => {
  it('a bare number is milliseconds (a duration) or bytes (a size), in both', () => {
    const t = parseConfig({
      tables: [table({ commitInterval: '1500', maxBytesPerCycle: 1000, maintenance: { expire: { olderThan: 90_000 } } })],
    }).tables[0]!;
    assert.equal(t.commitIntervalMs, 1500);
    assert.equal(parseDurationOption('--timeout', '1500'), 1500);
    assert.equal(t.maintenance.expire.olderThanMs, parseDuration('90000'));
    assert.equal(t.maxBytesPerCycle, parseSize('1000'));
    for (const text of ['500ms', '30s', '1.5h', '7d']) assert.equal(parseDurationOption('--watch', text), parseDuration(text));
  });

  it("a flag's minimum turns an old bare-seconds habit into a usage error naming the flag", () => {
    assert.throws(
      () => parseDurationOption('--watch', '5', 1000),
      (e: Error) =>
        e instanceof CliError &&
        e.exitCode === EXIT.usage &&
        e.message === '--watch: expected a duration of at least 1s (a bare number is milliseconds), found "5"',
    );
    assert.throws(
      () => parseDurationOption('--timeout', 'soon'),
      (e: Error) => e instanceof CliError && /^--timeout: expected a duration like 500ms/.test(e.message),
    );
    assert.equal(parseDurationOption('--timeout', '5s', 1000), 5000);
  });
});

describe('floe config validate / floe config schema', () => {
  const floe = (args: string[]) =>
    spawnSync(process.execPath, ['--import', 'tsx', join(__dirname, '../../cli/main.ts'), ...args], {
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, FLOE_CONFIG: '' },
    });

  it('a good config: one OK line, exit 0; with -c after the command too', () => {
    const r = floe(['config', 'validate', '-c', resolve(__dirname, '../../examples/orders.yaml')]);
    assert.equal(r.status, EXIT.ok, r.stderr);
    assert.match(r.stdout, /^.*examples\/orders\.yaml: OK \(1 table\)\n$/);
  });

  it('a bad config: every problem as file:line: key: message, exit 2; --json lists them', () => {
    const path = file('cli-bad.yaml', BAD);
    const r = floe(['-c', path, 'config', 'validate']);
    assert.equal(r.status, EXIT.usage);
    const lines = r.stderr.trim().split('\n');
    assert.equal(lines.length, 8);
    assert.equal(lines[0], `${path}:4: catalog.warehouse: expected a URI s3://bucket/prefix or file:///dir, found "lake"`);
    assert.equal(lines[7], `${path}: 7 problems`);
    const json = floe(['-c', path, 'config', 'validate', '--json']);
    assert.equal(json.status, EXIT.usage);
    const doc = JSON.parse(json.stdout) as { ok: boolean; problems: { key: string; line: number }[] };
    assert.equal(doc.ok, false);
    assert.deepEqual(doc.problems[6], {
      key: 'tables[1].maxBytesPerCycle',
      line: 19,
      message: 'expected a size like 134217728 (positive bytes), 512KB or 128MB (1024-based), found "12QB"',
    });
  });

  it('schema prints the JSON Schema the loader checks against', () => {
    const r = floe(['config', 'schema']);
    assert.equal(r.status, EXIT.ok, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), configJsonSchema());
  });
});
