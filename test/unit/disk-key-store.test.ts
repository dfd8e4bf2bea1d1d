import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { DiskKeyStore, SpillingKeyStore } from '../../ingest/upsert/disk-key-store';
import { MemoryKeyStore, type KeyStore } from '../../ingest/upsert/key-index';

/** A deterministic stream of operations over keys with every byte value (the codec's Latin-1 strings). */
function* operations(n: number, seed: number): Generator<['set', string, number, number] | ['delete', string] | ['deleteFiles', number[]]> {
  let x = seed;
  const rnd = (m: number): number => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0), (x >>> 12) % m);
  for (let i = 0; i < n; i++) {
    const k = String.fromCharCode(rnd(256), rnd(256), 0, rnd(4));
    const op = rnd(1000);
    if (op < 700) yield ['set', k, rnd(8), rnd(1_000_000)];
    else if (op < 998) yield ['delete', k];
    else yield ['deleteFiles', [rnd(8)]];
  }
}

function apply(stores: KeyStore[], n: number, seed: number): void {
  for (const o of operations(n, seed)) {
    const out = stores.map((s) =>
      o[0] === 'set' ? s.set(o[1], o[2], o[3]) : o[0] === 'delete' ? s.delete(o[1]) : s.deleteFiles(new Set(o[1])),
    );
    for (const r of out.slice(1)) assert.deepEqual(r, out[0], `${o[0]} gives the same answer in every store`);
    for (const s of stores.slice(1)) assert.equal(s.size, stores[0]!.size);
  }
}

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'floe-ks-test-'));
}

test('DiskKeyStore answers every operation as the memory store does (past several commits of its transaction)', () => {
  const dir = tempDir();
  const memory = new MemoryKeyStore();
  const disk = new DiskKeyStore({ dir });
  apply([memory, disk], 60_000, 7);
  for (const [k, at] of memory.entries()) assert.deepEqual(disk.get(k), at);
  assert.equal(disk.get('\u0000\u00ff'), undefined);
  assert.equal(fs.readdirSync(dir).length, 1, 'one folder, the store file inside');
  disk.clear();
  assert.equal(disk.size, 0);
  assert.equal(disk.get([...memory.entries()][0]![0]), undefined);
  disk.close();
  assert.deepEqual(fs.readdirSync(dir), [], 'close deletes the file');
  disk.close(); // twice is harmless
});

test('SpillingKeyStore moves to disk at maxMemoryKeys and keeps every entry', () => {
  const dir = tempDir();
  const memory = new MemoryKeyStore();
  const spilling = new SpillingKeyStore(500, { dir });
  apply([memory, spilling], 400, 3);
  assert.equal(spilling.spilled, false, 'below the limit it stays in memory');
  assert.deepEqual(fs.readdirSync(dir), []);
  apply([memory, spilling], 5_000, 11);
  assert.ok(memory.size > 500, `the test passes the limit (${memory.size})`);
  assert.equal(spilling.spilled, true);
  for (const [k, at] of memory.entries()) assert.deepEqual(spilling.get(k), at);
  spilling.close();
  assert.deepEqual(fs.readdirSync(dir), []);
});

test("a store left by a killed process is swept by the next store in its folder; a live one's is kept", () => {
  const dir = tempDir();
  // a pid that is not running: a child that has exited
  const dead = 2 ** 22 + 12345;
  fs.mkdirSync(path.join(dir, `floe-keyindex-${dead}-abc`));
  fs.writeFileSync(path.join(dir, `floe-keyindex-${dead}-abc`, 'keys.sqlite'), 'x');
  fs.mkdirSync(path.join(dir, `floe-keyindex-1-def`)); // pid 1 is alive
  fs.mkdirSync(path.join(dir, 'other'));
  const s = new DiskKeyStore({ dir });
  const names = fs.readdirSync(dir).sort();
  assert.equal(names.length, 3);
  assert.ok(names.includes('floe-keyindex-1-def') && names.includes('other'));
  assert.ok(!names.includes(`floe-keyindex-${dead}-abc`));
  s.close();
});
