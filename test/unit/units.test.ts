import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { formatDuration, formatSize, parseDuration, parseSize } from '../../config/units';
import { ConfigError, parseConfig } from '../../config';

const KiB = 1024,
  MiB = 1024 ** 2,
  GiB = 1024 ** 3,
  TiB = 1024 ** 4;

describe('parseDuration', () => {
  const good: Array<[string | number, number]> = [
    ['0', 0],
    ['1500', 1500],
    [1500, 1500],
    [0, 0],
    ['500ms', 500],
    ['30s', 30_000],
    ['15m', 15 * 60_000],
    ['12h', 12 * 3_600_000],
    ['7d', 7 * 86_400_000],
    ['1.5h', 5_400_000],
    ['0.5s', 500],
    ['1.0006s', 1001],
    ['2.5ms', 3],
    ['  30s ', 30_000],
    ['30 s', 30_000],
    ['\t90s\n', 90_000],
  ];
  for (const [text, ms] of good) it(`reads ${JSON.stringify(text)} as ${ms} ms`, () => assert.equal(parseDuration(text), ms));

  const bad: Array<string | number> = [
    '',
    ' ',
    'soon',
    '5x',
    '1.5',
    '-1',
    '-1s',
    '+1s',
    '.5s',
    '5.s',
    '1e3',
    '1e3s',
    '30S',
    '15M',
    '1H',
    '7D',
    '30sec',
    '5 d s',
    's',
    '1,000',
    '0x10',
    -1,
    1.5,
    NaN,
    Infinity,
  ];
  for (const text of bad) {
    it(`refuses ${JSON.stringify(text)} quoting it`, () => {
      assert.throws(
        () => parseDuration(text),
        (e: Error) =>
          e.message === `expected a duration like 500ms, 30s, 15m, 1.5h, 7d or whole milliseconds, found ${JSON.stringify(text)}`,
      );
    });
  }
  it('refuses a value that is not text or a number', () => {
    assert.throws(() => parseDuration(null as unknown as string), /^Error: expected a duration like .*, found null$/);
    assert.throws(() => parseDuration(undefined as unknown as string), /^Error: expected a duration like .*, found undefined$/);
  });
  it('refuses what overflows whole milliseconds', () => {
    assert.throws(
      () => parseDuration('200000000000d'),
      (e: Error) => e.message === `expected at most ${Number.MAX_SAFE_INTEGER} ms, found "200000000000d"`,
    );
    assert.throws(
      () => parseDuration('99999999999999999999'),
      /^Error: expected at most 9007199254740991 ms, found "99999999999999999999"$/,
    );
    assert.equal(parseDuration(Number.MAX_SAFE_INTEGER), Number.MAX_SAFE_INTEGER);
  });
});

describe('formatDuration', () => {
  const cases: Array<[number, string]> = [
    [0, '0s'],
    [1, '1ms'],
    [1500, '1500ms'],
    [1000, '1s'],
    [90_000, '90s'],
    [600_000, '10m'],
    [5_400_000, '90m'],
    [3_600_000, '1h'],
    [86_400_000, '1d'],
    [36 * 3_600_000, '36h'],
    [7 * 86_400_000, '7d'],
  ];
  for (const [ms, text] of cases) it(`writes ${ms} as ${text}`, () => assert.equal(formatDuration(ms), text));

  it('round-trips through parseDuration', () => {
    for (const ms of [
      0,
      1,
      999,
      1000,
      1001,
      59_999,
      60_000,
      61_000,
      3_599_000,
      3_600_000,
      86_399_999,
      86_400_000,
      123_456_789,
      Number.MAX_SAFE_INTEGER,
    ]) {
      assert.equal(parseDuration(formatDuration(ms)), ms, String(ms));
    }
    for (const text of ['500ms', '30s', '15m', '12h', '7d']) assert.equal(formatDuration(parseDuration(text)), text);
  });
  it('refuses what is not a whole non-negative count', () => {
    for (const ms of [-1, 1.5, NaN, Infinity]) {
      assert.throws(
        () => formatDuration(ms),
        (e: Error) => e instanceof RangeError && e.message === `formatDuration: expected a non-negative safe integer, found ${ms}`,
      );
    }
  });
});

describe('parseSize', () => {
  const good: Array<[string | number, number]> = [
    ['0', 0],
    ['134217728', 134_217_728],
    [134_217_728, 134_217_728],
    [0, 0],
    ['1B', 1],
    ['1KB', KiB],
    ['1KiB', KiB],
    ['128MB', 128 * MiB],
    ['128MiB', 128 * MiB],
    ['1GB', GiB],
    ['1GiB', GiB],
    ['2TB', 2 * TiB],
    ['2TiB', 2 * TiB],
    ['1.5GB', 1.5 * GiB],
    ['1.5gib', 1.5 * GiB],
    ['128mb', 128 * MiB],
    ['128Mb', 128 * MiB],
    ['512kib', 512 * KiB],
    ['10b', 10],
    ['0.5KB', 512],
    ['1.0001KB', 1024],
    ['2.5B', 3],
    [' 128 MB ', 128 * MiB],
  ];
  for (const [text, bytes] of good) it(`reads ${JSON.stringify(text)} as ${bytes} bytes`, () => assert.equal(parseSize(text), bytes));

  const bad: Array<string | number> = [
    '',
    'big',
    '12XB',
    '1.5',
    '-1',
    '-1MB',
    '.5MB',
    '128M',
    '128k',
    '1g',
    '128 M B',
    'MB',
    '1e6',
    '1,024',
    '128MBs',
    -1,
    0.5,
    NaN,
  ];
  for (const text of bad) {
    it(`refuses ${JSON.stringify(text)} quoting it`, () => {
      assert.throws(
        () => parseSize(text),
        (e: Error) =>
          e.message ===
          `expected a size like 134217728 (bytes), 512KB, 128MB or 1.5GiB (KB and KiB alike are 1024-based), found ${JSON.stringify(text)}`,
      );
    });
  }
  it('refuses what overflows whole bytes', () => {
    assert.throws(() => parseSize('9000000TB'), /^Error: expected at most 9007199254740991 bytes, found "9000000TB"$/);
  });
});

