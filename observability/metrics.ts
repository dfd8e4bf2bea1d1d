/**
 * floe's own Prometheus metrics (prom-client), one registry per worker process, labelled by table.
 * They are recorded from what the activities already return (poll, commit and maintenance
 * results), so measuring costs no extra call to Kafka, S3 or the catalog. Counters count work done
 * by *this* process: a retried commit that finds itself already committed counts nothing, so across
 * workers `sum(increase(floe_rows_committed_total[..]))` is the rows that landed.
 *
 * Lag and cursor age are this worker's latest view: the cursor from `loadCursor` and each commit,
 * the high watermarks from `loadCursor` and each poll. A view not refreshed for LAG_STALE_MS (no
 * cycle of that table ran here) is dropped, so an idle worker never pins an old lag; the
 * dashboard takes `max` over workers. Backfills (ranged ingests) are left out of lag: their end is
 * the range, not the topic.
 */
import { Counter, Gauge, Histogram, collectDefaultMetrics, register } from 'prom-client';

// Structural shapes of the step results recorded here (ingest/types.ts, maintenance/types.ts):
// observability/ sits below the domain layers, so it names only the fields it reads.
type Offsets = Record<string, string>;
interface TableRef {
  table: string;
  ingestId: string;
  /** Set for one topic of an entry of several topics (its partitions are labelled `topic/partition`). */
  topic?: string;
  range?: unknown;
}
type FileListEntry = Record<string, unknown>;
interface FileStats {
  files: number;
  bytes: number;
}

/** prom-client's global registry: one per process, so every activity set of the worker shares it. */
export const registry = register;
collectDefaultMetrics({ register: registry });

const LAG_STALE_MS = 5 * 60_000;
const T = ['table'] as const;
const SECONDS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
const MIB = 1024 * 1024;

