/**
 * Table metadata JSON (spec: "Table Metadata" and "Table Metadata Fields").
 *
 * Every 64-bit field is parsed to `bigint` and written back as a plain JSON number via
 * lossless-json, so snapshot ids above 2^53 (Java/PyIceberg pick random 63-bit ids) survive a
 * round trip bit-exactly. Which fields are 64-bit is decided by key name (LONG_KEYS): the spec's
 * JSON has no key that is a long in one place and an int in another.
 */
import { isLosslessNumber, parse, stringify } from 'lossless-json';
import { IcebergError } from '../errors';
import type { IcebergType, NestedField, PartitionSpec, Schema, Snapshot, SnapshotRef, SortOrder, TableMetadata } from './types';

/** JSON keys whose values are 64-bit longs in table metadata and REST payloads. */
export const LONG_KEYS: ReadonlySet<string> = new Set([
  'snapshot-id',
  'parent-snapshot-id',
  'current-snapshot-id',
  'sequence-number',
  'last-sequence-number',
  'timestamp-ms',
  'last-updated-ms',
  'max-snapshot-age-ms',
  'max-ref-age-ms',
  'snapshot-ids',
  'file-size-in-bytes',
  'file-footer-size-in-bytes',
  'next-row-id',
  'added-rows',
  'first-row-id',
]);

export const PARTITION_FIELD_ID_START = 1000;
export const MAIN_BRANCH = 'main';

const BIG_MARK = '\u0000big:';

/**
 * Rewrites integer literals of 16+ digits (the only ones that can exceed 2^53) outside strings
 * into marker strings, so the native JSON.parse (5-10x faster than lossless-json on large
 * metadata) never rounds them. Returns undefined when the text could already contain a marker.
 */
function quoteBigIntegers(text: string): string | undefined {
  if (text.includes('\\u0000')) return undefined;
  let out = '';
  let last = 0;
  let i = 0;
  const n = text.length;
  const isDigit = (c: number): boolean => c >= 48 && c <= 57;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 34) {
      // a string: skip it, honouring escapes
      i++;
      while (i < n) {
        const d = text.charCodeAt(i);
        if (d === 92) i += 2;
        else {
          i++;
          if (d === 34) break;
        }
      }
      continue;
    }
    if (c === 45 || isDigit(c)) {
      let j = c === 45 ? i + 1 : i;
      while (j < n && isDigit(text.charCodeAt(j))) j++;
      const intEnd = j;
      const next = text.charCodeAt(j);
      if (next === 46 || next === 101 || next === 69) {
        // fraction / exponent: not an integer
        while (j < n && /[0-9.eE+-]/.test(text[j]!)) j++;
        i = j;
        continue;
      }
      if (intEnd - i - (c === 45 ? 1 : 0) >= 16) {
        out += `${text.slice(last, i)}"\\u0000big:${text.slice(i, intEnd)}"`; // JSON escape of BIG_MARK
        last = intEnd;
      }
      i = intEnd;
      continue;
    }
    i++;
  }
  return last === 0 ? text : out + text.slice(last);
}

/**
 * Parses Iceberg JSON (metadata.json or a REST body) with LONG_KEYS as bigint. Other integers
 * stay `number` when safe and become `bigint` otherwise (never silently rounded).
 */
