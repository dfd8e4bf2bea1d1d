/**
 * The cursor is bound to its topic (real stack). A recreated topic (offsets restart at 0), a topic
 * renamed in the config, or a second live ingest id used to make floe skip or re-read records
 * silently; each now stops with an error naming the table, the ingest id and what to do, and
 * `floe ingest reset` moves the cursor explicitly, exactly once.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { MockActivityEnvironment } from '@temporalio/testing';
import { Kafka, logLevel } from 'kafkajs';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { ensureStack } from '../../stack/stack';
import { scenarioConfig } from '../../demo/scenario';
import { loadConfig, findTable, type FloeConfig } from '../../config';
import { createActivities, createDeps, type Deps } from '../../activities';
import type { CyclePlan, PollResult } from '../../ingest/types';
import { readColumnValues } from '../../client/tables';
import { connectClient, ingestStatus, startIngest } from '../../client';
import { createWorker } from '../../workers';
import { orderEvents } from '../../demo/generator';
import { readCursor } from '../../table/cursor';
import { parseResetTarget, resetCursor, resolveResetTarget } from '../../ingest/reset';
import { setTimeout as sleep } from 'node:timers/promises';
import { createTopicsReady } from '../../demo/topics';

const env = new MockActivityEnvironment();

async function createTopicWith(
  cfg: FloeConfig,
  topic: string,
  count: number,
  recreate = false,
  skipEvents = recreate ? 1000 : 0,
): Promise<void> {
  const kafka = new Kafka({ clientId: 'test', brokers: cfg.kafka.brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  if (recreate) {
    await admin.deleteTopics({ topics: [topic] });
    for (let i = 0; i < 100 && (await admin.listTopics()).includes(topic); i++) await sleep(100);
    await sleep(500);
  }
  await createTopicsReady(admin, [{ topic, numPartitions: 1 }]);
  await admin.disconnect();
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const ev = orderEvents();
  for (let skip = skipEvents; skip > 0; skip--) ev.next(); // other event ids than the earlier topics'
  await producer.send({
    topic,
    messages: Array.from({ length: count }, () => {
      const e = ev.next().value!;
      return { key: String(e.order_id), value: JSON.stringify(e) };
    }),
  });
  await producer.disconnect();
}

/** One full cycle through the activities: load, poll everything, commit. */
async function cycle(deps: Deps, table: string, ingestId = 'main', force = false): Promise<void> {
  const acts = createActivities(deps);
  const plan = (await env.run(acts.loadCursor, { table, ingestId, force })) as CyclePlan;
  const r = (await env.run(acts.pollAndWrite, {
    table,
    ingestId,
    commitId: `c-${Date.now()}-${Math.random()}`,
    groupIndex: 0,
    partitions: plan.groups[0]!,
    startOffsets: plan.startOffsets,
    maxWaitMs: 2000,
    maxRecords: 10_000,
    maxBytes: 1 << 26,
    deadLetterFloor: plan.deadLetterFloor,
    ...(plan.topicId ? { topicId: plan.topicId } : {}), // as the workflow passes it (ingest-state.ts topicIdOf)
  })) as PollResult;
  await env.run(acts.commit, {
    table,
    ingestId,
    commitId: `commit-${Date.now()}-${Math.random()}`,
    baseSnapshotId: plan.baseSnapshotId,
    deadLetterFloor: plan.deadLetterFloor,
    deadLetterBaseCommitId: plan.deadLetterBaseCommitId,
    startOffsets: plan.startOffsets,
    endOffsets: r.endOffsets,
    files: r.files,
    deadLetterFiles: r.deadLetterFiles,
    records: r.records,
    deadLetters: r.deadLetters,
    ...(plan.topicId ? { topicId: plan.topicId } : {}),
  });
}

