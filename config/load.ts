import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import type { ColumnConfig, FloeConfig, MaintenanceConfig, PartitionFieldConfig, TableConfig } from './types';

/** A bad config fails fast, naming the key path that is wrong and what was expected. */
export class ConfigError extends Error {
  constructor(readonly key: string, expected: string, found: unknown) {
    super(`config ${key}: expected ${expected}, found ${JSON.stringify(found)}`);
    this.name = 'ConfigError';
  }
}

const PRIMITIVE = /^(boolean|int|long|float|double|date|time|timestamp|timestamptz|string|uuid|binary|decimal\(\d+,\s*\d+\)|fixed\[\d+\])$/;
const TRANSFORM = /^(identity|year|month|day|hour|void|bucket\[\d+\]|truncate\[\d+\])$/;
const IDENT = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$/;
const DURATION = /^(\d+)\s*(ms|s|m|h|d)$/;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

class Reader {
  constructor(private readonly obj: Obj, private readonly path: string) {}
  private key(k: string) { return this.path ? `${this.path}.${k}` : k; }
  has(k: string) { return this.obj[k] !== undefined; }
  str(k: string, def?: string): string {
    const v = this.obj[k] ?? def;
    if (typeof v !== 'string' || v.length === 0) throw new ConfigError(this.key(k), 'a non-empty string', v);
    return v;
  }
  optStr(k: string): string | undefined { return this.has(k) ? this.str(k) : undefined; }
  match(k: string, re: RegExp, what: string, def?: string): string {
    const v = this.str(k, def);
    if (!re.test(v)) throw new ConfigError(this.key(k), what, v);
    return v;
  }
  bool(k: string, def: boolean): boolean {
    const v = this.obj[k] ?? def;
    if (typeof v !== 'boolean') throw new ConfigError(this.key(k), 'true or false', v);
    return v;
  }
  posInt(k: string, def: number): number {
    const v = this.obj[k] ?? def;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v <= 0) throw new ConfigError(this.key(k), 'a positive integer', v);
    return v;
  }
  /** Durations accept millis or "30s", "15m", "7d". */
  durationMs(k: string, def: number): number {
    const v = this.obj[k] ?? def;
    if (typeof v === 'number' && Number.isSafeInteger(v) && v > 0) return v;
    const m = typeof v === 'string' ? DURATION.exec(v.trim()) : null;
    if (!m) throw new ConfigError(this.key(k), 'a duration like 500ms, 30s, 15m, 7d or positive millis', v);
    const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 'ms'];
    return Number(m[1]) * unit;
  }
  child(k: string, required = false): Reader {
    const v = this.obj[k];
    if (v === undefined && !required) return new Reader({}, this.key(k));
    if (!isObj(v)) throw new ConfigError(this.key(k), 'a mapping', v);
    return new Reader(v, this.key(k));
  }
  list(k: string, required = true): Reader[] {
    const v = this.obj[k];
    if (v === undefined && !required) return [];
    if (!Array.isArray(v)) throw new ConfigError(this.key(k), 'a list', v);
    return v.map((item, i) => {
      if (!isObj(item)) throw new ConfigError(`${this.key(k)}[${i}]`, 'a mapping', item);
      return new Reader(item, `${this.key(k)}[${i}]`);
    });
  }
  strList(k: string, def: string[]): string[] {
    const v = this.obj[k] ?? def;
    if (typeof v === 'string') return v.split(',').map((s) => s.trim()).filter(Boolean);
    if (!Array.isArray(v) || v.length === 0 || v.some((s) => typeof s !== 'string')) {
      throw new ConfigError(this.key(k), 'a non-empty list of strings', v);
    }
    return v as string[];
  }
  stringMap(k: string): Record<string, string> {
    const v = this.obj[k] ?? {};
    if (!isObj(v)) throw new ConfigError(this.key(k), 'a mapping of strings', v);
    for (const [kk, vv] of Object.entries(v)) if (typeof vv !== 'string') throw new ConfigError(`${this.key(k)}.${kk}`, 'a string', vv);
    return v as Record<string, string>;
  }
}

const env = process.env;

function readColumn(r: Reader): ColumnConfig {
  const source = (r.optStr('source') ?? 'value') as ColumnConfig['source'];
  if (!['value', 'key', 'partition', 'offset', 'timestamp'].includes(source!)) {
    throw new ConfigError(`${(r as any).path}.source`, 'one of value, key, partition, offset, timestamp', source);
  }
  return {
    name: r.match('name', /^[A-Za-z_][A-Za-z0-9_]*$/, 'a column name ([A-Za-z_][A-Za-z0-9_]*)'),
    type: r.match('type', PRIMITIVE, 'an Iceberg primitive type (long, string, timestamptz, decimal(9, 2), …)') as ColumnConfig['type'],
    required: r.bool('required', false),
    path: r.optStr('path'),
    source,
    doc: r.optStr('doc'),
  };
}

function readMaintenance(r: Reader): MaintenanceConfig {
  const c = r.child('compact'), e = r.child('expire'), o = r.child('orphans');
  return {
    compact: {
      cron: c.str('cron', '*/15 * * * *'),
      targetFileSizeBytes: c.posInt('targetFileSizeBytes', 128 * 1024 * 1024),
      minInputFiles: c.posInt('minInputFiles', 5),
      lookbackPartitions: c.has('lookbackPartitions') ? c.posInt('lookbackPartitions', 1) : undefined,
      paused: c.bool('paused', false),
    },
    expire: { cron: e.str('cron', '0 3 * * *'), olderThanMs: e.durationMs('olderThan', 5 * 86_400_000), retainLast: e.posInt('retainLast', 10), paused: e.bool('paused', false) },
    orphans: { cron: o.str('cron', '30 3 * * *'), olderThanMs: o.durationMs('olderThan', 3 * 86_400_000), paused: o.bool('paused', false) },
  };
}