export function parseIcebergJson(text: string): unknown {
  const quoted = quoteBigIntegers(text);
  const raw = quoted === undefined ? parse(text) : JSON.parse(quoted);
  const convert = (v: unknown, key: string | undefined): unknown => {
    let s: string | undefined;
    if (typeof v === 'number') {
      if (key !== undefined && LONG_KEYS.has(key)) {
        if (!Number.isInteger(v)) throw new IcebergError('DataInvalid', `"${key}" must be an integer, found ${v}`);
        return BigInt(v); // < 16 digits, so the double is exact
      }
      return v;
    }
    if (typeof v === 'string' && v.startsWith(BIG_MARK)) s = v.slice(BIG_MARK.length);
    else if (isLosslessNumber(v)) s = v.toString();
    if (s !== undefined) {
      const isInt = /^-?\d+$/.test(s);
      if (key !== undefined && LONG_KEYS.has(key)) {
        if (!isInt) throw new IcebergError('DataInvalid', `"${key}" must be an integer, found ${s}`);
        return BigInt(s);
      }
      if (isInt && !Number.isSafeInteger(Number(s))) return BigInt(s);
      return Number(s);
    }
    if (Array.isArray(v)) return v.map((x) => convert(x, key));
    if (v !== null && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v as Record<string, unknown>)) out[k] = convert(x, k);
      return out;
    }
    return v;
  };
  return convert(raw, undefined);
}

/**
 * Stringifies with bigint written as plain JSON numbers (lossless). Native JSON.stringify with
 * bigints tagged then untagged; falls back to lossless-json if a string already held the tag.
 */
export function stringifyIcebergJson(value: unknown, space?: number): string {
  let tagged = 0;
  const s = JSON.stringify(
    value,
    (_k, v: unknown) => {
      if (typeof v === 'bigint') {
        tagged++;
        return `${BIG_MARK}${v}`;
      }
      return v;
    },
    space,
  );
  if (s === undefined) throw new IcebergError('Unexpected', 'value is not JSON-serializable');
  let untagged = 0;
  const out = s.replace(/"\\u0000big:(-?\d+)"/g, (_m, digits: string) => {
    untagged++;
    return digits;
  });
  if (untagged === tagged) return out;
  const slow = stringify(value, null, space);
  if (slow === undefined) throw new IcebergError('Unexpected', 'value is not JSON-serializable');
  return slow;
}

const req = <T>(o: Record<string, unknown>, key: string, what = 'table metadata'): T => {
  const v = o[key];
  if (v === undefined || v === null) throw new IcebergError('DataInvalid', `${what}: missing required field "${key}"`);
  return v as T;
};
const big = (v: unknown): bigint => (typeof v === 'bigint' ? v : BigInt(v as number));

/**
 * Reads metadata.json as written by Java, PyIceberg or us. Format v2 natively; v1 files are
 * normalised (legacy `schema` / `partition-spec`, missing ids and logs get their spec defaults) so
 * they can be scanned; committing to a v1 table requires `upgrade-format-version` first.
 * Unknown top-level keys are kept and written back, so a newer writer's fields are not dropped.
 */
