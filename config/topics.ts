/**
 * Entries of several topics (config `topics` / `topicPattern`): which topics of a cluster an entry
 * reads, and the single-topic entry each of them is ingested as. Pure functions.
 *
 * The protocol stays the one-topic protocol: topic X of entry E is ingested as E with `topic: X`
 * and ingest id `<E.ingestId>@X`, by a workflow of its own, so every table of E keeps one cursor
 * per topic (bound to that topic, fenced, idempotent, as before). `@` cannot occur in a configured
 * ingest id, so a derived id never collides with one.
 */
import { topicIngestId } from '../contract';
import { topicMatcher } from './table-entry';
import type { TableConfig } from './types';

export { topicIngestId };

/** Whether entry `t` (of several topics) reads `topic`. */
function entryReadsTopic(t: TableConfig, topic: string): boolean {
  const set = t.topics;
  if (!set) return topic === t.topic;
  if (set.names) return set.names.includes(topic);
  return !topic.startsWith('__') && topicMatcher(set.pattern!).test(topic);
}

/**
 * The topics of entry `t` among the cluster's `clusterTopics`, sorted; `missing`: listed topics
 * the cluster does not have (yet). Internal topics (`__consumer_offsets`, ...) never match a pattern.
 */
export function matchTopics(t: TableConfig, clusterTopics: readonly string[]): { topics: string[]; missing: string[] } {
  const have = new Set(clusterTopics);
  const topics = [...have].filter((x) => entryReadsTopic(t, x)).sort();
  const missing = (t.topics?.names ?? [t.topic]).filter((x) => !have.has(x) && t.topics?.pattern === undefined).sort();
  return { topics, missing };
}

/**
 * The single-topic entry topic `topic` of `t` is ingested as (its own ingest id, the topic's
 * default subjects); throws when `t` does not read `topic`. A single-topic entry is itself.
 */
export function topicEntry(t: TableConfig, topic: string): TableConfig {
  if (!t.topics) {
    if (topic !== t.topic) throw new Error(`table ${t.table} reads topic ${t.topic}, not ${topic}`);
    return t;
  }
  if (!entryReadsTopic(t, topic))
    throw new Error(`table ${t.table} reads ${topicSetLabel(t)}, which does not take topic ${JSON.stringify(topic)}`);
  const { topics: _set, ...single } = t;
  return { ...single, topic, ingestId: topicIngestId(t.ingestId, topic) };
}

/** How an entry names its topics in messages: `a, b` or `/regex/`. */
export function topicSetLabel(t: TableConfig): string {
  if (!t.topics) return `topic ${t.topic}`;
  return t.topics.names ? `topics ${t.topics.names.join(', ')}` : `the topics matching /${t.topics.pattern}/`;
}
