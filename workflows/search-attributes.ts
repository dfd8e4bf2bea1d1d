/**
 * Typed keys of floe's search attributes (contract SEARCH_ATTRIBUTES) and the pairs every start,
 * child and Schedule carries. Children are given theirs explicitly: they do not inherit the parent's.
 */
import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';
import type { FloeKind } from '../contract';

export const FLOE_TABLE = defineSearchAttributeKey('FloeTable', SearchAttributeType.KEYWORD);
export const FLOE_KIND = defineSearchAttributeKey('FloeKind', SearchAttributeType.KEYWORD);
export const FLOE_INGEST_ID = defineSearchAttributeKey('FloeIngestId', SearchAttributeType.KEYWORD);

export function floeSearchAttributes(table: string, kind: FloeKind, ingestId?: string): SearchAttributePair[] {
  return [
    { key: FLOE_TABLE, value: table },
    { key: FLOE_KIND, value: kind },
    ...(ingestId !== undefined ? [{ key: FLOE_INGEST_ID, value: ingestId }] : []),
  ];
}
