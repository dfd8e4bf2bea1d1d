/**
 * Manifest files (spec: "Manifests"): Avro container files of manifest_entry records, v2 schema,
 * every field carrying its spec `field-id`, plus the header metadata Java and PyIceberg write
 * (`schema`, `schema-id`, `partition-spec`, `partition-spec-id`, `format-version`, `content`).
 *
 * Reading resolves fields by field id, not name (Java names field 3 `sequence_number`, PyIceberg
 * `data_sequence_number`), accepts v1 files, and applies sequence-number inheritance.
 */
import { IcebergError } from '../errors';
import type { FileIO } from '../io/file-io';
import {
  type AvroCodec,
  type AvroSchemaJson,
  type AvroSchemaObject,
  avroSafeName,
  fieldNamesById,
  fieldSchemaById,
  primitiveToAvro,
  openAvroFile,
  type AvroFieldJson,
  unwrapOptional,
  writeAvroFile,
} from './avro';
import { type PrimitiveValue, compareValues, decimalFromBytes, decimalToBytes, parseDecimalType, toBytes } from './conversions';
import { stringifyIcebergJson } from './metadata';
import { partitionType } from './partition';
import {
  type DataFile,
  DataFileContent,
  type FieldSummary,
  type FileFormat,
  ManifestContent,
  type ManifestEntry,
  ManifestEntryStatus,
  type ManifestFile,
  type PartitionField,
  type PartitionRecord,
  type PartitionSpec,
  type PartitionValue,
  type PrimitiveType,
  type Schema,
} from './types';

/** Marks a sequence number the manifest list writer assigns (the commit's), as PyIceberg's -1. */
export const UNASSIGNED_SEQ = -1n;

const opt = (name: string, type: AvroSchemaJson, id: number, doc?: string): object => ({
  name,
  type: ['null', type],
  default: null,
  ...(doc ? { doc } : {}),
  'field-id': id,
});
const req = (name: string, type: AvroSchemaJson, id: number, doc?: string): object => ({
  name,
  type,
  ...(doc ? { doc } : {}),
  'field-id': id,
});
const intMap = (keyId: number, valueId: number, value: 'long' | 'bytes'): AvroSchemaObject => ({
  type: 'array',
  logicalType: 'map',
  items: { type: 'record', name: `k${keyId}_v${valueId}`, fields: [req('key', 'int', keyId), req('value', value, valueId)] },
});

/**
 * The partition struct (r102) for a spec: optional fields named (Avro-safe) after partition fields.
 * Two fields of one fixed-backed type (identity and truncate of one decimal column, two uuid
 * columns) would define the Avro type `decimal_10_2` / `uuid_fixed` twice, which Avro refuses:
 * every commit of such a table failed (found by the fuzzer). The later ones get names of their
 * own (`decimal_10_2_1001`: the partition field id), rather than naming the first definition as
 * Java's Avro writes it, because PyIceberg 0.12 cannot read a type referenced by name; readers
 * match fields by id and never by a fixed's name.
 */
export function partitionAvroSchema(spec: PartitionSpec, schema: Schema): AvroSchemaObject {
  const st = partitionType(spec, schema);
  const defined = new Set<string>();
  return {
    type: 'record',
    name: 'r102',
    fields: st.fields.map((f) => {
      let t: AvroSchemaJson = primitiveToAvro(f.type as PrimitiveType);
      if (typeof t === 'object' && !Array.isArray(t) && typeof t.name === 'string') {
        const name = defined.has(t.name) ? `${t.name}_${f.id}` : t.name;
        t = { ...t, name };
        defined.add(name);
      }
      return opt(avroSafeName(f.name), t, f.id);
    }),
  };
}

/** data_file fields v3 adds after sort_order_id (Java's V3Metadata.fileType, same order and docs). */
const V3_DATA_FILE_FIELDS = [
  opt('first_row_id', 'long', 142, 'The _row_id for the first row in the data file'),
  opt('referenced_data_file', 'string', 143, 'Fully qualified location (URI with FS scheme) of a data file that all deletes reference'),
  opt('content_offset', 'long', 144, 'The offset in the file where the content starts'),
  opt('content_size_in_bytes', 'long', 145, 'The length of referenced content stored in the file'),
];

