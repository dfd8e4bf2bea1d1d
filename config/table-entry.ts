/**
 * A table entry of the config: which topic(s) land in which Iceberg table, its columns (a column
 * type is a string or a mapping, nested at will), partitioning, value and key formats, routing and
 * maintenance; and the checks between entries (one writer per table). Part of the one schema
 * (config/schema.ts).
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { PrimitiveType } from '../iceberg';
import {
  isMapKeyType,
  MAP_KEY_EXPECTED,
  NESTED_TYPE_TEXT,
  PRIMITIVE,
  PRIMITIVE_EXPECTED,
  readColumnType,
  TYPE_EXPECTED,
  type ColumnType,
  type HeadersMapType,
} from './column-type';
import { keyOf, type ConfigPath } from './problems';
import {
  addIssue,
  bool,
  COLUMN_NAME,
  duration,
  IDENT,
  IDENT_WHAT,
  list,
  mapOf,
  NAME,
  obj,
  posInt,
  ruleOf,
  size,
  text,
  tidy,
  withRule,
  type Rule,
} from './values';

/**
 * `commitInterval` must be below this (10 minutes). A poll activity runs for up to one commit
 * interval before it returns its files, so an interval at or above the poll activity's
 * start-to-close timeout would time out every poll and never commit. Workflows derive their poll
 * timeout from it: anything comfortably above, e.g. this plus a few minutes for writing the files.
 */
export const COMMIT_INTERVAL_LIMIT_MS = 10 * 60_000;

/** The shortest `commitInterval` (1 s). */
const COMMIT_INTERVAL_MIN_MS = 1000;

/** Kafka's legal topic names. */
const TOPIC_NAME = /^[A-Za-z0-9._-]{1,249}$/;

/** The whole-name matcher of a `topicPattern` (Java's `Pattern.matches`, as Kafka's `topics.regex`). */
export function topicMatcher(pattern: string): RegExp {
  return new RegExp(`^(?:${pattern})$`);
}

/** The placeholder of a route's dynamic table template. */
export const ROUTE_VALUE_PLACEHOLDER = '{value}';

// ---------- column types

/*
 * A column's type: a string (a primitive, or the nested grammar of config/column-type.ts) or a
 * mapping of the same nesting. Annotated, not inferred: the type is recursive (config/column-type.ts).
 */
const typeText = z.string().transform((s, ctx): ColumnType => {
  if (PRIMITIVE.test(s)) return s as PrimitiveType;
  if (!NESTED_TYPE_TEXT.test(s)) return addIssue(ctx, TYPE_EXPECTED, true);
  const r = readColumnType(s);
  return 'type' in r ? r.type : addIssue(ctx, r.problem);
});

const structField = obj({
  name: text(NAME, 'a field name ([A-Za-z_][A-Za-z0-9_]*)'),
  get type(): z.ZodType<ColumnType> {
    return columnType;
  },
  required: bool().default(false),
  path: text().optional().describe("dotted path inside the struct's JSON object; default the field name"),
  doc: text().optional(),
});

const structType = withRule(
  obj({ type: z.literal('struct'), fields: z.array(structField, { error: 'a list' }).min(1, { error: 'at least one field' }) }),
  (s, r) => {
    if (!r.ok('fields')) return;
    s.fields.forEach((f, i) => {
      if (s.fields.findIndex((g) => g.name === f.name) < i) r.expected(['fields', i, 'name'], 'a field name unique in the struct');
    });
  },
);

const listType = obj({
  type: z.literal('list'),
  get element(): z.ZodType<ColumnType> {
    return columnType;
  },
  elementRequired: bool().default(false),
});

/** A map from a JSON object: its keys (text) are converted to `key`, which is always required. */
const mapType = obj({
  type: z.literal('map'),
  key: z
    .string({ error: MAP_KEY_EXPECTED })
    .refine((k) => PRIMITIVE.test(k) && isMapKeyType(k as PrimitiveType), { error: MAP_KEY_EXPECTED, params: { expected: true } })
    .transform((k) => k as PrimitiveType),
  get value(): z.ZodType<ColumnType> {
    return columnType;
  },
  valueRequired: bool().default(false),
});

