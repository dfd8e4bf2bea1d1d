/**
 * Every worker process runs with WORKER_V8_FLAGS (a small young generation; bench/compaction.ts
 * shows what it saves): `floe worker` through bin/floe replaces itself (process.execve, same pid)
 * with the flags added, other commands start as they are, a flag the user gave is kept, and the
 * workers the demo and tests spawn get the same flags.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { spawnWorker, WORKER_V8_FLAGS } from '../../workers/process';

const ROOT = resolve(__dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'floe-v8flags-'));
// Preloaded with --require, it runs in every image of the process: before and after the execve.
const probe = join(dir, 'probe.js');
writeFileSync(probe, `process.stderr.write('PROBE ' + JSON.stringify({ pid: process.pid, execArgv: process.execArgv }) + '\\n');\n`);

function probes(args: string[], env: Record<string, string> = {}): { pid: number; execArgv: string[] }[] {
  const r = spawnSync(process.execPath, ['--require', probe, join(ROOT, 'bin/floe'), ...args], {
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '', ...env },
    timeout: 60_000,
  });
  return r.stderr
    .split('\n')
    .filter((l) => l.startsWith('PROBE '))
    .map((l) => JSON.parse(l.slice('PROBE '.length)) as { pid: number; execArgv: string[] });
}

describe('worker V8 flags', () => {
  it('floe worker re-executes itself once, same pid, with the flags', () => {
    // A config that does not exist: the worker command fails at once, after the execve.
    const seen = probes(['-c', join(dir, 'missing.yaml'), 'worker']);
    assert.equal(seen.length, 2, `two images of the process: ${JSON.stringify(seen)}`);
    assert.equal(seen[0]!.pid, seen[1]!.pid, 'execve keeps the pid');
    assert.ok(!seen[0]!.execArgv.some((a) => a.startsWith('--max-semi-space-size')));
    for (const f of WORKER_V8_FLAGS) assert.ok(seen[1]!.execArgv.includes(f), `${f} in ${seen[1]!.execArgv.join(' ')}`);
  });

  it('other commands start once, unchanged', () => {
    const seen = probes(['--version']);
    assert.equal(seen.length, 1);
  });

  it('a semi-space size the user set in NODE_OPTIONS is kept (no re-exec)', () => {
    const seen = probes(['-c', join(dir, 'missing.yaml'), 'worker'], { NODE_OPTIONS: '--max-semi-space-size=16' });
    assert.equal(seen.length, 1);
  });

  it('spawned workers (demo, tests, benchmarks) get the same flags', async () => {
    const w = spawnWorker(join(dir, 'missing.yaml'), join(dir, 'worker.log'));
    assert.equal(w.proc.spawnargs.slice(1, 1 + WORKER_V8_FLAGS.length).join(' '), WORKER_V8_FLAGS.join(' '));
    await w.kill();
  });
});