/**
 * The v2 manifest_entry Avro schema (spec "Manifests" table; names and docs as Java writes them);
 * `formatVersion` 3 adds first_row_id, referenced_data_file, content_offset and content_size_in_bytes.
 */
export function manifestEntrySchema(partition: AvroSchemaObject, formatVersion: 2 | 3 = 2): AvroSchemaObject {
  const schema: AvroSchemaObject = {
    type: 'record',
    name: 'manifest_entry',
    fields: [
      req('status', 'int', 0),
      opt('snapshot_id', 'long', 1),
      opt('sequence_number', 'long', 3),
      opt('file_sequence_number', 'long', 4),
      req(
        'data_file',
        {
          type: 'record',
          name: 'r2',
          fields: [
            req('content', 'int', 134, 'Contents of the file: 0=data, 1=position deletes, 2=equality deletes'),
            req('file_path', 'string', 100, 'Location URI with FS scheme'),
            req('file_format', 'string', 101, 'File format name: avro, orc, or parquet'),
            req('partition', partition, 102, 'Partition data tuple, schema based on the partition spec'),
            req('record_count', 'long', 103, 'Number of records in the file'),
            req('file_size_in_bytes', 'long', 104, 'Total file size in bytes'),
            opt('column_sizes', intMap(117, 118, 'long'), 108, 'Map of column id to total size on disk'),
            opt('value_counts', intMap(119, 120, 'long'), 109, 'Map of column id to total count, including null and NaN'),
            opt('null_value_counts', intMap(121, 122, 'long'), 110, 'Map of column id to null value count'),
            opt('nan_value_counts', intMap(138, 139, 'long'), 137, 'Map of column id to number of NaN values in the column'),
            opt('lower_bounds', intMap(126, 127, 'bytes'), 125, 'Map of column id to lower bound'),
            opt('upper_bounds', intMap(129, 130, 'bytes'), 128, 'Map of column id to upper bound'),
            opt('key_metadata', 'bytes', 131, 'Encryption key metadata blob'),
            opt('split_offsets', { type: 'array', items: 'long', 'element-id': 133 }, 132, 'Splittable offsets'),
            opt('equality_ids', { type: 'array', items: 'int', 'element-id': 136 }, 135, 'Equality comparison field IDs'),
            opt('sort_order_id', 'int', 140, 'Sort order ID'),
            ...(formatVersion >= 3 ? V3_DATA_FILE_FIELDS : []),
          ],
        },
        2,
      ),
    ],
  };
  return schema;
}

// ---------- value conversion between PartitionValue and Avro ----------
const buf = (u: Uint8Array): Buffer => Buffer.from(u.buffer, u.byteOffset, u.byteLength);
const u8 = (b: Buffer): Uint8Array => new Uint8Array(b); // copy: never alias a decoded block
const checkedNumber = (what: string, v: bigint | number): number => {
  const n = typeof v === 'bigint' ? Number(v) : v;
  if (!Number.isSafeInteger(n)) throw IcebergError.mismatch('DataInvalid', what, 'a count <= 2^53-1', v, false);
  return n;
};

function partitionValueToAvro(type: PrimitiveType, v: PartitionValue, avro: AvroSchemaJson): unknown {
  if (v === null) return null;
  switch (type) {
    case 'long':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
    case 'timestamp_ns':
    case 'timestamptz_ns':
      return typeof v === 'bigint' ? v : BigInt(v as number);
    case 'binary':
      return buf(v as Uint8Array);
    case 'uuid':
      return buf(toBytes('uuid', v as Uint8Array));
    default: {
      if (parseDecimalType(type)) {
        // fixed(N): sign-extend the minimal two's-complement bytes to the fixed size
        const size = (avro as unknown as { size: number }).size;
        const u = decimalFromBytes(v as Uint8Array);
        const out = Buffer.alloc(size, u < 0n ? 0xff : 0);
        const min = decimalToBytes(u);
        if (min.length > size)
          throw IcebergError.mismatch('DataInvalid', `decimal partition value for ${type}`, `<= ${size} bytes`, min.length, false);
        out.set(min, size - min.length);
        return out;
      }
      if (v instanceof Uint8Array) return buf(v);
      return v;
    }
  }
}

