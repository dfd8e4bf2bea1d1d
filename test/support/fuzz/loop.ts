/**
 * The fuzzer's fast loop: one cycle of a fuzz case in process, through floe's own steps without
 * Kafka or Temporal: every message decoded by the table's sink (ingest/table-sink.ts: the JSON
 * decoder or the schema format's reader, evolving the table when a schema asks), rows written as
 * Parquet by the partitioned writer, dead letters written to the dead-letter table, and both
 * committed by the ingest's commit (ingest/commit-cycle.ts) into a SQLite catalog on a file://
 * warehouse. Then read back: the offsets of rows and dead letters through floe's reader, the values
 * through PyIceberg (fuzz_read.py, once for many cases).
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { Admin } from 'kafkajs';
import { findTable, parseConfig, type FloeConfig, type TableConfig } from '../../../config';
import type { Deps } from '../../../ingest/deps';
import { commitCycle } from '../../../ingest/commit-cycle';
import { deadLetterRow, type KafkaRecord, type Row } from '../../../ingest/decode';
import { ensureIngestTables } from '../../../ingest/tables';
import { TableSink } from '../../../ingest/table-sink';
import { readColumnValues } from '../../../client/tables';
import { fileListForHistory } from '../../../table/staged-files';
import type { Tables } from '../../../table/tables';
import { runPython } from '../../../stack/python';
import type { FuzzCase } from './arbitraries';
import { encodeCase, type FuzzMessage } from './formats';
import type { Canon } from './model';

export const FUZZ_READ_SCRIPT = join(__dirname, 'fuzz_read.py');
/** The config column every fuzz table gets: the Kafka offset, which names each message in its row. */
export const OFFSET_COLUMN = '_offset';

/** Registers `schema` under `subject` with a Confluent-compatible registry; its id. */
export async function registerSchema(url: string, subject: string, schemaType: string, schema: string): Promise<number> {
  const res = await fetch(`${url}/subjects/${encodeURIComponent(subject)}/versions`, {
    method: 'POST',
    headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
    body: JSON.stringify({ schema, schemaType }),
  });
  const body = await res.text();
  if (!res.ok) throw new Error(`registry: registering ${subject} answered ${res.status}: ${body.slice(0, 500)}`);
  return (JSON.parse(body) as { id: number }).id;
}

/** A case's table entry (config form) and its messages, the schema registered first when the format needs it. */
export async function prepareCase(
  c: FuzzCase,
  name: { table: string; topic: string },
  registryUrl: string | undefined,
): Promise<{ entry: Record<string, unknown>; messages: FuzzMessage[] }> {
  const enc = encodeCase(c);
  let id = 0;
  if (enc.registry) {
    if (!registryUrl) throw new Error(`fuzz: format ${c.format} needs the Schema Registry`);
    id = await registerSchema(registryUrl, `${name.topic}-value`, enc.registry.schemaType, enc.registry.schema);
  }
  const entry = {
    table: name.table,
    topic: name.topic,
    value: enc.value,
    columns: [{ name: OFFSET_COLUMN, type: 'long', source: 'offset', required: true }, ...(enc.columns ?? [])],
    partitionBy: c.partitionBy,
  };
  return { entry, messages: enc.messages(id) };
}

/** What one case left in its table: the offsets of rows and of dead letters (with reasons), by floe's reader. */
export interface CaseResult {
  table: string;
  deadLetterTable: string;
  messages: FuzzMessage[];
  rowOffsets: bigint[];
  dead: Array<{ offset: bigint; error: string }>;
}

export interface LoopEnv {
  /** catalog and storage settings shared by every case (the cases' tables live side by side) */
  base: Pick<FloeConfig, 'catalog'> & { schemaRegistry?: { url: string } };
  tables: Tables;
}

/**
 * Runs one cycle of case `c` in process and reads back what landed. Throws when the cycle fails:
 * floe's decoder promises every row it returns is writable, so a failed write is a defect.
 */
