/**
 * The topics an entry of several topics reads now (config `topics` / `topicPattern`), asked of
 * the cluster. Read-only; the ingest-topics workflow starts an ingest per topic from it.
 */
import { findTable, matchTopics } from '../config';
import { FailureType, nonRetryable } from '../contract';
import type { Deps } from './deps';

export interface EntryTopics {
  /** The entry's topics the cluster has, sorted. */
  topics: string[];
  /** Topics the entry lists that the cluster does not have (yet). */
  missing: string[];
  /** How long until the cluster is asked again (config `topicRefresh`). */
  refreshMs: number;
}

export async function listEntryTopics(deps: Deps, table: string): Promise<EntryTopics> {
  let t;
  try {
    t = findTable(deps.cfg, table);
  } catch (e) {
    throw nonRetryable(FailureType.ConfigError, (e as Error).message);
  }
  if (!t.topics) throw nonRetryable(FailureType.ConfigError, `table ${table} reads the one topic ${t.topic}: it has no topic set to list`);
  return { ...matchTopics(t, await deps.admin.listTopics()), refreshMs: t.topics.refreshMs };
}
