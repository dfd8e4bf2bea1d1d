/**
 * The chaos run's mix (bench/chaos.ts): table entries beside the demo orders table that exercise
 * what landed after the chaos run was written, each on topics and tables of its own, produced at
 * a steady rate with malformed messages, and checked at the end without floe's reader:
 *
 * - multi-topic: one entry reading two topics (`topics: [a, b]`, one ingest per topic, ingest id
 *   `main@<topic>`) into one table whose `kafka_topic` column names each row's topic;
 * - route: one topic routed by its `color` field into tables created on the fly
 *   (`route.dynamic`); the values in use grow over the run, so tables appear while everything
 *   dies; unmatched messages (no color) are dead letters;
 * - registry: Avro through the stack's Schema Registry (Confluent framing, TopicNameStrategy),
 *   whose schema gains an optional field (`note`) partway through: the table evolves mid-stream.
 *
 * Invariants (per entry, PyIceberg and DuckDB each): every good message a row exactly once (by
 * topic, partition and offset), every bad one a dead letter exactly once, every row where its
 * value says (the route's table of its color, the multi-topic table's `kafka_topic`, the registry
 * table's `note`: null before the change, the message's note after), every file the current
 * metadata references present.
 */
import avro from 'avsc';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import type { FloeConfig } from '../../config';
import {
  auditFiles,
  catalogMetadataLocation,
  catalogTableNames,
  checkTables,
  listLocation,
  readTopic,
  type TableExpectation,
  type TableReport,
  type TopicContents,
} from '../../test/support/chaos-check';
import { ChaosFeed, openTopic, retrying, type Log, type MakeMessage } from './chaos-feed';

export interface MixOptions {
  /** an entry reading two topics */
  multiTopic: boolean;
  /** a route into dynamic tables */
  route: boolean;
  /** Avro through the Schema Registry, with a schema change */
  registry: boolean;
  /** messages per second into each topic of the mix */
  mixRatePerS: number;
  mixPartitions: number;
  /** distinct route values (dynamic tables) by the end of the run */
  routeValues: number;
  /** when (fraction of the duration) the registry schema gains its optional field */
  schemaChangeAtFrac: number;
}

export type MixKind = 'multi-topic' | 'route' | 'registry';

export interface MixEntry {
  kind: MixKind;
  table: string;
  deadLetterTable: string;
  topics: string[];
  /** the table entry as written into the run's config */
  config: Record<string, unknown>;
}

const meta = [
  { name: 'kafka_partition', type: 'int', source: 'partition', required: true },
  { name: 'kafka_offset', type: 'long', source: 'offset', required: true },
];
const jsonColumns = [{ name: 'event_id', type: 'string', required: true }, { name: 'n', type: 'long', required: true }, ...meta];

/** The route's dynamic table of `value`. */
const routeTable = (name: string, value: string) => `chaos.${name}_r_${value}`;

/** The mix's entries for run `name` (none when every part is switched off). */
export function mixEntries(name: string, o: MixOptions, commitInterval: string): MixEntry[] {
  const out: MixEntry[] = [];
  const common = { ingestId: 'main', commitInterval, parallelism: 1 };
  const bucket = [{ column: 'n', transform: 'bucket[4]' }];
  if (o.multiTopic) {
    const table = `chaos.${name}_multi`;
    const topics = [`${name}_ma`, `${name}_mb`];
    out.push({
      kind: 'multi-topic',
      table,
      deadLetterTable: `${table}_dead_letters`,
      topics,
      config: {
        table,
        topics,
        ...common,
        columns: [...jsonColumns, { name: 'kafka_topic', type: 'string', source: 'topic', required: true }],
        partitionBy: bucket,
      },
    });
  }
  if (o.route) {
    const table = `chaos.${name}_route`;
    const topic = `${name}_route`;
    out.push({
      kind: 'route',
      table,
      deadLetterTable: `${table}_dead_letters`,
      topics: [topic],
      config: {
        table,
        topic,
        ...common,
        columns: [...jsonColumns, { name: 'color', type: 'string', required: true }],
        partitionBy: bucket,
        route: { field: 'color', dynamic: routeTable(name, '{value}') },
      },
    });
  }
  if (o.registry) {
    const table = `chaos.${name}_avro`;
    const topic = `${name}_avro`;
    out.push({
      kind: 'registry',
      table,
      deadLetterTable: `${table}_dead_letters`,
      topics: [topic],
      config: { table, topic, ...common, value: { format: 'avro' }, columns: meta, partitionBy: [] },
    });
  }
  return out;
}