export function parseTableMetadata(json: string): TableMetadata {
  const o = parseIcebergJson(json) as Record<string, unknown>;
  if (o === null || typeof o !== 'object' || Array.isArray(o))
    throw new IcebergError('DataInvalid', 'table metadata must be a JSON object');
  const formatVersion = Number(req<number>(o, 'format-version'));
  if (formatVersion !== 1 && formatVersion !== 2) {
    throw IcebergError.mismatch('FeatureUnsupported', 'table metadata format-version', '1 or 2', formatVersion, false);
  }

  let schemas = o['schemas'] as Schema[] | undefined;
  if (!schemas || schemas.length === 0) {
    const legacy = req<Schema>(o, 'schema');
    schemas = [{ ...legacy, 'schema-id': legacy['schema-id'] ?? 0 }];
  }
  const currentSchemaId = (o['current-schema-id'] as number | undefined) ?? schemas[0]!['schema-id'];

  let specs = o['partition-specs'] as PartitionSpec[] | undefined;
  if (!specs || specs.length === 0) {
    const legacy = (o['partition-spec'] as Array<Partial<PartitionSpec['fields'][number]>> | undefined) ?? [];
    specs = [
      {
        'spec-id': 0,
        fields: legacy.map((f, i) => ({
          'source-id': f['source-id']!,
          'field-id': f['field-id'] ?? PARTITION_FIELD_ID_START + i,
          name: f.name!,
          transform: f.transform!,
        })),
      },
    ];
  }
  const maxPartitionId = Math.max(PARTITION_FIELD_ID_START - 1, ...specs.flatMap((s) => s.fields.map((f) => f['field-id'])));

  const snapshots = ((o['snapshots'] as Array<Record<string, unknown>> | undefined) ?? []).map((s): Snapshot => {
    const snap: Snapshot = {
      ...(s as object),
      'snapshot-id': big(req(s, 'snapshot-id', 'snapshot')),
      'sequence-number': s['sequence-number'] === undefined ? 0n : big(s['sequence-number']),
      'timestamp-ms': big(req(s, 'timestamp-ms', 'snapshot')),
      'manifest-list': s['manifest-list'] as string,
      summary: (s['summary'] as Snapshot['summary'] | undefined) ?? { operation: 'append' },
    };
    if (s['parent-snapshot-id'] === undefined || s['parent-snapshot-id'] === null) delete snap['parent-snapshot-id'];
    return snap;
  });

  let currentSnapshotId = o['current-snapshot-id'] as bigint | null | undefined;
  if (currentSnapshotId === undefined || currentSnapshotId === -1n) currentSnapshotId = null;

  const refs = { ...((o['refs'] as Record<string, SnapshotRef> | undefined) ?? {}) };
  // spec: "If the refs map does not have an entry for main, a main branch ref will be created
  // with current-snapshot-id" (v1 and early v2 writers have no refs).
  if (refs[MAIN_BRANCH] === undefined && currentSnapshotId !== null) {
    refs[MAIN_BRANCH] = { 'snapshot-id': currentSnapshotId, type: 'branch' };
  }

  const m: Record<string, unknown> = { ...o };
  delete m['schema'];
  delete m['partition-spec'];
  Object.assign(m, {
    'format-version': formatVersion,
    'table-uuid': (o['table-uuid'] as string | undefined) ?? '',
    location: req<string>(o, 'location'),
    'last-sequence-number': o['last-sequence-number'] === undefined ? 0n : big(o['last-sequence-number']),
    'last-updated-ms': big(req(o, 'last-updated-ms')),
    'last-column-id': req<number>(o, 'last-column-id'),
    schemas,
    'current-schema-id': currentSchemaId,
    'partition-specs': specs,
    'default-spec-id': (o['default-spec-id'] as number | undefined) ?? specs[0]!['spec-id'],
    'last-partition-id': (o['last-partition-id'] as number | undefined) ?? maxPartitionId,
    properties: (o['properties'] as Record<string, string> | undefined) ?? {},
    'current-snapshot-id': currentSnapshotId,
    snapshots,
    'snapshot-log': (o['snapshot-log'] as unknown[] | undefined) ?? [],
    'metadata-log': (o['metadata-log'] as unknown[] | undefined) ?? [],
    'sort-orders': (o['sort-orders'] as SortOrder[] | undefined) ?? [{ 'order-id': 0, fields: [] }],
    'default-sort-order-id': (o['default-sort-order-id'] as number | undefined) ?? 0,
    refs,
  });
  return m as unknown as TableMetadata;
}

const KNOWN_KEYS = [
  'format-version',
  'table-uuid',
  'location',
  'last-sequence-number',
  'last-updated-ms',
  'last-column-id',
  'schemas',
  'current-schema-id',
  'partition-specs',
  'default-spec-id',
  'last-partition-id',
  'properties',
  'current-snapshot-id',
  'refs',
  'snapshots',
  'statistics',
  'partition-statistics',
  'snapshot-log',
  'metadata-log',
  'sort-orders',
  'default-sort-order-id',
] as const;

/**
 * Writes spec-valid metadata JSON. `current-snapshot-id` is written as -1 when there is none,
 * as Java does, because older Java readers reject null. v1 tables also get the legacy `schema`
 * and `partition-spec` fields, which v1 readers require.
 */