describe('the cursor is bound to its topic (real stack)', { timeout: 10 * 60_000 }, () => {
  let cfg: FloeConfig;
  let deps: Deps;
  let table: string;
  let topic: string;
  let path: string;

  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3']);
    const c = scenarioConfig(`it_curtopic_${Date.now().toString(36)}`, 1, '2s');
    ({ table, topic, path } = c);
    cfg = loadConfig(path);
    await createTopicWith(cfg, topic, 30);
    deps = await createDeps(cfg);
    // The first commit as floe made it before it read topic ids: a cursor without one. The first
    // test is the fallback for such cursors (and clusters without ids): the offsets' bounds.
    await cycle(Object.assign(Object.create(deps) as Deps, { topicIds: undefined }), table);
    assert.equal(readCursor((await deps.tables.load(table)).metadata, 'main').topicId ?? null, null);
  });
  after(async () => {
    await deps?.close();
  });

  it('a recreated topic (cursor above its end) fails the ingest visibly instead of skipping records; reset moves the cursor once', async () => {
    await createTopicWith(cfg, topic, 10, true);
    const acts = createActivities(deps);
    await assert.rejects(env.run(acts.loadCursor, { table, ingestId: 'main' }), (e: any) => {
      assert.equal(e.type, 'CursorAheadOfTopic');
      assert.equal(e.nonRetryable, true);
      assert.match(
        e.message,
        new RegExp(`cursor of ingest id "main" is at 0:30 but topic ${topic} partition 0 ends at 10.*floe ingest reset`),
      );
      return true;
    });

    // The workflow fails (no retry loop) and `ingest status` says failed, with the error.
    const { worker, close } = await createWorker(cfg);
    const fc = await connectClient(cfg);
    try {
      await worker.runUntil(async () => {
        await startIngest(fc, table);
        let s = await ingestStatus(fc, table);
        for (let i = 0; i < 150 && s?.state !== 'failed'; i++) {
          await sleep(200);
          s = await ingestStatus(fc, table);
        }
        assert.equal(s?.state, 'failed');
        assert.match(s!.error!, /^CursorAheadOfTopic: .*ends at 10/);
        assert.deepEqual(s!.cursor, { 0: '30' }, 'status shows the cursor the table holds');
      });
    } finally {
      await fc.close();
      await close();
    }

    const t = findTable(cfg, table);
    const target = await resolveResetTarget(deps.admin, topic, parseResetTarget('earliest'));
    const r1 = await resetCursor(deps.tables, t, 'main', target);
    assert.equal(r1.changed, true);
    assert.deepEqual(r1.before.offsets, { 0: '30' });
    const r2 = await resetCursor(deps.tables, t, 'main', target);
    assert.equal(r2.changed, false, 'a re-run of the same reset changes nothing');
    assert.deepEqual(readCursor((await deps.tables.load(table)).metadata, 'main').offsets, { 0: '0' });

    await cycle(deps, table);
    const ids = (await readColumnValues(deps.tables, table, 'event_id')).map(String);
    assert.equal(ids.length, 40, '30 rows of the old topic + 10 of the new');
    assert.equal(new Set(ids).size, 40);
  });

  // Issue 29 item 10: the offsets of a recreated topic restart at 0 and soon pass the old cursor;
  // only Kafka's topic id tells the two apart.
  it('a recreated topic that has passed the old cursor fails as TopicRecreated (plan and poll); reset binds the cursor to the new id', async () => {
    const acts = createActivities(deps);
    const before = readCursor((await deps.tables.load(table)).metadata, 'main');
    const oldId = await deps.topicIds!.of(topic);
    assert.match(oldId ?? '', /^[0-9a-f-]{36}$/, 'the stack broker (KRaft) has topic ids');
    assert.equal(before.topicId, oldId, "the cursor reset without an id took the topic's at its next commit");
    assert.deepEqual(before.offsets, { 0: '10' });
    const plan = (await env.run(acts.loadCursor, { table, ingestId: 'main' })) as CyclePlan;
    assert.equal(plan.topicId, oldId);

    await createTopicWith(cfg, topic, 25, true, 2000); // past the cursor's 10
    const newId = await deps.topicIds!.of(topic);
    assert.notEqual(newId, oldId);
    await assert.rejects(env.run(acts.loadCursor, { table, ingestId: 'main' }), (e: any) => {
      assert.equal(e.type, 'TopicRecreated');
      assert.equal(e.nonRetryable, true);
      assert.ok(e.message.includes(`belongs to topic ${topic} with id ${oldId}, and ${topic} now has id ${newId}`), e.message);
      assert.match(e.message, /floe ingest reset/);
      return true;
    });
    // A poll planned before the recreation (it happened while the poll read) keeps nothing.
    await assert.rejects(
      env.run(acts.pollAndWrite, {
        table,
        ingestId: 'main',
        commitId: `c-${Date.now()}`,
        groupIndex: 0,
        partitions: plan.groups[0]!,
        startOffsets: plan.startOffsets,
        maxWaitMs: 2000,
        maxRecords: 10_000,
        maxBytes: 1 << 26,
        deadLetterFloor: plan.deadLetterFloor,
        topicId: plan.topicId!,
      }),
      (e: any) => {
        assert.equal(e.type, 'TopicRecreated');
        assert.match(e.message, /deleted and created again during the poll/);
        return true;
      },
    );
    assert.equal((await readColumnValues(deps.tables, table, 'event_id')).length, 40, 'nothing of the new topic was read as the old');

    const t = findTable(cfg, table);
    const target = await resolveResetTarget(deps.admin, topic, parseResetTarget('earliest'));
    assert.equal((await resetCursor(deps.tables, t, 'main', target, newId)).changed, true);
    assert.equal((await resetCursor(deps.tables, t, 'main', target, newId)).changed, false, 'a re-run of the same reset changes nothing');
    assert.equal(readCursor((await deps.tables.load(table)).metadata, 'main').topicId, newId);
    await cycle(deps, table);
    const ids = (await readColumnValues(deps.tables, table, 'event_id')).map(String);
    assert.equal(ids.length, 65, '40 rows of the earlier topics + 25 of the recreated one, each once');
    assert.equal(new Set(ids).size, 65);
    assert.deepEqual(readCursor((await deps.tables.load(table)).metadata, 'main').offsets, { 0: '25' });
  });

  it('a topic renamed in the config stops with an error naming both topics', async () => {
    const doc = parseYaml(readFileSync(path, 'utf8')) as any;
    doc.tables[0].topic = `${topic}_renamed`;
    const renamedPath = path.replace(/\.yaml$/, '-renamed.yaml');
    writeFileSync(renamedPath, stringifyYaml(doc));
    const d2 = await createDeps(loadConfig(renamedPath));
    try {
      await assert.rejects(env.run(createActivities(d2).loadCursor, { table, ingestId: 'main' }), (e: any) => {
        assert.equal(e.type, 'CursorTopicMismatch');
        assert.match(e.message, new RegExp(`belongs to topic "${topic}", the config says "${topic}_renamed"`));
        return true;
      });
    } finally {
      await d2.close();
    }
  });

  it('a new live ingest id on a table that holds the topic is refused unless forced', async () => {
    const acts = createActivities(deps);
    await assert.rejects(env.run(acts.loadCursor, { table, ingestId: 'second' }), (e: any) => {
      assert.equal(e.type, 'IngestOverlap');
      assert.match(e.message, /already holds topic .* through ingest id "main"/);
      return true;
    });
    const plan = (await env.run(acts.loadCursor, { table, ingestId: 'second', force: true })) as CyclePlan;
    assert.equal(plan.baseSnapshotId, null);
  });
});
