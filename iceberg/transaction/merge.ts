/**
 * Manifest merging (Java's ManifestMergeManager, PyIceberg's _MergingSnapshotProducer): keeps the
 * manifest list from growing by one manifest per commit. Manifests of one spec are bin-packed by
 * length into bins of `commit.manifest.target-size-bytes`, packing from the oldest end so the
 * under-filled bin holds the newest manifests; that bin is merged only once it has
 * `commit.manifest.min-count-to-merge` manifests, every other multi-manifest bin is merged.
 */

/** Java ListPacker(target, lookback=1).packEnd: bins in original order, the remainder bin first. */
export function packEnd<T>(items: T[], weight: (t: T) => number, target: number): T[][] {
  const bins: T[][] = [];
  let cur: T[] = [];
  let curWeight = 0;
  for (const item of [...items].reverse()) {
    const w = weight(item);
    if (cur.length > 0 && curWeight + w > target) {
      bins.push(cur);
      cur = [];
      curWeight = 0;
    }
    cur.push(item);
    curWeight += w;
  }
  if (cur.length > 0) bins.push(cur);
  return bins.reverse().map((b) => b.reverse());
}

/**
 * Decides which bins to merge. `first` is the first manifest of the new list (this commit's new
 * data); its bin is merged only when it reached `minCount` manifests, so small appends accumulate
 * instead of rewriting a large manifest on every commit.
 */
export function planMerge<T>(
  group: T[],
  first: T | undefined,
  weight: (t: T) => number,
  target: number,
  minCount: number,
): Array<{ merge: boolean; items: T[] }> {
  return packEnd(group, weight, target).map((items) => ({
    items,
    merge: items.length > 1 && !(first !== undefined && items.includes(first) && items.length < minCount),
  }));
}