function partitionValueFromAvro(avro: AvroSchemaJson, v: unknown): PartitionValue {
  if (v === null || v === undefined) return null;
  if (Buffer.isBuffer(v)) {
    const s = unwrapOptional(avro) as { logicalType?: string };
    if (typeof s === 'object' && s.logicalType === 'decimal') return decimalToBytes(decimalFromBytes(v));
    return u8(v);
  }
  return v as PartitionValue;
}

// ---------- write ----------
export interface ManifestWriteArgs {
  location: string;
  spec: PartitionSpec;
  /** the table schema the spec binds to (written into the header, drives partition types) */
  schema: Schema;
  /** the snapshot writing this manifest: `added_snapshot_id` in the manifest list */
  snapshotId: bigint;
  /** any iterable (a generator): consumed once, lazily, so entries never need to be held all at once */
  entries: Iterable<ManifestEntry>;
  content?: ManifestContent;
  codec?: AvroCodec;
  /** the table's format version: 3 writes the v3 data_file fields and `format-version: 3` (default 2) */
  formatVersion?: 2 | 3;
}

const mapToAvro = <V, W>(m: Map<number, V> | undefined, f: (v: V) => W): Array<{ key: number; value: W }> | null =>
  m === undefined ? null : [...m].map(([key, value]) => ({ key, value: f(value) }));

/** Files and rows by entry status, and the lowest data sequence number of the live entries (the manifest list's counts). */
class EntryCounts {
  added = 0;
  existing = 0;
  deleted = 0;
  addedRows = 0;
  existingRows = 0;
  deletedRows = 0;
  minSeq: bigint | undefined;

  /** Counts `e`; only ADDED entries may inherit the data sequence number (a null one). */
  count(e: ManifestEntry): void {
    const df = e.dataFile;
    if (e.status === ManifestEntryStatus.Added) {
      this.added++;
      this.addedRows += df.recordCount;
    } else if (e.status === ManifestEntryStatus.Existing) {
      this.existing++;
      this.existingRows += df.recordCount;
    } else {
      this.deleted++;
      this.deletedRows += df.recordCount;
    }
    if (
      e.status !== ManifestEntryStatus.Deleted &&
      e.sequenceNumber !== null &&
      (this.minSeq === undefined || e.sequenceNumber < this.minSeq)
    )
      this.minSeq = e.sequenceNumber;
    if (e.sequenceNumber === null && e.status !== ManifestEntryStatus.Added) {
      throw new IcebergError('DataInvalid', `manifest entry for ${df.filePath}: only ADDED entries may inherit the data sequence number`);
    }
  }
}

/**
 * Data files' partition tuples as Avro records, and per partition field what they held: nulls,
 * NaNs, the lowest and highest value (the manifest list's field summaries).
 */
class PartitionSummaries {
  private readonly fields: Array<{ name: string; type: PrimitiveType; avroName: string; avro: AvroSchemaJson }>;
  private readonly stats: Array<{ containsNull: boolean; containsNan: boolean; min?: PartitionValue; max?: PartitionValue }>;

  constructor(spec: PartitionSpec, schema: Schema, partSchema: AvroSchemaObject) {
    const partFields = partSchema['fields'] as Array<{ name: string; type: AvroSchemaJson }>;
    this.fields = partitionType(spec, schema).fields.map((f, i) => ({
      name: f.name,
      type: f.type as PrimitiveType,
      avroName: partFields[i]!.name,
      // the full definition: a later field of the same named type only names it in the schema
      avro: primitiveToAvro(f.type as PrimitiveType),
    }));
    this.stats = this.fields.map(() => ({ containsNull: false, containsNan: false }));
  }