const columnTypes = z.union(
  [
    typeText,
    z.discriminatedUnion('type', [structType, listType, mapType], {
      error: 'struct, list or map (a primitive type is written as a string: type: long)',
    }),
  ],
  { error: TYPE_EXPECTED },
);

// What the schema produces is exactly the hand-written ColumnType (config/column-type.ts says why).
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const _exactly: Same<z.output<typeof columnTypes>, ColumnType> = true;

const columnType: z.ZodType<ColumnType> = columnTypes.meta({
  id: 'ColumnType',
  description: 'long, decimal(9, 2), list<string>, struct<id: long not null, …>, or the mapping form',
});

/** A `source: headers` column's type (every header by name, values as text or bytes), if `t` is one. */
function headersMapType(t: ColumnType): HeadersMapType | undefined {
  if (typeof t === 'string' || t.type !== 'map' || t.key !== 'string' || t.valueRequired) return undefined;
  return t.value === 'string' || t.value === 'binary' ? `map<string, ${t.value}>` : undefined;
}

// ---------- a table entry

const SOURCES = ['value', 'key', 'header', 'headers', 'topic', 'partition', 'offset', 'timestamp'] as const;

const column = withRule(
  obj({
    name: text(NAME, COLUMN_NAME),
    type: columnType.describe(
      'an Iceberg primitive type; with source value a nested type too; with source headers map<string, string> or map<string, binary>',
    ),
    required: bool().default(false),
    path: text().optional().describe('dotted path into the JSON value; default the column name'),
    source: z.enum(SOURCES, { error: `one of ${SOURCES.join(', ')}` }).default('value'),
    header: text().optional().describe("source header: the header's name (a repeated header gives its last value)"),
    doc: text().optional(),
  }),
  (c, r) => {
    if (!r.ok('source')) return;
    if (r.ok('header') && (c.source === 'header') !== (c.header !== undefined))
      r.expected(['header'], c.source === 'header' ? "the header's name (source: header)" : 'no header name unless source is header');
    if (!r.ok('type')) return;
    if (c.source === 'headers' && headersMapType(c.type) === undefined)
      r.expected(['type'], 'map<string, string> or map<string, binary> (source: headers)');
    else if (c.source !== 'value' && c.source !== 'headers' && typeof c.type !== 'string')
      r.expected(['type'], `${PRIMITIVE_EXPECTED}; nested types are for source: value`);
  },
).transform(({ path, source, doc, ...c }) => ({
  ...c,
  type: source === 'headers' ? headersMapType(c.type)! : (c.type as ColumnType | HeadersMapType),
  // Always present once parsed (source 'value' by default), yet optional in the type: a column
  // derived from a record schema (ingest/formats) is written without them.
  ...({ path, source, doc } as { path?: string; source?: (typeof SOURCES)[number]; doc?: string }),
}));

const partitionField = obj({
  column: text(),
  transform: text(
    /^(identity|year|month|day|hour|void|bucket\[\d+\]|truncate\[\d+\])$/,
    'identity|year|month|day|hour|bucket[N]|truncate[W]|void',
  ).default('identity'),
  name: text().optional(),
});

const VALUE_FORMATS = ['json', 'avro', 'protobuf', 'json-schema'] as const;

