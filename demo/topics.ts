/**
 * Topic creation for the demo, the benchmarks and the tests: created and ready to produce to.
 * kafkajs' `createTopics({waitForLeaders: true})` waits only through LEADER_NOT_AVAILABLE, but a
 * KRaft broker may answer the metadata request right after a creation with
 * UNKNOWN_TOPIC_OR_PARTITION ("This server does not host this topic-partition"), and kafkajs then
 * gives up: a clean-clone test run failed there before producing a message. This waits through both.
 */
import type { Admin, ITopicConfig } from 'kafkajs';
import { setTimeout as sleep } from 'node:timers/promises';
import { isUnknownTopic } from '../ingest/kafka';

/** Creates `topics` (those that exist are left as they are) and returns once every partition has a leader. */
export async function createTopicsReady(admin: Admin, topics: ITopicConfig[], timeoutMs = 60_000): Promise<void> {
  try {
    await admin.createTopics({ topics, waitForLeaders: true });
  } catch (e) {
    if (!isUnknownTopic(e)) throw e;
  }
  const names = topics.map((t) => t.topic);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const md = await admin.fetchTopicMetadata({ topics: names });
      if (md.topics.length === names.length && md.topics.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0)))
        return;
    } catch (e) {
      if (!isUnknownTopic(e)) throw e;
    }
    if (Date.now() > deadline) throw new Error(`topics ${names.join(', ')}: no leader for every partition within ${timeoutMs} ms`);
    await sleep(200);
  }
}
