/**
 * Structured logs from a real worker process (FLOE_LOG_FORMAT=json): a short ingest on the real
 * stack, then every line the worker wrote to stdout/stderr parses as a JSON object with a level,
 * and the workflow's commit line carries table, ingest id, workflow id and commit id.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureStack } from '../../stack/stack';
import { floeHome } from '../../stack/paths';
import { scenarioConfig } from '../../demo/config';
import { loadConfig } from '../../config';
import { connectClient, ingestStatus, signalIngest, startIngest, waitForIngest } from '../../client';
import { spawnWorker } from '../../workers/process';
import { produceOrderEvents } from '../support/produce';

const MESSAGES = 40;

describe('worker logs are JSON lines (real stack)', { timeout: 90_000 }, () => {
  it('an ingest through a worker with FLOE_LOG_FORMAT=json: every line is JSON; the commit line names table, ingest id, workflow id, commit id', async () => {
    await ensureStack(['temporal', 'kafka', 's3']);
    const name = `it_logs_${Date.now().toString(36)}_${randomBytes(2).toString('hex')}`;
    const { path, table, topic } = scenarioConfig(name, 1, '1s');
    const cfg = loadConfig(path);
    const t = cfg.tables.find((x) => x.table === table)!;
    await produceOrderEvents(cfg, topic, 0, MESSAGES);
    const logFile = join(floeHome(), 'logs', `${name}-worker.log`);
    const worker = spawnWorker(path, logFile, { FLOE_LOG_FORMAT: 'json', FLOE_LOG_LEVEL: 'info' });
    const fc = await connectClient(cfg);
    let workflowId = '';
    try {
      workflowId = (await startIngest(fc, table)).workflowId;
      const deadline = Date.now() + 45_000;
      for (;;) {
        const s = await ingestStatus(fc, table);
        if (s && s.totalRows + s.totalDeadLetters >= MESSAGES) break;
        assert.ok(Date.now() < deadline, `ingest did not reach ${MESSAGES} rows: ${JSON.stringify(s)}`);
        await sleep(500);
      }
      await signalIngest(fc, table, 'stop');
      await waitForIngest(fc, table);
    } finally {
      await fc.close();
      await worker.kill('SIGTERM');
    }

    const lines = readFileSync(logFile, 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '');
    assert.ok(lines.length > 0, 'the worker logged');
    const parsed = lines.map((l, i) => {
      try {
        return JSON.parse(l) as Record<string, unknown>;
      } catch {
        assert.fail(`line ${i + 1} of ${logFile} is not JSON: ${l}`);
      }
    });
    for (const o of parsed) {
      assert.ok(['trace', 'debug', 'info', 'warn', 'error', 'fatal'].includes(o.level as string), `level: ${JSON.stringify(o)}`);
      assert.equal(typeof o.time, 'number');
      assert.equal(typeof o.msg, 'string');
    }
    assert.ok(parsed.some((o) => String(o.msg).includes('polling task queue')));
    const commits = parsed.filter((o) => o.msg === 'committed');
    assert.ok(commits.length > 0, `a commit line: ${lines.join('\n')}`);
    for (const c of commits) {
      assert.equal(c.level, 'info');
      assert.equal(c.table, table);
      assert.equal(c.ingestId, t.ingestId);
      assert.equal(c.workflowId, workflowId);
      assert.match(String(c.commitId), /^[0-9a-f-]{36}$/);
    }
    assert.equal(
      commits.reduce((a, c) => a + Number(c.rows) + Number(c.deadLetters), 0),
      MESSAGES,
      'the commit lines account for every message',
    );
  });
});