/** Plain Avro's writer schema from a file, read at load (it is not a secret). */
const schemaFile = text().transform((file, ctx) => {
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    return addIssue(ctx, `cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
});

const formatKeys = {
  format: z.enum(VALUE_FORMATS, { error: VALUE_FORMATS.join(', ') }).default('json'),
  subject: text().optional().describe('the subject whose latest version shapes a new table; default <topic>-value (<topic>-key)'),
  schema: text().optional().describe('plain Avro: the writer schema (JSON) every value is encoded with'),
  schemaFile: schemaFile.optional(),
  onIncompatibleSchema: z.enum(['fail', 'dead-letter'], { error: 'fail or dead-letter' }).default('fail'),
};
type FormatKeys = z.output<z.ZodObject<typeof formatKeys>>;

/** The checks the value and the key formats share; what the format reads. */
function formatRule(f: FormatKeys, r: Rule): void {
  if (f.schema !== undefined && f.schemaFile !== undefined) r.problem(['schemaFile'], 'give either schema or schemaFile, not both');
  const schemaKey = f.schema !== undefined ? 'schema' : 'schemaFile';
  const schema = f.schema ?? f.schemaFile;
  if (!r.ok('format') || !r.ok(schemaKey)) return;
  if (schema !== undefined && f.format !== 'avro') r.problem([schemaKey], 'a schema in the config is for format avro (plain Avro)');
  else if (schema !== undefined) {
    try {
      JSON.parse(schema);
    } catch (e) {
      r.problem([schemaKey], `not an Avro schema in JSON: ${(e as Error).message}`);
    }
  }
  if (f.subject !== undefined && (f.format === 'json' || schema !== undefined))
    r.problem(['subject'], 'a subject is for a Schema Registry format');
}

function formatOf(f: FormatKeys) {
  const schema = f.schema ?? f.schemaFile;
  // Every format but json and plain Avro reads the Confluent wire format through the Schema Registry.
  const registry = f.format !== 'json' && schema === undefined;
  return { format: f.format, registry, ...tidy({ schema, subject: f.subject }), onIncompatibleSchema: f.onIncompatibleSchema };
}

/**
 * How a table's record values are read: JSON into the configured columns (the default), or a
 * Schema Registry format (Confluent framing) whose schema derives the columns; `avro` with a
 * `schema`/`schemaFile` is plain Avro binary (no framing, no registry).
 */
const valueFormat = withRule(
  obj({
    ...formatKeys,
    fields: list(text(), text()).optional().describe('only these top-level fields of the record become columns; default all'),
    rename: mapOf(text(NAME, COLUMN_NAME)).optional().describe('schema field name -> column name'),
  }),
  (f, r) => {
    formatRule(f, r);
    const k = f.fields !== undefined ? 'fields' : 'rename';
    if (r.ok('format') && f.format === 'json' && f[k] !== undefined)
      r.problem([k], "fields and rename shape a schema format's derived columns; JSON columns are configured one by one");
  },
).transform((f) => ({ ...formatOf(f), ...tidy({ fields: f.fields, rename: f.rename }) }));

/** The record key in a schema format: one column (`column`, default `key`) of the key schema's type. */
const keyFormat = withRule(obj({ ...formatKeys, column: text(NAME, COLUMN_NAME).default('key') }), (f, r) => {
  formatRule(f, r);
  if (r.ok('format') && f.format === 'json')
    r.expected(['format'], 'avro, protobuf or json-schema (a JSON key is read by columns with source: key)', 'json');
}).transform((f) => ({ ...formatOf(f), column: f.column }));

/**
 * Routing: the entry's records are split over several tables, each with the entry's columns,
 * partitioning and properties (the template) and its own exactly-once cursor.
 */
const route = withRule(
  obj({
    by: z
      .enum(['field', 'topic'], { error: 'field or topic' })
      .default('field')
      .describe("what picks a record's table: a field of its JSON value, or its topic"),
    field: text(/^[^.]+(\.[^.]+)*$/, 'a dotted path like type or meta.kind').optional(),
    tables: mapOf(text(IDENT, IDENT_WHAT))
      .default(() => ({}))
      .describe('static routes: value -> table identifier'),
    dynamic: text().optional().describe(`tables for other values, created on first use: ns.prefix_${ROUTE_VALUE_PLACEHOLDER}`),
    unmatched: z.enum(['dead-letter', 'skip', 'base'], { error: 'dead-letter, skip or base' }).default('dead-letter'),
  }),
  (t, r) => {
    if (!r.ok('by')) return;
    if (t.by === 'field' && t.field === undefined && r.ok('field')) r.problem(['field'], 'by field needs the (dotted) path of the field');
    if (t.by === 'topic' && t.field !== undefined) r.problem(['field'], 'only with by: field');
    if (r.ok('tables') && Object.keys(t.tables).length === 0 && t.dynamic === undefined)
      r.problem(['tables'], 'a route needs static tables, a dynamic template, or both');
  },
).transform((t) => ({ by: t.by, ...tidy({ field: t.field, dynamic: t.dynamic }), tables: t.tables, unmatched: t.unmatched }));

/**
 * A streaming sink commits every few seconds: at a 10 s interval each snapshot adds ~0.8 KB to every
 * metadata.json written. Hourly expiry of snapshots older than 2 h keeps at most ~3 h (~1,100
 * snapshots, ~0.9 MB); Java's 5-day default would grow it to ~44 MB per commit.
 */
const maintenance = obj({
  compact: obj({
    cron: text().default('*/15 * * * *'),
    targetFileSizeBytes: size().prefault('128MiB'),
    minInputFiles: posInt().default(5),
    lookbackPartitions: posInt().optional(),
    paused: bool().default(false),
  }).prefault({}),
  expire: obj({
    cron: text().default('7 * * * *'),
    olderThan: duration().prefault('2h'),
    retainLast: posInt().default(10),
    paused: bool().default(false),
  })
    .transform(({ olderThan, ...e }) => ({ ...e, olderThanMs: olderThan }))
    .prefault({}),
  orphans: obj({ cron: text().default('30 3 * * *'), olderThan: duration().prefault('3d'), paused: bool().default(false) })
    .transform(({ olderThan, ...o }) => ({ ...o, olderThanMs: olderThan }))
    .prefault({}),
}).prefault({});

const topicList = list(text(), text()).superRefine((names, ctx) => {
  const r = ruleOf(ctx);
  names.forEach((n, j) => {
    if (!TOPIC_NAME.test(n)) r.expected([j], 'a Kafka topic name ([A-Za-z0-9._-], 249 at most)', n);
    else if (names.indexOf(n) !== j) r.expected([j], 'each topic once', n);
  });
});

const topicPattern = text().superRefine((pattern, ctx) => {
  try {
    topicMatcher(pattern);
  } catch (e) {
    ruleOf(ctx).expected([], `a regular expression (${(e as Error).message})`);
  }
});

const MODES = ['append', 'upsert', 'cdc'] as const;

/** Identifier column types the key index encodes (ingest/upsert/key-codec.ts). */
const ID_COLUMN_TYPE = /^(int|long|string|date|timestamp|timestamptz|uuid|boolean|decimal\(\s*\d+\s*,\s*\d+\s*\))$/;

/** A change stream's envelope (mode: cdc). */
const cdc = obj({
  format: z
    .enum(['debezium'], { error: 'debezium' })
    .default('debezium')
    .describe("Debezium's envelope (before, after, op) or its flattened form (__op, __deleted)"),
});

/** Where an upsert/CDC table's key index lives (ingest/upsert/key-index.ts). */
const keyIndex = obj({
  maxMemoryKeys: posInt()
    .default(5_000_000)
    .describe('keys held in memory (about 70 bytes each); beyond this the index moves to an SQLite file on disk'),
  spillDir: text().optional().describe("the folder of a spilled index's file; default the OS temp folder"),
});

const TABLE_KEYS = {
  table: text(IDENT, IDENT_WHAT).describe('the Iceberg table namespace.table'),
  topic: text(TOPIC_NAME, 'a Kafka topic name ([A-Za-z0-9._-], 249 at most)').optional(),
  topics: topicList.optional().describe('several topics, each ingested with its own cursor (ingest id <ingestId>@<topic>)'),
  topicPattern: topicPattern.optional().describe('every topic whose whole name matches, internal __ topics excepted'),
  topicRefresh: duration().optional().describe('topics / topicPattern: how often the cluster is asked for new topics; default 1m'),
  ingestId: text(/^[A-Za-z0-9_.-]+$/, 'an id of [A-Za-z0-9_.-]')
    .default('main')
    .describe('one exactly-once cursor per (table, ingest id)'),
  columns: z.array(column, { error: 'a list' }).optional().describe('format json: at least one; a schema format: only columns from Kafka'),
  partitionBy: z.array(partitionField, { error: 'a list' }).default(() => []),
  deadLetterTable: text(IDENT, IDENT_WHAT).optional().describe('default <table>_dead_letters'),
  commitInterval: duration(
    {
      ms: COMMIT_INTERVAL_LIMIT_MS,
      why: "a poll lasts up to one interval; a longer one outlasts the poll activity's timeout and never commits",
    },
    {
      ms: COMMIT_INTERVAL_MIN_MS,
      why: "every cycle is a snapshot and a catalog commit: below a second, a cycle's fixed cost exceeds the wait and the table's metadata grows faster than expiry trims it",
    },
  ).prefault('10s'),
  maxRecordsPerCycle: posInt().default(500_000),
  maxBytesPerCycle: size().prefault('256MiB'),
  targetFileSizeBytes: size().prefault('128MiB'),
  parallelism: posInt().default(1).describe('partition groups polled by parallel activities'),
  cyclesPerRun: posInt().default(200).describe('continue-as-new after this many cycles (history stays bounded)'),
  isolateAfterAttempts: posInt()
    .default(5)
    .describe(
      "attempts of a cycle's poll or commit before the records it covers are isolated (bisected) and the failing ones dead-lettered; a service's trouble is retried instead, the ingest showing stalled",
    ),
  properties: mapOf()
    .default(() => ({}))
    .describe('Iceberg table properties'),
  maintenance,
  value: valueFormat.prefault({}),
  key: keyFormat.optional(),
  route: route.optional(),
  mode: z
    .enum(MODES, { error: MODES.join(', ') })
    .default('append')
    .describe(
      'append: every record a new row; upsert: the newest record of a key is its row, a tombstone deletes it; cdc: a change stream (cdc.format)',
    ),
  idColumns: list(text(NAME, COLUMN_NAME), text())
    .optional()
    .describe(
      "mode upsert or cdc: the row key's columns (the table's Iceberg identifier fields); a schema format's default to the key schema's fields",
    ),
  cdc: cdc.optional(),
  keyIndex: keyIndex.optional(),
  formatVersion: z
    .union([z.literal(2), z.literal(3)], { error: '2 or 3' })
    .default(2)
    .describe(
      'the Iceberg format version of a new table, and the least an existing one is upgraded to (3: deletion vectors, row lineage); a v3 table stays v3',
    ),
};

const tableKeys = obj(TABLE_KEYS);

/** The checks between a table entry's keys: one way to name topics, columns that fit the format, partitions on real columns. */
function tableRule(t: z.output<typeof tableKeys>, r: Rule): void {
  const given = (['topic', 'topics', 'topicPattern'] as const).filter((k) => t[k] !== undefined);
  if (given.length !== 1)
    r.problem(
      [given[1] ?? 'topic'],
      `give one of topic (a name), topics (a list of names) or topicPattern (a regular expression)${given.length > 1 ? `, not ${given.join(' and ')}` : ''}`,
    );
  else if (given[0] === 'topic' && t.topicRefresh !== undefined) r.problem(['topicRefresh'], 'only with topics or topicPattern');
  if (t.route?.dynamic !== undefined && r.ok('route') && r.ok('table')) {
    const parts = t.route.dynamic.split(ROUTE_VALUE_PLACEHOLDER);
    const id = parts.join('x');
    if (parts.length !== 2 || !IDENT.test(id) || parts[0]!.split('.').length !== id.split('.').length)
      r.expected(
        ['route', 'dynamic'],
        `a table identifier template with ${ROUTE_VALUE_PLACEHOLDER} once in its table name, like ${t.table}_${ROUTE_VALUE_PLACEHOLDER}`,
      );
  }
  if (!r.ok('value')) return;
  const format = t.value.format;
  if (r.ok('mode')) keyedRule(t, r);
  if (t.key !== undefined && format === 'json' && r.ok('key'))
    r.problem(['key'], 'a key in a schema format goes with a value in a schema format (value.format)');
  if (!r.ok('columns')) return;
  // A schema-derived table needs no columns: they come from the record schema (Kafka columns may be added).
  const columns = t.columns ?? [];
  if (format === 'json' && t.columns === undefined) r.expected(['columns'], 'a list');
  else if (format === 'json' && columns.length === 0) r.expected(['columns'], 'at least one column');
  const fromValue = columns.find((c) => c.source === 'value');
  if (format !== 'json' && fromValue)
    r.problem(
      ['columns'],
      `column ${fromValue.name}: with format ${format} the value's columns come from its schema; configure only columns from the key, headers, topic, partition, offset or timestamp`,
    );
  const names = columns.map((c) => c.name);
  names.forEach((n, i) => {
    if (names.indexOf(n) !== i) r.expected(['columns'], 'unique column names', n);
  });
  if (!r.ok('partitionBy')) return;
  t.partitionBy.forEach((p, j) => {
    const c = columns.find((x) => x.name === p.column);
    // A derived column's name is known only from the schema: checked when the table is created.
    if (!c && format === 'json') r.expected(['partitionBy', j, 'column'], `one of the columns (${names.join(', ')})`);
    else if (c?.source === 'headers') r.expected(['partitionBy', j, 'column'], 'a column of a primitive type (not the headers map)');
    else if (c && typeof c.type !== 'string')
      r.expected(['partitionBy', j, 'column'], 'a column of a primitive type (not a struct, list or map)');
  });
}

/** An upsert or CDC entry: its row key names configured columns the key index can encode. */
function keyedRule(t: z.output<typeof tableKeys>, r: Rule): void {
  if (t.mode === 'append') {
    if (t.idColumns !== undefined && r.ok('idColumns'))
      r.problem(['idColumns'], 'only with mode upsert or cdc (the row key of a table whose rows change)');
    if (t.cdc !== undefined && r.ok('cdc')) r.problem(['cdc'], 'only with mode cdc');
    if (t.keyIndex !== undefined && r.ok('keyIndex')) r.problem(['keyIndex'], 'only with mode upsert or cdc');
    return;
  }
  if (t.cdc !== undefined && t.mode !== 'cdc' && r.ok('cdc')) r.problem(['cdc'], 'only with mode cdc');
  if (t.route !== undefined && r.ok('route'))
    r.problem(['route'], `a route cannot be combined with mode ${t.mode} (each routed table would need its own key index)`);
  if ((t.topics !== undefined || t.topicPattern !== undefined) && r.ok('topic'))
    r.problem(
      [t.topics !== undefined ? 'topics' : 'topicPattern'],
      `mode ${t.mode} reads one topic: the newest record of a key is only defined within one topic's partition`,
    );
  if (!r.ok('idColumns') || !r.ok('columns')) return;
  // A schema format's columns come from its schemas: the row key defaults to the key schema's
  // fields, and is checked against the table's columns when the table is read.
  if (t.value.format !== 'json') {
    t.idColumns?.forEach((name, j) => {
      if (t.idColumns!.indexOf(name) !== j) r.expected(['idColumns', j], 'each column once', name);
    });
    return;
  }
  if (t.idColumns === undefined) {
    r.expected(['idColumns'], `the row key's columns (mode ${t.mode}; JSON values have no key schema to take them from)`);
    return;
  }
  const columns = t.columns ?? [];
  t.idColumns.forEach((name, j) => {
    const c = columns.find((x) => x.name === name);
    if (!c) r.expected(['idColumns', j], `one of the columns (${columns.map((x) => x.name).join(', ')})`, name);
    else if (typeof c.type !== 'string' || !ID_COLUMN_TYPE.test(c.type))
      r.expected(
        ['idColumns', j],
        'a column of type int, long, string, date, timestamp, timestamptz, decimal(P, S), uuid or boolean',
        name,
      );
    else if (t.idColumns!.indexOf(name) !== j) r.expected(['idColumns', j], 'each column once', name);
  });
}

export const table = withRule(tableKeys, tableRule).transform((t) => {
  const refreshMs = t.topicRefresh ?? 60_000;
  const topics =
    t.topics !== undefined || t.topicPattern !== undefined ? tidy({ names: t.topics, pattern: t.topicPattern, refreshMs }) : undefined;
  return {
    table: t.table,
    // An entry of several topics has a label here (`a,b` or `/regex/`) and reads each topic through
    // config/topics.ts topicEntry, never this.
    topic: topics?.names ? topics.names.join(',') : topics ? `/${topics.pattern}/` : t.topic!,
    ...tidy({ topics }),
    ingestId: t.ingestId,
    // A row key's columns are never null (Iceberg identifier fields are required).
    columns: (t.columns ?? []).map((c) => (t.idColumns?.includes(c.name) && !c.required ? { ...c, required: true } : c)),
    partitionBy: t.partitionBy,
    deadLetterTable: t.deadLetterTable ?? `${t.table}_dead_letters`,
    commitIntervalMs: t.commitInterval,
    maxRecordsPerCycle: t.maxRecordsPerCycle,
    maxBytesPerCycle: t.maxBytesPerCycle,
    targetFileSizeBytes: t.targetFileSizeBytes,
    parallelism: t.parallelism,
    cyclesPerRun: t.cyclesPerRun,
    isolateAfterAttempts: t.isolateAfterAttempts,
    properties: t.properties,
    maintenance: t.maintenance,
    value: t.value,
    mode: t.mode,
    formatVersion: t.formatVersion,
    ...tidy({
      key: t.key,
      route: t.route,
      idColumns: t.mode === 'append' ? undefined : t.idColumns,
      cdc: t.mode === 'cdc' ? (t.cdc ?? { format: 'debezium' as const }) : undefined,
      keyIndex: t.mode === 'append' ? undefined : (t.keyIndex ?? { maxMemoryKeys: 5_000_000 }),
    }),
  };
});

type Entry = z.output<typeof table>;

/**
 * Every Iceberg table is written by one entry: the ingest workflow id, `findTable` and the
 * dead-letter cursor all key on the identifier, so a second entry for a table (even under another
 * ingest id) or a dead-letter table shared by two entries (or that is another entry's table) would
 * interleave two writers' columns and cursors.
 */
export function checkDistinctTables(tables: readonly (Entry | undefined)[], r: Rule): void {
  const owner = new Map<string, string>(); // identifier -> the key that claimed it
  const claim = (id: string, path: ConfigPath, what: string): boolean => {
    const prev = owner.get(id);
    if (prev !== undefined) r.problem(path, `${JSON.stringify(id)} is already ${prev}; ${what}`);
    else owner.set(id, keyOf(path));
    return prev === undefined;
  };
  // An entry whose table is another's says nothing more (its default dead-letter table clashes too).
  const entries = tables
    .flatMap((t, i) => (t && r.ok('tables', i) ? [{ t, i }] : []))
    .filter(({ t, i }) => claim(t.table, ['tables', i, 'table'], 'one entry per table'));
  // A route's static tables are written by its entry alone (several values may share one table).
  for (const { t, i } of entries)
    for (const [v, id] of Object.entries(t.route?.tables ?? {})) {
      const prev = owner.get(id);
      if (prev === `tables[${i}].table` || prev?.startsWith(`tables[${i}].route.`)) continue;
      claim(id, ['tables', i, 'route', 'tables', v], 'a routed table belongs to one entry');
    }
  for (const { t, i } of entries) {
    const path = ['tables', i, 'deadLetterTable'];
    if (owner.get(t.deadLetterTable) === `tables[${i}].table`)
      r.problem(path, `${JSON.stringify(t.deadLetterTable)} is the entry's own table; name another`);
    else claim(t.deadLetterTable, path, 'each entry needs its own dead-letter table');
  }
}