  /** `df`'s partition tuple as the manifest's Avro record, its values observed for the summaries. */
  record(df: DataFile): Record<string, unknown> {
    const partition: Record<string, unknown> = {};
    this.fields.forEach((f, i) => {
      const v = df.partition[f.name] ?? null;
      const st = this.stats[i]!;
      if (v === null) st.containsNull = true;
      else if (typeof v === 'number' && Number.isNaN(v)) st.containsNan = true;
      else {
        if (st.min === undefined || compareValues(f.type, v, st.min as PrimitiveValue) < 0) st.min = v;
        if (st.max === undefined || compareValues(f.type, v, st.max as PrimitiveValue) > 0) st.max = v;
      }
      partition[f.avroName] = partitionValueToAvro(f.type, v, f.avro);
    });
    return partition;
  }

  /** One summary per partition field of every tuple recorded; NaNs are summarized for float and double only. */
  summaries(): FieldSummary[] {
    return this.fields.map((f, i) => {
      const st = this.stats[i]!;
      const t = f.type;
      const s: FieldSummary = { containsNull: st.containsNull };
      if (t === 'float' || t === 'double') s.containsNan = st.containsNan;
      if (st.min !== undefined) s.lowerBound = toBytes(t, st.min as never);
      if (st.max !== undefined) s.upperBound = toBytes(t, st.max as never);
      return s;
    });
  }
}

/** A manifest entry as its Avro record (spec: manifest_entry, data_file); v3 adds fields 142-145. */
function entryRecord(e: ManifestEntry, partition: Record<string, unknown>, formatVersion: 2 | 3): unknown {
  const df = e.dataFile;
  const r = {
    status: e.status,
    snapshot_id: e.snapshotId,
    sequence_number: e.sequenceNumber,
    file_sequence_number: e.fileSequenceNumber,
    data_file: {
      content: df.content,
      file_path: df.filePath,
      file_format: df.fileFormat,
      partition,
      record_count: BigInt(df.recordCount),
      file_size_in_bytes: BigInt(df.fileSizeInBytes),
      column_sizes: mapToAvro(df.columnSizes, BigInt),
      value_counts: mapToAvro(df.valueCounts, BigInt),
      null_value_counts: mapToAvro(df.nullValueCounts, BigInt),
      nan_value_counts: mapToAvro(df.nanValueCounts, BigInt),
      lower_bounds: mapToAvro(df.lowerBounds, buf),
      upper_bounds: mapToAvro(df.upperBounds, buf),
      key_metadata: null,
      split_offsets: df.splitOffsets ? df.splitOffsets.map(BigInt) : null,
      equality_ids: df.equalityIds ?? null,
      sort_order_id: df.sortOrderId ?? null,
    } as Record<string, unknown>,
  };
  if (formatVersion >= 3) {
    // spec "First Row ID Inheritance": delete files never carry one
    r.data_file['first_row_id'] = df.content === DataFileContent.Data ? (df.firstRowId ?? null) : null;
    r.data_file['referenced_data_file'] = df.referencedDataFile ?? null;
    r.data_file['content_offset'] = df.contentOffset === undefined ? null : BigInt(df.contentOffset);
    r.data_file['content_size_in_bytes'] = df.contentSizeInBytes === undefined ? null : BigInt(df.contentSizeInBytes);
  }
  return r;
}

/** The Avro file header's metadata Java and PyIceberg write. */
function manifestHeader(a: ManifestWriteArgs, content: ManifestContent): Record<string, string> {
  return {
    schema: stringifyIcebergJson(a.schema),
    'schema-id': String(a.schema['schema-id']),
    'partition-spec': stringifyIcebergJson(a.spec.fields),
    'partition-spec-id': String(a.spec['spec-id']),
    'format-version': String(a.formatVersion ?? 2),
    content: content === ManifestContent.Data ? 'data' : 'deletes',
  };
}

