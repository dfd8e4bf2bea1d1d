/**
 * The chaos run's end-of-run oracle. Nothing here goes through floe's reader or catalog code:
 * - what was produced: the whole topic read back with a plain kafkajs consumer; every message the
 *   chaos producer sent carries headers `chaos-seq` (its sequence number) and `chaos-kind`
 *   (good | bad), so the expected rows and dead letters are known by (partition, offset), and a
 *   message the producer re-sent after a broker restart (at-least-once into Kafka) is visible as a
 *   repeated sequence number instead of passing for a floe duplicate;
 * - where the tables are: the metadata location read straight from the catalog's Postgres row
 *   (the JDBC/PyIceberg `iceberg_tables` schema);
 * - what the tables hold: PyIceberg (StaticTable) and DuckDB (iceberg_scan) in the stack's venv,
 *   each comparing the rows' (kafka_partition, kafka_offset) with the expected good messages and
 *   the dead-letter table's (partition, offset) with the expected bad ones;
 * - which files exist: a plain S3 ListObjectsV2 of each table location, compared with every file
 *   PyIceberg finds referenced by the current metadata (all retained snapshots' manifest lists,
 *   manifests and manifest entries, the metadata log, statistics).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { Kafka, logLevel } from 'kafkajs';
import { Client } from 'pg';
import { runPythonJson } from '../../stack/python';
import { stackS3Client } from '../../stack/services';

export const SEQ_HEADER = 'chaos-seq';
export const KIND_HEADER = 'chaos-kind';
/** On a good message, what its row must hold beyond its presence (a route value, a column's value); see checkTables. */
export const LABEL_HEADER = 'chaos-label';

export interface TopicContents {
  /** [partition, offset] of every message produced as good / bad */
  good: Array<[number, number]>;
  bad: Array<[number, number]>;
  /** each good message's chaos-label header (parallel to `good`), null when it has none */
  goodLabels: Array<string | null>;
  /** messages without the chaos headers (none expected) */
  foreign: number;
  /** sequence numbers that occur more than once (producer re-sends), extra copies */
  resent: number;
  /** of which good messages */
  resentGood: number;
  distinctSeqs: number;
}

/** Reads the whole topic (low to high watermark of every partition) with a throwaway consumer group. */
export async function readTopic(brokers: string[], topic: string, timeoutMs = 180_000): Promise<TopicContents> {
  const kafka = new Kafka({ clientId: 'floe-chaos-check', brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  let offsets;
  try {
    offsets = await admin.fetchTopicOffsets(topic);
  } finally {
    await admin.disconnect();
  }
  const want = new Map(offsets.map((p) => [p.partition, { low: BigInt(p.low), high: BigInt(p.high), next: BigInt(p.low) }]));
  const out: TopicContents = { good: [], bad: [], goodLabels: [], foreign: 0, resent: 0, resentGood: 0, distinctSeqs: 0 };
  const seqs = new Set<string>();
  const done = () => [...want.values()].every((w) => w.next >= w.high);
  if (done()) return out;
  const consumer = kafka.consumer({
    groupId: `floe-chaos-check-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`,
    maxBytes: 16 << 20,
  });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(
              `reading topic ${topic}: not at the high watermarks after ${timeoutMs / 1000} s: ${JSON.stringify([...want].map(([p, w]) => [p, String(w.next), String(w.high)]))}`,
            ),
          ),
        timeoutMs,
      );
      consumer
        .run({
          autoCommit: false,
          eachBatch: async ({ batch }) => {
            const w = want.get(batch.partition);
            for (const m of batch.messages) {
              const off = BigInt(m.offset);
              if (!w || off >= w.high) continue;
              w.next = off + 1n;
              const seq = m.headers?.[SEQ_HEADER]?.toString();
              const kind = m.headers?.[KIND_HEADER]?.toString();
              if (seq === undefined || (kind !== 'good' && kind !== 'bad')) {
                out.foreign++;
                continue;
              }
              if (seqs.has(seq)) {
                out.resent++;
                if (kind === 'good') out.resentGood++;
              }
              seqs.add(seq);
              (kind === 'good' ? out.good : out.bad).push([batch.partition, Number(off)]);
              if (kind === 'good') out.goodLabels.push(m.headers?.[LABEL_HEADER]?.toString() ?? null);
            }
            if (done()) {
              clearTimeout(timer);
              resolve();
            }
          },
        })
        .catch(reject);
    });
  } finally {
    await consumer.disconnect().catch(() => undefined);
  }
  out.distinctSeqs = seqs.size;
  return out;
}