export async function runCase(env: LoopEnv, c: FuzzCase, label: string): Promise<CaseResult> {
  const suffix = randomUUID().slice(0, 8);
  const name = { table: `fuzz.${label}_${suffix}`, topic: `fuzz-${label}-${suffix}` };
  const { entry, messages } = await prepareCase(c, name, env.base.schemaRegistry?.url);
  const cfg = parseConfig({ ...env.base, tables: [entry] });
  const t = findTable(cfg, name.table);
  await ensureIngestTables(env.tables, t, cfg.schemaRegistry);
  await cycle(cfg, env.tables, t, messages);
  const rowOffsets = (await readColumnValues(env.tables, t.table, OFFSET_COLUMN)) as bigint[];
  const offsets = (await readColumnValues(env.tables, t.deadLetterTable, 'offset')) as bigint[];
  const errors = (await readColumnValues(env.tables, t.deadLetterTable, 'error')) as string[];
  return {
    table: t.table,
    deadLetterTable: t.deadLetterTable,
    messages,
    rowOffsets,
    dead: offsets.map((offset, i) => ({ offset, error: errors[i]! })),
  };
}

/** One ingest cycle of `messages` (partition 0, offsets from 0): decode, write, commit; as pollAndWrite and commitCycle do it. */
async function cycle(cfg: FloeConfig, tables: Tables, t: TableConfig, messages: FuzzMessage[]): Promise<void> {
  // a commit mirrors the cursor to a consumer group for lag tooling, best effort: no Kafka here
  const admin = { setOffsets: () => Promise.resolve() } as unknown as Admin;
  const deps = { cfg, tables, admin } as unknown as Deps;
  const commitId = randomUUID();
  const prefix = `${commitId}-g0-a1`;
  const deadRows: Row[] = [];
  const sink = await TableSink.open(
    deps,
    t,
    (s) => tables.openRowWriter(t.table, `${prefix}${s}`, { targetFileSizeBytes: t.targetFileSizeBytes }),
    () => undefined,
  );
  const deadLetter = (rec: KafkaRecord, e: unknown) => void deadRows.push(deadLetterRow(t.topic, rec, e));
  try {
    for (const [i, m] of messages.entries()) {
      const rec: KafkaRecord = { partition: 0, offset: String(i), timestamp: '1767225600000', key: m.key, value: m.value, topic: t.topic };
      const p = sink.add(rec, deadLetter);
      if (p) await p;
    }
  } catch (e) {
    sink.abort();
    throw e;
  }
  const files = await sink.close();
  const deadLetterFiles =
    deadRows.length === 0 ? [] : await tables.writeDataFiles(t.deadLetterTable, deadRows, prefix, t.targetFileSizeBytes);
  const inline = (table: string) => ({ metadata: async () => (await tables.load(table)).metadata, baseName: prefix });
  await commitCycle(deps, {
    table: t.table,
    ingestId: t.ingestId,
    commitId,
    baseSnapshotId: null,
    deadLetterFloor: {},
    deadLetterBaseCommitId: null,
    startOffsets: { '0': '0' },
    endOffsets: { '0': String(messages.length) },
    files: await fileListForHistory(tables.io, files, Infinity, inline(t.table)),
    deadLetterFiles: await fileListForHistory(tables.io, deadLetterFiles, Infinity, inline(t.deadLetterTable)),
    records: sink.rows,
    deadLetters: deadRows.length,
  });
}

/**
 * The property on offsets, which floe's reader checks per case: every message is exactly one of a
 * row or a dead letter with a reason (nothing lost, nothing twice), a message that must land is a
 * row and one that must not is a dead letter. The problems, empty when it holds.
 */
