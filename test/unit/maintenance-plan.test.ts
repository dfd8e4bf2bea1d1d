/** Compaction planning: bin-packing per partition, Spark's selection rules, filters, partial-progress batches. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  binPack,
  commitBatchSize,
  compactDefaults,
  lookbackWindow,
  matchesFilter,
  planFileGroups,
  transformTimeRange,
  type CompactOptions,
  type LiveFile,
} from '../../maintenance/index';

const MB = 1024 * 1024;
const file = (partitionPath: string, n: number, size: number, day?: number): LiveFile => ({
  path: `data/${partitionPath}/f${n}.parquet`,
  size,
  records: 10,
  specId: 0,
  partitionPath,
  timeRange: day === undefined ? null : transformTimeRange('day', day),
});
const opts = (o: Partial<CompactOptions> = {}): CompactOptions => ({ ...compactDefaults(128 * MB), ...o });

describe('compaction planning', () => {
  it('groups the small files of each partition, one group per partition', () => {
    const files = [
      ...Array.from({ length: 7 }, (_, i) => file('d=1', i, 1 * MB)),
      ...Array.from({ length: 6 }, (_, i) => file('d=2', i, 2 * MB)),
    ];
    const { groups, partitionsScanned } = planFileGroups(files, opts());
    assert.equal(partitionsScanned, 2);
    assert.deepEqual(
      groups.map((g) => [g.index, g.partitionPath, g.files.length, g.bytes]),
      [
        [0, 'd=1', 7, 7 * MB],
        [1, 'd=2', 6, 12 * MB],
      ],
    );
    assert.equal(groups[0]!.records, 70);
  });

  it('skips partitions with fewer than min-input-files small files and keeps well-sized files out', () => {
    const files = [
      ...Array.from({ length: 4 }, (_, i) => file('d=1', i, 1 * MB)),
      file('d=2', 0, 120 * MB),
      file('d=2', 1, 1 * MB),
      file('d=2', 2, 1 * MB),
    ];
    assert.deepEqual(planFileGroups(files, opts()).groups, []);
    const g = planFileGroups(files, opts({ minInputFiles: 2 })).groups;
    assert.deepEqual(
      g.map((x) => [x.partitionPath, x.files.map((f) => f.path)]),
      [
        ['d=1', ['data/d=1/f0.parquet', 'data/d=1/f1.parquet', 'data/d=1/f2.parquet', 'data/d=1/f3.parquet']],
        ['d=2', ['data/d=2/f1.parquet', 'data/d=2/f2.parquet']], // the 120 MB file is within [96, 230] MB: left alone
      ],
    );
  });

  it('rewrites two files whose content exceeds one target file even below min-input-files', () => {
    const { groups } = planFileGroups([file('p', 0, 70 * MB), file('p', 1, 80 * MB)], opts());
    assert.equal(groups.length, 1);
  });

  it('splits a file above max-file-size on its own', () => {
    const { groups } = planFileGroups([file('p', 0, 300 * MB)], opts());
    assert.deepEqual(
      groups.map((g) => g.files.length),
      [1],
    );
  });

  it('bin-packs into groups no larger than max-file-group-size', () => {
    const files = Array.from({ length: 10 }, (_, i) => file('p', i, 10 * MB));
    const { groups } = planFileGroups(files, opts({ maxFileGroupSizeBytes: 35 * MB, minInputFiles: 2 }));
    assert.deepEqual(
      groups.map((g) => g.files.length),
      [3, 3, 3, 1].filter((n) => n >= 2),
    );
    for (const g of groups) assert.ok(g.bytes <= 35 * MB, `group of ${g.bytes} bytes exceeds the limit`);
  });

  it('first-fit decreasing packs tightly', () => {
    assert.deepEqual(
      binPack([5, 4, 3, 3, 2, 2, 1], (x) => x, 10),
      [
        [5, 4, 1],
        [3, 3, 2, 2],
      ],
    );
    assert.deepEqual(
      binPack([20, 1], (x) => x, 10),
      [[20], [1]],
    );
  });

  it('applies the partition filter by path and by time window', () => {
    const files = [
      ...Array.from({ length: 5 }, (_, i) => file('day=2024-06-01', i, MB, 19875)),
      ...Array.from({ length: 5 }, (_, i) => file('day=2024-06-02', i, MB, 19876)),
    ];
    assert.deepEqual(
      planFileGroups(files, opts({ partitionFilter: { paths: ['day=2024-06-02'] } })).groups.map((g) => g.partitionPath),
      ['day=2024-06-02'],
    );
    const w = lookbackWindow('day', Date.UTC(2024, 5, 2, 0, 15), 1)!;
    assert.deepEqual(w, { fromMs: Date.UTC(2024, 5, 2), toMs: Date.UTC(2024, 5, 3) });
    assert.deepEqual(
      planFileGroups(files, opts({ partitionFilter: w })).groups.map((g) => g.partitionPath),
      ['day=2024-06-02'],
    );
    const two = lookbackWindow('day', Date.UTC(2024, 5, 2, 0, 15), 2)!;
    assert.equal(planFileGroups(files, opts({ partitionFilter: two })).groups.length, 2);
    assert.ok(matchesFilter({ partitionPath: 'x', timeRange: null }, w), 'partitions without a time field always match a time window');
  });

  it('maps time transforms to the ranges they cover', () => {
    assert.deepEqual(transformTimeRange('day', 1), [86_400_000, 2 * 86_400_000]);
    assert.deepEqual(transformTimeRange('hour', 2), [7_200_000, 10_800_000]);
    assert.deepEqual(transformTimeRange('month', 13), [Date.UTC(1971, 1, 1), Date.UTC(1971, 2, 1)]);
    assert.deepEqual(transformTimeRange('year', 54), [Date.UTC(2024, 0, 1), Date.UTC(2025, 0, 1)]);
    assert.equal(transformTimeRange('identity', 5), null);
    assert.deepEqual(lookbackWindow('month', Date.UTC(2024, 1, 10), 2), { fromMs: Date.UTC(2024, 0, 1), toMs: Date.UTC(2024, 2, 1) });
  });

  it('sizes partial-progress commit batches', () => {
    assert.equal(commitBatchSize(25, { partialProgress: false, maxCommits: 10 }), 25);
    assert.equal(commitBatchSize(25, { partialProgress: true, maxCommits: 10 }), 3);
    assert.equal(commitBatchSize(3, { partialProgress: true, maxCommits: 10 }), 1);
  });

  it('rejects inconsistent options with expected vs found', () => {
    assert.throws(() => planFileGroups([], opts({ maxFileSizeBytes: 10 })), /maxFileSizeBytes: expected > targetFileSizeBytes/);
    assert.throws(() => planFileGroups([], opts({ maxConcurrentFileGroupRewrites: 0 })), /expected >= 1, found 0/);
  });

  it('keeps files of different partition specs in different groups', () => {
    const files = [
      ...Array.from({ length: 5 }, (_, i) => file('p', i, MB)),
      ...Array.from({ length: 5 }, (_, i) => ({ ...file('p', 10 + i, MB), specId: 1 })),
    ];
    assert.deepEqual(
      planFileGroups(files, opts()).groups.map((g) => [g.specId, g.files.length]),
      [
        [0, 5],
        [1, 5],
      ],
    );
  });
});
