/**
 * The one commit that changes a table's schema: a new current schema, planned on a base version.
 * Shared by config-declared columns (evolve.ts) and record-schema evolution (formats/union.ts).
 */
import { currentSchema, type NestedField, type Schema, type TableMetadata, type PendingCommit } from '../iceberg';

/**
 * The commit of a new current schema of `fields` (ids up to `lastColumnId`): it requires the
 * schema id and last column id it was planned on, so a racing schema change re-plans it.
 * `identifierFieldIds`: the new schema's identifier fields (else the current schema's are kept).
 */
export function newSchemaCommit(
  base: TableMetadata,
  fields: NestedField[],
  lastColumnId: number,
  identifierFieldIds?: number[],
): PendingCommit {
  const schema: Schema = {
    ...currentSchema(base),
    'schema-id': Math.max(...base.schemas.map((s) => s['schema-id'])) + 1,
    fields,
    ...(identifierFieldIds ? { 'identifier-field-ids': identifierFieldIds } : {}),
  };
  return {
    updates: [
      { action: 'add-schema', schema, 'last-column-id': lastColumnId },
      { action: 'set-current-schema', 'schema-id': -1 },
    ],
    requirements: [
      { type: 'assert-table-uuid', uuid: base['table-uuid'] },
      { type: 'assert-current-schema-id', 'current-schema-id': base['current-schema-id'] },
      { type: 'assert-last-assigned-field-id', 'last-assigned-field-id': base['last-column-id'] },
    ],
    attemptFiles: [],
    referencedFiles: [],
  };
}
