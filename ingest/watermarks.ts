/**
 * A topic's watermarks for an ingest cycle, through the worker's shared admin client, surviving
 * the deletion of topics. kafkajs keeps asking every metadata request of a client about each topic
 * that client was ever asked about, so one deleted topic fails the watermarks of all the others
 * (after ~30 s of its own retries), and asking about a missing topic is retried as long.
 *
 * So: first a metadata request for this topic alone (it fails at once when the topic is missing;
 * the cluster's topic list confirms): one topic of an entry of several topics then ends (TopicGone),
 * a one-topic ingest keeps retrying with an error that says so (its topic may be created or
 * restored; `ingest stop` ends it). Then the watermarks; UNKNOWN_TOPIC_OR_PARTITION there, for a
 * topic that exists, means another topic was deleted: a fresh admin client, and one more try.
 */
import { FailureType, nonRetryable } from '../contract';
import type { Deps } from './deps';
import { isUnknownTopic, topicWatermarks, type Watermarks } from './kafka';

/** `ofSeveral`: the topic is one of an entry of several topics (config `topics` / `topicPattern`). */
export async function ingestWatermarks(deps: Deps, topic: string, ofSeveral: boolean): Promise<Watermarks> {
  const admin = deps.admin;
  await requireTopic(deps, topic, ofSeveral);
  try {
    return await topicWatermarks(admin, topic);
  } catch (e) {
    if (!isUnknownTopic(e)) throw e;
    await requireTopic(deps, topic, ofSeveral);
    if (!deps.renewAdmin) throw e;
    await deps.renewAdmin(admin);
    return await topicWatermarks(deps.admin, topic);
  }
}

async function requireTopic(deps: Deps, topic: string, ofSeveral: boolean): Promise<void> {
  try {
    await deps.admin.fetchTopicMetadata({ topics: [topic] });
    return;
  } catch (e) {
    if (!isUnknownTopic(e) || (await deps.admin.listTopics()).includes(topic)) throw e;
  }
  const message = `topic ${topic} does not exist (deleted?)`;
  // The worker's kept readers of it would only keep asking for it.
  await deps.consumers.closeTopic(topic);
  if (ofSeveral) throw nonRetryable(FailureType.TopicGone, `${message}: its ingest ends; the table keeps its rows and its cursor`);
  throw new Error(`${message}: the ingest retries until it exists; ingest stop ends it`);
}