/** Encodes a manifest; returns the bytes and its manifest-list entry (sequence numbers may be UNASSIGNED_SEQ). */
export function encodeManifest(a: ManifestWriteArgs): { bytes: Uint8Array; manifest: ManifestFile } {
  const partSchema = partitionAvroSchema(a.spec, a.schema);
  const partitions = new PartitionSummaries(a.spec, a.schema, partSchema);
  const counts = new EntryCounts();
  function* records(): Generator<unknown> {
    for (const e of a.entries) {
      const df = e.dataFile;
      if (df.specId !== a.spec['spec-id']) {
        throw IcebergError.mismatch('DataInvalid', `data file ${df.filePath} spec id`, a.spec['spec-id'], df.specId, false);
      }
      counts.count(e);
      yield entryRecord(e, partitions.record(df), formatVersion);
    }
  }

  const content = a.content ?? ManifestContent.Data;
  const formatVersion = a.formatVersion ?? 2;
  const bytes = writeAvroFile(manifestEntrySchema(partSchema, formatVersion), records(), manifestHeader(a, content), a.codec ?? 'deflate');
  return {
    bytes,
    manifest: {
      manifestPath: a.location,
      manifestLength: bytes.length,
      partitionSpecId: a.spec['spec-id'],
      content,
      sequenceNumber: UNASSIGNED_SEQ,
      minSequenceNumber: counts.minSeq ?? UNASSIGNED_SEQ,
      addedSnapshotId: a.snapshotId,
      addedFilesCount: counts.added,
      existingFilesCount: counts.existing,
      deletedFilesCount: counts.deleted,
      addedRowsCount: counts.addedRows,
      existingRowsCount: counts.existingRows,
      deletedRowsCount: counts.deletedRows,
      partitions: partitions.summaries(),
    },
  };
}

/** Writes a manifest through `io`; concurrency: none (a fresh, uniquely named file). */
export async function writeManifest(io: FileIO, a: ManifestWriteArgs): Promise<ManifestFile> {
  const { bytes, manifest } = encodeManifest(a);
  await io.write(a.location, bytes);
  return manifest;
}

// ---------- read ----------
export interface DecodedManifest {
  /** entries as stored (null snapshot id / sequence numbers = inherit) */
  entries: ManifestEntry[];
  metadata: Record<string, string>;
  formatVersion: number;
  specId: number | undefined;
  partitionFields: PartitionField[] | undefined;
}

/** A manifest opened for reading: its header now, its entries decoded one at a time. */
export interface ManifestSource extends Omit<DecodedManifest, 'entries'> {
  /** entries as stored, decoded lazily (each call starts over) */
  entries(): Generator<ManifestEntry>;
}

export interface ManifestReadOptions {
  /**
   * false: leave out the column metrics (sizes, value/null/NaN counts, bounds), key metadata,
   * split offsets and equality ids; they are skipped undecoded. What planning, liveness checks
   * and reachability need is a few fields per file; a file's metrics are most of its entry
   * (10,000 entries: ~70 MB of JS objects with them). Default true.
   */
  metrics?: boolean;
}

/** data_file fields (by id) a `metrics: false` read skips. */
const METRICS_FIELD_IDS = new Set([108, 109, 110, 137, 125, 128, 131, 132, 135]);

/** The writer schema of a manifest with the metrics fields of its data_file left out. */
function metricsFreeSchema(schema: AvroSchemaJson): AvroSchemaJson {
  const entry = schema as AvroSchemaObject & { fields: Array<AvroFieldJson> };
  return {
    ...entry,
    fields: entry.fields.map((f) => {
      if (f['field-id'] !== 2) return f;
      const df = unwrapOptional(f.type) as AvroSchemaObject & { fields: Array<AvroFieldJson> };
      return { ...f, type: { ...df, fields: df.fields.filter((x) => !METRICS_FIELD_IDS.has(Number(x['field-id']))) } };
    }),
  } as AvroSchemaJson;
}

type Rec = Record<string, unknown>;

/** Decodes a manifest written by any v1/v2 writer, resolving fields by id. */
export function decodeManifest(
  bytes: Uint8Array,
  location = '<manifest>',
  specIdHint?: number,
  opts: ManifestReadOptions = {},
): DecodedManifest {
  const m = openManifest(bytes, location, specIdHint, opts);
  return { ...m, entries: [...m.entries()] };
}

