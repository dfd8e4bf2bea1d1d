/**
 * Fencing and idempotency of the commit activity, driven directly (MockActivityEnvironment) against
 * real Kafka, S3 and the SQLite catalog: two writers with the same ingest id start from the same
 * cursor; the second to commit is rejected as stale and adds nothing.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MockActivityEnvironment } from '@temporalio/testing';
import { Kafka, logLevel } from 'kafkajs';
import { ensureStack } from '../../stack/stack';
import { scenarioConfig } from '../../demo/scenario';
import { loadConfig, type FloeConfig } from '../../config';
import { createActivities, createDeps, type Deps } from '../../activities';
import type { CommitResult, CyclePlan, PollInput, PollResult } from '../../activities/types';
import { tableCommitRows } from '../../client/tables';
import { orderEvents } from '../../demo/generator';

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
    await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
    await admin.disconnect();
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const ev = orderEvents();
    await producer.send({ topic, messages: Array.from({ length: 50 }, () => { const e = ev.next().value!; return { key: String(e.order_id), value: JSON.stringify(e) }; }) });
    await producer.disconnect();
    deps = await createDeps(cfg);
  });
  after(async () => { await deps?.close(); });

  const poll = (acts: ReturnType<typeof createActivities>, plan: CyclePlan, commitId: string) => {
    const input: PollInput = {
      table, ingestId: 'main', commitId, groupIndex: 0, partitions: plan.groups[0]!, startOffsets: plan.startOffsets,
      maxWaitMs: 3000, maxRecords: 1000, maxBytes: 1 << 24,
    };
    return env.run(acts.pollAndWrite, input) as Promise<PollResult>;
  };

  it('the second writer from the same cursor is fenced and commits nothing; a retried commit is idempotent', async () => {
    const acts = createActivities(deps);
    const plan = (await env.run(acts.loadCursor, { table, ingestId: "main" })) as CyclePlan;
    assert.equal(plan.baseSnapshotId, null);
    assert.deepEqual(plan.startOffsets, { 0: '0' });
    const a = await poll(acts, plan, 'commit-a');
    const b = await poll(acts, plan, 'commit-b');
    assert.equal(a.records, 50);
    assert.equal(b.records, 50);
    const commitOf = (id: string, r: typeof a) => ({
      table, ingestId: 'main', commitId: id, baseSnapshotId: plan.baseSnapshotId, startOffsets: plan.startOffsets,
      deadLetterFloor: plan.deadLetterFloor, deadLetterBaseCommitId: plan.deadLetterBaseCommitId,
      endOffsets: r.endOffsets, files: r.files, deadLetterFiles: r.deadLetterFiles, records: r.records, deadLetters: r.deadLetters,
    });
    const first = (await env.run(acts.commit, commitOf("commit-b", b))) as CommitResult;
    assert.equal(first.alreadyCommitted, false);
    assert.equal(first.totalRecords, '50');

    await assert.rejects(env.run(acts.commit, commitOf('commit-a', a)), (e: any) => {
      assert.equal(e.type, 'StaleCursor');
      assert.equal(e.nonRetryable, true);
      assert.match(e.message, /expected cursor snapshot none, found \d+/);
      return true;
    });
    // A retry of the commit that landed finds it instead of landing twice.
    const again = (await env.run(acts.commit, commitOf("commit-b", b))) as CommitResult;
    assert.equal(again.alreadyCommitted, true);
    assert.equal(again.snapshotId, first.snapshotId);

    const commits = await tableCommitRows(cfg, table);
    assert.deepEqual(commits.map((c) => c.commit_id), ['commit-b']);
    assert.equal(commits.at(-1)!.total_rows, '50');

    const next = (await env.run(acts.loadCursor, { table, ingestId: "main" })) as CyclePlan;
    assert.equal(next.baseSnapshotId, first.snapshotId);
    assert.deepEqual(next.startOffsets, { 0: '50' });
  });
});
