/**
 * Fencing and idempotency of the commit activity, driven directly (MockActivityEnvironment) against
 * real Kafka, S3 and the SQLite catalog: two writers with the same ingest id start from the same
 * cursor; the second to commit is rejected as stale and adds nothing. Rows and dead letters are
 * read back by DuckDB, not by floe's reader.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MockActivityEnvironment } from '@temporalio/testing';
import { Kafka, logLevel } from 'kafkajs';
import { ensureStack } from '../../stack/stack';
import { scenarioConfig } from '../../demo/scenario';
import { loadConfig, type FloeConfig } from '../../config';
import { createActivities, createDeps, type Deps } from '../../activities';
import type { CommitResult, CyclePlan, PollInput, PollResult } from '../../ingest/types';
import { tableCommitRows } from '../../client/tables';
import { runPythonJson } from '../../stack/python';
import { orderEvents } from '../../demo/generator';
import { createTopicsReady } from '../../demo/topics';

describe('commit fencing and idempotency (real stack)', { timeout: 10 * 60_000 }, () => {
  let cfg: FloeConfig;
  let deps: Deps;
  let table: string;
  let topic: string;
  const env = new MockActivityEnvironment();

  before(async () => {
    await ensureStack(['kafka', 's3']);
    const c = scenarioConfig(`it_fence_${Date.now().toString(36)}`, 1, '2s');
    cfg = loadConfig(c.path);
    table = c.table;
    topic = c.topic;
    const kafka = new Kafka({ clientId: 'test', brokers: cfg.kafka.brokers, logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await createTopicsReady(admin, [{ topic, numPartitions: 1 }]);
    await admin.disconnect();
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const ev = orderEvents();
    await producer.send({
      topic,
      messages: Array.from({ length: 50 }, () => {
        const e = ev.next().value!;
        return { key: String(e.order_id), value: JSON.stringify(e) };
      }),
    });
    await producer.disconnect();
    deps = await createDeps(cfg);
  });
  after(async () => {
    await deps?.close();
  });

  const poll = (acts: ReturnType<typeof createActivities>, plan: CyclePlan, commitId: string) => {
    const input: PollInput = {
      table,
      ingestId: 'main',
      commitId,
      groupIndex: 0,
      partitions: plan.groups[0]!,
      startOffsets: plan.startOffsets,
      maxWaitMs: 3000,
      maxRecords: 1000,
      maxBytes: 1 << 24,
    };
    return env.run(acts.pollAndWrite, input) as Promise<PollResult>;
  };

  it('the second writer from the same cursor is fenced and commits nothing; a retried commit is idempotent', async () => {
    const acts = createActivities(deps);
    const plan = (await env.run(acts.loadCursor, { table, ingestId: 'main' })) as CyclePlan;
    assert.equal(plan.baseSnapshotId, null);
    assert.deepEqual(plan.startOffsets, { 0: '0' });
    const a = await poll(acts, plan, 'commit-a');
    const b = await poll(acts, plan, 'commit-b');
    assert.equal(a.records, 50);
    assert.equal(b.records, 50);
    const commitOf = (id: string, r: typeof a) => ({
      table,
      ingestId: 'main',
      commitId: id,
      baseSnapshotId: plan.baseSnapshotId,
      startOffsets: plan.startOffsets,
      deadLetterFloor: plan.deadLetterFloor,
      deadLetterBaseCommitId: plan.deadLetterBaseCommitId,
      endOffsets: r.endOffsets,
      files: r.files,
      deadLetterFiles: r.deadLetterFiles,
      records: r.records,
      deadLetters: r.deadLetters,
    });
    const first = (await env.run(acts.commit, commitOf('commit-b', b))) as CommitResult;
    assert.equal(first.alreadyCommitted, false);
    assert.equal(first.totalRecords, '50');

    await assert.rejects(env.run(acts.commit, commitOf('commit-a', a)), (e: any) => {
      assert.equal(e.type, 'StaleCursor');
      assert.equal(e.nonRetryable, true);
      assert.match(e.message, /expected cursor snapshot none, found \d+/);
      return true;
    });
    // A retry of the commit that landed finds it instead of landing twice.
    const again = (await env.run(acts.commit, commitOf('commit-b', b))) as CommitResult;
    assert.equal(again.alreadyCommitted, true);
    assert.equal(again.snapshotId, first.snapshotId);

    const commits = await tableCommitRows(cfg, table);
    assert.deepEqual(
      commits.map((c) => c.commit_id),
      ['commit-b'],
    );
    assert.equal(commits.at(-1)!.total_rows, '50');

    const next = (await env.run(acts.loadCursor, { table, ingestId: 'main' })) as CyclePlan;
    assert.equal(next.baseSnapshotId, first.snapshotId);
    assert.deepEqual(next.startOffsets, { 0: '50' });
  });

  /** A fresh 1-partition topic: 40 good events, then 20 more where every 5th is not JSON (4 dead letters). */
  async function topicWithDeadLetters(name: string): Promise<{ table: string; cfg: FloeConfig; deps: Deps }> {
    const c = scenarioConfig(name, 1, '2s');
    const dcfg = loadConfig(c.path);
    const kafka = new Kafka({ clientId: 'test', brokers: dcfg.kafka.brokers, logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await createTopicsReady(admin, [{ topic: c.topic, numPartitions: 1 }]);
    await admin.disconnect();
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const ev = orderEvents();
    await producer.send({
      topic: c.topic,
      messages: Array.from({ length: 60 }, (_, i) => {
        const e = ev.next().value!;
        return { key: String(e.order_id), value: i >= 40 && i % 5 === 0 ? `not json ${i}` : JSON.stringify(e) };
      }),
    });
    await producer.disconnect();
    return { table: c.table, cfg: dcfg, deps: await createDeps(dcfg) };
  }

  const pollOf = (acts: ReturnType<typeof createActivities>, t: string, plan: CyclePlan, commitId: string, maxRecords = 1000) =>
    env.run(acts.pollAndWrite, {
      table: t,
      ingestId: 'main',
      commitId,
      groupIndex: 0,
      partitions: plan.groups[0]!,
      startOffsets: plan.startOffsets,
      maxWaitMs: 3000,
      maxRecords,
      maxBytes: 1 << 24,
      deadLetterFloor: plan.deadLetterFloor,
    } satisfies PollInput) as Promise<PollResult>;
  const commitInput = (t: string, plan: CyclePlan, id: string, r: PollResult) => ({
    table: t,
    ingestId: 'main',
    commitId: id,
    baseSnapshotId: plan.baseSnapshotId,
    startOffsets: plan.startOffsets,
    deadLetterFloor: plan.deadLetterFloor,
    deadLetterBaseCommitId: plan.deadLetterBaseCommitId,
    endOffsets: r.endOffsets,
    files: r.files,
    deadLetterFiles: r.deadLetterFiles,
    records: r.records,
    deadLetters: r.deadLetters,
  });
  /** One column of a table as DuckDB's iceberg_scan reads it, as strings. */
  const duckColumn = async (d: Deps, t: string, column: string): Promise<string[]> =>
    runPythonJson<string[]>(
      'import json, sys\nfrom floe_duckdb import connect\nprint(json.dumps([str(r[0]) for r in connect().sql(sys.argv[1]).fetchall()]))',
      [`SELECT "${column}" FROM iceberg_scan('${(await d.tables.load(t)).metadataLocation}')`],
      { timeoutMs: 120_000 },
    );
  const deadLetterOffsets = async (d: Deps, t: string) =>
    (await duckColumn(d, `${t}_dead_letters`, 'offset')).sort((a, b) => Number(a) - Number(b));

  it('dead letters of two racing writers land once: the dead-letter commit is fenced by its own cursor', async () => {
    const x = await topicWithDeadLetters(`it_fence_dl_${Date.now().toString(36)}`);
    try {
      const acts = createActivities(x.deps);
      const plan = (await env.run(acts.loadCursor, { table: x.table, ingestId: 'main' })) as CyclePlan;
      const [a, b] = [await pollOf(acts, x.table, plan, 'dl-a'), await pollOf(acts, x.table, plan, 'dl-b')];
      assert.equal(a.deadLetters, 4);
      assert.equal(b.deadLetters, 4);
      // Both commits at once: each commits dead letters before its data, so both may pass a check of
      // the main table's cursor before either lands; exactly one may win.
      const outcomes = await Promise.allSettled([
        env.run(acts.commit, commitInput(x.table, plan, 'dl-a', a)),
        env.run(acts.commit, commitInput(x.table, plan, 'dl-b', b)),
      ]);
      assert.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 1, JSON.stringify(outcomes.map((o) => o.status)));
      const lost = outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult;
      assert.equal(lost.reason.type, 'StaleCursor');
      assert.deepEqual(await deadLetterOffsets(x.deps, x.table), ['40', '45', '50', '55']);
      assert.equal((await duckColumn(x.deps, x.table, 'event_id')).length, 56);
    } finally {
      await x.deps.close();
    }
  });

  it('dead letters recorded by a batch whose data commit was fenced are not recorded again when the range is re-read', async () => {
    const x = await topicWithDeadLetters(`it_fence_dl2_${Date.now().toString(36)}`);
    try {
      const acts = createActivities(x.deps);
      const plan = (await env.run(acts.loadCursor, { table: x.table, ingestId: 'main' })) as CyclePlan;
      const a = await pollOf(acts, x.table, plan, 'dl2-a'); // all 60: 56 rows, 4 dead letters
      const b = await pollOf(acts, x.table, plan, 'dl2-b', 30); // first 30: no dead letters
      assert.equal(b.deadLetters, 0);
      await env.run(acts.commit, commitInput(x.table, plan, 'dl2-b', b));
      // A's dead letters land (their own cursor had not moved), its data commit is fenced.
      await assert.rejects(env.run(acts.commit, commitInput(x.table, plan, 'dl2-a', a)), (e: any) => e.type === 'StaleCursor');
      assert.deepEqual(await deadLetterOffsets(x.deps, x.table), ['40', '45', '50', '55']);
      // The next cycle re-reads 30..60 and skips the dead letters already recorded.
      const plan2 = (await env.run(acts.loadCursor, { table: x.table, ingestId: 'main' })) as CyclePlan;
      assert.deepEqual(plan2.startOffsets, { 0: '30' });
      assert.deepEqual(plan2.deadLetterFloor, { 0: '60' });
      const c = await pollOf(acts, x.table, plan2, 'dl2-c');
      assert.equal(c.records, 26);
      assert.equal(c.deadLetters, 0);
      await env.run(acts.commit, commitInput(x.table, plan2, 'dl2-c', c));
      assert.deepEqual(await deadLetterOffsets(x.deps, x.table), ['40', '45', '50', '55']);
      const ids = await duckColumn(x.deps, x.table, 'event_id');
      assert.equal(ids.length, 56);
      assert.equal(new Set(ids).size, 56);
    } finally {
      await x.deps.close();
    }
  });
});
