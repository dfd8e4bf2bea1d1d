// npm test: alone (asserts that connections fail within 5 s and the CLI within 20 s)
/**
 * Temporal behind TLS with a client certificate, reached as the `temporal` CLI reaches it: the
 * stack's temporal-tls service (Debian nginx as a gRPC proxy with a test CA, requiring a client
 * certificate) in front of the dev server, and only TEMPORAL_* variables telling floe how to get
 * there (no FLOE_TEMPORAL_ADDRESS, no address in the config).
 *   - a worker process and the client run a real ingest through it (exactly once), and the CLI lists
 *     and applies schedules through it; the API key and the client key's contents appear in no log
 *     and no workflow history;
 *   - a CA that did not sign the server's certificate fails the worker, the client and the CLI at
 *     once (no retry loop) with the TLS reason; no client certificate is refused too.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ensureStack } from '../../stack/stack';
import { floeHome } from '../../stack/paths';
import { temporalTlsEnv, temporalTlsProcessEnv } from '../../stack/services/temporal-tls';
import { runScenario } from '../../demo/scenario';
import { loadConfig } from '../../config';
import { connectClient } from '../../client';
import { connectTemporal, connectTemporalNative } from '../../client/connection';
import { ingestWorkflowId } from '../../workflows';
import { maintenanceScheduleId, SCHEDULE_KINDS } from '../../client/maintenance';
import { runCommand } from '../../stack/proc';
import { assertHistoriesFreeOf } from '../support/history-secrets';
import { startCountingProxy } from '../support/counting-proxy';

const REPO = resolve(__dirname, '../..');
const API_KEY = `floe-test-api-key-${Date.now().toString(36)}-do-not-log`;
const quiet = (m: string) => {
  if (process.env.FLOE_TEST_VERBOSE) console.log(m);
};

let root: string;
let wrongCa: string;
let savedEnv: NodeJS.ProcessEnv;
/** The lines of the client key (not its BEGIN/END armour): must never be printed or recorded. */
let keyBody: string[];

before(async () => {
  await ensureStack(['temporal', 'kafka', 's3', 'temporal-tls']);
  root = mkdtempSync(join(tmpdir(), 'floe-temporal-tls-'));
  wrongCa = join(root, 'wrong-ca.pem');
  await runCommand(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      join(root, 'wrong-ca-key.pem'),
      '-out',
      wrongCa,
      '-days',
      '2',
      '-subj',
      '/CN=not the floe test CA',
    ],
    { timeoutMs: 30_000 },
  );
  keyBody = readFileSync(temporalTlsEnv().clientKey, 'utf8')
    .split('\n')
    .filter((l) => l && !l.startsWith('-----'));
  // This process (the client side of the scenario) and the workers it spawns: TLS settings from
  // the Temporal CLI's variables only; no profile file of the machine's user.
  savedEnv = { ...process.env };
  delete process.env.FLOE_TEMPORAL_ADDRESS;
  delete process.env.FLOE_TEMPORAL_NAMESPACE;
  for (const k of Object.keys(process.env)) if (k.startsWith('TEMPORAL_')) delete process.env[k];
  Object.assign(process.env, temporalTlsProcessEnv(), { TEMPORAL_API_KEY: API_KEY, TEMPORAL_CONFIG_FILE: join(root, 'no-temporal.toml') });
});

after(() => {
  for (const k of Object.keys(process.env)) delete process.env[k];
  Object.assign(process.env, savedEnv);
  rmSync(root, { recursive: true, force: true });
});

