// npm test: alone (asserts that a wrong password or certificate fails within 5 s)
/**
 * Kafka security against the local broker's secured listeners (stack/kafka/security.ts): SASL_SSL
 * on 9094 (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER) and mutual TLS on 9095, with the stack's test CA.
 * - an ingest through SASL_SSL + SCRAM-SHA-512 in a real worker process lands every message exactly
 *   once, its cursor is mirrored to the lag group through the same client, a backfill of the topic
 *   into a second table by the same worker lands it once too, and the password (given
 *   to the worker only as an env var the config names) is in neither the workflow history nor the
 *   worker's log;
 * - every mechanism connects; a client certificate and key from env PEM pass mutual TLS;
 * - a wrong password and an untrusted certificate each fail in seconds (no retry loop), naming the
 *   broker and the cause and never the password, in-process and for a worker process at startup.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { ensureStack } from '../../stack/stack';
import { stackEnv } from '../../stack/env';
import { floeHome } from '../../stack/paths';
import { scenarioConfig } from '../../demo/scenario';
import { verifyTable } from '../../demo/verify';
import { orderEvents, eventKey } from '../../demo/generator';
import { loadConfig, parseConfig, type FloeConfig } from '../../config';
import { connectClient, parseBackfillBound, runBackfill, signalIngest, startIngest, waitForIngest, type FloeClient } from '../../client';
import { tableCommitRows } from '../../client/tables';
import { createDeps } from '../../ingest/deps';
import { createTopicIds } from '../../ingest/topic-ids';
import { connectKafka, KafkaSecurityError } from '../../ingest/kafka-security';
import { backfillWorkflowId, ingestWorkflowId } from '../../workflows';
import { spawnWorker, type WorkerProcess } from '../../workers/process';
import { assertHistoriesFreeOf } from '../support/history-secrets';
import { startCountingProxy } from '../support/counting-proxy';
import { createTopicsReady } from '../../demo/topics';

const env = stackEnv();
const sec = env.kafka.secure;
const pw = (u: { passwordFile: string }) => readFileSync(u.passwordFile, 'utf8').trim();
const suffix = `${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
const PASSWORD_ENV = 'FLOE_IT_KAFKA_SCRAM512_PASSWORD';
const scram512 = (passwordEnv = PASSWORD_ENV) => ({
  brokers: sec.saslSsl,
  clientId: 'floe-it-secure',
  ssl: { caFile: sec.caFile },
  sasl: { mechanism: 'scram-sha-512', username: sec.users.scram512.username, passwordEnv },
});
const kafkaOf = (raw: unknown) => parseConfig({ kafka: raw }).kafka;

/** An unsecured JWT (alg none): what Kafka's default OAUTHBEARER validator accepts. */
const UNSECURED_JWT_SCRIPT = `
const b = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
const now = Math.floor(Date.now() / 1000);
process.stdout.write(JSON.stringify({ token: b({ alg: 'none' }) + '.' + b({ sub: 'floe-it', iat: now, exp: now + 600 }) + '.', expiresAt: (now + 600) * 1000 }));
`;

async function listTopicsWith(raw: unknown, processEnv: NodeJS.ProcessEnv = process.env): Promise<number> {
  const k = kafkaOf(raw);
  const kafka = await connectKafka(k, { env: processEnv });
  const admin = kafka.admin();
  await admin.connect();
  // The topic-id client (@platformatic/kafka) of a worker with this config gets through too.
  const ids = createTopicIds(k, processEnv);
  try {
    const topics = (await admin.listTopics()).filter((t) => !t.startsWith('__'));
    assert.match((await ids.of('it_security_probe')) ?? '', /^[0-9a-f-]{36}$/, 'a topic id over this config');
    return topics.length;
  } finally {
    await ids.close();
    await admin.disconnect();
  }
}

/** `fn` with an admin on the plain listener (the test's own view of the broker). */
async function plainAdmin<T>(fn: (a: Admin) => Promise<T>): Promise<T> {
  const a = new Kafka({ clientId: 'floe-it', brokers: env.kafka.brokers, logLevel: logLevel.NOTHING }).admin();
  await a.connect();
  try {
    return await fn(a);
  } finally {
    await a.disconnect();
  }
}

