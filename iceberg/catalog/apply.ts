/**
 * Pure commit semantics shared by every catalog that applies updates itself (SQL, memory):
 * check REST requirements against the current metadata, then apply REST updates to produce the
 * next metadata. Mirrors Java's TableMetadata.Builder / PyIceberg's update_table_metadata.
 * The catalog's staging step (stage.ts) appends the previous metadata file to `metadata-log`.
 * Lives in the catalog layer so catalogs never import the transaction layer; the transaction
 * layer re-exports it (transaction/apply.ts) and uses it to chain actions.
 */
import { IcebergError } from '../errors';
import { MAIN_BRANCH, PARTITION_FIELD_ID_START } from '../spec/metadata';
import type { Schema, Snapshot, SnapshotLogEntry, SnapshotRef, TableMetadata } from '../spec/types';
import type { TableRequirement, TableUpdate } from './updates';

const conflict = (what: string, expected: unknown, found: unknown): IcebergError =>
  IcebergError.mismatch('CommitConflict', `requirement failed: ${what}`, expected, found, true);

/**
 * Throws IcebergError('CommitConflict', retryable) naming expected vs found for the first failed
 * requirement. `current` undefined means the table does not exist: only `assert-create` passes
 * (anything else is 'NotFound'); `assert-create` on an existing table is 'AlreadyExists'.
 */
export function checkRequirements(current: TableMetadata | undefined, reqs: TableRequirement[]): void {
  for (const r of reqs) {
    if (r.type === 'assert-create') {
      if (current !== undefined) {
        throw new IcebergError('AlreadyExists', 'requirement failed: assert-create, but the table already exists', {
          retryable: false,
          context: { expected: 'no table', found: current['table-uuid'] },
        });
      }
      continue;
    }
    if (current === undefined) {
      throw new IcebergError('NotFound', `requirement ${r.type} failed: the table does not exist`, { retryable: false });
    }
    switch (r.type) {
      case 'assert-table-uuid':
        if (current['table-uuid'] !== r.uuid) throw conflict('table uuid', r.uuid, current['table-uuid']);
        break;
      case 'assert-ref-snapshot-id': {
        const found = current.refs[r.ref]?.['snapshot-id'] ?? null;
        if (found !== r['snapshot-id']) throw conflict(`ref "${r.ref}" snapshot id`, r['snapshot-id'] ?? 'no ref', found ?? 'no ref');
        break;
      }
      case 'assert-last-assigned-field-id':
        if (current['last-column-id'] !== r['last-assigned-field-id'])
          throw conflict('last assigned field id', r['last-assigned-field-id'], current['last-column-id']);
        break;
      case 'assert-current-schema-id':
        if (current['current-schema-id'] !== r['current-schema-id'])
          throw conflict('current schema id', r['current-schema-id'], current['current-schema-id']);
        break;
      case 'assert-last-assigned-partition-id':
        if (current['last-partition-id'] !== r['last-assigned-partition-id'])
          throw conflict('last assigned partition id', r['last-assigned-partition-id'], current['last-partition-id']);
        break;
      case 'assert-default-spec-id':
        if (current['default-spec-id'] !== r['default-spec-id'])
          throw conflict('default spec id', r['default-spec-id'], current['default-spec-id']);
        break;
      case 'assert-default-sort-order-id':
        if (current['default-sort-order-id'] !== r['default-sort-order-id'])
          throw conflict('default sort order id', r['default-sort-order-id'], current['default-sort-order-id']);
        break;
      default: {
        const never: never = r;
        throw new IcebergError('FeatureUnsupported', `unknown requirement ${JSON.stringify((never as { type: string }).type)}`);
      }
    }
  }
}

const invalid = (msg: string, context?: Record<string, unknown>): IcebergError =>
  new IcebergError('DataInvalid', msg, { retryable: false, context });

const maxFieldId = (s: Schema): number => {
  let max = 0;
  const walk = (t: unknown): void => {
    if (typeof t !== 'object' || t === null) return;
    const o = t as Record<string, unknown>;
    if (o['type'] === 'struct')
      for (const f of o['fields'] as Array<{ id: number; type: unknown }>) {
        max = Math.max(max, f.id);
        walk(f.type);
      }
    if (o['type'] === 'list') {
      max = Math.max(max, o['element-id'] as number);
      walk(o['element']);
    }
    if (o['type'] === 'map') {
      max = Math.max(max, o['key-id'] as number, o['value-id'] as number);
      walk(o['key']);
      walk(o['value']);
    }
  };
  walk(s);
  return max;
};

