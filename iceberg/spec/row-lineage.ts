/**
 * Row lineage metadata columns (spec "Row Lineage", format v3): `_row_id` and
 * `_last_updated_sequence_number`, with their reserved field ids (spec "Reserved Field IDs",
 * Java's MetadataColumns.ROW_ID / LAST_UPDATED_SEQUENCE_NUMBER). A data file may materialize them
 * as optional long columns; a null (or absent) value is inherited: `_row_id` is the file's
 * first_row_id plus the row's position in the file, `_last_updated_sequence_number` the file's
 * data sequence number (both null when the file has no first_row_id).
 */
import type { NestedField, Schema } from './types';

export const ROW_ID_FIELD_ID = 2147483540;
export const LAST_UPDATED_SEQUENCE_NUMBER_FIELD_ID = 2147483539;

export const ROW_LINEAGE_FIELDS: readonly NestedField[] = Object.freeze([
  { id: ROW_ID_FIELD_ID, name: '_row_id', required: false, type: 'long', doc: 'Implicit row ID that is automatically assigned' },
  {
    id: LAST_UPDATED_SEQUENCE_NUMBER_FIELD_ID,
    name: '_last_updated_sequence_number',
    required: false,
    type: 'long',
    doc: 'Sequence number when the row was last updated',
  },
]);

/** Whether a field id is one of the two row lineage metadata columns. */
export const isRowLineageFieldId = (id: number | undefined): boolean =>
  id === ROW_ID_FIELD_ID || id === LAST_UPDATED_SEQUENCE_NUMBER_FIELD_ID;

/**
 * `schema` with the two lineage columns appended (a table schema never holds them): the write
 * schema of a rewrite that keeps its rows' lineage (compaction of a v3 table, as Spark's
 * rewrite_data_files).
 */
export function withRowLineageFields(schema: Schema): Schema {
  return { ...schema, fields: [...schema.fields.filter((f) => !isRowLineageFieldId(f.id)), ...ROW_LINEAGE_FIELDS] };
}
