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
 * metadata) never rounds them. Strings, most of a metadata.json, are skipped with indexOf and
 * the output is joined once, so this costs a few ms on a 6 MB file. Returns undefined when the
 * text could already contain a marker.
 */
function quoteBigIntegers(text: string): string | undefined {
  if (text.includes('\\u0000')) return undefined;
  const parts: string[] = [];
  let last = 0;
  let i = 0;
  const n = text.length;
  const isDigit = (c: number): boolean => c >= 48 && c <= 57;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 34) {
      // a string: its end is the next quote preceded by an even number of backslashes
      let j = text.indexOf('"', i + 1);
      for (;;) {
        if (j < 0) return last === 0 ? text : parts.join('') + text.slice(last); // unterminated: JSON.parse reports it
        let b = j - 1;
        while (text.charCodeAt(b) === 92) b--;
        if ((j - 1 - b) % 2 === 0) break;
        j = text.indexOf('"', j + 1);
      }
      i = j + 1;
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
        parts.push(text.slice(last, i), '"\\u0000big:', text.slice(i, intEnd), '"'); // JSON escape of BIG_MARK
        last = intEnd;
      }
      i = intEnd;
      continue;
    }
    i++;
  }
  if (last === 0) return text;
  parts.push(text.slice(last));
  return parts.join('');
}

/**
 * A parsed scalar under `key`: LONG_KEYS become bigint, marker strings (when `markers`, i.e. after
 * quoteBigIntegers) and lossless numbers their exact value.
 */
function convertScalar(v: unknown, key: string | undefined, markers = true): unknown {
  let s: string | undefined;
  if (typeof v === 'number') {
    if (key !== undefined && LONG_KEYS.has(key)) {
      if (!Number.isInteger(v)) throw new IcebergError('DataInvalid', `"${key}" must be an integer, found ${v}`);
      return BigInt(v); // < 16 digits, so the double is exact
    }
    return v;
  }
  if (typeof v === 'string') {
    if (!markers || v.charCodeAt(0) !== 0 || !v.startsWith(BIG_MARK)) return v;
    s = v.slice(BIG_MARK.length);
  } else if (isLosslessNumber(v)) s = v.toString();
  else return v;
  const isInt = /^-?\d+$/.test(s);
  if (key !== undefined && LONG_KEYS.has(key)) {
    if (!isInt) throw new IcebergError('DataInvalid', `"${key}" must be an integer, found ${s}`);
    return BigInt(s);
  }
  if (isInt && !Number.isSafeInteger(Number(s))) return BigInt(s);
  return Number(s);
}

/**
 * Converts JSON.parse output in place (no copy of a 6 MB tree): array elements take the key of
 * their array, as `snapshot-ids: [..]` holds longs.
 */
function convertInPlace(node: object, key: string | undefined): void {
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) {
      const x: unknown = node[i];
      if (x !== null && typeof x === 'object') convertInPlace(x, key);
      else {
        const y = convertScalar(x, key);
        if (y !== x) node[i] = y;
      }
    }
    return;
  }
  const o = node as Record<string, unknown>;
  for (const k in o) {
    const x = o[k];
    if (x !== null && typeof x === 'object') convertInPlace(x, k);
    else {
      const y = convertScalar(x, k);
      if (y === x) continue;
      if (k === '__proto__') Object.defineProperty(o, k, { value: y, writable: true, enumerable: true, configurable: true });
      else o[k] = y;
    }
  }
}

/**
 * Parses Iceberg JSON (metadata.json or a REST body) with LONG_KEYS as bigint. Other integers
 * stay `number` when safe and become `bigint` otherwise (never silently rounded).
 */
