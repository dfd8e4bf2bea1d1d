/** Compaction read-ahead: fetches in order within a byte budget, serves reads from the cache, releases. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryFileIO } from '../../iceberg';
import { PrefetchingFileIO } from '../../maintenance/prefetch';

async function io(sizes: number[]): Promise<{ mem: MemoryFileIO; files: Array<{ location: string; size: number }> }> {
  const mem = new MemoryFileIO();
  const files = sizes.map((size, i) => ({ location: `mem://t/f${i}`, size }));
  for (const [i, f] of files.entries()) await mem.write(f.location, new Uint8Array(f.size).fill(i));
  return { mem, files };
}

describe('PrefetchingFileIO', () => {
  it('fetches files in order while the held bytes fit the budget', async () => {
    const { mem, files } = await io([400, 400, 400, 400]);
    const p = new PrefetchingFileIO(mem, { budgetBytes: 1000 });
    p.prefetch(files);
    assert.equal(p.heldBytes, 800);
    assert.equal(mem.stats.reads, 2);
    // a consumed file makes room for the next one
    assert.deepEqual([...(await p.read(files[0]!.location))].slice(0, 2), [0, 0]);
    p.release(files[0]!.location);
    assert.equal(p.heldBytes, 400);
    p.prefetch(files.slice(1));
    assert.equal(p.heldBytes, 800);
    assert.equal(mem.stats.reads, 3);
    assert.deepEqual((await p.readRange(files[2]!.location, 10, 3)).length, 3);
    assert.equal(mem.stats.reads, 3, 'served from the cache');
  });

  it('always allows one file, skips files too large to fetch whole, and reads uncached files directly', async () => {
    const { mem, files } = await io([3000, 100, 50]);
    const p = new PrefetchingFileIO(mem, { budgetBytes: 1000, maxFileBytes: 2000 });
    p.prefetch(files);
    assert.equal(p.heldBytes, 150, 'the large file is streamed by the reader, not prefetched');
    p.release(files[1]!.location);
    p.release(files[2]!.location);
    p.release(files[2]!.location); // twice: no effect
    assert.equal(p.heldBytes, 0);
    const q = new PrefetchingFileIO(mem, { budgetBytes: 10, maxFileBytes: 2000 });
    q.prefetch(files.slice(1));
    assert.equal(q.heldBytes, 100, 'one file even when over the budget');
    assert.equal((await q.read(files[0]!.location)).length, 3000);
  });
});
