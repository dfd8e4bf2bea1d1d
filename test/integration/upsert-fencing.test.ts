// npm test: integration
/**
 * Fencing of an upsert table's commit (issue 31), driven directly (MockActivityEnvironment) against
 * real Kafka, S3 and the SQLite catalog as test/integration/ingest-fencing.test.ts does for append
 * tables: two racing writers from one cursor (the second is fenced, a retry of the first is
 * idempotent), a foreign append after the poll resolved its deletes (refused: its rows may hold
 * the cycle's keys), and a rewrite of a data file the deletes name (refused: the positions name
 * nothing live). After each, re-planning and re-polling lands the cycle, and the table as DuckDB
 * reads it (position deletes applied) equals the source state computed from the produced records.
 * Each on a v2 table (position delete files) and on a v3 table (deletion vectors, merged at commit).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MockActivityEnvironment } from '@temporalio/testing';
import { Kafka, logLevel, type Producer } from 'kafkajs';
import { ensureStack } from '../../stack/stack';
import { scenarioConfig } from '../../demo/config';
import { CustomerSource, changeMessages } from '../../demo/customers';
import { createTopicsReady } from '../../demo/topics';
import { loadConfig } from '../../config';
import { createActivities, createDeps, type Deps } from '../../activities';
import type { CommitInput, CommitResult, CyclePlan, PollInput, PollResult } from '../../ingest/types';
import { mergeCycle } from '../../workflows/ingest-state';
import { tableCommitRows } from '../../client/tables';
import { runPythonJson } from '../../stack/python';
import { dataFileFromWire, parseIdentifier, rewriteFiles } from '../../iceberg';

type Change = ReturnType<CustomerSource['next']>;
type Customer = NonNullable<Change['after']>;

const env = new MockActivityEnvironment();
const uniq = (p: string) => `${p}_${Date.now().toString(36)}${Math.floor(Math.random() * 1e4)}`;

/**
 * A fresh 1-partition topic and upsert table (examples/customers.yaml: key `id`), its source
 * (CustomerSource: inserts, updates and tombstones of `keys` ids) and the cycle steps.
 */