const m = {
  recordsRead: new Counter({ name: 'floe_records_read_total', help: 'Kafka records polled and written to files', labelNames: T }),
  bytesRead: new Counter({ name: 'floe_bytes_read_total', help: 'Kafka record bytes polled', labelNames: T }),
  rowsCommitted: new Counter({
    name: 'floe_rows_committed_total',
    help: 'Rows that landed in the table in commits of this worker',
    labelNames: T,
  }),
  deadLetters: new Counter({ name: 'floe_dead_letters_total', help: 'Dead letters committed to the dead-letter table', labelNames: T }),
  skipped: new Counter({
    name: 'floe_records_skipped_total',
    help: 'Records Kafka deleted (retention) before the table got them: the cursor jumped past them (snapshot summary floe.skipped)',
    labelNames: T,
  }),
  commitSeconds: new Histogram({
    name: 'floe_commit_duration_seconds',
    help: 'Duration of an ingest commit activity that landed (fence checks, manifests, catalog CAS)',
    labelNames: T,
    buckets: SECONDS,
  }),
  cycleSeconds: new Histogram({
    name: 'floe_cycle_duration_seconds',
    help: 'From loadCursor to the landed commit of a cycle (cycles whose loadCursor ran on this worker)',
    labelNames: T,
    buckets: SECONDS,
  }),
  commitFiles: new Histogram({
    name: 'floe_commit_files',
    help: 'Data files added per ingest commit',
    labelNames: T,
    buckets: [0, 1, 2, 4, 8, 16, 32, 64, 128, 256],
  }),
  commitBytes: new Histogram({
    name: 'floe_commit_bytes',
    help: 'Data file bytes added per ingest commit (inline file lists; staged lists count files only)',
    labelNames: T,
    buckets: [0, 64 * 1024, 256 * 1024, MIB, 4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB, 1024 * MIB],
  }),
  dataFileBytes: new Histogram({
    name: 'floe_data_file_size_bytes',
    help: 'Size of each data file an ingest commit added (small files: the low buckets)',
    labelNames: T,
    buckets: [64 * 1024, 256 * 1024, MIB, 8 * MIB, 32 * MIB, 128 * MIB, 512 * MIB],
  }),
  lastCommit: new Gauge({
    name: 'floe_last_commit_timestamp_seconds',
    help: 'Unix time of the newest ingest commit this worker landed',
    labelNames: T,
  }),
  tableFiles: new Gauge({
    name: 'floe_table_data_files',
    help: 'Live data files of the table when maintenance last looked',
    labelNames: T,
  }),
  tableBytes: new Gauge({
    name: 'floe_table_data_bytes',
    help: 'Live data file bytes of the table when maintenance last looked',
    labelNames: T,
  }),
  compactionFiles: new Counter({
    name: 'floe_compaction_rewritten_files_total',
    help: 'Data files compaction rewrote (inputs of rewritten groups)',
    labelNames: T,
  }),
  compactionOutputFiles: new Counter({ name: 'floe_compaction_output_files_total', help: 'Data files compaction wrote', labelNames: T }),
  compactionBytes: new Counter({ name: 'floe_compaction_rewritten_bytes_total', help: 'Input bytes compaction rewrote', labelNames: T }),
  compactionGroups: new Counter({
    name: 'floe_compaction_groups_total',
    help: 'File groups a compaction commit committed or skipped (an input no longer live)',
    labelNames: ['table', 'result'],
  }),
  expiredSnapshots: new Counter({ name: 'floe_expired_snapshots_total', help: 'Snapshots removed by expiry commits', labelNames: T }),
  expiryDeleted: new Counter({
    name: 'floe_expiry_deleted_files_total',
    help: 'Files deleted after expiry, by kind (data, manifest, manifest-list, ...)',
    labelNames: ['table', 'kind'],
  }),
  orphansFound: new Counter({
    name: 'floe_orphan_files_found_total',
    help: 'Unreachable files older than the grace period',
    labelNames: T,
  }),
  orphansDeleted: new Counter({ name: 'floe_orphan_files_deleted_total', help: 'Orphan files deleted', labelNames: T }),
  orphanBytes: new Counter({ name: 'floe_orphan_bytes_found_total', help: 'Bytes of the orphan files found', labelNames: T }),
  failures: new Counter({
    name: 'floe_activity_failures_total',
    help: 'Failed activity attempts by activity and failure type (StaleCursor, FilesMissing, DataInvalid, ...)',
    labelNames: ['table', 'activity', 'type'],
  }),
};

/**
 * Per (table, ingest id): partition -> {cursor, high watermark}, and when it was last refreshed.
 * `label` prefixes the partition label: `topic/` for one topic of an entry of several topics
 * (ingest id `<id>@<topic>`), so the topics' partitions 0 stay apart, as `floe ingest status` keys them.
 */
interface View {
  table: string;
  label: string;
  cursor: Map<string, bigint>;
  hw: Map<string, bigint>;
  at: number;
}
const views = new Map<string, View>();
const cycleStarts = new Map<string, number>();
const key = (r: TableRef) => `${r.table}\u0000${r.ingestId}`;

function view(r: TableRef): View {
  let v = views.get(key(r));
  if (!v) views.set(key(r), (v = { table: r.table, label: r.topic ? `${r.topic}/` : '', cursor: new Map(), hw: new Map(), at: 0 }));
  v.at = Date.now();
  return v;
}

const setMax = (map: Map<string, bigint>, offsets: Record<string, string>) => {
  for (const [p, o] of Object.entries(offsets)) {
    const n = BigInt(o);
    if (n > (map.get(p) ?? -1n)) map.set(p, n);
  }
};

new Gauge({
  name: 'floe_consumer_lag_records',
  help: "Records in the topic not yet in the table: high watermark - table cursor, per partition (this worker's latest view)",
  labelNames: ['table', 'partition'],
  collect() {
    this.reset();
    const now = Date.now();
    for (const [k, v] of views) {
      if (now - v.at > LAG_STALE_MS) {
        views.delete(k);
        continue;
      }
      for (const [p, hw] of v.hw) {
        const lag = hw - (v.cursor.get(p) ?? hw);
        this.set({ table: v.table, partition: v.label + p }, Number(lag > 0n ? lag : 0n));
      }
    }
  },
});