/** The metadata being built by one applyUpdates call, and what earlier updates of the batch added. */
interface ApplyState {
  /** A copy of the base (arrays and maps copied), mutated by the updates in order. */
  readonly m: TableMetadata;
  readonly nowMs: bigint;
  /** Snapshots added in this batch. */
  readonly added: Map<bigint, Snapshot>;
  /** Ids of the schema / spec / sort order added last in this batch (what `-1` refers to). */
  lastAddedSchemaId?: number;
  lastAddedSpecId?: number;
  lastAddedOrderId?: number;
  /** `last-updated-ms` so far: nowMs, or a newer added snapshot's timestamp. */
  lastUpdated: bigint;
}

type UpdateOf<A extends TableUpdate['action']> = Extract<TableUpdate, { action: A }>;
type ApplyUpdate<A extends TableUpdate['action']> = (st: ApplyState, u: UpdateOf<A>) => void;

const assignUuid: ApplyUpdate<'assign-uuid'> = ({ m }, u) => {
  if (m['table-uuid'] && m['table-uuid'] !== u.uuid)
    throw IcebergError.mismatch('DataInvalid', 'assign-uuid on a table that has a uuid', m['table-uuid'], u.uuid, false);
  m['table-uuid'] = u.uuid;
};

const upgradeFormatVersion: ApplyUpdate<'upgrade-format-version'> = ({ m }, u) => {
  const v = u['format-version'];
  if (v < m['format-version'])
    throw IcebergError.mismatch('DataInvalid', 'format version downgrade', `>= ${m['format-version']}`, v, false);
  if (v !== 1 && v !== 2 && v !== 3) throw IcebergError.mismatch('FeatureUnsupported', 'format version', '1, 2 or 3', v, false);
  // spec "Row Lineage for Upgraded Tables": next-row-id starts at 0, existing snapshots keep no first-row-id
  if (v >= 3 && m['format-version'] < 3) m['next-row-id'] = 0n;
  m['format-version'] = v;
};

const addSchema: ApplyUpdate<'add-schema'> = (st, u) => {
  const { m } = st;
  const existing = m.schemas.find((s) => s['schema-id'] === u.schema['schema-id']);
  const schemaId =
    u.schema['schema-id'] >= 0 && !existing ? u.schema['schema-id'] : Math.max(-1, ...m.schemas.map((s) => s['schema-id'])) + 1;
  m.schemas.push({ ...u.schema, 'schema-id': schemaId });
  m['last-column-id'] = Math.max(m['last-column-id'], u['last-column-id'] ?? 0, maxFieldId(u.schema));
  st.lastAddedSchemaId = schemaId;
};

const setCurrentSchema: ApplyUpdate<'set-current-schema'> = (st, u) => {
  const id = u['schema-id'] === -1 ? st.lastAddedSchemaId : u['schema-id'];
  if (id === undefined || !st.m.schemas.some((s) => s['schema-id'] === id))
    throw invalid(`set-current-schema: unknown schema id ${u['schema-id']}`);
  st.m['current-schema-id'] = id;
};

const addSpec: ApplyUpdate<'add-spec'> = (st, u) => {
  const { m } = st;
  const specId =
    u.spec['spec-id'] >= 0 && !m['partition-specs'].some((s) => s['spec-id'] === u.spec['spec-id'])
      ? u.spec['spec-id']
      : Math.max(-1, ...m['partition-specs'].map((s) => s['spec-id'])) + 1;
  m['partition-specs'].push({ ...u.spec, 'spec-id': specId });
  m['last-partition-id'] = Math.max(m['last-partition-id'], PARTITION_FIELD_ID_START - 1, ...u.spec.fields.map((f) => f['field-id']));
  st.lastAddedSpecId = specId;
};

const setDefaultSpec: ApplyUpdate<'set-default-spec'> = (st, u) => {
  const id = u['spec-id'] === -1 ? st.lastAddedSpecId : u['spec-id'];
  if (id === undefined || !st.m['partition-specs'].some((s) => s['spec-id'] === id))
    throw invalid(`set-default-spec: unknown spec id ${u['spec-id']}`);
  st.m['default-spec-id'] = id;
};