export function parseIcebergJson(text: string): unknown {
  const quoted = quoteBigIntegers(text);
  if (quoted !== undefined) {
    const raw: unknown = JSON.parse(quoted);
    if (raw === null || typeof raw !== 'object') return convertScalar(raw, undefined);
    convertInPlace(raw, undefined);
    return raw;
  }
  // lossless-json (the text holds a literal \u0000 escape, so markers could be forged)
  const convert = (v: unknown, key: string | undefined): unknown => {
    if (Array.isArray(v)) return v.map((x) => convert(x, key));
    if (v !== null && typeof v === 'object' && !isLosslessNumber(v)) {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v as Record<string, unknown>)) out[k] = convert(x, k);
      return out;
    }
    return convertScalar(v, key, false);
  };
  return convert(parse(text), undefined);
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
 * Reads metadata.json as written by Java, PyIceberg or us. Formats v2 and v3 (next-row-id, a
 * missing one read as 0; snapshots' first-row-id / added-rows) natively; v1 files are
 * normalised (legacy `schema` / `partition-spec`, missing ids and logs get their spec defaults) so
 * they can be scanned; committing to a v1 table requires `upgrade-format-version` first.
 * Unknown top-level keys are kept and written back, so a newer writer's fields are not dropped.
 */
export function parseTableMetadata(json: string): TableMetadata {
  const o = parseIcebergJson(json) as Record<string, unknown>;
  if (o === null || typeof o !== 'object' || Array.isArray(o))
    throw new IcebergError('DataInvalid', 'table metadata must be a JSON object');
  const formatVersion = Number(req<number>(o, 'format-version'));
  if (formatVersion !== 1 && formatVersion !== 2 && formatVersion !== 3) {
    throw IcebergError.mismatch('FeatureUnsupported', 'table metadata format-version', '1, 2 or 3', formatVersion, false);
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
    return freezeRecord(snap);
  });
  const records = <T>(v: unknown): T[] =>
    ((v as unknown[] | undefined) ?? []).map((e) => (e !== null && typeof e === 'object' ? freezeRecord(e) : e) as T);

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
    'snapshot-log': records(o['snapshot-log']),
    'metadata-log': records(o['metadata-log']),
    'sort-orders': (o['sort-orders'] as SortOrder[] | undefined) ?? [{ 'order-id': 0, fields: [] }],
    'default-sort-order-id': (o['default-sort-order-id'] as number | undefined) ?? 0,
    refs,
  });
  // v3 requires next-row-id; a writer that left it out has assigned no row ids yet
  if (formatVersion >= 3) m['next-row-id'] = o['next-row-id'] === undefined || o['next-row-id'] === null ? 0n : big(o['next-row-id']);
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
  'next-row-id',
] as const;

// ---------- history records: frozen once, their JSON cached ----------

/**
 * The three lists that grow with a table's history (snapshots, snapshot-log, metadata-log) hold
 * records that never change once made. Records are deep-frozen (`freezeRecord`: parse freezes
 * what it read, catalogs stage commits through `withFrozenHistory`), and the UTF-8 JSON of a list
 * of frozen records is cached, so writing metadata.json after 10,000 commits copies the cached
 * bytes of the previous version's lists plus the new records instead of stringifying 10,000
 * snapshots again (catalogs keep the metadata of a table between commits, so the same record
 * objects come back on every commit). Only frozen records are cached: their JSON cannot go
 * stale, and code that tries to change one gets a TypeError instead of a metadata.json that
 * silently disagrees with its objects.
 */
const frozenRecords = new WeakSet<object>();

const deepFreeze = (v: unknown): void => {
  if (v === null || typeof v !== 'object') return;
  Object.freeze(v);
  for (const x of Object.values(v as object)) deepFreeze(x);
};

/** Deep-freezes a history record (snapshot, snapshot-log or metadata-log entry) in place; returns it. */
export function freezeRecord<T extends object>(record: T): T {
  if (frozenRecords.has(record)) return record;
  deepFreeze(record);
  frozenRecords.add(record);
  return record;
}

const isFrozenRecord = (r: unknown): r is object => typeof r === 'object' && r !== null && frozenRecords.has(r);

const HISTORY_KEYS = ['snapshots', 'snapshot-log', 'metadata-log'] as const;

const utf8 = new TextEncoder();

/** UTF-8 JSON of one element of a history list, as JSON.stringify writes array elements. */
const recordBytes = (r: unknown): Uint8Array =>
  utf8.encode(r === undefined || typeof r === 'function' || typeof r === 'symbol' ? 'null' : stringifyIcebergJson(r));