/** The table's metadata location as the catalog's Postgres row holds it. */
export async function catalogMetadataLocation(pgUrl: string, catalogName: string, table: string): Promise<string> {
  const i = table.lastIndexOf('.');
  const c = new Client({ connectionString: pgUrl, connectionTimeoutMillis: 10_000 });
  await c.connect();
  try {
    const r = await c.query<{ metadata_location: string }>(
      'SELECT metadata_location FROM iceberg_tables WHERE catalog_name = $1 AND table_namespace = $2 AND table_name = $3',
      [catalogName, table.slice(0, i), table.slice(i + 1)],
    );
    if (r.rows.length !== 1 || !r.rows[0]!.metadata_location) {
      throw new Error(`catalog ${catalogName}: expected one iceberg_tables row for ${table}, found ${r.rows.length}`);
    }
    return r.rows[0]!.metadata_location;
  } finally {
    await c.end().catch(() => undefined);
  }
}

/** The catalog's tables of `namespace` whose names start with `prefix` (names without the namespace). */
export async function catalogTableNames(pgUrl: string, catalogName: string, namespace: string, prefix: string): Promise<string[]> {
  const c = new Client({ connectionString: pgUrl, connectionTimeoutMillis: 10_000 });
  await c.connect();
  try {
    const r = await c.query<{ table_name: string }>(
      'SELECT table_name FROM iceberg_tables WHERE catalog_name = $1 AND table_namespace = $2',
      [catalogName, namespace],
    );
    // filtered here, not with LIKE: `_` in a table name is a LIKE wildcard
    return r.rows.map((x) => x.table_name).filter((n) => n.startsWith(prefix));
  } finally {
    await c.end().catch(() => undefined);
  }
}

export interface EngineCounts {
  rows: number;
  /** distinct (partition, offset) */
  distinctKeys: number;
  distinctEventIds?: number;
  /** expected keys not in the table */
  lost: number;
  /** keys in the table that were not expected */
  unexpected: number;
  lostSample: Array<[number, number]>;
  unexpectedSample: Array<[number, number]>;
  duplicateSample: Array<[number, number, number]>;
}

export interface TableFiles {
  location: string;
  metadataLocation: string;
  snapshots: number;
  metadataLog: string[];
  manifestLists: string[];
  manifests: string[];
  /** ADDED/EXISTING entries of any retained snapshot's manifests */
  live: string[];
  /** live files of the current snapshot */
  currentLive: string[];
  /** DELETED entries (kept for time travel only while their older snapshot is retained) */
  deletedEntries: string[];
  statistics: string[];
}

export interface EngineReport {
  pyiceberg: { main: EngineCounts; deadLetters: EngineCounts };
  duckdb: { main: EngineCounts; deadLetters: EngineCounts };
  files: { main: TableFiles; deadLetters: TableFiles };
}

/** Every file a table's current metadata references (PyIceberg), for auditFiles. */
const FILES_OF = String.raw`
def files_of(t, loc):
    md = t.metadata
    out = {"location": md.location, "metadataLocation": loc, "snapshots": len(md.snapshots),
           "metadataLog": [e.metadata_file for e in md.metadata_log], "manifestLists": [], "manifests": [],
           "live": set(), "currentLive": [], "deletedEntries": set(), "statistics": []}
    for s in (getattr(md, "statistics", None) or []):
        out["statistics"].append(s.statistics_path)
    for s in (getattr(md, "partition_statistics", None) or []):
        out["statistics"].append(s.statistics_path)
    seen = set()
    for snap in md.snapshots:
        out["manifestLists"].append(snap.manifest_list)
        for m in snap.manifests(t.io):
            if m.manifest_path in seen:
                continue
            seen.add(m.manifest_path)
            out["manifests"].append(m.manifest_path)
            for e in m.fetch_manifest_entry(t.io, discard_deleted=False):
                (out["deletedEntries"] if e.status == ManifestEntryStatus.DELETED else out["live"]).add(e.data_file.file_path)
    cur = t.current_snapshot()
    if cur is not None:
        out["currentLive"] = [task.file.file_path for task in t.scan(snapshot_id=cur.snapshot_id).plan_files()]
    out["live"] = sorted(out["live"])
    out["deletedEntries"] = sorted(out["deletedEntries"])
    return out
`;