new Gauge({
  name: 'floe_cursor_age_seconds',
  help: "Seconds since the table's newest ingest commit landed by this worker (now - last commit)",
  labelNames: T,
  async collect() {
    this.reset();
    const now = Date.now() / 1000;
    for (const metric of (await m.lastCommit.get()).values) this.set({ table: String(metric.labels.table) }, now - metric.value);
  },
});

const fileStats = (entries: FileListEntry[]): { files: number; bytes: number; sizes: number[] } => {
  let files = 0;
  let bytes = 0;
  const sizes: number[] = [];
  for (const e of entries) {
    if (typeof e.stagedFiles === 'string') {
      files += Number(e.count) || 0;
    } else {
      files++;
      const size = Number(e.fileSizeInBytes) || 0;
      bytes += size;
      sizes.push(size);
    }
  }
  return { files, bytes, sizes };
};

/** What each activity's result adds to the metrics (activity name -> recorder). */
export const record = {
  loadCursor(ref: TableRef, plan: { startOffsets: Offsets; highWatermarks: Offsets }, startedMs: number): void {
    cycleStarts.set(key(ref), startedMs);
    if (ref.range) return;
    const v = view(ref);
    v.cursor = new Map(Object.entries(plan.startOffsets).map(([p, o]) => [p, BigInt(o)]));
    v.hw = new Map();
    setMax(v.hw, plan.highWatermarks);
  },
  pollAndWrite(input: TableRef & { startOffsets: Offsets }, res: { records: number; bytes: number; highWatermarks: Offsets }): void {
    m.recordsRead.inc({ table: input.table }, res.records);
    m.bytesRead.inc({ table: input.table }, res.bytes);
    if (input.range) return;
    const v = view(input);
    setMax(v.hw, res.highWatermarks);
    // Until this cycle commits, the table's cursor is the cycle's start: a worker whose first activity
    // for the table is a poll (a retry after another worker died) reports the backlog it found.
    for (const [p, o] of Object.entries(input.startOffsets)) if (!v.cursor.has(p)) v.cursor.set(p, BigInt(o));
  },
  commit(
    input: TableRef & { records: number; deadLetters: number; files: FileListEntry[]; endOffsets: Offsets },
    res: { alreadyCommitted: boolean; committedAtMs: number; skippedRecords?: string },
    startedMs: number,
  ): void {
    if (res.alreadyCommitted) return;
    const table = { table: input.table };
    const now = Date.now();
    m.rowsCommitted.inc(table, input.records);
    m.deadLetters.inc(table, input.deadLetters);
    if (res.skippedRecords !== undefined) m.skipped.inc(table, Number(res.skippedRecords));
    m.commitSeconds.observe(table, (now - startedMs) / 1000);
    const cycleStart = cycleStarts.get(key(input));
    if (cycleStart !== undefined) m.cycleSeconds.observe(table, (now - cycleStart) / 1000);
    cycleStarts.delete(key(input));
    const f = fileStats(input.files);
    m.commitFiles.observe(table, f.files);
    m.commitBytes.observe(table, f.bytes);
    for (const s of f.sizes) m.dataFileBytes.observe(table, s);
    m.lastCommit.set(table, res.committedAtMs / 1000);
    if (!input.range) setMax(view(input).cursor, input.endOffsets);
  },
  fileStats(table: string, s: FileStats): void {
    m.tableFiles.set({ table }, s.files);
    m.tableBytes.set({ table }, s.bytes);
  },
  planCompaction(plan: { table: string; before: FileStats }): void {
    record.fileStats(plan.table, plan.before);
  },
  rewriteFileGroup(
    input: { table: string; group: { fileCount?: number; files: unknown[] } },
    res: { outputCount?: number; outputs: unknown[]; inputBytes: number },
  ): void {
    const table = { table: input.table };
    m.compactionFiles.inc(table, input.group.fileCount ?? input.group.files.length);
    m.compactionOutputFiles.inc(table, res.outputCount ?? res.outputs.length);
    m.compactionBytes.inc(table, res.inputBytes);
  },
  commitRewrite(input: { table: string }, res: { alreadyCommitted: boolean; committedGroups: unknown[]; skippedGroups: unknown[] }): void {
    if (res.alreadyCommitted) return;
    m.compactionGroups.inc({ table: input.table, result: 'committed' }, res.committedGroups.length);
    m.compactionGroups.inc({ table: input.table, result: 'skipped' }, res.skippedGroups.length);
  },
  expireSnapshotsCommit(
    input: { table: string; dryRun?: boolean },
    res: { alreadyCommitted: boolean; expiredSnapshotIds: unknown[] },
  ): void {
    if (!res.alreadyCommitted && !input.dryRun) m.expiredSnapshots.inc({ table: input.table }, res.expiredSnapshotIds.length);
  },
  deleteExpiredFiles(input: { table: string; dryRun?: boolean }, res: { deleted: object }): void {
    if (input.dryRun) return;
    for (const [kind, n] of Object.entries(res.deleted)) m.expiryDeleted.inc({ table: input.table, kind }, Number(n) || 0);
  },
  removeOrphanFiles(res: { table: string; orphans: number; orphanBytes: number; deleted: number }): void {
    const table = { table: res.table };
    m.orphansFound.inc(table, res.orphans);
    m.orphanBytes.inc(table, res.orphanBytes);
    m.orphansDeleted.inc(table, res.deleted);
  },
  failure(activity: string, table: string, e: unknown): void {
    const err = e as { type?: unknown; name?: unknown } | null;
    const type = typeof err?.type === 'string' && err.type ? err.type : typeof err?.name === 'string' ? err.name : 'Error';
    m.failures.inc({ table, activity, type });
  },
};