/** A JSON message broken in one of three ways: not JSON, a required field missing, a wrong type. */
function malformedJson(n: number, good: Record<string, unknown>): string {
  switch (n % 3) {
    case 0:
      return JSON.stringify(good).slice(0, -3);
    case 1:
      return JSON.stringify({ ...good, n: undefined });
    default:
      return JSON.stringify({ ...good, n: 'twelve' });
  }
}

function multiTopicMessages(tag: string): MakeMessage {
  return (n, bad) => {
    const good = { event_id: `${tag}-${n}`, n };
    return { key: String(n), value: bad ? malformedJson(n, good) : JSON.stringify(good) };
  };
}

/**
 * The route's messages: the colors in use grow from 1 to `values` over the run's duration (a new
 * table every duration/values of wall time, whatever the producer's backlog); a malformed one is
 * not JSON, lacks its color (unmatched: a dead letter) or has a wrong type. The label is the
 * color: the table it belongs in.
 */
function routeMessages(values: number, durationMs: number, clock: { t0: number }): MakeMessage {
  return (n, bad) => {
    const inUse = Math.min(values, 1 + Math.floor(((Date.now() - clock.t0) * values) / durationMs));
    const color = `c${n % Math.max(1, inUse)}`;
    const good = { event_id: `r-${n}`, n, color };
    if (!bad) return { key: String(n), value: JSON.stringify(good), label: color };
    return { key: String(n), value: n % 3 === 1 ? JSON.stringify({ ...good, color: undefined }) : malformedJson(n, good) };
  };
}

const avroV1 = {
  type: 'record',
  name: 'ChaosEvent',
  namespace: 'floe.chaos',
  fields: [
    { name: 'event_id', type: 'string' },
    { name: 'n', type: 'long' },
    { name: 'name', type: 'string' },
  ],
};
/** Version 2: a new optional field, a compatible change (BACKWARD and FORWARD). */
const avroV2 = { ...avroV1, fields: [...avroV1.fields, { name: 'note', type: ['null', 'string'], default: null }] };
/** A schema id no registry has handed out. */
const UNKNOWN_SCHEMA_ID = 0x7ffffff0;

/** The registry feed's codec: version 1 until `evolve`, then version 2. */
class AvroCodec {
  private version: { type: avro.Type; header: Buffer; v2: boolean };

  private constructor(
    private readonly registry: SchemaRegistry,
    private readonly subject: string,
    v1: { type: avro.Type; header: Buffer },
  ) {
    this.version = { ...v1, v2: false };
  }

  private static async register(registry: SchemaRegistry, subject: string, schema: object) {
    const { id } = await registry.register({ type: 'AVRO' as never, schema: JSON.stringify(schema) } as never, { subject } as never);
    const header = Buffer.alloc(5);
    header.writeInt32BE(id, 1);
    return { type: avro.Type.forSchema(schema as avro.Schema), header, id };
  }

  static async open(url: string, topic: string): Promise<AvroCodec> {
    const registry = new SchemaRegistry({ host: url });
    const subject = `${topic}-value`;
    return new AvroCodec(registry, subject, await AvroCodec.register(registry, subject, avroV1));
  }

  get evolved(): boolean {
    return this.version.v2;
  }

  /** Registers version 2; messages made afterwards use it. Returns its id. */
  async evolve(): Promise<number> {
    const v2 = await AvroCodec.register(this.registry, this.subject, avroV2);
    this.version = { ...v2, v2: true };
    return v2.id;
  }

