/**
 * A topic's watermarks for an ingest cycle, through the worker's shared admin client, surviving
 * the deletion of topics. kafkajs keeps asking every metadata request of a client about each topic
 * that client was ever asked about, so one deleted topic fails the watermarks of all the others
 * (after ~30 s of its own retries), and asking about a missing topic is retried as long.
 *
 * So: first a metadata request for this topic alone (it fails at once when the topic is missing;
 * the cluster's topic list confirms). A topic this ingest read before (it holds a cursor, or the
 * cycle was planned on it, or it is one topic of an entry of several, started because it existed)
 * was deleted: TopicGone, non-retryable (one topic of several ends stopped, a one-topic ingest
 * fails naming it). A new ingest's topic may not exist yet: retried, saying so. Then the
 * watermarks; UNKNOWN_TOPIC_OR_PARTITION there, for a topic that exists, means another topic was
 * deleted: a fresh admin client, and one more try.
 */
import { FailureType, nonRetryable } from '../contract';
import type { Deps } from './deps';
import { isUnknownTopic, topicWatermarks, type Watermarks } from './kafka';

/** What a missing topic means to the caller: `deleted` (it was read before) or `not-yet` (a new ingest waits for it). */
export type MissingTopic = 'deleted' | 'not-yet';

export async function ingestWatermarks(deps: Deps, topic: string, missing: MissingTopic): Promise<Watermarks> {
  const admin = deps.admin;
  await requireTopic(deps, topic, missing);
  try {
    return await topicWatermarks(admin, topic);
  } catch (e) {
    if (!isUnknownTopic(e)) throw e;
    await requireTopic(deps, topic, missing);
    if (!deps.renewAdmin) throw e;
    await deps.renewAdmin(admin);
    return await topicWatermarks(deps.admin, topic);
  }
}

async function requireTopic(deps: Deps, topic: string, missing: MissingTopic): Promise<void> {
  try {
    await deps.admin.fetchTopicMetadata({ topics: [topic] });
    return;
  } catch (e) {
    if (!isUnknownTopic(e) || (await deps.admin.listTopics()).includes(topic)) throw e;
  }
  if (missing === 'not-yet') throw new Error(`topic ${topic} does not exist (yet): the ingest retries until it does; ingest stop ends it`);
  // The worker's kept readers of it would only keep asking for it.
  await deps.consumers.closeTopic(topic);
  throw nonRetryable(
    FailureType.TopicGone,
    `topic ${topic} does not exist any more (deleted?): the table keeps its rows and this ingest's cursor; a topic created again under that name starts below the cursor (floe ingest reset moves it)`,
  );
}
