/**
 * A topic's watermarks for an ingest cycle, through the worker's shared admin client, surviving
 * the deletion of topics. kafkajs keeps asking every metadata request of a client about each topic
 * that client was ever asked about, so one deleted topic fails the watermarks of all the others
 * (UNKNOWN_TOPIC_OR_PARTITION; the client retries little, deps.ts, so that comes within seconds).
 *
 * Only then does the cluster's topic list decide. This topic is gone: if this ingest read it before
 * (it holds a cursor, the cycle was planned on it, or it is one topic of an entry of several,
 * started because it existed) it was deleted: TopicGone, non-retryable (one topic of several ends
 * stopped, a one-topic ingest fails naming it); a new ingest's topic may not exist yet: retried,
 * saying so. This topic is there: another topic's deletion poisoned the client: a fresh one, and
 * one more try. A cycle whose topics are all there pays nothing extra.
 */
import { FailureType, nonRetryable } from '../contract';
import type { Deps } from './deps';
import { isUnknownTopic, topicWatermarks, type Watermarks } from './kafka';

/** What a missing topic means to the caller: `deleted` (it was read before) or `not-yet` (a new ingest waits for it). */
export type MissingTopic = 'deleted' | 'not-yet';

export async function ingestWatermarks(deps: Deps, topic: string, missing: MissingTopic): Promise<Watermarks> {
  const admin = deps.admin;
  try {
    return await topicWatermarks(admin, topic);
  } catch (e) {
    if (!isUnknownTopic(e)) throw e;
    if (!(await admin.listTopics()).includes(topic)) return topicMissing(deps, topic, missing);
    if (!deps.renewAdmin) throw e;
    await deps.renewAdmin(admin);
    return await topicWatermarks(deps.admin, topic);
  }
}

async function topicMissing(deps: Deps, topic: string, missing: MissingTopic): Promise<never> {
  if (missing === 'not-yet') throw new Error(`topic ${topic} does not exist (yet): the ingest retries until it does; ingest stop ends it`);
  // The worker's kept readers of it would only keep asking for it.
  await deps.consumers.closeTopic(topic);
  throw nonRetryable(
    FailureType.TopicGone,
    `topic ${topic} does not exist any more (deleted?): the table keeps its rows and this ingest's cursor; a topic created again under that name starts below the cursor (floe ingest reset moves it)`,
  );
}