  /**
   * Message n; a malformed one is not framed, names an unknown schema id, or holds a string that
   * is not UTF-8. The label of a version-2 message is its note (version 1: none, the column null).
   */
  readonly make: MakeMessage = (n, bad) => {
    const { type, header, v2 } = this.version;
    const note = `note-${n}`;
    const payload = type.toBuffer({ event_id: `a-${n}`, n, name: `c${n}`, ...(v2 ? { note } : {}) });
    if (!bad) return { key: String(n), value: Buffer.concat([header, payload]), ...(v2 ? { label: note } : {}) };
    switch (n % 3) {
      case 0:
        return { key: String(n), value: JSON.stringify({ event_id: `a-${n}`, n }) };
      case 1: {
        const unknown = Buffer.from(header);
        unknown.writeInt32BE(UNKNOWN_SCHEMA_ID, 1);
        return { key: String(n), value: Buffer.concat([unknown, payload]) };
      }
      default: {
        const broken = Buffer.concat([header, payload]);
        broken[broken.indexOf(Buffer.from(`c${n}`), 5)] = 0xff;
        return { key: String(n), value: broken };
      }
    }
  };
}

/** The mix's producers, one feed per topic, and the registry's schema change. */
export class Mix {
  private constructor(
    readonly entries: MixEntry[],
    readonly feeds: ChaosFeed[],
    private readonly codec: AvroCodec | null,
    private readonly clock: { t0: number },
  ) {}

  /**
   * After the chaos (the broker up again, the ingests still running): a last batch into every
   * topic of the mix, made now. A long broker outage can hold a producer for the rest of the run
   * (a Kafka restart took up to 105 s on the loaded shared broker); this way every route value's
   * table is still created on the fly and the registry table still gets version-2 rows after
   * version-1 ones, whatever the outages did.
   */
  async tail(deadline: number, log: Log, count: number): Promise<void> {
    for (const f of this.feeds) await f.send(f.batch(count), deadline);
    if (this.feeds.length) log(`mix: a last ${count} messages into each of its ${this.feeds.length} topics`);
  }

  static async open(
    entries: MixEntry[],
    cfg: FloeConfig,
    o: MixOptions & { durationMs: number; malformedEvery: number },
    log: Log,
  ): Promise<Mix> {
    const feeds: ChaosFeed[] = [];
    let codec: AvroCodec | null = null;
    const clock = { t0: Date.now() };
    const feed = async (topic: string, make: MakeMessage) =>
      feeds.push(new ChaosFeed(await openTopic(cfg.kafka.brokers, topic, o.mixPartitions), topic, o.malformedEvery, log, make));
    for (const e of entries) {
      if (e.kind === 'multi-topic') for (const [i, topic] of e.topics.entries()) await feed(topic, multiTopicMessages(`m${i}`));
      else if (e.kind === 'route') await feed(e.topics[0]!, routeMessages(o.routeValues, o.durationMs, clock));
      else {
        if (!cfg.schemaRegistry) throw new Error('the registry mix needs schemaRegistry in the config');
        codec = await AvroCodec.open(cfg.schemaRegistry.url, e.topics[0]!);
        await feed(e.topics[0]!, codec.make);
      }
    }
    return new Mix(entries, feeds, codec, clock);
  }

  /** The chaos starts: the route's values grow from now. */
  started(t0: number): void {
    this.clock.t0 = t0;
  }

  /** The registry's schema gains its optional field at `at` (no-op without a registry entry). */
  async changeSchemaAt(at: number, log: Log, deadline: number): Promise<void> {
    const codec = this.codec;
    if (!codec) return;
    await new Promise((r) => setTimeout(r, Math.max(0, at - Date.now())));
    const id = await retrying('register schema version 2', () => codec.evolve(), log, deadline);
    log(`registry: schema version 2 (optional field note) registered as id ${id}; the producer writes it from now on`);
  }

  async close(): Promise<void> {
    for (const f of this.feeds) await f.producer.disconnect().catch(() => undefined);
  }

  get produced(): { good: number; bad: number } {
    return this.feeds.reduce((a, f) => ({ good: a.good + f.produced.good, bad: a.bad + f.produced.bad }), { good: 0, bad: 0 });
  }

  /** The end check of every entry: the topics read back, the tables through PyIceberg and DuckDB, the files on S3. */
  async check(cfg: FloeConfig, pgUrl: string, catalogName: string): Promise<MixResult[]> {
    const out: MixResult[] = [];
    for (const e of this.entries) {
      const contents = new Map<string, TopicContents>();
      for (const topic of e.topics) contents.set(topic, await readTopic(cfg.kafka.brokers, topic));
      const feedsOf = this.feeds.filter((f) => e.topics.includes(f.topic));
      out.push(await checkEntry(e, contents, feedsOf, pgUrl, catalogName, this.codec?.evolved ?? false));
    }
    return out;
  }
}

