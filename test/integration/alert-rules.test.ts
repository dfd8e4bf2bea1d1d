/**
 * The alert rules shipped beside the dashboard (docker/prometheus/alerts.yml), checked and run by
 * Prometheus' own promtool (Debian's package, pinned in stack/versions.ts) on recorded series
 * (test/fixtures/alerts.test.yml): a stalled ingest fires FloeIngestStalled after a minute, with the
 * table and how long, and resolves once the stall gauge is gone; dead letters fire FloeDeadLetters.
 * The gauges themselves are checked against a real stalled worker in ingest-poison.test.ts.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join, resolve } from 'node:path';
import { runCommand } from '../../stack/proc';
import { prometheusBinDir } from '../../stack/prometheus';
import { FLOE_METRIC_NAMES } from '../../observability/metrics';
import { readFileSync } from 'node:fs';

const ROOT = resolve(__dirname, '../..');

describe('alert rules (promtool)', { timeout: 15 * 60_000 }, () => {
  it('alerts.yml is valid, fires and resolves on recorded series, and names only metrics floe exports', async () => {
    const bin = await prometheusBinDir();
    const check = await runCommand(join(bin, 'promtool'), ['check', 'rules', join(ROOT, 'docker/prometheus/alerts.yml')], {
      timeoutMs: 60_000,
    });
    assert.match(check.stdout, /SUCCESS: 2 rules found/);
    const run = await runCommand(join(bin, 'promtool'), ['test', 'rules', 'alerts.test.yml'], {
      cwd: join(ROOT, 'test/fixtures'),
      timeoutMs: 60_000,
    });
    assert.match(run.stdout, /SUCCESS/);
    const rules = readFileSync(join(ROOT, 'docker/prometheus/alerts.yml'), 'utf8');
    for (const name of rules.match(/floe_[a-z_]+/g) ?? []) assert.ok(FLOE_METRIC_NAMES.includes(name), `${name} is a metric floe exports`);
  });
});