const ENGINE_CHECK = String.raw`
import json, sys
import pyarrow as pa
from pyiceberg.table import StaticTable
from pyiceberg.manifest import ManifestEntryStatus
from floe_duckdb import connect, pyiceberg_s3_properties

req = json.load(open(sys.argv[1]))
props = pyiceberg_s3_properties()
good = set((p, o) for p, o in req["good"])
bad = set((p, o) for p, o in req["bad"])

def compare(keys, expected, event_ids=None):
    seen, dups = {}, []
    for k in keys:
        seen[k] = seen.get(k, 0) + 1
    dups = [[k[0], k[1], n] for k, n in seen.items() if n > 1]
    lost = sorted(expected - seen.keys())
    unexpected = sorted(seen.keys() - expected)
    out = {"rows": len(keys), "distinctKeys": len(seen), "lost": len(lost), "unexpected": len(unexpected),
           "lostSample": [list(k) for k in lost[:20]], "unexpectedSample": [list(k) for k in unexpected[:20]],
           "duplicateSample": dups[:20]}
    if event_ids is not None:
        out["distinctEventIds"] = len(set(event_ids))
    return out

${FILES_OF}
main = StaticTable.from_metadata(req["main"], properties=props)
dl = StaticTable.from_metadata(req["deadLetters"], properties=props)
a = main.scan(selected_fields=("kafka_partition", "kafka_offset", "event_id")).to_arrow()
main_keys = list(zip(a["kafka_partition"].to_pylist(), a["kafka_offset"].to_pylist()))
d = dl.scan(selected_fields=("partition", "offset")).to_arrow()
dl_keys = list(zip(d["partition"].to_pylist(), d["offset"].to_pylist()))
py = {"main": compare(main_keys, good, a["event_id"].to_pylist()), "deadLetters": compare(dl_keys, bad)}

con = connect()
con.register("exp_good", pa.table({"p": pa.array([k[0] for k in good], pa.int64()), "o": pa.array([k[1] for k in good], pa.int64())}))
con.register("exp_bad", pa.table({"p": pa.array([k[0] for k in bad], pa.int64()), "o": pa.array([k[1] for k in bad], pa.int64())}))
def q(sql):
    return con.sql(sql).fetchall()
def duck(src, cols, exp, with_ids):
    con.execute(f"CREATE OR REPLACE TABLE t AS SELECT {cols} FROM iceberg_scan('{src}')")
    rows = q("SELECT count(*) FROM t")[0][0]
    distinct = q("SELECT count(*) FROM (SELECT DISTINCT p, o FROM t)")[0][0]
    lost = q(f"SELECT p, o FROM {exp} e WHERE NOT EXISTS (SELECT 1 FROM t WHERE t.p = e.p AND t.o = e.o) ORDER BY p, o")
    unexpected = q(f"SELECT DISTINCT p, o FROM t WHERE NOT EXISTS (SELECT 1 FROM {exp} e WHERE t.p = e.p AND t.o = e.o) ORDER BY p, o")
    dups = q("SELECT p, o, count(*) FROM t GROUP BY p, o HAVING count(*) > 1 ORDER BY p, o LIMIT 20")
    out = {"rows": rows, "distinctKeys": distinct, "lost": len(lost), "unexpected": len(unexpected),
           "lostSample": [list(r) for r in lost[:20]], "unexpectedSample": [list(r) for r in unexpected[:20]],
           "duplicateSample": [list(r) for r in dups]}
    if with_ids:
        out["distinctEventIds"] = q("SELECT count(DISTINCT event_id) FROM t")[0][0]
    return out
dk = {"main": duck(req["main"], "kafka_partition::BIGINT AS p, kafka_offset::BIGINT AS o, event_id", "exp_good", True),
      "deadLetters": duck(req["deadLetters"], "\"partition\"::BIGINT AS p, \"offset\"::BIGINT AS o", "exp_bad", False)}

print(json.dumps({"pyiceberg": py, "duckdb": dk,
                  "files": {"main": files_of(main, req["main"]), "deadLetters": files_of(dl, req["deadLetters"])}}))
`;