/** Opens a manifest written by any v1/v2 writer (fields resolved by id); entries come lazily. */
export function openManifest(
  bytes: Uint8Array,
  location = '<manifest>',
  specIdHint?: number,
  opts: ManifestReadOptions = {},
): ManifestSource {
  const file = openAvroFile(bytes, location);
  const md = file.metadata;
  const formatVersion = Number(md['format-version'] ?? '1');
  const partitionFields = md['partition-spec'] ? (JSON.parse(md['partition-spec']) as PartitionField[]) : undefined;
  const specId = md['partition-spec-id'] !== undefined ? Number(md['partition-spec-id']) : specIdHint;

  const eNames = fieldNamesById(file.schema);
  const dfSchema = fieldSchemaById(file.schema, 2);
  if (!dfSchema) throw new IcebergError('DataInvalid', `${location}: manifest schema has no data_file (field id 2)`);
  const dNames = fieldNamesById(dfSchema);
  const partSchema = fieldSchemaById(dfSchema, 102);
  const pNames = partSchema ? fieldNamesById(partSchema) : new Map<number, string>();
  // A field of a named type defined by an earlier field only names it (as Java's Avro writes it).
  const pNamed = new Map<string, AvroSchemaJson>();
  for (const fid of pNames.keys()) {
    const t = fieldSchemaById(partSchema!, fid);
    if (typeof t === 'object' && !Array.isArray(t) && typeof t.name === 'string') pNamed.set(t.name, t);
  }
  const partitionFieldSchema = (fid: number): AvroSchemaJson => {
    const t = fieldSchemaById(partSchema!, fid)!;
    return typeof t === 'string' ? (pNamed.get(t) ?? t) : t;
  };
  const nameOfPartitionField = new Map((partitionFields ?? []).map((f) => [f['field-id'], f.name]));
  const readerSchema = opts.metrics === false ? metricsFreeSchema(file.schema) : undefined;

  const get = (r: Rec, names: Map<number, string>, id: number): unknown => {
    const n = names.get(id);
    return n === undefined ? undefined : r[n];
  };
  const numMap = (v: unknown, what: string): Map<number, number> | undefined =>
    v === null || v === undefined
      ? undefined
      : new Map((v as Array<{ key: number; value: bigint }>).map((kv) => [kv.key, checkedNumber(what, kv.value)]));
  const bytesMap = (v: unknown): Map<number, Uint8Array> | undefined =>
    v === null || v === undefined ? undefined : new Map((v as Array<{ key: number; value: Buffer }>).map((kv) => [kv.key, u8(kv.value)]));
  const optBig = (v: unknown): bigint | null => (v === null || v === undefined ? null : BigInt(v as bigint));

  const toEntry = (raw: unknown): ManifestEntry => {
    const r = raw as Rec;
    const d = get(r, eNames, 2) as Rec;
    const p = (get(d, dNames, 102) ?? {}) as Rec;
    const partition: PartitionRecord = {};
    for (const [fid, avroName] of pNames) {
      const name = nameOfPartitionField.get(fid) ?? avroName;
      partition[name] = partitionValueFromAvro(partitionFieldSchema(fid), p[avroName]);
    }
    const path = get(d, dNames, 100) as string;
    const df: DataFile = {
      content: (get(d, dNames, 134) as DataFileContent | undefined) ?? DataFileContent.Data,
      filePath: path,
      fileFormat: String(get(d, dNames, 101)).toUpperCase() as FileFormat,
      specId: specId ?? 0,
      partition,
      recordCount: checkedNumber(`${path} record_count`, get(d, dNames, 103) as bigint),
      fileSizeInBytes: checkedNumber(`${path} file_size_in_bytes`, get(d, dNames, 104) as bigint),
    };
    const set = <K extends keyof DataFile>(k: K, v: DataFile[K] | undefined): void => {
      if (v !== undefined) df[k] = v;
    };
    set('columnSizes', numMap(get(d, dNames, 108), `${path} column_sizes`));
    set('valueCounts', numMap(get(d, dNames, 109), `${path} value_counts`));
    set('nullValueCounts', numMap(get(d, dNames, 110), `${path} null_value_counts`));
    set('nanValueCounts', numMap(get(d, dNames, 137), `${path} nan_value_counts`));
    set('lowerBounds', bytesMap(get(d, dNames, 125)));
    set('upperBounds', bytesMap(get(d, dNames, 128)));
    const so = get(d, dNames, 132);
    if (so)
      set(
        'splitOffsets',
        (so as bigint[]).map((x) => checkedNumber(`${path} split_offsets`, x)),
      );
    const eq = get(d, dNames, 135);
    if (eq) set('equalityIds', (eq as Array<number | bigint>).map(Number));
    const sid = get(d, dNames, 140);
    if (sid !== null && sid !== undefined) set('sortOrderId', sid as number);
    const fri = optBig(get(d, dNames, 142));
    if (fri !== null) df.firstRowId = fri;
    const ref = get(d, dNames, 143);
    if (typeof ref === 'string') df.referencedDataFile = ref;
    const off = get(d, dNames, 144);
    if (off !== null && off !== undefined) df.contentOffset = checkedNumber(`${path} content_offset`, off as bigint);
    const len = get(d, dNames, 145);
    if (len !== null && len !== undefined) df.contentSizeInBytes = checkedNumber(`${path} content_size_in_bytes`, len as bigint);
    return {
      status: get(r, eNames, 0) as ManifestEntryStatus,
      snapshotId: optBig(get(r, eNames, 1)),
      sequenceNumber: optBig(get(r, eNames, 3)),
      fileSequenceNumber: optBig(get(r, eNames, 4)),
      dataFile: df,
    };
  };
  function* entries(): Generator<ManifestEntry> {
    for (const raw of file.records(readerSchema)) yield toEntry(raw);
  }
  return { metadata: md, formatVersion, specId, partitionFields, entries };
}

