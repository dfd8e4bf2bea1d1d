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

const env = new MockActivityEnvironment();

async function createTopicWith(cfg: FloeConfig, topic: string, count: number, recreate = false): Promise<void> {
  const kafka = new Kafka({ clientId: 'test', brokers: cfg.kafka.brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  if (recreate) {
    await admin.deleteTopics({ topics: [topic] });
    for (let i = 0; i < 100 && (await admin.listTopics()).includes(topic); i++) await sleep(100);
    await sleep(500);
  }
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
  await admin.disconnect();
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const ev = orderEvents();
  for (let skip = recreate ? 1000 : 0; skip > 0; skip--) ev.next(); // other event ids than the first topic's
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
    await cycle(deps, table);
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