/** Reads both tables through PyIceberg and DuckDB and compares them with the topic's contents. */
export async function engineCheck(mainMetadata: string, deadLetterMetadata: string, topic: TopicContents): Promise<EngineReport> {
  const dir = mkdtempSync(join(tmpdir(), 'floe-chaos-'));
  const file = join(dir, 'request.json');
  try {
    writeFileSync(file, JSON.stringify({ main: mainMetadata, deadLetters: deadLetterMetadata, good: topic.good, bad: topic.bad }));
    return await runPythonJson<EngineReport>(ENGINE_CHECK, [file], { timeoutMs: 15 * 60_000 });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * What one table must hold, by (topic, partition, offset), each exactly once; `value`: a column
 * whose value each row must equal its message's expected value (null included).
 */
export interface TableExpectation {
  table: string;
  metadataLocation: string;
  /** the columns of a row's topic, partition and offset; no topic column: every row is of `topic` */
  columns: { topic?: string; partition: string; offset: string; value?: string };
  topic?: string;
  /** [topic, partition, offset, expected value of `columns.value` (or null)] */
  expected: Array<[string, number, number, string | null]>;
}

export interface TableCounts {
  rows: number;
  distinctKeys: number;
  lost: number;
  unexpected: number;
  /** rows whose value column differs from their message's expected value */
  wrongValue: number;
  lostSample: unknown[];
  unexpectedSample: unknown[];
  duplicateSample: unknown[];
  wrongValueSample: unknown[];
}

export interface TableReport {
  pyiceberg: TableCounts;
  duckdb: TableCounts;
  /** the current schema's top-level column names */
  fields: string[];
  files: TableFiles;
}

const TABLES_CHECK = String.raw`
import json, sys
from pyiceberg.table import StaticTable
from pyiceberg.manifest import ManifestEntryStatus
from floe_duckdb import connect, pyiceberg_s3_properties

req = json.load(open(sys.argv[1]))
props = pyiceberg_s3_properties()
${FILES_OF}

def compare(rows, expected, check_value):
    exp = {(t, p, o): v for t, p, o, v in expected}
    seen, wrong = {}, []
    for t, p, o, v in rows:
        k = (t, p, o)
        seen[k] = seen.get(k, 0) + 1
        if check_value and k in exp and v != exp[k]:
            wrong.append([t, p, o, v, exp[k]])
    lost = sorted(exp.keys() - seen.keys())
    unexpected = sorted(seen.keys() - exp.keys())
    return {"rows": len(rows), "distinctKeys": len(seen), "lost": len(lost), "unexpected": len(unexpected),
            "wrongValue": len(wrong), "lostSample": [list(k) for k in lost[:20]],
            "unexpectedSample": [list(k) for k in unexpected[:20]],
            "duplicateSample": [[*k, n] for k, n in seen.items() if n > 1][:20], "wrongValueSample": wrong[:20]}

con = connect()
out = {}
for x in req:
    c = x["columns"]
    cols = [c.get("topic"), c["partition"], c["offset"], c.get("value")]
    wanted = [n for n in cols if n]
    t = StaticTable.from_metadata(x["metadataLocation"], properties=props)
    a = t.scan(selected_fields=tuple(wanted)).to_arrow()
    py_rows = list(zip(*(a[n].to_pylist() if n else [x.get("topic") if i == 0 else None] * a.num_rows for i, n in enumerate(cols))))
    sel = ", ".join((f'"{n}"' if n else ("?" if i == 0 else "NULL")) for i, n in enumerate(cols))
    params = [x.get("topic")] if not cols[0] else []
    duck_rows = [tuple(r) for r in con.execute(f"SELECT {sel} FROM iceberg_scan('{x['metadataLocation']}')", params).fetchall()]
    check = bool(c.get("value"))
    out[x["table"]] = {"pyiceberg": compare(py_rows, x["expected"], check), "duckdb": compare(duck_rows, x["expected"], check),
                       "fields": [f.name for f in t.schema().fields], "files": files_of(t, x["metadataLocation"])}
print(json.dumps(out))
`;

/** Reads each table through PyIceberg and DuckDB and compares it with what it must hold. */
export async function checkTables(tables: TableExpectation[]): Promise<Record<string, TableReport>> {
  if (tables.length === 0) return {};
  const dir = mkdtempSync(join(tmpdir(), 'floe-chaos-'));
  const file = join(dir, 'request.json');
  try {
    writeFileSync(file, JSON.stringify(tables));
    return await runPythonJson<Record<string, TableReport>>(TABLES_CHECK, [file], { timeoutMs: 15 * 60_000 });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface ListedFile {
  location: string;
  lastModified: number;
  size: number;
}

/** Everything under `<location>/` (S3 ListObjectsV2, paginated). */
export async function listLocation(location: string): Promise<ListedFile[]> {
  const m = /^s3a?:\/\/([^/]+)\/(.*)$/.exec(location.replace(/\/+$/, ''));
  if (!m) throw new Error(`table location: expected s3://bucket/prefix, found ${location}`);
  const bucket = m[1]!,
    prefix = `${m[2]}/`;
  const client = stackS3Client();
  const out: ListedFile[] = [];
  try {
    let token: string | undefined;
    do {
      const r = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
      for (const o of r.Contents ?? []) {
        out.push({ location: `s3://${bucket}/${o.Key}`, lastModified: o.LastModified?.getTime() ?? 0, size: o.Size ?? 0 });
      }
      token = r.IsTruncated ? r.NextContinuationToken : undefined;
    } while (token);
  } finally {
    client.destroy();
  }
  return out;
}

export interface FileAudit {
  listed: number;
  /** referenced by the metadata (manifest lists, manifests, live entries, current metadata.json), absent */
  missing: string[];
  /** metadata-log entries that are absent (readers never need them) */
  missingMetadataLog: string[];
  /** files of DELETED manifest entries that are absent (removed with the snapshot that last had them live) */
  missingDeletedEntries: string[];
  /** unreferenced, older than the cutoff (pending markers themselves excluded) */
  orphans: ListedFile[];
  /** unreferenced and younger than the cutoff */
  young: number;
  pendingMarkers: string[];
  /**
   * unreferenced, older than the cutoff, protected by a pending marker while maintenance was still
   * running (its commit may land yet); with nothing running they are counted as orphans (a leaked
   * marker keeps them forever)
   */
  inFlight: ListedFile[];
}

/** The file-name prefix a pending marker protects (`…/floe-pending/<owner>/<prefix>`, bytes escaped as ~XX). */
function markerPrefix(markerPath: string): string | undefined {
  const seg = markerPath.slice(markerPath.lastIndexOf('/') + 1);
  try {
    return decodeURIComponent(seg.replace(/~/g, '%'));
  } catch {
    return undefined;
  }
}

const norm = (l: string) => l.replace(/^s3[an]:\/\//i, 's3://');

/**
 * Compares a table's referenced files with its listing. `cutoffMs`: unreferenced files older than
 * this are orphans. `maintenanceRunning`: some maintenance run had not finished, so files its
 * pending markers protect are in flight rather than orphans.
 */
export function auditFiles(files: TableFiles, listed: ListedFile[], cutoffMs: number, maintenanceRunning = false): FileAudit {
  const have = new Set(listed.map((f) => norm(f.location)));
  const needed = new Set(
    [files.metadataLocation, ...files.manifestLists, ...files.manifests, ...files.live, ...files.statistics].map(norm),
  );
  const log = files.metadataLog.map(norm),
    deleted = files.deletedEntries.map(norm);
  const referenced = new Set([...needed, ...log, ...deleted]);
  const markerDir = `${norm(files.location).replace(/\/+$/, '')}/metadata/floe-pending/`;
  const audit: FileAudit = {
    listed: listed.length,
    missing: [],
    missingMetadataLog: [],
    missingDeletedEntries: [],
    orphans: [],
    young: 0,
    pendingMarkers: [],
    inFlight: [],
  };
  for (const l of needed) if (!have.has(l)) audit.missing.push(l);
  for (const l of new Set(log)) if (!have.has(l) && !needed.has(l)) audit.missingMetadataLog.push(l);
  for (const l of new Set(deleted)) if (!have.has(l) && !needed.has(l)) audit.missingDeletedEntries.push(l);
  const prefixes = listed
    .map((f) => norm(f.location))
    .filter((l) => l.startsWith(markerDir))
    .map(markerPrefix)
    .filter((p): p is string => p !== undefined && p.length > 0);
  for (const f of listed) {
    const l = norm(f.location);
    if (l.startsWith(markerDir)) {
      audit.pendingMarkers.push(l);
      continue;
    }
    if (referenced.has(l)) continue;
    if (f.lastModified >= cutoffMs) {
      audit.young++;
      continue;
    }
    const base = l.slice(l.lastIndexOf('/') + 1);
    if (maintenanceRunning && prefixes.some((p) => base.startsWith(p))) audit.inFlight.push(f);
    else audit.orphans.push(f);
  }
  return audit;
}
