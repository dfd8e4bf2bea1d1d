/**
 * `floe setup` on a namespace nobody prepared (real dev server, a fresh namespace): a worker refuses
 * to start there naming the missing search attributes and `floe setup`; `floe setup --json` registers
 * all three, a second run finds them (idempotent), and then the worker starts.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import { ensureStack } from '../../stack/stack';
import { stackEnv } from '../../stack/env';
import { floeHome } from '../../stack/paths';
import { scenarioConfig } from '../../demo/config';
import { spawnWorker } from '../../workers/process';

const run = promisify(execFile);
const REPO = resolve(__dirname, '../..');

async function floe(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, ['--import', 'tsx', join(REPO, 'cli/main.ts'), ...args], { cwd: REPO, env });
    return { code: 0, ...r };
  } catch (e) {
    const x = e as { code: number; stdout: string; stderr: string };
    return { code: x.code, stdout: x.stdout, stderr: x.stderr };
  }
}

describe('floe setup (real Temporal dev server)', { timeout: 90_000 }, () => {
  it('a fresh namespace: the worker refuses to start, floe setup registers the attributes once, then the worker polls', async () => {
    await ensureStack(['temporal', 'kafka', 's3']);
    const namespace = `floe-it-setup-${Date.now().toString(36)}`;
    const c = await Connection.connect({ address: stackEnv().temporal.address });
    try {
      await c.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: { seconds: 86_400 } as never });
    } finally {
      await c.close();
    }
    const { path } = scenarioConfig(namespace.replace(/-/g, '_'), 1, '1s');
    const env = { ...process.env, FLOE_TEMPORAL_NAMESPACE: namespace, FLOE_LOG_FORMAT: 'json' };
    const logDir = join(floeHome(), 'logs');

    // Not set up: the worker exits at start, saying what is missing and what to run.
    const refusedLog = join(logDir, `${namespace}-refused-worker.log`);
    const refused = spawnWorker(path, refusedLog, { FLOE_TEMPORAL_NAMESPACE: namespace });
    const exit = await Promise.race([refused.exited, sleep(30_000).then(() => null)]);
    if (exit === null) await refused.kill();
    assert.notEqual(exit, null, 'the worker exits');
    assert.notEqual(exit!.code, 0);
    assert.match(
      readFileSync(refusedLog, 'utf8'),
      new RegExp(`namespace ${namespace} lacks floe's search attributes FloeTable, FloeKind, FloeIngestId: run \`floe setup\``),
    );

    const first = await floe(['-c', path, 'setup', '--json'], env);
    assert.equal(first.code, 0, first.stderr);
    const r1 = JSON.parse(first.stdout) as { namespace: string; created: string[]; existing: string[]; missing: string[]; cloud: boolean };
    assert.equal(r1.namespace, namespace);
    assert.equal(r1.cloud, false);
    assert.deepEqual(r1.created.sort(), ['FloeIngestId', 'FloeKind', 'FloeTable']);
    assert.deepEqual(r1.missing, []);
    const second = await floe(['-c', path, 'setup'], env);
    assert.equal(second.code, 0, second.stderr);
    assert.match(second.stdout, new RegExp(`namespace ${namespace} on .*: nothing to register; floe's search attributes are ready`));

    // Set up: the worker starts and polls.
    const okLog = join(logDir, `${namespace}-worker.log`);
    const worker = spawnWorker(path, okLog, { FLOE_TEMPORAL_NAMESPACE: namespace, FLOE_LOG_FORMAT: 'json' });
    try {
      const deadline = Date.now() + 30_000;
      while (!readFileSync(okLog, { encoding: 'utf8', flag: 'a+' }).includes('polling task queue')) {
        assert.ok(Date.now() < deadline, `the worker did not start: ${readFileSync(okLog, 'utf8')}`);
        assert.equal(worker.proc.exitCode, null, `the worker exited: ${readFileSync(okLog, 'utf8')}`);
        await sleep(300);
      }
    } finally {
      await worker.kill('SIGTERM');
      const admin = await Connection.connect({ address: stackEnv().temporal.address });
      await admin.operatorService.deleteNamespace({ namespace }).catch(() => undefined);
      await admin.close();
    }
  });
});