export interface MixResult {
  kind: MixKind;
  /** the tables checked (data tables; the dead-letter table apart) */
  tables: string[];
  goodMessages: number;
  rows: number;
  duplicates: number;
  lost: number;
  unexpected: number;
  /** rows whose value is not their message's (wrong route table, topic or note) */
  wrongValue: number;
  badMessages: number;
  deadLetters: number;
  missingFiles: number;
  /** registry: good messages of schema version 1 and 2 */
  versions?: { v1: number; v2: number };
  violations: string[];
}

/** [topic, partition, offset, label] of every good (or bad) message of the topics. */
function keys(contents: Map<string, TopicContents>, kind: 'good' | 'bad'): Array<[string, number, number, string | null]> {
  const out: Array<[string, number, number, string | null]> = [];
  for (const [topic, tc] of contents) {
    tc[kind].forEach(([p, o], i) => out.push([topic, p, o, kind === 'good' ? tc.goodLabels[i]! : null]));
  }
  return out;
}

async function checkEntry(
  e: MixEntry,
  contents: Map<string, TopicContents>,
  feeds: ChaosFeed[],
  pgUrl: string,
  catalogName: string,
  evolved: boolean,
): Promise<MixResult> {
  const violations: string[] = [];
  const good = keys(contents, 'good');
  const bad = keys(contents, 'bad');
  for (const f of feeds) {
    const tc = contents.get(f.topic)!;
    if (tc.foreign > 0) violations.push(`${f.topic}: ${tc.foreign} messages without chaos headers`);
    if (tc.distinctSeqs !== f.produced.good + f.produced.bad)
      violations.push(
        `${f.topic}: the producer sent ${f.produced.good + f.produced.bad} distinct messages, the topic holds ${tc.distinctSeqs}`,
      );
  }
  const location = (t: string) => catalogMetadataLocation(pgUrl, catalogName, t);
  const meta = { partition: 'kafka_partition', offset: 'kafka_offset' };
  const want: TableExpectation[] = [];
  let versions: MixResult['versions'];
  if (e.kind === 'multi-topic') {
    // the value checked is the row's topic column: each row says which topic it came from
    want.push({
      table: e.table,
      metadataLocation: await location(e.table),
      columns: { ...meta, topic: 'kafka_topic', value: 'kafka_topic' },
      expected: good.map(([t, p, o]) => [t, p, o, t]),
    });
  } else if (e.kind === 'route') {
    const topic = e.topics[0]!;
    const name = e.table.slice('chaos.'.length, -'_route'.length);
    const byColor = new Map<string, Array<[string, number, number, string | null]>>();
    for (const k of good) byColor.set(k[3]!, [...(byColor.get(k[3]!) ?? []), k]);
    // Every value's table holds its messages with its color; the entry's own table holds none
    // (every good message has a color); no other table of the template exists.
    const expectedTables = [...byColor.keys()].sort().map((c) => routeTable(name, c));
    const created = (await catalogTableNames(pgUrl, catalogName, 'chaos', `${name}_r_`)).map((t) => `chaos.${t}`).sort();
    if (JSON.stringify(created) !== JSON.stringify(expectedTables))
      violations.push(`route: dynamic tables ${JSON.stringify(created)}, expected ${JSON.stringify(expectedTables)}`);
    want.push({ table: e.table, metadataLocation: await location(e.table), columns: { ...meta, value: 'color' }, topic, expected: [] });
    for (const [color, ks] of byColor) {
      const table = routeTable(name, color);
      if (!created.includes(table)) continue;
      want.push({ table, metadataLocation: await location(table), columns: { ...meta, value: 'color' }, topic, expected: ks });
    }
  } else {
    const v2 = good.filter((k) => k[3] !== null).length;
    versions = { v1: good.length - v2, v2 };
    if (versions.v1 === 0 || versions.v2 === 0 || !evolved)
      violations.push(`registry: expected good messages of both schema versions, found ${JSON.stringify(versions)}`);
    want.push({
      table: e.table,
      metadataLocation: await location(e.table),
      columns: { ...meta, value: 'note' },
      topic: e.topics[0]!,
      expected: good,
    });
  }
  want.push({
    table: e.deadLetterTable,
    metadataLocation: await location(e.deadLetterTable),
    columns: { topic: 'topic', partition: 'partition', offset: 'offset' },
    expected: bad,
  });
  const report = await checkTables(want);
  if (e.kind === 'registry' && !report[e.table]!.fields.includes('note'))
    violations.push(`registry: ${e.table} has no note column after the schema change: ${report[e.table]!.fields.join(', ')}`);
  let missingFiles = 0;
  for (const w of want) {
    // Only missing files: the mix's tables get no orphan sweeps, so unreferenced files of
    // killed cycles stay (the orders table's audit covers the sweep).
    const r = report[w.table]!;
    const a = auditFiles(r.files, await listLocation(r.files.location), 0);
    missingFiles += a.missing.length;
    if (a.missing.length > 0)
      violations.push(
        `${w.table}: ${a.missing.length} files referenced by the current metadata are missing, e.g. ${a.missing.slice(0, 5).join(', ')}`,
      );
  }
  violations.push(...tableViolations(want, report));
  const data = want.slice(0, -1).map((w) => report[w.table]!);
  const dl = report[e.deadLetterTable]!;
  const worst = (f: (r: TableReport) => number, rs: TableReport[]) => rs.reduce((s, r) => s + f(r), 0);
  return {
    kind: e.kind,
    tables: want.slice(0, -1).map((w) => w.table),
    goodMessages: good.length,
    rows: worst((r) => r.pyiceberg.rows, data),
    duplicates: worst((r) => Math.max(r.pyiceberg.rows - r.pyiceberg.distinctKeys, r.duckdb.rows - r.duckdb.distinctKeys), data),
    lost: worst((r) => Math.max(r.pyiceberg.lost, r.duckdb.lost), data),
    unexpected: worst((r) => Math.max(r.pyiceberg.unexpected, r.duckdb.unexpected), data),
    wrongValue: worst((r) => Math.max(r.pyiceberg.wrongValue, r.duckdb.wrongValue), data),
    badMessages: bad.length,
    deadLetters: dl.pyiceberg.rows,
    missingFiles,
    ...(versions ? { versions } : {}),
    violations,
  };
}

