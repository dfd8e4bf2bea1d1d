/**
 * Metadata growth of a floe table under a steady ingest, on the memory catalog + memory FileIO:
 * every commit writes a new metadata.json holding every retained snapshot, so its size is what
 * each commit (and every reader) pays. Simulated time: an ingest commit every 10 s (4 Kafka
 * partitions, 2 data files per commit, the cursor table property), and the configured expiry
 * (`maintenance.expire` defaults: daily at 03:00, older than 5 d, retain last 10).
 *
 * The first test checks that with floe's table properties the metadata log and the metadata/
 * folder stay at `previous-versions-max`, and that expiry bounds the snapshots. The second bounds
 * metadata.json over a day at a 10 s interval with the expire defaults: after the first expiry
 * that has something to remove (02:07) the table repeats the same hour, so simulating up to the
 * hour after steady state, with the offsets' digits of the day's end, and checking that the last
 * hour's largest metadata.json is no larger than the one before it, shows the whole day's bound
 * in ~1,500 commits. FLOE_SIM_DAY=1 simulates the whole day (8,640 commits, over a minute here).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import {
  MemoryCatalog,
  METADATA_DELETE_AFTER_COMMIT,
  METADATA_PREVIOUS_VERSIONS_MAX,
  MemoryFileIO,
  newTableMetadata,
  serializeTableMetadata,
  snapshotsToExpire,
  Transaction,
  MAIN_BRANCH,
  type DataFile,
  type Schema,
  type TableIdentifier,
} from '../../iceberg';

const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'event_id', required: true, type: 'string' },
    { id: 2, name: 'event_type', required: true, type: 'string' },
    { id: 3, name: 'event_time', required: true, type: 'timestamptz' },
  ],
};

interface GrowthResult {
  commits: number;
  snapshots: number;
  metadataJsonBytes: number;
  metadataLog: number;
  metadataFiles: number;
  maxMetadataJsonBytes: number;
  /** the most snapshots a metadata.json held between two expiry runs, per interval (the first: before the first run) */
  maxSnapshotsBetweenExpiries: number[];
}

/**
 * `commits` ingest commits every `intervalMs` of simulated time starting 2026-07-01T00:00Z, with
 * expiry (olderThan, retainLast) run at 03:00 every simulated day.
 */
async function simulate(
  commits: number,
  intervalMs: number,
  expire: { olderThanMs: number; retainLast: number; everyMs?: number; firstAt?: string },
  /** each partition's offset before the first commit (a later hour of the day: more digits) */
  offsetsFrom = 0,
): Promise<GrowthResult> {
  const io = new MemoryFileIO();
  let now = Date.parse('2026-07-01T00:00:00Z');
  const realNow = Date.now;
  Date.now = () => now; // snapshot timestamps come from Date.now
  try {
    const catalog = new MemoryCatalog('sim', io, () => BigInt(now));
    const id: TableIdentifier = { namespace: ['demo'], name: 'orders' };
    await catalog.createNamespace(['demo']);
    const location = 'memory://wh/demo/orders';
    await catalog.createTable(
      id,
      newTableMetadata({
        location,
        schema,
        tableUuid: randomUUID(),
        spec: {
          'spec-id': 0,
          fields: [
            { 'source-id': 3, 'field-id': 1000, transform: 'day', name: 'event_time_day' },
            { 'source-id': 2, 'field-id': 1001, transform: 'identity', name: 'event_type' },
          ],
        },
        // what activities/tables.ts `create` sets on floe tables
        properties: {
          'write.format.default': 'parquet',
          'write.parquet.compression-codec': 'zstd',
          [METADATA_DELETE_AFTER_COMMIT]: 'true',
          [METADATA_PREVIOUS_VERSIONS_MAX]: '100',
        },
      }),
    );
    const offsets = [offsetsFrom, offsetsFrom, offsetsFrom, offsetsFrom];
    const maxSnapshotsBetweenExpiries = [0];
    let maxBytes = 0;
    let nextExpire = Date.parse(expire.firstAt ?? '2026-07-01T03:00:00Z');
    for (let c = 0; c < commits; c++) {
      now += intervalMs;
      const day = Math.floor(now / 86_400_000);
      const files: DataFile[] = ['placed', 'paid'].map(
        (t, k) =>
          ({
            content: 0,
            filePath: `${location}/data/event_time_day=${day}/event_type=${t}/${randomUUID()}-a1-0000${k}.parquet`,
            fileFormat: 'PARQUET',
            specId: 0,
            partition: { event_time_day: day, event_type: t },
            recordCount: 100,
            fileSizeInBytes: 20_000,
            columnSizes: new Map(),
            valueCounts: new Map(),
            nullValueCounts: new Map(),
            nanValueCounts: new Map(),
            lowerBounds: new Map(),
            upperBounds: new Map(),
          }) as unknown as DataFile,
      );
      for (let p = 0; p < offsets.length; p++) offsets[p]! += 50;
      const commitId = randomUUID();
      const tx = new Transaction(id);
      const append = tx.fastAppend(files, {
        'floe.ingest-id': 'main',
        'floe.offsets': JSON.stringify(Object.fromEntries(offsets.map((o, p) => [String(p), String(o)]))),
        'floe.commit-id': commitId,
        'floe.topic': 'orders',
        'floe.dead-letters': '0',
      });
      tx.setProperties({
        'floe.cursor.main': JSON.stringify({
          topic: 'orders',
          offsets: Object.fromEntries(offsets.map((o, p) => [String(p), String(o)])),
          'snapshot-id': String(append.snapshotId),
          'commit-id': commitId,
        }),
      });
      const r = await tx.commit(catalog, io);
      const bytes = (await io.stat(r.table.metadataLocation)).size;
      maxBytes = Math.max(maxBytes, bytes);
      const last = maxSnapshotsBetweenExpiries.length - 1;
      maxSnapshotsBetweenExpiries[last] = Math.max(maxSnapshotsBetweenExpiries[last]!, r.table.metadata.snapshots.length);
      if (now >= nextExpire) {
        nextExpire += expire.everyMs ?? 86_400_000;
        maxSnapshotsBetweenExpiries.push(0);
        const m = r.table.metadata;
        const { expire: gone } = snapshotsToExpire(m, { olderThanMs: BigInt(now - expire.olderThanMs), retainLast: expire.retainLast });
        if (gone.length) {
          await catalog.commitTable(
            id,
            [{ type: 'assert-ref-snapshot-id', ref: MAIN_BRANCH, 'snapshot-id': m.refs[MAIN_BRANCH]!['snapshot-id'] }],
            [{ action: 'remove-snapshots', 'snapshot-ids': gone.map((s) => s['snapshot-id']) }],
          );
        }
      }
    }
    const t = await catalog.loadTable(id);
    let metadataFiles = 0;
    for await (const f of io.list(`${location}/metadata/`)) if (f.location.endsWith('.metadata.json')) metadataFiles++;
    return {
      commits,
      snapshots: t.metadata.snapshots.length,
      metadataJsonBytes: Buffer.byteLength(serializeTableMetadata(t.metadata)),
      metadataLog: t.metadata['metadata-log'].length,
      metadataFiles,
      maxMetadataJsonBytes: maxBytes,
      maxSnapshotsBetweenExpiries,
    };
  } finally {
    Date.now = realNow;
  }
}