export function offsetProblems(r: Pick<CaseResult, 'messages' | 'rowOffsets' | 'dead'>): string[] {
  const problems: string[] = [];
  const seen = new Map<string, string>();
  for (const o of r.rowOffsets) {
    const k = String(o);
    if (seen.has(k)) problems.push(`offset ${k}: a row twice`);
    seen.set(k, 'row');
  }
  for (const d of r.dead) {
    const k = String(d.offset);
    if (seen.has(k)) problems.push(`offset ${k}: a dead letter and a ${seen.get(k)}`);
    seen.set(k, 'dead');
    if (!d.error || d.error.trim() === '') problems.push(`offset ${k}: a dead letter without a reason`);
  }
  r.messages.forEach((m, i) => {
    const got = seen.get(String(i));
    if (got === undefined) problems.push(`offset ${i} (${m.note}): neither a row nor a dead letter`);
    else if (m.expect.kind === 'row' && got !== 'row')
      problems.push(`offset ${i} (${m.note}): a good record became a dead letter: ${r.dead.find((d) => d.offset === BigInt(i))?.error}`);
    else if (m.expect.kind === 'dead' && got !== 'dead') problems.push(`offset ${i} (${m.note}): a bad record became a row`);
  });
  if (seen.size !== r.messages.length) problems.push(`${seen.size} offsets landed for ${r.messages.length} messages`);
  return problems;
}

interface PyTables {
  tables: Record<string, { rows: Array<[string, Record<string, Canon>]>; dead: Array<[string, string]> }>;
}

/** Reads `results`' tables through PyIceberg (one process for them all). */
export async function readWithPyIceberg(
  catalog: { name: string; uri: string; warehouse: string },
  results: Array<Pick<CaseResult, 'table' | 'deadLetterTable'>>,
): Promise<PyTables> {
  const { mkdtempSync, rmSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const dir = mkdtempSync(join(tmpdir(), 'floe-fuzz-'));
  const file = join(dir, 'request.json');
  try {
    writeFileSync(
      file,
      JSON.stringify({ catalog, tables: results.map((r) => ({ table: r.table, dead: r.deadLetterTable, offset: OFFSET_COLUMN })) }),
    );
    const { stdout } = await runPython([FUZZ_READ_SCRIPT, file], { timeoutMs: 10 * 60_000 });
    const last = stdout.trim().split('\n').pop() ?? '';
    return JSON.parse(last) as PyTables;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Stable JSON (object keys sorted) for comparing canonical rows. */
export function stable(v: Canon): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(stable).join(',')}]`;
  return `{${Object.keys(v)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${stable(v[k]!)}`)
    .join(',')}}`;
}

/**
 * The property on values, through PyIceberg: every row equals its message's canonical value, and
 * PyIceberg counts the same rows and dead letters as floe's reader. The problems, empty when it holds.
 */
export function valueProblems(r: CaseResult, read: PyTables['tables'][string] | undefined): string[] {
  if (!read) return [`${r.table}: PyIceberg did not read it`];
  const problems: string[] = [];
  if (read.rows.length !== r.rowOffsets.length)
    problems.push(`${r.table}: PyIceberg read ${read.rows.length} rows, floe ${r.rowOffsets.length}`);
  if (read.dead.length !== r.dead.length)
    problems.push(`${r.table}: PyIceberg read ${read.dead.length} dead letters, floe ${r.dead.length}`);
  for (const [offset, row] of read.rows) {
    const m = r.messages[Number(offset)];
    if (!m) {
      problems.push(`${r.table}: a row of offset ${offset}, which no message has`);
      continue;
    }
    if (m.expect.kind === 'dead' || m.expect.canon === undefined) continue;
    const want = stable(m.expect.canon);
    const got = stable(row);
    if (want !== got) {
      let at = 0;
      while (at < want.length && want[at] === got[at]) at++;
      const window = (s: string) => s.slice(Math.max(0, at - 80), at + 120);
      problems.push(
        `${r.table} offset ${offset} (${m.note}): landed changed at character ${at} of ${want.length} (read ${got.length}):\n  sent …${window(want)}\n  read …${window(got)}`,
      );
    }
  }
  return problems;
}
