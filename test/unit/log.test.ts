/**
 * floe's logger (observability/log.ts): JSON lines with level and floe's fields, secrets redacted,
 * kafkajs and the Temporal runtime writing through it, the text format for terminals, and the
 * FLOE_LOG_* variables failing fast on a wrong value.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger, formatText, logFormat, logLevel, setLogger, type LoggerOptions } from '../../observability/log';
import { kafkaLogLevel, temporalLogger } from '../../observability/log-adapters';
import { createKafkaClient } from '../../ingest/kafka-security';

function capture(o: LoggerOptions = {}) {
  const lines: string[] = [];
  const logger = createLogger({ format: 'json', level: 'info', ...o, destination: { write: (s: string) => lines.push(s) } });
  const parsed = () => lines.flatMap((l) => l.split('\n').filter(Boolean)).map((l) => JSON.parse(l) as Record<string, unknown>);
  return { logger, lines, parsed };
}

void test('log lines are JSON with level, time, message and floe fields', () => {
  const { logger, parsed } = capture();
  logger
    .child({ table: 'db.orders', ingestId: 'main', workflowId: 'floe-ingest/db.orders/main' })
    .info({ commitId: 'c-1', rows: 500 }, 'committed');
  logger.debug('hidden at info');
  const [line, ...rest] = parsed();
  assert.equal(rest.length, 0);
  assert.equal(line!.level, 'info');
  assert.equal(typeof line!.time, 'number');
  assert.equal(line!.msg, 'committed');
  assert.deepEqual(
    { table: line!.table, ingestId: line!.ingestId, workflowId: line!.workflowId, commitId: line!.commitId, rows: line!.rows },
    { table: 'db.orders', ingestId: 'main', workflowId: 'floe-ingest/db.orders/main', commitId: 'c-1', rows: 500 },
  );
});

void test('keys that name secrets are redacted at any of the first three levels', () => {
  const { logger, lines } = capture();
  logger.info(
    {
      password: 'pw-top',
      sasl: { password: 'pw-nested', username: 'alice' },
      s3: { creds: { secretAccessKey: 'sk-deep' } },
      headers: { authorization: 'Bearer tok' },
    },
    'connecting',
  );
  const out = lines.join('');
  for (const secret of ['pw-top', 'pw-nested', 'sk-deep', 'Bearer tok']) assert.ok(!out.includes(secret), `${secret} leaked: ${out}`);
  assert.ok(out.includes('alice'));
  assert.ok(out.includes('[redacted]'));
});

void test('a kafkajs warning arrives as a JSON line with level warn; kafkajs info is off by default', () => {
  const { logger, parsed } = capture();
  setLogger(logger);
  const kafka = createKafkaClient({ clientId: 'floe-log-test', brokers: ['127.0.0.1:1'] } as never, { env: {} });
  kafka.logger().info('joined the group');
  kafka.logger().warn('Broker is slow', { broker: '127.0.0.1:1', retryCount: 2 });
  const lines = parsed();
  assert.equal(lines.length, 1, JSON.stringify(lines));
  assert.equal(lines[0]!.level, 'warn');
  assert.equal(lines[0]!.msg, 'Broker is slow');
  assert.equal(lines[0]!.component, 'kafkajs');
  assert.equal(lines[0]!.broker, '127.0.0.1:1');
  assert.equal(lines[0]!.timestamp, undefined);
  assert.equal(kafkaLogLevel('debug'), 4); // INFO
});

void test('the Temporal runtime logger maps levels and keeps workflow meta', () => {
  const { logger, parsed } = capture();
  const t = temporalLogger(logger);
  t.log('WARN', 'commit refused', { workflowId: 'w1', runId: 'r1', sdkComponent: 'workflow' });
  t.debug('below the level');
  t.error('failed', { workflowId: 'w2' });
  const [a, b, ...rest] = parsed();
  assert.equal(rest.length, 0);
  assert.deepEqual([a!.level, a!.msg, a!.workflowId, a!.component], ['warn', 'commit refused', 'w1', 'temporal']);
  assert.deepEqual([b!.level, b!.workflowId], ['error', 'w2']);
});

void test('text format: time, level, message, then table/ingestId/workflowId/commitId first', () => {
  const { logger, lines } = capture({ format: 'text' });
  logger.warn({ rows: 3, commitId: 'c9', table: 'db.t', note: 'two words' }, 'committed');
  assert.match(lines[0]!, /^\d\d:\d\d:\d\d\.\d{3} WARN  committed table=db\.t commitId=c9 rows=3 note="two words"\n$/);
  assert.equal(formatText('not json'), 'not json\n');
});

void test('FLOE_LOG_FORMAT and FLOE_LOG_LEVEL: defaults and fail-fast naming the variable', () => {
  assert.equal(logFormat({}, true), 'text');
  assert.equal(logFormat({}, false), 'json');
  assert.equal(logFormat({ FLOE_LOG_FORMAT: 'json' }, true), 'json');
  assert.throws(() => logFormat({ FLOE_LOG_FORMAT: 'xml' }), /FLOE_LOG_FORMAT: expected json or text/);
  assert.equal(logLevel({}), 'info');
  assert.equal(logLevel({ FLOE_LOG_LEVEL: 'WARN' }), 'warn');
  assert.throws(() => logLevel({ FLOE_LOG_LEVEL: 'loud' }), /FLOE_LOG_LEVEL: expected one of/);
});