/** Per table and engine: rows == expected, each once, nothing else, every value as expected. */
function tableViolations(want: TableExpectation[], report: Record<string, TableReport>): string[] {
  const out: string[] = [];
  for (const w of want) {
    for (const engine of ['pyiceberg', 'duckdb'] as const) {
      const c = report[w.table]![engine];
      const at = `${w.table} (${engine})`;
      if (c.rows !== w.expected.length) out.push(`${at}: ${c.rows} rows, expected ${w.expected.length}`);
      if (c.rows !== c.distinctKeys)
        out.push(`${at}: ${c.rows - c.distinctKeys} duplicates, e.g. ${JSON.stringify(c.duplicateSample.slice(0, 5))}`);
      if (c.lost > 0) out.push(`${at}: ${c.lost} messages missing, e.g. ${JSON.stringify(c.lostSample.slice(0, 10))}`);
      if (c.unexpected > 0)
        out.push(`${at}: ${c.unexpected} rows not expected here, e.g. ${JSON.stringify(c.unexpectedSample.slice(0, 10))}`);
      if (c.wrongValue > 0)
        out.push(`${at}: ${c.wrongValue} rows with a wrong ${w.columns.value}, e.g. ${JSON.stringify(c.wrongValueSample.slice(0, 5))}`);
    }
  }
  return out;
}

/** One line per entry for the summary: `multi-topic rows=… duplicates=… lost=… dead_letters=a/b`. */
export function mixSummary(results: MixResult[]): string {
  return results
    .map(
      (r) =>
        `${r.kind}: tables=${r.tables.length} rows=${r.rows}/${r.goodMessages} duplicates=${r.duplicates} lost=${r.lost} ` +
        `misplaced=${r.unexpected + r.wrongValue} dead_letters=${r.deadLetters}/${r.badMessages}` +
        (r.versions ? ` v1=${r.versions.v1} v2=${r.versions.v2}` : '') +
        (r.missingFiles ? ` missing_files=${r.missingFiles}` : ''),
    )
    .join('; ');
}