/**
 * The JSON of a list of frozen records without its brackets (`r0,r1,...`), cached under the
 * list's last record. `bytes` is a view of `buf`, which has room to grow: appending a record to a
 * list whose bytes end where `buf`'s written part ends writes it in place (no copy of the
 * history); `end` is shared by every entry of one `buf`, so a second, different append to the
 * same prefix (a retried commit on another base) copies instead of overwriting the first.
 */
interface ListBytes {
  records: readonly unknown[];
  bytes: Uint8Array;
  buf: Uint8Array;
  end: { at: number };
}
const listCache = new WeakMap<object, ListBytes>();

const sameRecords = (cached: readonly unknown[], list: readonly unknown[], n: number): boolean => {
  if (cached.length !== n) return false;
  for (let i = n - 1; i >= 0; i--) if (cached[i] !== list[i]) return false;
  return true;
};

/**
 * How many leading records of `list` are known frozen without looking each up: the cached bytes
 * of a list (or of all but its last record) were only ever built from frozen records.
 */
function knownFrozenPrefix(list: readonly unknown[]): number {
  const n = list.length;
  if (n === 0) return 0;
  const full = listCache.get(list[n - 1] as object);
  if (full && sameRecords(full.records, list, n)) return n;
  const prefix = n > 1 ? listCache.get(list[n - 2] as object) : undefined;
  return prefix && sameRecords(prefix.records, list, n - 1) ? n - 1 : 0;
}

const needsFreezing = (r: unknown): r is object => r !== null && typeof r === 'object' && !frozenRecords.has(r);

/**
 * `m` with every history record frozen: `m` itself when they all are (parsed or staged before),
 * else a copy whose lists hold frozen clones of the records that were not (the caller's objects
 * are left as they are). Catalogs stage every commit through this; on a table whose lists were
 * written before, only the records added since are looked at.
 */
export function withFrozenHistory(m: TableMetadata): TableMetadata {
  let out: TableMetadata | undefined;
  for (const k of HISTORY_KEYS) {
    const list = m[k] as unknown[] | undefined;
    if (!Array.isArray(list)) continue;
    let i = knownFrozenPrefix(list);
    while (i < list.length && !needsFreezing(list[i])) i++;
    if (i === list.length) continue;
    const copy = list.slice();
    for (; i < copy.length; i++) {
      const r = copy[i];
      if (needsFreezing(r)) copy[i] = freezeRecord(structuredClone(r));
    }
    out ??= { ...m };
    (out as unknown as Record<string, unknown>)[k] = copy;
  }
  return out ?? m;
}

/** Room for a list's bytes to grow in place: a quarter more, and 4 KiB. */
const withRoom = (size: number): number => Math.ceil(size * 1.25) + 4096;

/** `parts` joined with ',' into the start of `buf` (a new one that fits when not given). */
function joinRecords(parts: readonly Uint8Array[], buf?: Uint8Array): Uint8Array {
  let size = Math.max(0, parts.length - 1);
  for (const p of parts) size += p.length;
  const out = buf ?? new Uint8Array(size);
  let at = 0;
  for (let i = 0; i < parts.length; i++) {
    if (i > 0) out[at++] = 0x2c; // ','
    out.set(parts[i]!, at);
    at += parts[i]!.length;
  }
  return out.subarray(0, size);
}

/** The bytes of a history list without brackets: from the cache when it or all but its last record were written before. */
function listBytes(list: readonly unknown[]): Uint8Array {
  const n = list.length;
  const last = list[n - 1];
  if (!isFrozenRecord(last)) return joinRecords(list.map(recordBytes));
  const hit = listCache.get(last);
  if (hit && sameRecords(hit.records, list, n)) return hit.bytes;
  const before = n > 1 ? list[n - 2] : undefined;
  const prev = isFrozenRecord(before) ? listCache.get(before) : undefined;
  let entry: ListBytes;
  if (prev && sameRecords(prev.records, list, n - 1)) {
    // one record more than a list written before (the common commit): append after its bytes
    const rec = recordBytes(last);
    const at = prev.bytes.length;
    const size = at + 1 + rec.length;
    let { buf, end } = prev;
    if (end.at !== at || size > buf.length) {
      // no room, or another list already grew from the same prefix: copy the prefix
      buf = Buffer.allocUnsafeSlow(withRoom(size)); // never pooled; only the written part is ever exposed
      buf.set(prev.bytes);
      end = { at };
    }
    buf[at] = 0x2c; // ','
    buf.set(rec, at + 1);
    end.at = size;
    entry = { records: list.slice(), bytes: buf.subarray(0, size), buf, end };
    // the prefix's entry goes: one entry per list version kept alive would hold O(history^2) record arrays
    listCache.delete(before as object);
  } else {
    // first write of this history in this process (or after expiry): every record once
    if (!list.every(isFrozenRecord)) return joinRecords(list.map(recordBytes));
    const parts = list.map(recordBytes);
    const size = Math.max(0, parts.length - 1) + parts.reduce((a, p) => a + p.length, 0);
    const buf = Buffer.allocUnsafeSlow(withRoom(size));
    entry = { records: list.slice(), bytes: joinRecords(parts, buf), buf, end: { at: size } };
  }
  listCache.set(last, entry);
  return entry.bytes;
}