/**
 * Spec "Sequence Number Inheritance": a null snapshot id inherits the manifest's
 * added_snapshot_id; null sequence numbers inherit the manifest's sequence number for ADDED
 * entries (and for v1 manifests, whose sequence number is 0).
 */
export function inheritFromManifest(e: ManifestEntry, m: ManifestFile): ManifestEntry {
  const inherit = e.status === ManifestEntryStatus.Added || m.sequenceNumber === 0n;
  return {
    ...e,
    snapshotId: e.snapshotId ?? m.addedSnapshotId,
    sequenceNumber: e.sequenceNumber ?? (inherit ? m.sequenceNumber : null),
    fileSequenceNumber: e.fileSequenceNumber ?? (inherit ? m.sequenceNumber : null),
    dataFile: { ...e.dataFile, specId: m.partitionSpecId },
  };
}

/**
 * Spec "First Row ID Inheritance" for the entries of one manifest, in file order: a live data
 * file without first_row_id gets the manifest's first_row_id plus the record counts of the live
 * files before it that had none (Java's ManifestReader.idAssigner). A manifest without one
 * (v2, or written before an upgrade to v3) leaves every entry as it is.
 */
export function firstRowIdInheritance(m: ManifestFile): (e: ManifestEntry) => ManifestEntry {
  if (m.firstRowId === undefined || m.content !== ManifestContent.Data) return (e) => e;
  let next = m.firstRowId;
  return (e) => {
    if (e.status === ManifestEntryStatus.Deleted || e.dataFile.firstRowId !== undefined) return e;
    const firstRowId = next;
    next += BigInt(e.dataFile.recordCount);
    return { ...e, dataFile: { ...e.dataFile, firstRowId } };
  };
}

/** Reads a manifest's entries with inheritance applied (sequence numbers, first row ids); DELETED entries only when asked. */
export async function readManifest(
  io: FileIO,
  m: ManifestFile,
  opts: { includeDeleted?: boolean } & ManifestReadOptions = {},
): Promise<ManifestEntry[]> {
  const out: ManifestEntry[] = [];
  const rowIds = firstRowIdInheritance(m);
  for (const e0 of openManifest(await io.read(m.manifestPath), m.manifestPath, m.partitionSpecId, opts).entries()) {
    const e = rowIds(e0);
    if (opts.includeDeleted || e.status !== ManifestEntryStatus.Deleted) out.push(inheritFromManifest(e, m));
  }
  return out;
}