/**
 * Stalled ingests as this worker last saw them: a stalled ingest's every activity input carries
 * its stall (workflows/ingest.ts stallOf), and each one refreshes it here. A report older than
 * STALL_STALE_MS is dropped (the ingest recovered, or runs elsewhere now), so the alert resolves by
 * itself; across workers the alert takes the newest (`max`).
 */
const STALL_STALE_MS = 3 * 60_000;
const stalls = new Map<string, { table: string; sinceMs: number; attempts: number; at: number }>();

export function recordStall(ref: TableRef & { stalled?: { sinceMs: number; attempts: number } }): void {
  if (!ref.stalled) return;
  stalls.set(key(ref), { table: ref.table, sinceMs: ref.stalled.sinceMs, attempts: ref.stalled.attempts, at: Date.now() });
}

const liveStalls = () => {
  const now = Date.now();
  for (const [k, s] of stalls) if (now - s.at > STALL_STALE_MS) stalls.delete(k);
  return [...stalls.values()];
};

new Gauge({
  name: 'floe_ingest_stalled_seconds',
  help: 'Seconds an ingest has been stalled (a step failing K or more attempts in a row, retried with backoff); absent when not stalled',
  labelNames: T,
  collect() {
    this.reset();
    const now = Date.now();
    for (const s of liveStalls()) this.set({ table: s.table }, Math.max(0, (now - s.sinceMs) / 1000));
  },
});

new Gauge({
  name: 'floe_ingest_stalled_attempts',
  help: 'Attempts a stalled ingest has made at the step that keeps failing; absent when not stalled',
  labelNames: T,
  collect() {
    this.reset();
    for (const s of liveStalls()) this.set({ table: s.table }, s.attempts);
  },
});

/** Every metric name floe itself exports (the dashboard's queries must use only these). */
export const FLOE_METRIC_NAMES: readonly string[] = [
  ...Object.values(m).map((x) => (x as unknown as { name: string }).name),
  'floe_consumer_lag_records',
  'floe_cursor_age_seconds',
  'floe_temporal_metrics_up',
  'floe_ingest_stalled_seconds',
  'floe_ingest_stalled_attempts',
];
