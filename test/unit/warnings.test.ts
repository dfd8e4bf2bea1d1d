/**
 * kafkajs' negative-timeout warning on Node 24 is dropped from the CLI's stderr, and only that one:
 * a real negative setTimeout raised from a file at kafkajs' request-queue path is silent, the same
 * call from anywhere else still prints Node's warning.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { isKafkajsNegativeTimeout } from '../../observability/warnings';

const dir = mkdtempSync(join(tmpdir(), 'floe-warnings-'));
const negativeTimeout = 'exports.run = () => setTimeout(() => undefined, -1796395063608);\n';
const queueFile = join(dir, 'node_modules', 'kafkajs', 'src', 'network', 'requestQueue', 'index.js');
mkdirSync(join(queueFile, '..'), { recursive: true });
writeFileSync(queueFile, negativeTimeout);
const otherFile = join(dir, 'other.js');
writeFileSync(otherFile, negativeTimeout);

function stderrOf(file: string): string {
  const script = `require(${JSON.stringify(resolve(__dirname, '../../observability/warnings.ts'))}).quietKafkajsTimeoutWarning(); require(${JSON.stringify(file)}).run();`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '-e', script], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(r.status, 0, r.stderr);
  return r.stderr;
}

describe('process warnings', () => {
  it("drops only kafkajs request queue's negative timeout", () => {
    assert.equal(stderrOf(queueFile), '');
    assert.match(stderrOf(otherFile), /TimeoutNegativeWarning: -1796395063608 is a negative number/);
  });

  it('matches by name and by the request queue in the stack', () => {
    const w = (name: string, at: string) => Object.assign(new Error('x'), { name, stack: `${name}: x\n    at f (${at}:1:1)` });
    assert.equal(
      isKafkajsNegativeTimeout(w('TimeoutNegativeWarning', '/app/node_modules/kafkajs/src/network/requestQueue/index.js')),
      true,
    );
    assert.equal(isKafkajsNegativeTimeout(w('TimeoutNegativeWarning', '/app/ingest/poll.js')), false);
    assert.equal(isKafkajsNegativeTimeout(w('DeprecationWarning', '/app/node_modules/kafkajs/src/network/requestQueue/index.js')), false);
  });
});