const DAY = 86_400_000;

void test('metadata log and metadata/ folder stay at previous-versions-max; expiry bounds snapshots (memory catalog)', async () => {
  // 2 simulated days at a commit every 10 min: expiry (older than 1 d, keep 10) runs at 03:00 both days.
  const r = await simulate(2 * 24 * 6, 600_000, { olderThanMs: DAY, retainLast: 10 });
  assert.equal(r.metadataLog, 100, 'the metadata log holds previous-versions-max entries');
  assert.equal(r.metadataFiles, 101, 'delete-after-commit: the current metadata.json and the 100 in its log, nothing more');
  // At the end (day 2, 24:00) the last expiry ran at day 2 03:00 and kept what was at most 1 d
  // old then: the snapshots from day 1 03:00 (inclusive) on, 45 h of commits.
  assert.equal(r.snapshots, 45 * 6 + 1);
});

void test('a day at a 10 s commit interval with the expire defaults keeps metadata.json under 1.2 MB (memory catalog)', async () => {
  // config/load.ts defaults: hourly at :07, older than 2 h, retain last 10.
  const expire = { olderThanMs: 2 * 3_600_000, retainLast: 10, everyMs: 3_600_000, firstAt: '2026-07-01T00:07:00Z' };
  const whole = !!process.env.FLOE_SIM_DAY;
  // The 02:07 run is the first with something to expire; from then on every interval between two
  // runs grows from 2 h to 3 h of snapshots and the size repeats, up to the digits of growing
  // numbers, which is why offsets start where a whole day (8,640 x 50) leaves them. Until 04:08
  // covers two such intervals.
  const commits = whole ? 8_640 : (4 * 3_600 + 8 * 60) / 10;
  const r = await simulate(commits, 10_000, expire, whole ? 0 : 8_640 * 50);
  console.log(JSON.stringify({ defaults: 'olderThan 2h, retainLast 10, hourly', ...r }));
  const steady = r.maxSnapshotsBetweenExpiries.slice(3, -1); // the intervals after 02:07's and 03:07's runs (whole: all later ones)
  assert.ok(steady.length >= 1, JSON.stringify(r.maxSnapshotsBetweenExpiries));
  assert.deepEqual(
    new Set(steady).size,
    1,
    `every interval after 03:07 peaks at the same snapshot count: ${JSON.stringify(r.maxSnapshotsBetweenExpiries)}`,
  );
  assert.ok(steady[0]! <= 3 * 360 + 10, `at most 3 h of snapshots (+ retainLast): ${steady[0]}`);
  assert.ok(r.maxMetadataJsonBytes < 1_200_000, `largest metadata.json ${r.maxMetadataJsonBytes} bytes`);
});