function readTable(r: Reader, i: number): TableConfig {
  const table = r.match('table', IDENT, 'an identifier "namespace.table"');
  const columns = r.list('columns').map(readColumn);
  if (columns.length === 0) throw new ConfigError(`tables[${i}].columns`, 'at least one column', []);
  const names = new Set<string>();
  for (const c of columns) {
    if (names.has(c.name)) throw new ConfigError(`tables[${i}].columns`, 'unique column names', c.name);
    names.add(c.name);
  }
  const partitionBy: PartitionFieldConfig[] = r.list('partitionBy', false).map((p, j) => {
    const column = p.str('column');
    if (!names.has(column)) throw new ConfigError(`tables[${i}].partitionBy[${j}].column`, `one of the columns (${[...names].join(', ')})`, column);
    return { column, transform: p.match('transform', TRANSFORM, 'identity|year|month|day|hour|bucket[N]|truncate[W]|void', 'identity'), name: p.optStr('name') };
  });
  return {
    table,
    topic: r.str('topic'),
    ingestId: r.match('ingestId', /^[A-Za-z0-9_.-]+$/, 'an id of [A-Za-z0-9_.-]', 'main'),
    columns,
    partitionBy,
    deadLetterTable: r.match('deadLetterTable', IDENT, 'an identifier "namespace.table"', `${table}_dead_letters`),
    commitIntervalMs: r.durationMs('commitInterval', 10_000),
    maxRecordsPerCycle: r.posInt('maxRecordsPerCycle', 500_000),
    maxBytesPerCycle: r.posInt('maxBytesPerCycle', 256 * 1024 * 1024),
    targetFileSizeBytes: r.posInt('targetFileSizeBytes', 128 * 1024 * 1024),
    parallelism: r.posInt('parallelism', 1),
    cyclesPerRun: r.posInt('cyclesPerRun', 200),
    properties: r.stringMap('properties'),
    maintenance: readMaintenance(r.child('maintenance')),
  };
}

/** Validates a parsed config object; defaults point at the local stack (stack/). */
export function parseConfig(raw: unknown): FloeConfig {
  if (!isObj(raw)) throw new ConfigError('(root)', 'a mapping', raw);
  const root = new Reader(raw, '');
  const cat = root.child('catalog');
  const type = cat.str('type', 'sql');
  if (type !== 'sql' && type !== 'rest') throw new ConfigError('catalog.type', 'sql or rest', type);
  const home = env.FLOE_HOME ?? `${env.HOME}/.cache/floe`;
  const s3 = root.child('s3');
  const kafka = root.child('kafka');
  const temporal = root.child('temporal');
  const tables = root.list('tables', false).map(readTable);
  const seen = new Set<string>();
  tables.forEach((t, i) => {
    const key = `${t.table}/${t.ingestId}`;
    if (seen.has(key)) throw new ConfigError(`tables[${i}]`, 'a unique (table, ingestId)', key);
    seen.add(key);
  });
  return {
    catalog: {
      type,
      uri: cat.str("uri", env.FLOE_CATALOG_URI ?? `sqlite:///${home}/catalog.db`), // four slashes: absolute (SQLAlchemy convention)
      warehouse: cat.match('warehouse', /^(s3a?|file|memory):\/\//, 'a URI s3://bucket/prefix or file:///dir', env.FLOE_WAREHOUSE ?? 's3://floe/warehouse'),
      name: cat.str('name', 'floe'),
      token: cat.optStr('token'),
    },
    s3: {
      endpoint: s3.optStr('endpoint') ?? env.FLOE_S3_ENDPOINT ?? 'http://127.0.0.1:8333',
      region: s3.str('region', env.FLOE_S3_REGION ?? 'us-east-1'),
      accessKeyId: s3.optStr('accessKeyId') ?? env.FLOE_S3_ACCESS_KEY ?? 'floe',
      secretAccessKey: s3.optStr('secretAccessKey') ?? env.FLOE_S3_SECRET_KEY ?? 'floe-secret',
      forcePathStyle: s3.bool('forcePathStyle', true),
    },
    kafka: { brokers: kafka.strList('brokers', (env.FLOE_KAFKA_BROKERS ?? '127.0.0.1:9092').split(',')), clientId: kafka.str('clientId', 'floe') },
    temporal: {
      address: temporal.str('address', env.FLOE_TEMPORAL_ADDRESS ?? '127.0.0.1:7233'),
      namespace: temporal.str('namespace', env.FLOE_TEMPORAL_NAMESPACE ?? 'default'),
      taskQueue: temporal.str('taskQueue', env.FLOE_TASK_QUEUE ?? 'floe'),
    },
    tables,
  };
}

export function loadConfig(path: string): FloeConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new Error(`cannot read config file ${path}: ${(e as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (e) {
    throw new Error(`config file ${path} is not valid YAML/JSON: ${(e as Error).message}`);
  }
  return parseConfig(raw);
}

export function findTable(cfg: FloeConfig, table: string): TableConfig {
  const t = cfg.tables.find((x) => x.table === table);
  if (!t) throw new Error(`table ${table} is not in the config (known: ${cfg.tables.map((x) => x.table).join(', ') || 'none'})`);
  return t;
}