export function serializeTableMetadata(m: TableMetadata): string {
  const src = m as unknown as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const k of KNOWN_KEYS) {
    const v = src[k];
    if (k === 'current-snapshot-id') out[k] = v === undefined || v === null ? -1 : v;
    else if (v !== undefined) out[k] = v;
    if (k === 'last-column-id' && Number(m['format-version']) === 1) {
      out['schema'] = m.schemas.find((s) => s['schema-id'] === m['current-schema-id']);
    }
    if (k === 'last-partition-id' && Number(m['format-version']) === 1) {
      out['partition-spec'] = m['partition-specs'].find((s) => s['spec-id'] === m['default-spec-id'])?.fields ?? [];
    }
  }
  for (const [k, v] of Object.entries(src)) {
    if (!(KNOWN_KEYS as readonly string[]).includes(k) && v !== undefined) out[k] = v;
  }
  return stringifyIcebergJson(out);
}

/** `${location}/metadata/00001-<uuid>.metadata.json` (the Java/PyIceberg naming). */
export const metadataFileLocation = (location: string, version: number, uuid: string): string =>
  `${location.replace(/\/+$/, '')}/metadata/${String(version).padStart(5, '0')}-${uuid}.metadata.json`;

/** Parses the version out of a metadata file name written by `metadataFileLocation` (or -1). */
export const parseMetadataVersion = (metadataLocation: string): number => {
  const m = /\/(\d+)-[^/]*\.metadata\.json$/.exec(metadataLocation);
  return m ? Number(m[1]) : -1;
};

// ---------- create table (spec: fresh ids, as Java's TableMetadata.newTableMetadata) ----------

/**
 * Reassigns field ids 1..n the way Java's TypeUtil.assignFreshIds does: all fields of a struct
 * first, then their nested types depth-first. Returns the schema and an old-id -> new-id map.
 */
export function assignFreshSchemaIds(schema: Schema, schemaId = 0): { schema: Schema; idMap: Map<number, number>; lastColumnId: number } {
  let next = 0;
  const idMap = new Map<number, number>();
  const fresh = (t: IcebergType): IcebergType => {
    if (typeof t === 'string') return t;
    if (t.type === 'struct') {
      const ids = t.fields.map((f) => {
        const id = ++next;
        idMap.set(f.id, id);
        return id;
      });
      return { type: 'struct', fields: t.fields.map((f, i): NestedField => ({ ...f, id: ids[i]!, type: fresh(f.type) })) };
    }
    if (t.type === 'list') {
      const id = ++next;
      idMap.set(t['element-id'], id);
      return { ...t, 'element-id': id, element: fresh(t.element) };
    }
    const kid = ++next;
    idMap.set(t['key-id'], kid);
    const vid = ++next;
    idMap.set(t['value-id'], vid);
    return { ...t, 'key-id': kid, 'value-id': vid, key: fresh(t.key), value: fresh(t.value) };
  };
  const struct = fresh({ type: 'struct', fields: schema.fields }) as { fields: NestedField[] };
  const out: Schema = { type: 'struct', 'schema-id': schemaId, fields: struct.fields };
  if (schema['identifier-field-ids']?.length) {
    out['identifier-field-ids'] = schema['identifier-field-ids'].map((id) => idMap.get(id) ?? id);
  }
  return { schema: out, idMap, lastColumnId: next };
}

export interface NewTableMetadataArgs {
  location: string;
  schema: Schema;
  spec?: PartitionSpec;
  sortOrder?: SortOrder;
  properties?: Record<string, string>;
  tableUuid: string;
  nowMs?: bigint;
}

/**
 * Initial v2 metadata for create-table: fresh column ids from 1, partition field ids from 1000
 * (spec-id 0), sort order id 1 when sorted (0 is reserved for unsorted), no snapshots.
 * Source ids in `spec` / `sortOrder` refer to the ids in the given `schema`.
 */