async function upsertTable(name: string, keys: number, formatVersion: 2 | 3) {
  const c = scenarioConfig(name, 1, '2s', { formatVersion }, 'customers.yaml');
  const cfg = loadConfig(c.path);
  const kafka = new Kafka({ clientId: 'test', brokers: cfg.kafka.brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await createTopicsReady(admin, [{ topic: c.topic, numPartitions: 1 }]);
  await admin.disconnect();
  const producer: Producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const deps: Deps = await createDeps(cfg);
  const acts = createActivities(deps);
  const source = new CustomerSource(keys);
  const table = c.table;
  let n = 0;
  return {
    table,
    deps,
    source,
    /** Produces the source's next `count` changes (a delete as a tombstone keyed by the id). */
    async produce(count: number): Promise<Change[]> {
      const changes = Array.from({ length: count }, () => source.next());
      await producer.send({ topic: c.topic, messages: changes.flatMap((ch) => changeMessages(ch, 'upsert', n++)) });
      return changes;
    },
    plan: () => env.run(acts.loadCursor, { table, ingestId: 'main' }) as Promise<CyclePlan>,
    /** One poll of the plan's offsets up to the topic's end (every test produces before polling). */
    poll: (plan: CyclePlan, commitId: string) =>
      env.run(acts.pollAndWrite, {
        table,
        ingestId: 'main',
        commitId,
        groupIndex: 0,
        partitions: plan.groups[0]!,
        startOffsets: plan.startOffsets,
        maxWaitMs: 20_000,
        maxRecords: 10_000,
        maxBytes: 1 << 24,
        deadLetterFloor: plan.deadLetterFloor,
        untilCaughtUp: true,
      } satisfies PollInput) as Promise<PollResult>,
    /** The commit input the workflow builds: the poll results merged by mergeCycle (the upsert part included). */
    commitInput(plan: CyclePlan, commitId: string, results: PollResult[]): CommitInput {
      const cycle = mergeCycle(plan, results);
      return {
        table,
        ingestId: 'main',
        commitId,
        baseSnapshotId: plan.baseSnapshotId,
        deadLetterFloor: plan.deadLetterFloor,
        deadLetterBaseCommitId: plan.deadLetterBaseCommitId,
        startOffsets: plan.startOffsets,
        endOffsets: cycle.endOffsets,
        files: cycle.files,
        deadLetterFiles: cycle.deadLetterFiles,
        records: cycle.records,
        deadLetters: cycle.deadLetters,
        ...(cycle.upsert ? { upsert: cycle.upsert } : {}),
      };
    },
    commit: (input: CommitInput) => env.run(acts.commit, input) as Promise<CommitResult>,
    /** plan, poll, commit: one whole cycle. */
    async cycle(commitId: string): Promise<{ plan: CyclePlan; poll: PollResult; commit: CommitResult }> {
      const plan = await this.plan();
      const poll = await this.poll(plan, commitId);
      return { plan, poll, commit: await this.commit(this.commitInput(plan, commitId, [poll])) };
    },
    async close() {
      await producer.disconnect();
      await deps.close();
    },
  };
}
type UpsertTable = Awaited<ReturnType<typeof upsertTable>>;

/** (id, version) of every row as DuckDB's iceberg_scan reads the table (position deletes applied), by id. */
async function duckRows(t: UpsertTable): Promise<Array<[number, number]>> {
  return runPythonJson<Array<[number, number]>>(
    'import json, sys\nfrom floe_duckdb import connect\nprint(json.dumps([[int(a), int(b)] for a, b in connect().sql(sys.argv[1]).fetchall()]))',
    [`SELECT id, version FROM iceberg_scan('${(await t.deps.tables.load(t.table)).metadataLocation}') ORDER BY id, version`],
    { timeoutMs: 120_000 },
  );
}

/** The rows the table must hold: one per live key, at its last version, by id. */
const expectedRows = (state: ReadonlyMap<number, Pick<Customer, 'version'>>): Array<[number, number]> =>
  [...state].map(([id, c]): [number, number] => [id, c.version]).sort((a, b) => a[0] - b[0]);

/** The table's old rows a cycle's changes delete: the distinct keys it changes that the table holds. */
const keysHeld = (changes: readonly Change[], held: ReadonlyMap<number, unknown>): number =>
  new Set(changes.filter((c) => held.has(c.id)).map((c) => c.id)).size;

/** Rows a poll writes: the distinct keys whose last change is not a delete. */
const rowsWritten = (changes: readonly Change[]): number => {
  const last = new Map(changes.map((c) => [c.id, c.op]));
  return [...last.values()].filter((op) => op !== 'd').length;
};

const isDeleteConflict = (pattern: RegExp) => (e: any) => {
  assert.equal(e.type, 'DeleteConflict', e.message);
  assert.equal(e.nonRetryable, true);
  assert.match(e.message, pattern);
  return true;
};

for (const formatVersion of [2, 3] as const)
  describe(`upsert commit fencing and delete conflicts, v${formatVersion} (real stack)`, { timeout: 10 * 60_000 }, () => {
    before(async () => {
      await ensureStack(['kafka', 's3']);
    });
    const open: UpsertTable[] = [];
    after(async () => {
      await Promise.all(open.map((t) => t.close()));
    });
    const fresh = async (prefix: string, keys: number) => {
      const t = await upsertTable(uniq(`${prefix}_v${formatVersion}`), keys, formatVersion);
      open.push(t);
      return t;
    };

    it('racing writers from one cursor: the second is fenced and adds nothing, a retried commit is idempotent, the table equals the source', async () => {
      const t = await fresh('it_upfence_race', 20);
      await t.produce(30);
      const c0 = await t.cycle('race-0');
      assert.equal(c0.plan.baseSnapshotId, null);
      assert.deepEqual(c0.poll.upsert?.deleteFiles, [], 'nothing to delete in an empty table');
      assert.equal(c0.commit.alreadyCommitted, false);
      assert.deepEqual(await duckRows(t), expectedRows(t.source.state));

      // Cycle 1 updates and deletes keys cycle 0 committed (and inserts others).
      const held = new Map(t.source.state);
      const changes = await t.produce(40);
      assert.ok(
        changes.some((c) => c.op === 'u' && held.has(c.id)),
        'cycle 1 updates a committed key',
      );
      assert.ok(
        changes.some((c) => c.op === 'd' && held.has(c.id)),
        'cycle 1 tombstones a committed key',
      );
      const plan = await t.plan();
      assert.equal(plan.baseSnapshotId, c0.commit.snapshotId);
      assert.deepEqual(plan.startOffsets, { 0: '30' });
      const a = await t.poll(plan, 'race-a');
      const b = await t.poll(plan, 'race-b');
      for (const r of [a, b]) {
        assert.deepEqual(r.endOffsets, { 0: '70' });
        assert.equal(r.records, rowsWritten(changes));
        assert.equal(r.upsert!.indexSnapshotId, c0.commit.snapshotId);
        assert.equal(r.upsert!.deletedRows, keysHeld(changes, held));
        assert.ok(r.upsert!.deleteFiles.length > 0);
      }
      const inputA = t.commitInput(plan, 'race-a', [a]);
      const inputB = t.commitInput(plan, 'race-b', [b]);
      assert.deepEqual(inputB.upsert!.indexSnapshotIds, [c0.commit.snapshotId]);

      const first = await t.commit(inputB);
      assert.equal(first.alreadyCommitted, false);
      const landed = (await t.deps.tables.load(t.table)).metadata;
      await assert.rejects(t.commit(inputA), (e: any) => {
        assert.equal(e.type, 'StaleCursor', e.message);
        assert.equal(e.nonRetryable, true);
        assert.match(e.message, new RegExp(`expected cursor snapshot ${c0.commit.snapshotId}, found ${first.snapshotId}`));
        return true;
      });
      // The fenced writer added nothing: the table is exactly as the first commit left it.
      const afterFenced = (await t.deps.tables.load(t.table)).metadata;
      assert.equal(afterFenced['current-snapshot-id']?.toString(), first.snapshotId);
      assert.equal(afterFenced.snapshots.length, landed.snapshots.length);
      // A retry of the commit that landed finds it instead of landing twice.
      const again = await t.commit(inputB);
      assert.equal(again.alreadyCommitted, true);
      assert.equal(again.snapshotId, first.snapshotId);

      const commits = await tableCommitRows(t.deps.cfg, t.table);
      assert.deepEqual(
        commits.map((c) => c.commit_id),
        ['race-0', 'race-b'],
      );
      const snap = afterFenced.snapshots.find((s) => s['snapshot-id'].toString() === first.snapshotId)!;
      assert.equal(snap.summary['added-position-deletes'], String(keysHeld(changes, held)));
      assert.deepEqual((await t.plan()).startOffsets, { 0: '70' });
      assert.deepEqual(await duckRows(t), expectedRows(t.source.state));
    });

    it('a foreign append after the poll resolved its deletes refuses the commit (DeleteConflict); the re-polled cycle lands', async () => {
      const t = await fresh('it_upfence_append', 20);
      await t.produce(30);
      await t.cycle('append-0');
      const held = new Map(t.source.state);
      const changes = await t.produce(30);
      const plan = await t.plan();
      const p1 = await t.poll(plan, 'append-1');
      assert.ok(p1.upsert!.deletedRows > 0, 'the cycle deletes committed rows');
      assert.equal(p1.upsert!.indexSnapshotId, plan.baseSnapshotId);

      // Another writer appends two rows. Key `inserted` is one cycle 1 inserts (absent from the
      // table when the poll resolved its keys): committed as polled, the table would hold it twice.
      // Key 1000 is one the source never has: it is not a key of the cycle and stays, so the
      // expected state is the source's plus that row.
      const inserted = changes.find((c) => c.op === 'c' && !held.has(c.id))!.id;
      const foreign = [inserted, 1000].map((id) => ({
        id: BigInt(id),
        name: `foreign ${id}`,
        email: `f${id}@example.com`,
        tier: 'free',
        version: 100n,
        updated_at: 1_700_000_000_000_000n,
      }));
      const files = await t.deps.tables.writeDataFiles(t.table, foreign, 'foreign', 1 << 27);
      const appended = await t.deps.tables.appendOnce(t.table, { files, summary: {}, validate: () => undefined });

      const input = t.commitInput(plan, 'append-1', [p1]);
      await assert.rejects(
        t.commit(input),
        isDeleteConflict(new RegExp(`snapshot ${appended.snapshotId} \\(append\\) added 1 data files`)),
      );
      const refused = (await t.deps.tables.load(t.table)).metadata;
      assert.equal(refused['current-snapshot-id']?.toString(), appended.snapshotId, 'the refused commit added nothing');

      // The workflow reloads: the cursor did not move, the same offsets are read against the key
      // index at the foreign snapshot, whose row of `inserted` the cycle now deletes.
      const replan = await t.plan();
      assert.deepEqual(replan.startOffsets, plan.startOffsets);
      assert.equal(replan.baseSnapshotId, plan.baseSnapshotId);
      const p2 = await t.poll(replan, 'append-2');
      assert.deepEqual(p2.endOffsets, p1.endOffsets);
      assert.equal(p2.upsert!.indexSnapshotId, appended.snapshotId);
      assert.equal(p2.upsert!.deletedRows, p1.upsert!.deletedRows + 1, 'the foreign row of a key the cycle changes is deleted too');
      const landed = await t.commit(t.commitInput(replan, 'append-2', [p2]));
      assert.equal(landed.alreadyCommitted, false);
      assert.deepEqual(
        (await tableCommitRows(t.deps.cfg, t.table)).map((c) => c.commit_id),
        ['append-0', '', 'append-2'],
      );
      assert.deepEqual(
        await duckRows(t),
        expectedRows(new Map<number, { version: number }>([...t.source.state, [1000, { version: 100 }]])),
      );
    });

    it('a data file the deletes name rewritten after the poll refuses the commit (DeleteConflict); the re-polled cycle lands', async () => {
      const t = await fresh('it_upfence_rewrite', 20);
      await t.produce(30);
      // Cycle 0 writes into an empty table: data only, no delete files (a rewrite refuses a table that has them).
      const c0 = await t.cycle('rewrite-0');
      assert.deepEqual(c0.poll.upsert?.deleteFiles, []);
      const written = c0.poll.files.map((w) => dataFileFromWire(w));
      assert.equal(written.length, 1);
      const old = written[0]!;

      await t.produce(30);
      const plan = await t.plan();
      const p1 = await t.poll(plan, 'rewrite-1');
      assert.deepEqual(p1.upsert!.referencedDataFiles, [old.filePath]);

      // A compaction-like rewrite meanwhile: the same rows (the same Parquet bytes) at a new path.
      const copy = { ...old, filePath: old.filePath.replace(/\.parquet$/, '-rewritten.parquet') };
      await t.deps.tables.io.write(copy.filePath, await t.deps.tables.io.read(old.filePath));
      const rewrite = await rewriteFiles(t.deps.tables.catalog, t.deps.tables.io, parseIdentifier(t.table), [old], [copy]);
      assert.equal(rewrite.table.metadata.snapshots.at(-1)!.summary.operation, 'replace');

      await assert.rejects(t.commit(t.commitInput(plan, 'rewrite-1', [p1])), isDeleteConflict(/no longer live/));
      assert.equal(
        (await t.deps.tables.load(t.table)).metadata['current-snapshot-id']?.toString(),
        rewrite.table.metadata['current-snapshot-id']?.toString(),
        'the refused commit added nothing',
      );

      const replan = await t.plan();
      assert.deepEqual(replan.startOffsets, plan.startOffsets);
      const p2 = await t.poll(replan, 'rewrite-2');
      // The re-polled deletes name the rewritten file, at the same positions.
      assert.deepEqual(p2.upsert!.referencedDataFiles, [copy.filePath]);
      assert.equal(p2.upsert!.deletedRows, p1.upsert!.deletedRows);
      const landed = await t.commit(t.commitInput(replan, 'rewrite-2', [p2]));
      assert.equal(landed.alreadyCommitted, false);
      assert.deepEqual(await duckRows(t), expectedRows(t.source.state));
    });
  });
