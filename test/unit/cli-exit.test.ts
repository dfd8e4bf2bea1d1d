/**
 * The `floe` command's config discovery (-c, then $FLOE_CONFIG, then ./floe.yaml) and its exit
 * codes: which error maps to which code, and the README's table agreeing with `floe --help`.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CommanderError } from 'commander';
import { WorkflowNotFoundError } from '@temporalio/common';
import { ScheduleNotFoundError } from '@temporalio/client';
import { ConfigError, findTable, type FloeConfig } from '../../config';
import { IcebergError } from '../../iceberg';
import { InvalidWindowError } from '../../maintenance/window';
import { resolveConfigPath } from '../../cli/config-path';
import { CliError, EXIT, EXIT_CODES, exitCodeOf, usage } from '../../cli/exit';

describe('config discovery', () => {
  const cwd = mkdtempSync(join(tmpdir(), 'floe-cfg-'));

  it('takes -c first, then FLOE_CONFIG, then ./floe.yaml; relative paths from the current directory', () => {
    writeFileSync(join(cwd, 'floe.yaml'), 'tables: []\n');
    assert.deepEqual(resolveConfigPath('a.yaml', { FLOE_CONFIG: 'b.yaml' }, cwd), { path: join(cwd, 'a.yaml'), from: '--config' });
    assert.deepEqual(resolveConfigPath(undefined, { FLOE_CONFIG: 'b.yaml' }, cwd), { path: join(cwd, 'b.yaml'), from: 'FLOE_CONFIG' });
    assert.deepEqual(resolveConfigPath(undefined, { FLOE_CONFIG: '/etc/floe.yaml' }, cwd).path, '/etc/floe.yaml');
    assert.deepEqual(resolveConfigPath(undefined, {}, cwd), { path: join(cwd, 'floe.yaml'), from: './floe.yaml' });
  });

  it('without any of them, is a usage error that names all three', () => {
    const empty = mkdtempSync(join(tmpdir(), 'floe-cfg-'));
    assert.throws(
      () => resolveConfigPath(undefined, {}, empty),
      (e: unknown) => {
        assert.ok(e instanceof CliError);
        assert.equal(e.exitCode, EXIT.usage);
        assert.match(e.message, /pass -c <file>, set FLOE_CONFIG, or create \.\/floe\.yaml in /);
        return true;
      },
    );
  });
});

describe('exit codes', () => {
  const cfg = { tables: [{ table: 'demo.orders' }] } as unknown as FloeConfig;
  const tableNotInConfig = (() => {
    try {
      findTable(cfg, 'demo.nope');
    } catch (e) {
      return e;
    }
    throw new Error('findTable accepted a table the config does not name');
  })();
  const routedTable = (() => {
    try {
      findTable(
        { tables: [{ table: 'shop.events', route: { tables: { order: 'shop.orders' } } }] } as unknown as FloeConfig,
        'shop.orders',
      );
    } catch (e) {
      return e;
    }
    throw new Error('findTable accepted a routed table');
  })();

  const cases: [string, unknown, number][] = [
    ['CliError keeps its code', new CliError('x', EXIT.notFound), 3],
    ['--help / --version', new CommanderError(0, 'commander.helpDisplayed', '(outputHelp)'), 0],
    ['unknown option', new CommanderError(1, 'commander.unknownOption', "error: unknown option '--bogus'"), 2],
    ['bad config value', new ConfigError('tables[0].commitInterval', 'a duration', 'soon'), 2],
    ['bad window', new InvalidWindowError('--window: expected an ISO 8601 time'), 2],
    ['usage() wraps a parser error', (() => { try { usage(() => { throw new Error('bad'); }); } catch (e) { return e; } })(), 2], // prettier-ignore
    ['table not in the config (findTable)', tableNotInConfig, 3],
    ['a routed table, not an entry (findTable)', routedTable, 3],
    ['table not in the catalog', new IcebergError('NotFound', 'table demo.x does not exist'), 3],
    ['no such workflow', new WorkflowNotFoundError('not found', 'wf', undefined), 3],
    ['no such schedule', new ScheduleNotFoundError('not found', 'sched'), 3],
    [
      'connection refused, as a cause',
      new Error('fetch failed', { cause: Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }) }),
      4,
    ],
    ['Temporal not answering', new Error('Failed to connect before the deadline'), 4],
    ['gRPC UNAVAILABLE', Object.assign(new Error('14 UNAVAILABLE: No connection established'), { code: 14 }), 4],
    ['anything else', new Error('workflow failed'), 1],
  ];
  for (const [name, err, code] of cases) {
    it(`${name} -> ${code}`, () => assert.equal(exitCodeOf(err), code));
  }

  it('the README lists the same codes and meanings as `floe --help`', () => {
    const readme = readFileSync(join(__dirname, '..', '..', 'README.md'), 'utf8');
    const rows = [...readme.matchAll(/^\| (\d) \| (.+) \|$/gm)].map((m) => ({ code: Number(m[1]), meaning: m[2]!.replace(/\\\|/g, '|') }));
    assert.deepEqual(
      rows,
      EXIT_CODES.map((c) => ({ code: c.code, meaning: c.meaning })),
    );
  });
});

describe('errors with --json', () => {
  const cli = (args: string[]) =>
    spawnSync(process.execPath, ['--import', 'tsx', join(__dirname, '../../cli/main.ts'), ...args], { encoding: 'utf8', timeout: 60_000 });

  it('a usage error (unknown option) is one JSON line on stderr with exit 2; without --json, text', () => {
    const r = cli(['ingest', 'status', 'demo.orders', '--bogus', '--json']);
    assert.equal(r.status, EXIT.usage);
    assert.deepEqual(JSON.parse(r.stderr.trim()), { error: "unknown option '--bogus'", exitCode: EXIT.usage });
    assert.equal(r.stdout, '');
    const text = cli(['ingest', 'status', 'demo.orders', '--bogus']);
    assert.equal(text.status, EXIT.usage);
    assert.match(text.stderr, /^error: unknown option '--bogus'$/m);
  });

  it('--version and --help still print text and exit 0', () => {
    const v = cli(['--version', '--json']);
    assert.equal(v.status, 0);
    assert.match(v.stdout, /^\d+\.\d+\.\d+/);
  });
});