/**
 * `connect(broker)` with the broker reached through a counting proxy: how it failed, and how many
 * connections it made to the broker (a client that fails at once makes one; one that retries, more).
 */
async function attempted(
  broker: string,
  connect: (through: string[]) => Promise<unknown>,
): Promise<{ connections: number; error: Error | undefined }> {
  const [host, port] = broker.split(':');
  const proxy = await startCountingProxy(host!, Number(port));
  try {
    await connect([proxy.address]);
    return { connections: proxy.connections(), error: undefined };
  } catch (e) {
    return { connections: proxy.connections(), error: e as Error };
  } finally {
    await proxy.close();
  }
}

/** A config file like the demo's, with `kafka` replaced; `backfillTable`: a second entry on the same topic. */
function secureConfigFile(name: string, kafka: unknown, backfillTable?: string): { path: string; table: string; topic: string } {
  const c = scenarioConfig(name, 2, '2s');
  const doc = parseYaml(readFileSync(c.path, 'utf8')) as { kafka: unknown; tables: Array<Record<string, unknown>> };
  doc.kafka = kafka;
  if (backfillTable) doc.tables.push({ ...doc.tables[0], table: backfillTable });
  writeFileSync(c.path, stringifyYaml(doc));
  return c;
}

describe('Kafka security: SASL_SSL and mutual TLS (real broker)', { timeout: 6 * 60_000 }, () => {
  const tmp = mkdtempSync(join(tmpdir(), 'floe-kafka-sec-'));
  let otherCa: string;
  const workers: WorkerProcess[] = [];

  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3']);
    // A CA the broker's certificate was not signed by.
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=not the floe test CA'].concat([
        '-keyout',
        join(tmp, 'other.key'),
        '-out',
        join(tmp, 'other-ca.pem'),
      ]),
      { stdio: 'ignore' },
    );
    otherCa = readFileSync(join(tmp, 'other-ca.pem'), 'utf8');
    // A topic for listTopicsWith to ask the id of (a fresh broker may have none of its own yet).
    await plainAdmin((a) => createTopicsReady(a, [{ topic: 'it_security_probe', numPartitions: 1 }]));
  });
  after(async () => {
    for (const w of workers) await w.kill('SIGKILL');
    rmSync(tmp, { recursive: true, force: true });
  });

  it('PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER (token command) connect over SASL_SSL; a client certificate from env PEM passes mutual TLS', async () => {
    const ssl = { caFile: sec.caFile };
    assert.ok(
      (await listTopicsWith({
        brokers: sec.saslSsl,
        ssl,
        sasl: { mechanism: 'plain', username: sec.users.plain.username, passwordFile: sec.users.plain.passwordFile },
      })) > 0,
    );
    assert.ok(
      (await listTopicsWith({
        brokers: sec.saslSsl,
        ssl,
        sasl: { mechanism: 'SCRAM-SHA-256', username: sec.users.scram256.username, passwordFile: sec.users.scram256.passwordFile },
      })) > 0,
    );
    assert.ok((await listTopicsWith(scram512(), { ...process.env, [PASSWORD_ENV]: pw(sec.users.scram512) })) > 0);
    assert.ok(
      (await listTopicsWith({
        brokers: sec.saslSsl,
        ssl,
        sasl: { mechanism: 'oauthbearer', tokenCommand: [process.execPath, '-e', UNSECURED_JWT_SCRIPT] },
      })) > 0,
    );
    const pemEnv = {
      ...process.env,
      FLOE_IT_CERT: readFileSync(sec.clientCertFile, 'utf8'),
      FLOE_IT_KEY: readFileSync(sec.clientKeyFile, 'utf8'),
    };
    assert.ok(
      (await listTopicsWith({ brokers: sec.mtls, ssl: { caFile: sec.caFile, certEnv: 'FLOE_IT_CERT', keyEnv: 'FLOE_IT_KEY' } }, pemEnv)) >
        0,
    );
    // Without the certificate the mTLS listener refuses the handshake: fast, and said so.
    const noCert = await attempted(sec.mtls[0]!, (brokers) => listTopicsWith({ brokers, ssl: { caFile: sec.caFile } }));
    assert.ok(noCert.error instanceof KafkaSecurityError, String(noCert.error));
    assert.match(noCert.error.message, /^Kafka broker 127\.0\.0\.1:\d+: TLS handshake refused by the broker .*client certificate/);
    assert.equal(noCert.connections, 1, 'one attempt, no retries');
  });

  it('a wrong password and an untrusted certificate fail worker startup at the first attempt, naming the broker and the cause, never the password', async () => {
    const right = pw(sec.users.scram512);
    const wrong = `wrong-${randomBytes(12).toString('hex')}`;
    const cfgWith = (kafka: unknown): FloeConfig => ({
      ...loadConfig(scenarioConfig(`it_ksec_probe_${suffix}`, 1, '2s').path),
      kafka: kafkaOf(kafka),
    });

    process.env[PASSWORD_ENV] = wrong;
    try {
      const bad = await attempted(sec.saslSsl[0]!, (brokers) => createDeps(cfgWith({ ...scram512(), brokers })).then((d) => d.close()));
      assert.ok(bad.error instanceof KafkaSecurityError, String(bad.error));
      assert.equal(bad.error.kind, 'sasl');
      assert.match(
        bad.error.message,
        /^Kafka broker 127\.0\.0\.1:\d+: SCRAM-SHA-512 authentication as user "floe_scram512" failed: .*invalid credentials/,
      );
      assert.equal(bad.connections, 1, 'a wrong password: one attempt, no retries');
      for (const s of [wrong, right]) assert.ok(!bad.error.message.includes(s) && !String(bad.error.stack).includes(s));

      // The right password, but a CA that did not sign the broker's certificate (PEM in an env var).
      process.env[PASSWORD_ENV] = right;
      process.env.FLOE_IT_OTHER_CA = otherCa;
      const untrusted = await attempted(sec.saslSsl[0]!, (brokers) =>
        createDeps(cfgWith({ ...scram512(), brokers, ssl: { caEnv: 'FLOE_IT_OTHER_CA' } })).then((d) => d.close()),
      );
      assert.ok(untrusted.error instanceof KafkaSecurityError, String(untrusted.error));
      assert.equal(untrusted.error.kind, 'tls');
      assert.match(
        untrusted.error.message,
        /^Kafka broker 127\.0\.0\.1:\d+: TLS: the broker's certificate is not trusted \(checked against kafka\.ssl\.caEnv FLOE_IT_OTHER_CA\): (SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY)/,
      );
      assert.equal(untrusted.connections, 1, 'an untrusted certificate: one attempt, no retries');
      assert.ok(!untrusted.error.message.includes(right));
    } finally {
      delete process.env[PASSWORD_ENV];
      delete process.env.FLOE_IT_OTHER_CA;
    }

    // A worker process with the wrong password exits at startup, saying why, without the password.
    const name = `it_ksec_wrong_${suffix}`;
    const { path } = secureConfigFile(name, scram512());
    const log = join(floeHome(), 'logs', `${name}-worker.log`);
    const w = spawnWorker(path, log, { [PASSWORD_ENV]: wrong });
    workers.push(w);
    // A hang guard: a worker that retried its probe instead of exiting would still be running.
    const exit = await Promise.race([w.exited, new Promise<null>((res) => setTimeout(() => res(null), 120_000))]);
    assert.notEqual(exit, null, 'the worker with a wrong Kafka password exits');
    assert.notEqual(exit!.code, 0);
    const text = readFileSync(log, 'utf8');
    assert.match(text, /floe: Kafka broker 127\.0\.0\.1:9094: SCRAM-SHA-512 authentication as user "floe_scram512" failed/);
    for (const s of [wrong, right]) assert.ok(!text.includes(s), `the worker log holds a password:\n${text}`);
  });

  it('an ingest and a backfill through SASL_SSL (SCRAM-SHA-512) land every message exactly once; the cursor is mirrored; the password is in no history or log', async () => {
    const password = pw(sec.users.scram512);
    const name = `it_ksec_ingest_${suffix}`;
    const c = secureConfigFile(name, scram512(), `demo.${name}_backfill`);
    const cfg = loadConfig(c.path);
    const messages = 400;

    // Produced through the SASL_SSL listener too, with floe's own client factory.
    const producerKafka = await connectKafka(cfg.kafka, { env: { ...process.env, [PASSWORD_ENV]: password } });
    const admin = producerKafka.admin();
    await admin.connect();
    await createTopicsReady(admin, [{ topic: c.topic, numPartitions: 2 }]);
    await admin.disconnect();
    const producer = producerKafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const ev = orderEvents();
    await producer.send({
      topic: c.topic,
      messages: Array.from({ length: messages }, () => {
        const e = ev.next().value!;
        return { key: eventKey(e), value: JSON.stringify(e) };
      }),
    });
    await producer.disconnect();

    const log = join(floeHome(), 'logs', `${name}-worker.log`);
    const worker = spawnWorker(c.path, log, { [PASSWORD_ENV]: password });
    workers.push(worker);
    let fc: FloeClient | undefined;
    try {
      fc = await connectClient(cfg);
      await startIngest(fc, c.table);
      const deadline = Date.now() + 150_000;
      let rows = 0;
      while (Date.now() < deadline) {
        rows = Number((await tableCommitRows(cfg, c.table).catch(() => [])).at(-1)?.total_rows ?? 0);
        if (rows >= messages) break;
        await new Promise((r) => setTimeout(r, 1000));
      }
      assert.equal(rows, messages, `rows after waiting: ${rows}\n${readFileSync(log, 'utf8')}`);
      await signalIngest(fc, c.table, 'stop');
      await waitForIngest(fc, c.table);

      // Exactly once, by floe's reader and DuckDB (the topic counted through the plain listener).
      const plainCfg: FloeConfig = { ...cfg, kafka: { brokers: env.kafka.brokers, clientId: 'floe-it' } };
      const v = await verifyTable(plainCfg, c.table, c.topic);
      assert.deepEqual(v.problems, []);
      assert.equal(v.messagesInTopic, messages);
      assert.equal(v.rows, messages);
      assert.equal(v.distinctEventIds, messages);
      assert.equal(v.deadLetters, 0);

      // The lag mirror went through the same secured admin client.
      let mirrored = 0;
      for (let i = 0; i < 30 && mirrored !== messages; i++) {
        const [t] = await plainAdmin((a) => a.fetchOffsets({ groupId: `floe.${c.table}.main`, topics: [c.topic] }));
        mirrored = (t?.partitions ?? []).reduce((n, p) => n + Math.max(0, Number(p.offset)), 0);
        if (mirrored !== messages) await new Promise((r) => setTimeout(r, 1000));
      }
      assert.equal(mirrored, messages, 'the lag group holds the table cursor');

      // A backfill of the whole topic into a second table, through the same secured worker
      // (offsets resolved by its admin, read by its consumers).
      const high = (await plainAdmin((a) => a.fetchTopicOffsets(c.topic))).map((p) => `${p.partition}:${p.high}`).join(',');
      const [from, to] = [parseBackfillBound('0', '--from'), parseBackfillBound(high, '--to')];
      const backfill = await runBackfill(fc, `demo.${name}_backfill`, from, to);
      assert.equal(backfill.prepared.records, String(messages));
      const bv = await verifyTable(plainCfg, `demo.${name}_backfill`, c.topic);
      assert.deepEqual(bv.problems, []);
      assert.equal(bv.rows, messages);

      // Neither the history (every run of the ingest and backfill workflows, payloads decoded) nor the worker log holds the password.
      const runs = await assertHistoriesFreeOf(
        fc.client,
        [ingestWorkflowId(c.table, 'main'), backfillWorkflowId(`demo.${name}_backfill`, from, to)],
        [password],
        c.table,
      );
      assert.ok(runs >= 2, `histories searched: ${runs}`);
    } finally {
      await fc?.close();
      await worker.kill('SIGTERM');
    }
    const text = readFileSync(log, 'utf8');
    assert.ok(!text.includes(password), `the worker log holds the Kafka password:\n${text}`);
  });
});