/**
 * metadata.json as UTF-8 bytes (what catalogs write). `current-snapshot-id` is written as -1
 * when there is none, as Java does, because older Java readers reject null. v1 tables also get
 * the legacy `schema` and `partition-spec` fields, which v1 readers require. Compact JSON, keys in
 * the spec's order, unknown keys after them. The history lists come from the cache above, so a
 * commit's write costs one copy of the history's bytes rather than its serialization.
 */
export function encodeTableMetadata(m: TableMetadata): Uint8Array {
  const src = m as unknown as Record<string, unknown>;
  const history: ReadonlySet<string> = new Set(HISTORY_KEYS);
  // key -> its value: JSON text, or a history list's bytes; in output order (a later put of the
  // same key keeps its first position, as assigning an object key does)
  const out = new Map<string, string | Uint8Array>();
  const put = (k: string, v: unknown): void => {
    if (v === undefined || typeof v === 'function' || typeof v === 'symbol') return; // as JSON.stringify skips them
    out.set(k, history.has(k) && Array.isArray(v) ? listBytes(v) : stringifyIcebergJson(v));
  };
  const known: ReadonlySet<string> = new Set(KNOWN_KEYS);
  for (const k of KNOWN_KEYS) {
    const v = src[k];
    if (k === 'current-snapshot-id') put(k, v === undefined || v === null ? -1 : v);
    else put(k, v);
    if (k === 'last-column-id' && Number(m['format-version']) === 1) {
      put(
        'schema',
        m.schemas.find((s) => s['schema-id'] === m['current-schema-id']),
      );
    }
    if (k === 'last-partition-id' && Number(m['format-version']) === 1) {
      put('partition-spec', m['partition-specs'].find((s) => s['spec-id'] === m['default-spec-id'])?.fields ?? []);
    }
  }
  for (const [k, v] of Object.entries(src)) if (!known.has(k)) put(k, v);

  // text pieces between the lists' bytes
  const pieces: Uint8Array[] = [];
  let text = '{';
  let first = true;
  for (const [k, v] of out) {
    text += `${first ? '' : ','}${JSON.stringify(k)}:`;
    first = false;
    if (typeof v === 'string') text += v;
    else {
      pieces.push(utf8.encode(`${text}[`), v);
      text = ']';
    }
  }
  pieces.push(utf8.encode(`${text}}`));
  let size = 0;
  for (const p of pieces) size += p.length;
  const bytes = Buffer.allocUnsafe(size); // every byte is written below
  let at = 0;
  for (const p of pieces) {
    bytes.set(p, at);
    at += p.length;
  }
  return bytes;
}

/** metadata.json as a string: `encodeTableMetadata`, decoded. */
export function serializeTableMetadata(m: TableMetadata): string {
  return new TextDecoder().decode(encodeTableMetadata(m));
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
  /** 2 (default) or 3 (row lineage, deletion vectors) */
  formatVersion?: 2 | 3;
}

/**
 * Initial v2 (or, with `formatVersion: 3`, v3 with next-row-id 0) metadata for create-table: fresh column ids from 1, partition field ids from 1000
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
  const formatVersion = a.formatVersion ?? 2;
  return {
    'format-version': formatVersion,
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
    ...(formatVersion >= 3 ? { 'next-row-id': 0n } : {}),
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
