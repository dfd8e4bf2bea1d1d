/**
 * Secrets never in logs: a real ingest (Kafka -> worker process -> Iceberg on S3) whose catalog is
 * Postgres, reached with a URI holding a password of a role made for this test, and a second worker
 * started with a wrong password (it fails at startup naming the catalog URI). Neither worker's
 * stdout/stderr log may contain either password. The stack's own password ("floe", also the user
 * and database name) would be useless to grep for, hence the dedicated role.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { ensureStack } from '../../stack/stack';
import { stackEnv } from '../../stack/env';
import { floeHome } from '../../stack/paths';
import { runScenario, scenarioConfig } from '../../demo/scenario';
import { spawnWorker } from '../../workers/process';

const env = stackEnv();
const suffix = `${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
const role = `floe_secret_${suffix}`;
const database = `floe_secret_${suffix}`;
const password = `Pw-${randomBytes(12).toString('hex')}-x`;
const wrongPassword = `Wrong-${randomBytes(12).toString('hex')}-x`;
const uriWith = (pw: string) => `postgresql://${role}:${encodeURIComponent(pw)}@${env.postgres.host}:${env.postgres.port}/${database}`;

async function admin<T>(fn: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: env.postgres.url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

describe('catalog passwords never reach worker logs (real stack, Postgres catalog)', { timeout: 10 * 60_000 }, () => {
  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3', 'postgres']);
    await admin(async (c) => {
      await c.query(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'`);
      await c.query(`CREATE DATABASE ${database} OWNER ${role}`);
    });
  });
  after(async () => {
    await admin(async (c) => {
      await c.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await c.query(`DROP ROLE IF EXISTS ${role}`);
    }).catch(() => undefined);
  });

  it('a short real ingest with the password in the catalog URI, and a worker refused for a wrong one: no password in any log line', async () => {
    const name = `it_secrets_${suffix}`;
    const logDir = join(floeHome(), 'logs');
    const saved = process.env.FLOE_CATALOG_URI;
    // Worker processes inherit it; so does loadConfig in this process (the verification side).
    process.env.FLOE_CATALOG_URI = uriWith(password);
    try {
      const r = await runScenario({
        name,
        ratePerS: 20,
        durationS: 8,
        partitions: 2,
        commitInterval: '2s',
        kills: [],
        log: () => undefined,
      });
      assert.deepEqual(r.problems, [], r.problems.join('; '));
      assert.equal(r.rows + r.deadLetters, r.messagesInTopic);
      assert.ok(r.rows > 0);

      // A worker with the wrong password fails at startup, saying why, without either password.
      const { path } = scenarioConfig(`${name}_wrong`, 1, '2s');
      const badLog = join(logDir, `${name}_wrong-worker.log`);
      const bad = spawnWorker(path, badLog, { FLOE_CATALOG_URI: uriWith(wrongPassword) });
      const exit = await Promise.race([bad.exited, new Promise<null>((res) => setTimeout(() => res(null), 60_000))]);
      if (exit === null) await bad.kill('SIGKILL');
      assert.notEqual(exit, null, 'the worker with a wrong password exits');
      assert.notEqual(exit!.code, 0);
      const badText = readFileSync(badLog, 'utf8');
      assert.match(badText, /password authentication failed/);
      assert.match(badText, new RegExp(`postgresql://${role}:\\*\\*\\*@`), 'the URI is named, redacted');

      const logs = [join(logDir, `${name}-worker-1.log`), badLog];
      for (const l of logs) {
        assert.ok(existsSync(l), `${l} exists`);
        const text = readFileSync(l, 'utf8');
        assert.ok(text.length > 0, `${l} is not empty`);
        for (const secret of [password, wrongPassword, encodeURIComponent(password)]) {
          assert.ok(!text.includes(secret), `${l} contains a catalog password:\n${text}`);
        }
      }
    } finally {
      if (saved === undefined) delete process.env.FLOE_CATALOG_URI;
      else process.env.FLOE_CATALOG_URI = saved;
    }
  });
});