function run(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 120_000) {
  return new Promise<{ code: number | null; out: string; ms: number }>((res) => {
    const t0 = Date.now();
    const p = spawn(process.execPath, ['--import', 'tsx', join(REPO, 'cli/main.ts'), ...args], {
      cwd: REPO,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.on('close', (code) => {
      clearTimeout(timer);
      res({ code, out, ms: Date.now() - t0 });
    });
  });
}

function assertNoSecrets(text: string, where: string): void {
  assert.ok(!text.includes(API_KEY), `the API key appears in ${where}`);
  for (const line of keyBody) assert.ok(!text.includes(line), `the client key appears in ${where}`);
}

describe('Temporal over mTLS through the Temporal CLI environment (nginx gRPC proxy)', { timeout: 10 * 60_000 }, () => {
  it('a worker and the client run an ingest through the TLS endpoint; no secret in logs or history', async () => {
    const name = `tls_${Date.now().toString(36)}`;
    const r = await runScenario({
      name,
      ratePerS: 20,
      durationS: 8,
      partitions: 1,
      commitInterval: '2s',
      kills: [],
      malformedEvery: 29,
      log: quiet,
    });
    assert.deepEqual(r.problems, [], r.problems.join('; '));
    assert.equal(r.rows + r.deadLetters, r.messagesInTopic);
    assert.equal(r.distinctEventIds, r.rows);
    assert.equal(r.messagesInTopic, r.produced);

    const workerLog = readFileSync(join(floeHome(), 'logs', `${name}-worker-1.log`), 'utf8');
    // The worker says where it connected, and how, naming the variables (never their secrets).
    assert.match(
      workerLog,
      /polling task queue \\?"floe-tls_\w+\\?" on 127\.0\.0\.1:7243 \(TEMPORAL_ADDRESS\), namespace default \(default\), TLS \(server CA TEMPORAL_TLS_SERVER_CA_CERT_PATH=\S+ca\.pem, client certificate TEMPORAL_TLS_CLIENT_CERT_PATH=\S+client\.pem, server name localhost\), API key \(TEMPORAL_API_KEY\)/,
    );
    assertNoSecrets(workerLog, 'the worker log');

    const fc = await connectClient(loadConfig(r.configPath));
    try {
      // Payloads decoded (historyTexts): a secret in an input or result would be base64 there.
      const runs = await assertHistoriesFreeOf(fc.client, [ingestWorkflowId(r.table, 'main')], [API_KEY, ...keyBody], r.table);
      assert.ok(runs >= 1, 'the ingest workflow ran');
    } finally {
      await fc.close();
    }
  });

  it('the CLI applies and lists schedules through the TLS endpoint', async () => {
    const config = join(root, 'schedules.yaml');
    const table = `demo.tls_sched_${Date.now().toString(36)}`;
    writeFileSync(
      config,
      JSON.stringify({
        temporal: { taskQueue: 'floe-tls-schedules' },
        tables: [
          {
            table,
            topic: 'tls-schedules',
            columns: [{ name: 'id', type: 'long' }],
            maintenance: { compact: { paused: true }, expire: { paused: true }, orphans: { paused: true } },
          },
        ],
      }),
    );
    const applied = await run(['-c', config, 'schedules', 'apply', table], process.env);
    assert.equal(applied.code, 0, applied.out);
    const listed = await run(['-c', config, 'schedules', 'list'], process.env);
    assert.equal(listed.code, 0, listed.out);
    assert.match(listed.out, new RegExp(table.replace('.', '\\.')));
    assertNoSecrets(applied.out + listed.out, 'the CLI output');
    // Leave no schedules behind in the shared dev server.
    const fc = await connectClient(loadConfig(config));
    try {
      for (const kind of SCHEDULE_KINDS) await fc.client.schedule.getHandle(maintenanceScheduleId(kind, table)).delete();
    } finally {
      await fc.close();
    }
  });

  it('a CA that did not sign the server certificate fails the client, the worker and the CLI at their first attempt, saying why', async () => {
    // Through a counting proxy: each of them connects once and gives up (no connect retries), which
    // a count shows whatever the machine's load, where a time limit would not.
    const [host, port] = process.env.TEMPORAL_ADDRESS!.split(':');
    const proxy = await startCountingProxy(host!, Number(port));
    const wrong = { ...process.env, TEMPORAL_TLS_SERVER_CA_CERT_PATH: wrongCa, TEMPORAL_ADDRESS: proxy.address };
    const reason =
      /TLS handshake failed: UNABLE_TO_VERIFY_LEAF_SIGNATURE: unable to verify the first certificate \(the server certificate is not signed by the server CA configured/;
    let seen = 0;
    const attempts = () => {
      const n = proxy.connections() - seen;
      seen = proxy.connections();
      return n;
    };
    try {
      await assert.rejects(connectTemporal({ taskQueue: 'x' }, { env: wrong }), (e: Error) => {
        assert.match(
          e.message,
          /^cannot connect to Temporal at 127\.0\.0\.1:\d+ \(TEMPORAL_ADDRESS\).*server CA TEMPORAL_TLS_SERVER_CA_CERT_PATH=\S+wrong-ca\.pem/,
        );
        assert.match(e.message, reason);
        return true;
      });
      assert.equal(attempts(), 1, 'the client: one attempt');
      await assert.rejects(connectTemporalNative({ taskQueue: 'x' }, { env: wrong }), (e: Error) => reason.test(e.message));
      // The SDK's native connection (Rust core) opens two TCP connections before it reports the
      // handshake's failure (measured); a connect that retried would open one per retry.
      const native = attempts();
      assert.ok(native >= 1 && native <= 2, `the native (worker) connection: ${native} connections`);

      const config = join(root, 'worker.yaml');
      writeFileSync(config, JSON.stringify({ temporal: { taskQueue: 'floe-tls-wrong-ca' } }));
      const worker = await run(['-c', config, 'worker'], wrong, 120_000);
      assert.notEqual(worker.code, 0);
      assert.match(worker.out, reason);
      assert.doesNotMatch(worker.out, /polling task queue/);
      const workerAttempts = attempts();
      const cli = await run(['-c', config, 'schedules', 'list'], wrong, 120_000);
      assert.notEqual(cli.code, 0);
      assert.match(cli.out, reason);
      const cliAttempts = attempts();
      if (process.env.FLOE_TEST_VERBOSE) console.log(`connections: worker ${workerAttempts}, CLI ${cliAttempts}`);
      assert.ok(
        workerAttempts >= 1 && workerAttempts <= 2,
        `the worker: ${workerAttempts} connections (a client and a native connection, once each)`,
      );
      assert.equal(cliAttempts, 1, 'the CLI: one attempt');
      assertNoSecrets(worker.out + cli.out, 'the error output');
    } finally {
      await proxy.close();
    }
  });

  it('without a client certificate the proxy refuses the connection, and the error says what to set', async () => {
    const noCert = { ...process.env };
    delete noCert.TEMPORAL_TLS_CLIENT_CERT_PATH;
    delete noCert.TEMPORAL_TLS_CLIENT_KEY_PATH;
    await assert.rejects(connectTemporal({ taskQueue: 'x' }, { env: noCert }), (e: Error) => {
      assert.match(
        e.message,
        /if the server requires a client certificate, set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH/,
      );
      return true;
    });
  });
});