describe('formatSize', () => {
  const cases: Array<[number, string]> = [
    [0, '0B'],
    [1, '1B'],
    [1000, '1000B'],
    [1536, '1536B'],
    [KiB, '1KiB'],
    [1536 * KiB, '1536KiB'],
    [128 * MiB, '128MiB'],
    [1.5 * GiB, '1536MiB'],
    [GiB, '1GiB'],
    [3 * TiB, '3TiB'],
    [2048 * TiB, '2048TiB'],
  ];
  for (const [bytes, text] of cases) it(`writes ${bytes} as ${text}`, () => assert.equal(formatSize(bytes), text));

  it('round-trips through parseSize', () => {
    for (const bytes of [0, 1, 1023, 1024, 1025, 134_217_728, 134_217_729, 1.5 * GiB, 5 * TiB, Number.MAX_SAFE_INTEGER]) {
      assert.equal(parseSize(formatSize(bytes)), bytes, String(bytes));
    }
    for (const text of ['1KiB', '128MiB', '1GiB', '2TiB', '100B']) assert.equal(formatSize(parseSize(text)), text);
  });
  it('refuses what is not a whole non-negative count', () => {
    for (const bytes of [-1, 0.5, NaN]) {
      assert.throws(
        () => formatSize(bytes),
        (e: Error) => e instanceof RangeError && e.message === `formatSize: expected a non-negative safe integer, found ${bytes}`,
      );
    }
  });
});

describe('the config reads durations and sizes by the same grammar', () => {
  const table = (over: Record<string, unknown>) => ({
    table: 'demo.orders',
    topic: 'orders',
    columns: [{ name: 'id', type: 'long' }],
    ...over,
  });
  const first = (over: Record<string, unknown>) => parseConfig({ tables: [table(over)] }).tables[0]!;

  it('takes sizes as bytes or with a unit', () => {
    const t = first({
      maxBytesPerCycle: '64MB',
      targetFileSizeBytes: '1.5GiB',
      maintenance: { compact: { targetFileSizeBytes: '256mb' } },
    });
    assert.equal(t.maxBytesPerCycle, 64 * MiB);
    assert.equal(t.targetFileSizeBytes, 1.5 * GiB);
    assert.equal(t.maintenance.compact.targetFileSizeBytes, 256 * MiB);
    assert.equal(first({ maxBytesPerCycle: 1000, targetFileSizeBytes: '1000' }).targetFileSizeBytes, 1000);
    assert.equal(first({}).maxBytesPerCycle, 256 * MiB, 'default');
  });
  it('takes durations as millis or with a unit, decimals included', () => {
    const t = first({ commitInterval: '2.5s', maintenance: { expire: { olderThan: '1.5h' }, orphans: { olderThan: 7_200_000 } } });
    assert.equal(t.commitIntervalMs, 2500);
    assert.equal(t.maintenance.expire.olderThanMs, 5_400_000);
    assert.equal(t.maintenance.orphans.olderThanMs, 7_200_000);
    assert.equal(first({ commitInterval: '1500' }).commitIntervalMs, 1500);
  });

  const bad: Array<[Record<string, unknown>, string]> = [
    [
      { maxBytesPerCycle: '64XB' },
      'config tables[0].maxBytesPerCycle: expected a size like 134217728 (positive bytes), 512KB or 128MB (1024-based), found "64XB"',
    ],
    [
      { targetFileSizeBytes: 0 },
      'config tables[0].targetFileSizeBytes: expected a size like 134217728 (positive bytes), 512KB or 128MB (1024-based), found 0',
    ],
    [
      { targetFileSizeBytes: '0MB' },
      'config tables[0].targetFileSizeBytes: expected a size like 134217728 (positive bytes), 512KB or 128MB (1024-based), found "0MB"',
    ],
    [
      { maintenance: { compact: { targetFileSizeBytes: 1.5 } } },
      'config tables[0].maintenance.compact.targetFileSizeBytes: expected a size like 134217728 (positive bytes), 512KB or 128MB (1024-based), found 1.5',
    ],
    [
      { commitInterval: '0s' },
      'config tables[0].commitInterval: expected a duration like 500ms, 30s, 15m, 7d or positive millis, found "0s"',
    ],
    [
      { maintenance: { expire: { olderThan: '2 days' } } },
      'config tables[0].maintenance.expire.olderThan: expected a duration like 500ms, 30s, 15m, 7d or positive millis, found "2 days"',
    ],
    [
      { commitInterval: '500ms' },
      'config tables[0].commitInterval: expected a duration of at least 1s (every cycle is a snapshot and a catalog commit: below a second, a cycle\'s fixed cost exceeds the wait and the table\'s metadata grows faster than expiry trims it), found "500ms"',
    ],
    [
      { commitInterval: '0.2h' },
      'config tables[0].commitInterval: expected a duration below 10m (a poll lasts up to one interval; a longer one outlasts the poll activity\'s timeout and never commits), found "0.2h"',
    ],
  ];
  for (const [over, message] of bad) {
    it(`refuses ${JSON.stringify(over)} naming the key`, () => {
      assert.throws(
        () => first(over),
        (e: Error) => e instanceof ConfigError && e.message === message,
      );
    });
  }
});