const addSortOrder: ApplyUpdate<'add-sort-order'> = (st, u) => {
  const { m } = st;
  const o = u['sort-order'];
  const orderId =
    o.fields.length === 0
      ? 0
      : o['order-id'] > 0 && !m['sort-orders'].some((s) => s['order-id'] === o['order-id'])
        ? o['order-id']
        : Math.max(0, ...m['sort-orders'].map((s) => s['order-id'])) + 1;
  if (!m['sort-orders'].some((s) => s['order-id'] === orderId)) m['sort-orders'].push({ ...o, 'order-id': orderId });
  st.lastAddedOrderId = orderId;
};

const setDefaultSortOrder: ApplyUpdate<'set-default-sort-order'> = (st, u) => {
  const id = u['sort-order-id'] === -1 ? st.lastAddedOrderId : u['sort-order-id'];
  if (id === undefined || !st.m['sort-orders'].some((s) => s['order-id'] === id))
    throw invalid(`set-default-sort-order: unknown order id ${u['sort-order-id']}`);
  st.m['default-sort-order-id'] = id;
};

const addSnapshot: ApplyUpdate<'add-snapshot'> = (st, u) => {
  const { m } = st;
  const s = u.snapshot;
  if (m.snapshots.some((x) => x['snapshot-id'] === s['snapshot-id']))
    throw invalid(`add-snapshot: snapshot ${s['snapshot-id']} already exists`);
  // spec (v2): "sequence number ... must be greater than the table's last-sequence-number".
  if (m['format-version'] >= 2 && s['sequence-number'] <= m['last-sequence-number'] && s['parent-snapshot-id'] !== undefined) {
    throw IcebergError.mismatch(
      'CommitConflict',
      `add-snapshot ${s['snapshot-id']}: sequence number must exceed last-sequence-number`,
      `> ${m['last-sequence-number']}`,
      s['sequence-number'],
      true,
    );
  }
  if (m['format-version'] >= 3) {
    // spec "Snapshot Row IDs" (Java TableMetadata.Builder.addSnapshot): the snapshot's first-row-id
    // is at or above the table's next-row-id, which then grows by the row ids it assigned
    const next = m['next-row-id'] ?? 0n;
    const first = s['first-row-id'];
    if (first === undefined || first === null || s['added-rows'] === undefined || s['added-rows'] === null)
      throw invalid(`add-snapshot ${s['snapshot-id']}: a v3 snapshot needs first-row-id and added-rows`);
    if (first < next)
      throw IcebergError.mismatch(
        'CommitConflict',
        `add-snapshot ${s['snapshot-id']}: first-row-id is behind the table's next-row-id`,
        `>= ${next}`,
        first,
        true,
      );
    m['next-row-id'] = next + s['added-rows'];
  }
  m.snapshots.push(s);
  st.added.set(s['snapshot-id'], s);
  if (s['sequence-number'] > m['last-sequence-number']) m['last-sequence-number'] = s['sequence-number'];
  if (s['timestamp-ms'] > st.lastUpdated) st.lastUpdated = s['timestamp-ms'];
};

/** Points ref `name` at a known snapshot; moving `main` sets `current-snapshot-id` and logs it. */
const setRef = (st: ApplyState, name: string, ref: SnapshotRef): void => {
  const { m } = st;
  const snap = m.snapshots.find((s) => s['snapshot-id'] === ref['snapshot-id']);
  if (!snap) throw invalid(`cannot set ref "${name}" to unknown snapshot ${ref['snapshot-id']}`);
  const prev = m.refs[name];
  m.refs[name] = ref;
  if (name === MAIN_BRANCH && (prev?.['snapshot-id'] !== ref['snapshot-id'] || m['current-snapshot-id'] !== ref['snapshot-id'])) {
    if (ref.type !== 'branch') throw invalid('ref "main" must be a branch', { found: ref.type });
    m['current-snapshot-id'] = ref['snapshot-id'];
    // Java: a snapshot added in the same change is logged with its own timestamp, otherwise now.
    const ts = st.added.get(ref['snapshot-id'])?.['timestamp-ms'] ?? st.nowMs;
    m['snapshot-log'].push({ 'timestamp-ms': ts, 'snapshot-id': ref['snapshot-id'] });
  }
};

const setSnapshotRef: ApplyUpdate<'set-snapshot-ref'> = (st, u) => {
  const { action: _a, 'ref-name': name, ...ref } = u;
  void _a;
  setRef(st, name, ref);
};

const removeSnapshotRef: ApplyUpdate<'remove-snapshot-ref'> = ({ m }, u) => {
  delete m.refs[u['ref-name']];
  if (u['ref-name'] === MAIN_BRANCH) m['current-snapshot-id'] = null;
};

