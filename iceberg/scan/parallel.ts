/**
 * Bounded-concurrency map, order-preserving. Manifests live on object stores where each read is
 * a round trip; reading them one by one makes planning latency grow with the manifest count.
 */
export async function mapConcurrent<T, R>(items: readonly T[], limit: number, f: (t: T, i: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await f(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, limit), items.length) }, worker));
  return out;
}

export const MANIFEST_READ_CONCURRENCY = 8;
