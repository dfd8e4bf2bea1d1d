import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runCommand } from '../../stack/proc';

test('runCommand: a multi-byte character split across pipe chunks comes back whole (found by the fuzzer)', async () => {
  // 1 MiB of 3- and 4-byte characters: the pipe delivers it in 64 KiB chunks at arbitrary byte
  // boundaries; each chunk decoded alone turned the split characters into U+FFFD
  const text = 'ꂉ𳎃é'.repeat(120_000);
  const { stdout } = await runCommand(process.execPath, ['-e', "process.stdout.write('ꂉ𳎃é'.repeat(120000))"]);
  assert.equal(stdout.length, text.length);
  assert.ok(stdout === text, 'stdout is the text written');
});
