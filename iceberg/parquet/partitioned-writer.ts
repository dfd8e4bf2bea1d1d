/**
 * Rows -> data files of a table: split by the default partition spec, one rolling Parquet writer
 * per partition under `<location>/data/<partition path>/`, with the table's write properties.
 */
import type { FileIO } from '../io/file-io';
import { currentSchema, defaultSpec } from '../spec/metadata';
import { partitionKey, partitionPath, partitionRecord } from '../spec/partition';
import type { DataFile, PartitionRecord, TableMetadata } from '../spec/types';
import type { Row } from './columns';
import { writeDataFile } from './rolling-writer';
import { parquetWriteOptionsFromProperties } from './writer';

export interface PartitionedWriteOptions {
  /** File name (no directory) of the n-th file written by this call. */
  fileName: (n: number) => string;
  targetFileSizeBytes?: number;
}

export async function writePartitionedRows(
  io: FileIO,
  metadata: TableMetadata,
  rows: readonly Row[],
  opts: PartitionedWriteOptions,
): Promise<DataFile[]> {
  const schema = currentSchema(metadata);
  const spec = defaultSpec(metadata);
  const groups = new Map<string, { partition: PartitionRecord; rows: Row[] }>();
  for (const row of rows) {
    const partition = partitionRecord(spec, schema, row);
    const key = partitionKey(partition);
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { partition, rows: [] }));
    g.rows.push(row);
  }
  const options = parquetWriteOptionsFromProperties(schema, metadata.properties);
  const out: DataFile[] = [];
  let n = 0;
  for (const { partition, rows: part } of groups.values()) {
    const dir = spec.fields.length ? `${metadata.location}/data/${partitionPath(spec, schema, partition)}` : `${metadata.location}/data`;
    const files = await writeDataFile(io, {
      ...options,
      schema,
      rows: part,
      ...(opts.targetFileSizeBytes === undefined ? {} : { targetFileSizeBytes: opts.targetFileSizeBytes }),
      location: () => `${dir}/${opts.fileName(n++)}`,
    });
    for (const f of files) out.push({ ...f, specId: spec['spec-id'], partition });
  }
  return out;
}