export function newTableMetadata(a: NewTableMetadataArgs): TableMetadata {
  const { schema, idMap, lastColumnId } = assignFreshSchemaIds(a.schema, 0);
  const remap = (sourceId: number): number => {
    const id = idMap.get(sourceId);
    if (id === undefined) throw new IcebergError('DataInvalid', `partition/sort source-id ${sourceId} is not a field of the schema`);
    return id;
  };
  const spec: PartitionSpec = {
    'spec-id': 0,
    fields: (a.spec?.fields ?? []).map((f, i) => ({
      'source-id': remap(f['source-id']),
      'field-id': PARTITION_FIELD_ID_START + i,
      name: f.name,
      transform: f.transform,
    })),
  };
  const sorted = (a.sortOrder?.fields.length ?? 0) > 0;
  const sortOrder: SortOrder = sorted
    ? { 'order-id': 1, fields: a.sortOrder!.fields.map((f) => ({ ...f, 'source-id': remap(f['source-id']) })) }
    : { 'order-id': 0, fields: [] };
  return {
    'format-version': 2,
    'table-uuid': a.tableUuid,
    location: a.location.replace(/\/+$/, ''),
    'last-sequence-number': 0n,
    'last-updated-ms': a.nowMs ?? BigInt(Date.now()),
    'last-column-id': lastColumnId,
    schemas: [schema],
    'current-schema-id': 0,
    'partition-specs': [spec],
    'default-spec-id': 0,
    'last-partition-id': PARTITION_FIELD_ID_START - 1 + spec.fields.length,
    properties: { ...(a.properties ?? {}) },
    'current-snapshot-id': null,
    snapshots: [],
    'snapshot-log': [],
    'metadata-log': [],
    'sort-orders': [sortOrder],
    'default-sort-order-id': sortOrder['order-id'],
    refs: {},
  };
}

// ---------- small lookups used everywhere ----------
export const currentSchema = (m: TableMetadata): Schema => {
  const s = m.schemas.find((x) => x['schema-id'] === m['current-schema-id']);
  if (!s)
    throw IcebergError.mismatch(
      'DataInvalid',
      'current schema',
      m['current-schema-id'],
      m.schemas.map((x) => x['schema-id']),
    );
  return s;
};
export const schemaById = (m: TableMetadata, id: number): Schema => {
  const s = m.schemas.find((x) => x['schema-id'] === id);
  if (!s)
    throw IcebergError.mismatch(
      'NotFound',
      'schema id',
      id,
      m.schemas.map((x) => x['schema-id']),
      false,
    );
  return s;
};
export const defaultSpec = (m: TableMetadata): PartitionSpec => specById(m, m['default-spec-id']);
export const specById = (m: TableMetadata, id: number): PartitionSpec => {
  const s = m['partition-specs'].find((x) => x['spec-id'] === id);
  if (!s)
    throw IcebergError.mismatch(
      'NotFound',
      'partition spec id',
      id,
      m['partition-specs'].map((x) => x['spec-id']),
      false,
    );
  return s;
};
export const snapshotById = (m: TableMetadata, id: bigint): Snapshot | undefined => m.snapshots.find((s) => s['snapshot-id'] === id);
export const currentSnapshot = (m: TableMetadata): Snapshot | undefined => {
  const id = m.refs[MAIN_BRANCH]?.['snapshot-id'] ?? m['current-snapshot-id'] ?? null;
  return id === null ? undefined : snapshotById(m, id);
};
/** The main-branch ancestry, newest first (stops at a parent that was expired). */
export function* ancestors(m: TableMetadata, from: Snapshot | undefined = currentSnapshot(m)): Generator<Snapshot> {
  // One index per walk: floe walks main's ancestry on every commit (commit-id lookup, cursor),
  // and a linear snapshotById per step would make that quadratic in the table's history.
  const byId = new Map<bigint, Snapshot>(m.snapshots.map((x) => [x['snapshot-id'], x]));
  const seen = new Set<bigint>();
  let s = from;
  while (s && !seen.has(s['snapshot-id'])) {
    seen.add(s['snapshot-id']);
    yield s;
    const parent = s['parent-snapshot-id'];
    s = parent === undefined ? undefined : byId.get(parent);
  }
}