const removeSnapshots: ApplyUpdate<'remove-snapshots'> = ({ m }, u) => {
  const gone = new Set(u['snapshot-ids']);
  m.snapshots = m.snapshots.filter((s) => !gone.has(s['snapshot-id']));
  for (const [name, ref] of Object.entries(m.refs)) {
    if (gone.has(ref['snapshot-id'])) {
      delete m.refs[name];
      if (name === MAIN_BRANCH) m['current-snapshot-id'] = null;
    }
  }
  // Java's updateSnapshotLog: the log is history, so keep only the suffix after the last
  // entry whose snapshot no longer exists (no holes in the middle of the history).
  const live = new Set(m.snapshots.map((s) => s['snapshot-id']));
  const log: SnapshotLogEntry[] = [];
  for (const e of m['snapshot-log']) {
    if (live.has(e['snapshot-id'])) log.push(e);
    else log.length = 0;
  }
  m['snapshot-log'] = log;
  const keepStat = (x: unknown): boolean => !gone.has((x as { 'snapshot-id'?: bigint })['snapshot-id'] ?? -1n);
  if (m.statistics) m.statistics = m.statistics.filter(keepStat);
  if (m['partition-statistics']) m['partition-statistics'] = m['partition-statistics'].filter(keepStat);
};

const setLocation: ApplyUpdate<'set-location'> = ({ m }, u) => {
  m.location = u.location.replace(/\/+$/, '');
};

const setProperties: ApplyUpdate<'set-properties'> = ({ m }, u) => {
  Object.assign(m.properties, u.updates);
};

const removeProperties: ApplyUpdate<'remove-properties'> = ({ m }, u) => {
  for (const k of u.removals) delete m.properties[k];
};

/** One function per REST update action (a new action fails to compile until it has one). */
const APPLY: { readonly [A in TableUpdate['action']]: ApplyUpdate<A> } = {
  'assign-uuid': assignUuid,
  'upgrade-format-version': upgradeFormatVersion,
  'add-schema': addSchema,
  'set-current-schema': setCurrentSchema,
  'add-spec': addSpec,
  'set-default-spec': setDefaultSpec,
  'add-sort-order': addSortOrder,
  'set-default-sort-order': setDefaultSortOrder,
  'add-snapshot': addSnapshot,
  'set-snapshot-ref': setSnapshotRef,
  'remove-snapshot-ref': removeSnapshotRef,
  'remove-snapshots': removeSnapshots,
  'set-location': setLocation,
  'set-properties': setProperties,
  'remove-properties': removeProperties,
};

/** Applies one update to the state, or throws 'FeatureUnsupported' for an action we do not know. */
function applyOne(st: ApplyState, u: TableUpdate): void {
  if (!Object.hasOwn(APPLY, u.action)) {
    throw new IcebergError('FeatureUnsupported', `unknown table update ${JSON.stringify((u as { action: string }).action)}`);
  }
  (APPLY[u.action] as (st: ApplyState, u: TableUpdate) => void)(st, u);
}

/**
 * Applies REST updates to `base`, returning new metadata (base is not mutated). Maintains
 * `current-snapshot-id` + `snapshot-log` when `main` moves, `last-sequence-number` on add-snapshot,
 * `last-updated-ms` (= nowMs, or a newer added snapshot's timestamp), and prunes refs and the
 * snapshot log on remove-snapshots. `-1` ids in set-current-schema / set-default-spec /
 * set-default-sort-order mean "the one added earlier in this batch", as in the REST protocol.
 */
export function applyUpdates(base: TableMetadata, updates: TableUpdate[], nowMs: bigint): TableMetadata {
  if (updates.length === 0) return base;
  const st: ApplyState = {
    m: {
      ...base,
      schemas: [...base.schemas],
      'partition-specs': [...base['partition-specs']],
      'sort-orders': [...base['sort-orders']],
      properties: { ...base.properties },
      snapshots: [...base.snapshots],
      'snapshot-log': [...base['snapshot-log']],
      'metadata-log': [...base['metadata-log']],
      refs: { ...base.refs },
    },
    nowMs,
    added: new Map(),
    lastUpdated: nowMs,
  };
  for (const u of updates) applyOne(st, u);
  const { m } = st;
  m['last-updated-ms'] = st.lastUpdated > base['last-updated-ms'] ? st.lastUpdated : base['last-updated-ms'];
  return m;
}
