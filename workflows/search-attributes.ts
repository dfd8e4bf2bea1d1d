/**
 * Typed keys of floe's search attributes (contract SEARCH_ATTRIBUTES) and the pairs every start,
 * child and Schedule carries. Children are given theirs explicitly: they do not inherit the parent's.
 */
import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';
import type { FloeKind } from '../contract';

export const TABLE_ATTRIBUTE = defineSearchAttributeKey('FloeTable', SearchAttributeType.KEYWORD);
export const KIND_ATTRIBUTE = defineSearchAttributeKey('FloeKind', SearchAttributeType.KEYWORD);
export const INGEST_ID_ATTRIBUTE = defineSearchAttributeKey('FloeIngestId', SearchAttributeType.KEYWORD);

export function floeSearchAttributes(table: string, kind: FloeKind, ingestId?: string): SearchAttributePair[] {
  return [
    { key: TABLE_ATTRIBUTE, value: table },
    { key: KIND_ATTRIBUTE, value: kind },
    ...(ingestId !== undefined ? [{ key: INGEST_ID_ATTRIBUTE, value: ingestId }] : []),
  ];
}
