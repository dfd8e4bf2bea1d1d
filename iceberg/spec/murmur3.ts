/**
 * murmur3_x86_32 with seed 0, the hash the spec's bucket transform uses (Appendix B). Hand-written
 * (30 lines) instead of an npm dependency: the common packages hash JS strings, not bytes, and the
 * spec test vectors in test/unit/iceberg-partition.test.ts pin the result.
 */
export function murmur3x86_32(data: Uint8Array, seed = 0): number {
  const c1 = 0xcc9e2d51,
    c2 = 0x1b873593;
  let h = seed >>> 0;
  const n = data.length;
  const blocks = n & ~3;
  for (let i = 0; i < blocks; i += 4) {
    let k = (data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24)) >>> 0;
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, c2);
    h ^= k;
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  let k = 0;
  switch (n & 3) {
    case 3:
      k ^= data[blocks + 2]! << 16; // falls through
    case 2:
      k ^= data[blocks + 1]! << 8; // falls through
    case 1:
      k ^= data[blocks]!;
      k = Math.imul(k, c1);
      k = (k << 15) | (k >>> 17);
      k = Math.imul(k, c2);
      h ^= k;
  }
  h ^= n;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h | 0; // signed, as Java's Guava murmur3_32().hashBytes().asInt()
}
