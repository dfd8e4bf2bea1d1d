import { readFileSync } from 'node:fs';
import { distance } from 'fastest-levenshtein';
import { parse as parseYaml } from 'yaml';
import { COMMIT_INTERVAL_LIMIT_MS, isMapKeyType, LOCATION_URI, MAP_KEY_TYPES } from './types';
import { formatDuration, parseDuration, parseSize } from './units';
import { TOPIC_NAME, topicMatcher } from './topics';
import type { PrimitiveType } from '../iceberg/spec/types';
import type {
  CatalogConfig,
  ColumnConfig,
  ColumnType,
  HeadersMapType,
  FloeConfig,
  KafkaConfig,
  KafkaSaslConfig,
  KafkaSaslMechanism,
  KafkaSslConfig,
  MaintenanceConfig,
  PartitionFieldConfig,
  RouteConfig,
  S3Config,
  SchemaRegistryConfig,
  SecretRef,
  TableConfig,
  TemporalConfig,
  TopicSetConfig,
  KeyFormatConfig,
  ValueFormat,
  ValueFormatConfig,
} from './types';

/** A bad config fails fast, naming the key path that is wrong and what was expected. */
export class ConfigError extends Error {
  constructor(
    readonly key: string,
    expected: string,
    found: unknown,
    problem?: string,
  ) {
    super(`config ${key}: ${problem ?? `expected ${expected}, found ${JSON.stringify(found)}`}`);
    this.name = 'ConfigError';
  }

  /** `config <key>: <problem>` for what is not a wrong value (an unknown key, a clash between entries). */
  static problem(key: string, problem: string): ConfigError {
    return new ConfigError(key, '', undefined, problem);
  }
}

const PRIMITIVE = /^(boolean|int|long|float|double|date|time|timestamp|timestamptz|string|uuid|binary|decimal\(\d+,\s*\d+\)|fixed\[\d+\])$/;
/** A `source: headers` column: every header by name, values as text or bytes. */
const HEADERS_MAP = /^map<\s*string\s*,\s*(string|binary)\s*>$/;
const TRANSFORM = /^(identity|year|month|day|hour|void|bucket\[\d+\]|truncate\[\d+\])$/;
const IDENT = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$/;

/**
 * Every key each mapping may hold. A key not listed is refused at load, so a typo
 * (`comitInterval`) fails loudly instead of silently falling back to the default. The Reader
 * refuses to read a key missing here, so the lists cannot drift from what is read.
 */
const KEYS = {
  root: ['catalog', 's3', 'kafka', 'temporal', 'schemaRegistry', 'tables'],
  catalog: [
    'type',
    'uri',
    'warehouse',
    'location',
    'name',
    'token',
    'tokenEnv',
    'tokenFile',
    'credentialEnv',
    'credentialFile',
    'properties',
  ],
  s3: [
    'endpoint',
    'region',
    'forcePathStyle',
    'profile',
    'accessKeyIdEnv',
    'accessKeyIdFile',
    'secretAccessKeyEnv',
    'secretAccessKeyFile',
    'sessionTokenEnv',
    'sessionTokenFile',
  ],
  kafka: ['brokers', 'clientId', 'ssl', 'sasl'],
  kafkaSsl: ['caFile', 'caEnv', 'certFile', 'certEnv', 'keyFile', 'keyEnv', 'rejectUnauthorized', 'servername'],
  kafkaSasl: ['mechanism', 'username', 'usernameEnv', 'usernameFile', 'passwordEnv', 'passwordFile', 'tokenCommand', 'region'],
  temporal: ['address', 'namespace', 'taskQueue', 'profile'],
  table: [
    'table',
    'topic',
    'topics',
    'topicPattern',
    'topicRefresh',
    'ingestId',
    'columns',
    'partitionBy',
    'deadLetterTable',
    'commitInterval',
    'maxRecordsPerCycle',
    'maxBytesPerCycle',
    'targetFileSizeBytes',
    'parallelism',
    'cyclesPerRun',
    'properties',
    'maintenance',
    'value',
    'key',
    'route',
  ],
  route: ['by', 'field', 'tables', 'dynamic', 'unmatched'],
  value: ['format', 'subject', 'schema', 'schemaFile', 'onIncompatibleSchema', 'fields', 'rename'],
  key: ['format', 'subject', 'schema', 'schemaFile', 'onIncompatibleSchema', 'column'],
  schemaRegistry: ['url', 'username', 'usernameEnv', 'usernameFile', 'passwordEnv', 'passwordFile', 'tokenEnv', 'tokenFile'],
  column: ['name', 'type', 'required', 'path', 'source', 'header', 'doc'],
  structType: ['type', 'fields'],
  structField: ['name', 'type', 'required', 'path', 'doc'],
  listType: ['type', 'element', 'elementRequired'],
  mapType: ['type', 'key', 'value', 'valueRequired'],
  partitionField: ['column', 'transform', 'name'],
  maintenance: ['compact', 'expire', 'orphans'],
  compact: ['cron', 'targetFileSizeBytes', 'minInputFiles', 'lookbackPartitions', 'paused'],
  expire: ['cron', 'olderThan', 'retainLast', 'paused'],
  orphans: ['cron', 'olderThan', 'paused'],
} as const satisfies Record<string, readonly string[]>;
type Keys = readonly string[];

/** The valid key a typo most likely meant, or undefined when none is close. */
export function nearestKey(key: string, valid: Keys): string | undefined {
  const norm = (s: string) => s.toLowerCase().replace(/[-_\s]/g, '');
  const exact = valid.find((v) => norm(v) === norm(key));
  if (exact) return exact;
  let best: string | undefined,
    bestD = Infinity;
  for (const v of valid) {
    const d = distance(norm(key), norm(v));
    if (d < bestD) {
      best = v;
      bestD = d;
    }
  }
  // Close means a few edits, and fewer than half the key: `comitInterval`, not `foo` -> `topic`.
  return best !== undefined && bestD <= Math.max(2, Math.floor(norm(key).length / 3)) && bestD < norm(key).length / 2 ? best : undefined;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

class Reader {
  constructor(
    private readonly obj: Obj,
    readonly path: string,
    private readonly keys: Keys,
  ) {
    for (const k of Object.keys(obj)) {
      if (keys.includes(k)) continue;
      const near = nearestKey(k, keys);
      throw ConfigError.problem(this.key(k), `unknown key; ${near ? `did you mean "${near}"?` : `expected one of ${keys.join(', ')}`}`);
    }
  }
  key(k: string) {
    return this.path ? `${this.path}.${k}` : k;
  }
  /** The value under `k`, which must be one of this mapping's KEYS (a reader bug otherwise). */
  private get(k: string): unknown {
    if (!this.keys.includes(k)) throw new Error(`config reader: ${this.key(k)} is read but not listed in KEYS`);
    return this.obj[k];
  }
  has(k: string) {
    return this.get(k) !== undefined;
  }
  /** The value under `k` as written, for a reader of its own (a column's type). */
  raw(k: string): unknown {
    return this.get(k);
  }
  str(k: string, def?: string): string {
    const v = this.get(k) ?? def;
    if (typeof v !== 'string' || v.length === 0) throw new ConfigError(this.key(k), 'a non-empty string', v);
    return v;
  }
  optStr(k: string): string | undefined {
    return this.has(k) ? this.str(k) : undefined;
  }
  match(k: string, re: RegExp, what: string, def?: string): string {
    const v = this.str(k, def);
    if (!re.test(v)) throw new ConfigError(this.key(k), what, v);
    return v;
  }
  bool(k: string, def: boolean): boolean {
    const v = this.get(k) ?? def;
    if (typeof v !== 'boolean') throw new ConfigError(this.key(k), 'true or false', v);
    return v;
  }
  posInt(k: string, def: number): number {
    const v = this.get(k) ?? def;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v <= 0) throw new ConfigError(this.key(k), 'a positive integer', v);
    return v;
  }
  /**
   * A positive duration (config/units.ts: millis or "500ms", "30s", "15m", "1.5h", "7d");
   * `below` is an exclusive upper bound and why.
   */
  durationMs(k: string, def: number, below?: { ms: number; why: string }): number {
    const v = this.get(k) ?? def;
    const ms = parsedOrUndefined(parseDuration, v);
    if (!ms) throw new ConfigError(this.key(k), 'a duration like 500ms, 30s, 15m, 7d or positive millis', v);
    if (below && ms >= below.ms) throw new ConfigError(this.key(k), `a duration below ${formatDuration(below.ms)} (${below.why})`, v);
    return ms;
  }
  /** A positive size (config/units.ts: bytes or "512KB", "128MB", "1.5GiB", all 1024-based). */
  sizeBytes(k: string, def: number): number {
    const v = this.get(k) ?? def;
    const bytes = parsedOrUndefined(parseSize, v);
    if (!bytes) throw new ConfigError(this.key(k), 'a size like 134217728 (positive bytes), 512KB or 128MB (1024-based)', v);
    return bytes;
  }
  /** `true`/`false`, or a mapping read with `keys` (`ssl: true` or `ssl: {caFile: …}`); undefined when absent. */
  boolOrChild(k: string, keys: Keys): boolean | Reader | undefined {
    const v = this.get(k);
    if (v === undefined || typeof v === 'boolean') return v;
    if (!isObj(v)) throw new ConfigError(this.key(k), 'true, false or a mapping', v);
    return this.child(k, keys);
  }
  /** A command as argv: a list of strings (or one string, the executable alone). */
  argv(k: string): string[] | undefined {
    const v = this.get(k);
    if (v === undefined) return undefined;
    const list = typeof v === 'string' ? [v] : v;
    if (!Array.isArray(list) || list.length === 0 || list.some((s) => typeof s !== 'string' || s.length === 0)) {
      throw new ConfigError(this.key(k), 'a command as a list of strings, e.g. ["/usr/local/bin/kafka-token", "--audience", "kafka"]', v);
    }
    return list as string[];
  }
  /** Whether the mapping under `k` holds `sub` (to refuse a key by name before the unknown-key check). */
  childHas(k: string, sub: string): boolean {
    const v = this.get(k);
    return isObj(v) && sub in v;
  }
  child(k: string, keys: Keys): Reader {
    const v = this.get(k);
    if (v === undefined) return new Reader({}, this.key(k), keys);
    if (!isObj(v)) throw new ConfigError(this.key(k), 'a mapping', v);
    return new Reader(v, this.key(k), keys);
  }
  list(k: string, keys: Keys, required = true): Reader[] {
    const v = this.get(k);
    if (v === undefined && !required) return [];
    if (!Array.isArray(v)) throw new ConfigError(this.key(k), 'a list', v);
    return v.map((item, i) => {
      if (!isObj(item)) throw new ConfigError(`${this.key(k)}[${i}]`, 'a mapping', item);
      return new Reader(item, `${this.key(k)}[${i}]`, keys);
    });
  }
  strList(k: string, def: string[]): string[] {
    const v = this.get(k) ?? def;
    if (typeof v === 'string')
      return v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
    if (!Array.isArray(v) || v.length === 0 || v.some((s) => typeof s !== 'string')) {
      throw new ConfigError(this.key(k), 'a non-empty list of strings', v);
    }
    return v as string[];
  }
  /** A free-form mapping of strings (its keys are not checked). */
  stringMap(k: string): Record<string, string> {
    const v = this.get(k) ?? {};
    if (!isObj(v)) throw new ConfigError(this.key(k), 'a mapping of strings', v);
    for (const [kk, vv] of Object.entries(v)) if (typeof vv !== 'string') throw new ConfigError(`${this.key(k)}.${kk}`, 'a string', vv);
    return v as Record<string, string>;
  }
}

/** What `parse` makes of `v`, or undefined when it refuses it (the caller names the key). */
function parsedOrUndefined(parse: (v: string | number) => number, v: unknown): number | undefined {
  try {
    return parse(v as string | number);
  } catch {
    return undefined;
  }
}

const env = process.env;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * `<base>File` or `<base>Env`: where a secret or PEM is read from (by the worker, not here). Both
 * at once is refused; neither is undefined.
 */
function secretRef(r: Reader, base: string): SecretRef | undefined {
  const file = r.optStr(`${base}File`);
  const envName = r.optStr(`${base}Env`);
  if (file !== undefined && envName !== undefined)
    throw ConfigError.problem(r.key(`${base}File`), `give either ${base}File or ${base}Env, not both`);
  if (envName !== undefined && !ENV_NAME.test(envName))
    throw new ConfigError(r.key(`${base}Env`), 'the name of an environment variable ([A-Za-z_][A-Za-z0-9_]*)', envName);
  return file !== undefined ? { file } : envName !== undefined ? { env: envName } : undefined;
}

function readKafkaSsl(v: boolean | Reader | undefined): KafkaSslConfig | undefined {
  if (v === undefined || v === false) return undefined;
  if (v === true) return { rejectUnauthorized: true };
  const ca = secretRef(v, 'ca'),
    cert = secretRef(v, 'cert'),
    key = secretRef(v, 'key');
  if ((cert === undefined) !== (key === undefined)) {
    const missing = cert === undefined ? 'cert' : 'key';
    throw ConfigError.problem(
      v.key(`${missing}File`),
      `a client certificate needs its key and a key its certificate: give ${missing}File or ${missing}Env too`,
    );
  }
  return {
    ...(ca ? { ca } : {}),
    ...(cert && key ? { cert, key } : {}),
    rejectUnauthorized: v.bool('rejectUnauthorized', true),
    ...(v.has('servername') ? { servername: v.str('servername') } : {}),
  };
}

const SASL_MECHANISMS: readonly KafkaSaslMechanism[] = ['plain', 'scram-sha-256', 'scram-sha-512', 'oauthbearer', 'aws'];

function readKafkaSasl(root: Reader): KafkaSaslConfig | undefined {
  // Refused by name before the unknown-key check, with what to write instead.
  if (root.childHas('sasl', 'password'))
    throw ConfigError.problem(
      'kafka.sasl.password',
      'a password is never written in the config: name an environment variable (passwordEnv) or a file (passwordFile)',
    );
  const r = root.child('sasl', KEYS.kafkaSasl);
  if (!root.has('sasl')) return undefined;
  const given = r.str('mechanism');
  const mechanism = given.toLowerCase() as KafkaSaslMechanism;
  if (!SASL_MECHANISMS.includes(mechanism)) throw new ConfigError(r.key('mechanism'), SASL_MECHANISMS.join(', '), given);
  const onlyFor = (k: string, which: string) => {
    if (r.has(k)) throw ConfigError.problem(r.key(k), `only for mechanism ${which}, not ${mechanism}`);
  };
  if (mechanism === 'plain' || mechanism.startsWith('scram-')) {
    onlyFor('tokenCommand', 'oauthbearer');
    onlyFor('region', 'aws');
    const nameRef = secretRef(r, 'username');
    if (nameRef && r.has('username')) throw ConfigError.problem(r.key('username'), 'give one of username, usernameEnv, usernameFile');
    const username = nameRef ?? r.str('username');
    const password = secretRef(r, 'password');
    if (!password)
      throw ConfigError.problem(
        r.key('passwordEnv'),
        `mechanism ${mechanism} needs a password: name an environment variable (passwordEnv) or a file (passwordFile)`,
      );
    return { mechanism, username, password };
  }
  for (const k of ['username', 'usernameEnv', 'usernameFile', 'passwordEnv', 'passwordFile'])
    onlyFor(k, 'plain, scram-sha-256 or scram-sha-512');
  if (mechanism === 'oauthbearer') {
    onlyFor('region', 'aws');
    const tokenCommand = r.argv('tokenCommand');
    if (!tokenCommand)
      throw ConfigError.problem(r.key('tokenCommand'), 'mechanism oauthbearer needs a token provider: a command that prints a token');
    return { mechanism, tokenCommand };
  }
  onlyFor('tokenCommand', 'oauthbearer');
  return { mechanism, ...(r.has('region') ? { region: r.str('region') } : {}) };
}

function readKafka(r: Reader): KafkaConfig {
  for (const base of ['ca', 'cert', 'key'])
    if (r.childHas('ssl', base))
      throw ConfigError.problem(
        `kafka.ssl.${base}`,
        `PEM is not written in the config: name a file (${base}File) or an environment variable holding it (${base}Env)`,
      );
  const ssl = readKafkaSsl(r.boolOrChild('ssl', KEYS.kafkaSsl));
  const sasl = readKafkaSasl(r);
  return {
    brokers: r.strList('brokers', (env.FLOE_KAFKA_BROKERS ?? '127.0.0.1:9092').split(',')),
    clientId: r.str('clientId', 'floe'),
    ...(ssl ? { ssl } : {}),
    ...(sasl ? { sasl } : {}),
  };
}

/**
 * No `s3` section: the local stack (FLOE_S3_ENDPOINT, FLOE_S3_REGION as `floe stack up` and compose set them, else
 * the stack's defaults) and its keys. An `s3` section is taken as written and never falls back to
 * the local stack: no endpoint is AWS S3, and keys come by reference or from the AWS default chain.
 */
function readS3(root: Reader): S3Config {
  for (const k of ['accessKeyId', 'secretAccessKey', 'sessionToken'])
    if (root.childHas('s3', k))
      throw ConfigError.problem(
        `s3.${k}`,
        `keys are never written in the config: name an environment variable (${k}Env) or a file (${k}File), or give none to use the AWS credential chain`,
      );
  const r = root.child('s3', KEYS.s3);
  if (!root.has('s3')) {
    return {
      endpoint: env.FLOE_S3_ENDPOINT ?? 'http://127.0.0.1:8333',
      region: env.FLOE_S3_REGION ?? 'us-east-1',
      forcePathStyle: true,
      credentials: { source: 'local-stack' },
    };
  }
  const endpoint = r.optStr('endpoint');
  if (endpoint !== undefined && !/^https?:\/\/[^/]/.test(endpoint))
    throw new ConfigError(r.key('endpoint'), 'an http(s)://host[:port] URL', endpoint);
  const accessKeyId = secretRef(r, 'accessKeyId');
  const secretAccessKey = secretRef(r, 'secretAccessKey');
  const sessionToken = secretRef(r, 'sessionToken');
  if ((accessKeyId === undefined) !== (secretAccessKey === undefined)) {
    const missing = accessKeyId === undefined ? 'accessKeyId' : 'secretAccessKey';
    throw ConfigError.problem(
      r.key(`${missing}Env`),
      `an access key needs its id and its secret: give ${missing}Env or ${missing}File too`,
    );
  }
  if (sessionToken && !accessKeyId)
    throw ConfigError.problem(r.key('sessionTokenEnv'), 'a session token goes with accessKeyId and secretAccessKey');
  const profile = r.optStr('profile');
  if (profile !== undefined && accessKeyId) throw ConfigError.problem(r.key('profile'), 'give either keys or a profile, not both');
  const region = r.optStr('region');
  return {
    ...(endpoint !== undefined ? { endpoint } : {}),
    ...(region !== undefined ? { region } : {}),
    // S3-compatible stores (SeaweedFS, MinIO) want path-style URLs; AWS wants virtual-hosted ones.
    forcePathStyle: r.bool('forcePathStyle', endpoint !== undefined),
    credentials:
      accessKeyId && secretAccessKey
        ? { source: 'keys', accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) }
        : { source: 'chain', ...(profile !== undefined ? { profile } : {}) },
  };
}

/**
 * Address and namespace: the config's keys, else FLOE_TEMPORAL_ADDRESS / FLOE_TEMPORAL_NAMESPACE; left unset otherwise, for the
 * Temporal CLI's environment and profile to decide when connecting (client/connection.ts).
 */
function readTemporal(r: Reader): TemporalConfig {
  const address = r.optStr('address') ?? env.FLOE_TEMPORAL_ADDRESS;
  const namespace = r.optStr('namespace') ?? env.FLOE_TEMPORAL_NAMESPACE;
  const profile = r.optStr('profile');
  return {
    ...(address !== undefined ? { address } : {}),
    ...(namespace !== undefined ? { namespace } : {}),
    taskQueue: r.str('taskQueue', env.FLOE_TASK_QUEUE ?? 'floe'),
    ...(profile !== undefined ? { profile } : {}),
  };
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const PRIMITIVE_EXPECTED = 'an Iceberg primitive type (long, string, timestamptz, decimal(9, 2), …)';
const TYPE_EXPECTED = `${PRIMITIVE_EXPECTED} or a nested type (list<string>, map<string, long>, struct<id: long not null, …>, or a mapping {type: struct|list|map, …})`;
const MAP_KEY_EXPECTED = `a map key type (${MAP_KEY_TYPES.join(', ')})`;

/**
 * The string form of a column type, a small recursive-descent parser:
 *
 *   type   := primitive | struct<field, …> | list<type [not null]> | map<key, type [not null]>
 *   field  := name: type [not null]
 *   key    := string | int | long | uuid | date | time | timestamp | timestamptz | decimal(P, S)
 *
 * Iceberg's and Spark's spelling (`struct<name: string, qty: int not null>`; `not null` in any
 * case). Whatever is not marked `not null` is optional, as a column's `required` defaults to
 * false: a struct field, a list's elements, a map's values (a map's keys are always required).
 * Whitespace between tokens is free; decimal and fixed come out canonical (`decimal(10, 2)`).
 * Errors say what was expected at which character.
 */
export function parseColumnType(text: string, key: string): ColumnType {
  let pos = 0;
  const ws = () => {
    while (pos < text.length && /\s/.test(text[pos]!)) pos++;
  };
  const fail = (expected: string): never => {
    const rest = text.slice(pos);
    const found = rest === '' ? 'the end' : JSON.stringify(rest.length > 24 ? `${rest.slice(0, 24)}…` : rest);
    throw ConfigError.problem(key, `expected ${expected} at character ${pos + 1} of ${JSON.stringify(text)}, found ${found}`);
  };
  const eat = (token: string): boolean => {
    ws();
    if (!text.startsWith(token, pos)) return false;
    pos += token.length;
    return true;
  };
  const expect = (token: string, what = JSON.stringify(token)) => {
    if (!eat(token)) fail(what);
  };
  const notNull = (): boolean => {
    ws();
    const m = /^not\s+null\b/i.exec(text.slice(pos));
    if (!m) return false;
    pos += m[0].length;
    return true;
  };
  const word = (): string | undefined => {
    ws();
    const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(pos));
    if (!m) return undefined;
    pos += m[0].length;
    return m[0];
  };
  const type = (what: string): ColumnType => {
    ws();
    const start = pos;
    const w = word();
    if (w === undefined) return fail(what);
    if (w === 'decimal' || w === 'fixed') {
      const m = (w === 'decimal' ? /^\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)/ : /^\s*\[\s*(\d+)\s*\]/).exec(text.slice(pos));
      if (!m) return fail(w === 'decimal' ? '(precision, scale) after decimal' : '[length] after fixed');
      pos += m[0].length;
      return (w === 'decimal' ? `decimal(${Number(m[1])}, ${Number(m[2])})` : `fixed[${Number(m[1])}]`) as PrimitiveType;
    }
    if (w === 'struct' || w === 'list' || w === 'map') {
      expect('<', `"<" after ${w}`);
      if (w === 'list') {
        const element = type('the element type of the list');
        const elementRequired = notNull();
        expect('>', '">" or "not null" after the element type');
        return { type: 'list', element, elementRequired };
      }
      if (w === 'map') {
        ws();
        const at = pos;
        const k = type('the key type of the map');
        if (typeof k !== 'string' || !isMapKeyType(k)) {
          pos = at;
          return fail(MAP_KEY_EXPECTED);
        }
        expect(',', '"," after the map key type');
        const value = type('the value type of the map');
        const valueRequired = notNull();
        expect('>', '">" or "not null" after the map value type');
        return { type: 'map', key: k, value, valueRequired };
      }
      const fields: Array<{ name: string; type: ColumnType; required: boolean }> = [];
      do {
        const name = word();
        if (name === undefined)
          return fail(`a field name ([A-Za-z_][A-Za-z0-9_]*)${fields.length ? '' : ' (a struct has at least one field)'}`);
        if (fields.some((f) => f.name === name)) {
          pos -= name.length;
          return fail(`a field name not used before in the struct`);
        }
        expect(':', `":" after the field name ${name}`);
        const t = type(`the type of field ${name}`);
        fields.push({ name, type: t, required: notNull() });
      } while (eat(','));
      expect('>', '"," or ">" after a struct field');
      return { type: 'struct', fields };
    }
    if (!PRIMITIVE.test(w)) {
      pos = start;
      return fail(what);
    }
    return w as PrimitiveType;
  };
  const t = type(TYPE_EXPECTED);
  ws();
  const end = pos;
  const trailingNotNull = notNull();
  pos = end;
  if (pos < text.length)
    fail(trailingNotNull ? 'the end of the type (required: true makes a column or field required)' : 'the end of the type');
  return t;
}

/**
 * A column's (or a nested field's, element's, value's) type: the string form (parseColumnType)
 * or the mapping form `{type: struct, fields: [...]}`, `{type: list, element, elementRequired}`,
 * `{type: map, key, value, valueRequired}`, the two mixed at will. Errors name the key path down
 * to the nested type (`tables[0].columns[2].type.fields[1].type`).
 */
function readColumnType(v: unknown, key: string): ColumnType {
  if (typeof v === 'string') {
    if (PRIMITIVE.test(v)) return v as PrimitiveType;
    if (!/^\s*(struct|list|map)\s*</.test(v)) throw new ConfigError(key, TYPE_EXPECTED, v);
    return parseColumnType(v, key);
  }
  if (!isObj(v)) throw new ConfigError(key, TYPE_EXPECTED, v);
  const kind = v.type;
  if (kind === 'struct') {
    const r = new Reader(v, key, KEYS.structType);
    const fields = r.list('fields', KEYS.structField).map((f) => ({
      name: f.match('name', NAME, 'a field name ([A-Za-z_][A-Za-z0-9_]*)'),
      type: readColumnType(f.raw('type'), f.key('type')),
      required: f.bool('required', false),
      ...(f.has('path') ? { path: f.str('path') } : {}),
      ...(f.has('doc') ? { doc: f.str('doc') } : {}),
    }));
    if (fields.length === 0) throw new ConfigError(r.key('fields'), 'at least one field', []);
    fields.forEach((f, i) => {
      if (fields.findIndex((g) => g.name === f.name) < i)
        throw new ConfigError(r.key(`fields[${i}].name`), 'a field name unique in the struct', f.name);
    });
    return { type: 'struct', fields };
  }
  if (kind === 'list') {
    const r = new Reader(v, key, KEYS.listType);
    return { type: 'list', element: readColumnType(r.raw('element'), r.key('element')), elementRequired: r.bool('elementRequired', false) };
  }
  if (kind === 'map') {
    const r = new Reader(v, key, KEYS.mapType);
    const k = r.raw('key');
    if (typeof k !== 'string' || !PRIMITIVE.test(k) || !isMapKeyType(k as PrimitiveType))
      throw new ConfigError(r.key('key'), MAP_KEY_EXPECTED, k);
    return {
      type: 'map',
      key: k as PrimitiveType,
      value: readColumnType(r.raw('value'), r.key('value')),
      valueRequired: r.bool('valueRequired', false),
    };
  }
  throw new ConfigError(`${key}.type`, 'struct, list or map (a primitive type is written as a string: type: long)', kind);
}

function readColumn(r: Reader): ColumnConfig {
  const source = (r.optStr('source') ?? 'value') as ColumnConfig['source'];
  if (!['value', 'key', 'header', 'headers', 'topic', 'partition', 'offset', 'timestamp'].includes(source!)) {
    throw new ConfigError(r.key('source'), 'one of value, key, header, headers, topic, partition, offset, timestamp', source);
  }
  const header = r.optStr('header');
  if (source === 'header' && (header === undefined || header === ''))
    throw new ConfigError(r.key('header'), "the header's name (source: header)", header);
  if (source !== 'header' && header !== undefined) throw new ConfigError(r.key('header'), 'no header name unless source is header', header);
  return {
    name: r.match('name', NAME, 'a column name ([A-Za-z_][A-Za-z0-9_]*)'),
    type:
      source === 'headers'
        ? (r
            .match('type', HEADERS_MAP, 'map<string, string> or map<string, binary> (source: headers)')
            .replace(HEADERS_MAP, 'map<string, $1>') as HeadersMapType)
        : source === 'value'
          ? readColumnType(r.raw('type'), r.key('type'))
          : (r.match('type', PRIMITIVE, `${PRIMITIVE_EXPECTED}; nested types are for source: value`) as PrimitiveType),
    required: r.bool('required', false),
    path: r.optStr('path'),
    source,
    ...(header !== undefined ? { header } : {}),
    doc: r.optStr('doc'),
  };
}

function readMaintenance(r: Reader): MaintenanceConfig {
  const c = r.child('compact', KEYS.compact),
    e = r.child('expire', KEYS.expire),
    o = r.child('orphans', KEYS.orphans);
  return {
    compact: {
      cron: c.str('cron', '*/15 * * * *'),
      targetFileSizeBytes: c.sizeBytes('targetFileSizeBytes', 128 * 1024 * 1024),
      minInputFiles: c.posInt('minInputFiles', 5),
      lookbackPartitions: c.has('lookbackPartitions') ? c.posInt('lookbackPartitions', 1) : undefined,
      paused: c.bool('paused', false),
    },
    // A streaming sink commits every few seconds: at a 10 s interval each snapshot adds ~0.8 KB to
    // every metadata.json written. Hourly expiry of snapshots older than 2 h keeps at most ~3 h
    // (~1,100 snapshots, ~0.9 MB); Java's 5-day default would grow it to ~44 MB per commit.
    expire: {
      cron: e.str('cron', '7 * * * *'),
      olderThanMs: e.durationMs('olderThan', 2 * 3_600_000),
      retainLast: e.posInt('retainLast', 10),
      paused: e.bool('paused', false),
    },
    orphans: { cron: o.str('cron', '30 3 * * *'), olderThanMs: o.durationMs('olderThan', 3 * 86_400_000), paused: o.bool('paused', false) },
  };
}

const VALUE_FORMATS: readonly ValueFormat[] = ['json', 'avro', 'protobuf', 'json-schema'];

/**
 * How a table's record values are read: JSON into the configured columns (the default), or a
 * Schema Registry format (Confluent framing) whose schema derives the columns; `avro` with a
 * `schema`/`schemaFile` is plain Avro binary (no framing, no registry).
 */
function readValueFormat(r: Reader, hasRegistry: boolean, what: 'value' | 'key' = 'value'): ValueFormatConfig {
  const format = (r.optStr('format') ?? 'json') as ValueFormat;
  if (!VALUE_FORMATS.includes(format)) throw new ConfigError(r.key('format'), VALUE_FORMATS.join(', '), format);
  const onIncompatible = r.optStr('onIncompatibleSchema') ?? 'fail';
  if (onIncompatible !== 'fail' && onIncompatible !== 'dead-letter')
    throw new ConfigError(r.key('onIncompatibleSchema'), 'fail or dead-letter', onIncompatible);
  const inline = r.optStr('schema');
  const file = r.optStr('schemaFile');
  if (inline !== undefined && file !== undefined)
    throw ConfigError.problem(r.key('schemaFile'), 'give either schema or schemaFile, not both');
  let schema: string | undefined = inline;
  if (file !== undefined) {
    try {
      schema = readFileSync(file, 'utf8');
    } catch (e) {
      throw ConfigError.problem(r.key('schemaFile'), `cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
  }
  if (schema !== undefined) {
    if (format !== 'avro')
      throw ConfigError.problem(
        r.key(inline !== undefined ? 'schema' : 'schemaFile'),
        'a schema in the config is for format avro (plain Avro)',
      );
    try {
      JSON.parse(schema);
    } catch (e) {
      throw ConfigError.problem(
        r.key(inline !== undefined ? 'schema' : 'schemaFile'),
        `not an Avro schema in JSON: ${(e as Error).message}`,
      );
    }
  }
  const registry = format !== 'json' && schema === undefined;
  if (registry && !hasRegistry)
    throw ConfigError.problem(
      r.key('format'),
      `format ${format} reads the Confluent wire format: configure schemaRegistry.url (or give an Avro schema for plain Avro)`,
    );
  const subject = r.optStr('subject');
  if (subject !== undefined && !registry) throw ConfigError.problem(r.key('subject'), 'a subject is for a Schema Registry format');
  const selected = what === 'value' && r.has('fields') ? r.strList('fields', []) : undefined;
  const rename = what === 'value' && r.has('rename') ? r.stringMap('rename') : undefined;
  if ((selected || rename) && format === 'json')
    throw ConfigError.problem(
      r.key(selected ? 'fields' : 'rename'),
      "fields and rename shape a schema format's derived columns; JSON columns are configured one by one",
    );
  for (const [from, to] of Object.entries(rename ?? {}))
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(to))
      throw new ConfigError(`${r.key('rename')}.${from}`, 'a column name ([A-Za-z_][A-Za-z0-9_]*)', to);
  return {
    format,
    registry,
    ...(schema !== undefined ? { schema } : {}),
    ...(subject !== undefined ? { subject } : {}),
    onIncompatibleSchema: onIncompatible,
    ...(selected ? { fields: selected } : {}),
    ...(rename ? { rename } : {}),
  };
}

/** A record key in a schema format: its own format, subject (default `<topic>-key`) and column. */
function readKeyFormat(r: Reader, hasRegistry: boolean, value: ValueFormatConfig): KeyFormatConfig {
  const key = readValueFormat(r, hasRegistry, 'key');
  if (key.format === 'json')
    throw new ConfigError(r.key('format'), 'avro, protobuf or json-schema (a JSON key is read by columns with source: key)', 'json');
  if (value.format === 'json')
    throw ConfigError.problem(r.path, 'a key in a schema format goes with a value in a schema format (value.format)');
  return { ...key, column: r.match('column', /^[A-Za-z_][A-Za-z0-9_]*$/, 'a column name ([A-Za-z_][A-Za-z0-9_]*)', 'key') };
}

function readSchemaRegistry(r: Reader): SchemaRegistryConfig {
  const url = r.match('url', /^https?:\/\/[^/]/, 'an http(s)://host[:port] URL');
  const username = r.optStr('username');
  const usernameRef = secretRef(r, 'username');
  if (username !== undefined && usernameRef !== undefined)
    throw ConfigError.problem(r.key('usernameEnv'), 'give username or usernameEnv/usernameFile, not both');
  const password = secretRef(r, 'password');
  const token = secretRef(r, 'token');
  const user = username !== undefined ? { value: username } : usernameRef;
  if ((user === undefined) !== (password === undefined))
    throw ConfigError.problem(
      r.key(user === undefined ? 'username' : 'passwordEnv'),
      'basic auth needs a username and a password (passwordEnv or passwordFile)',
    );
  if (token !== undefined && password !== undefined)
    throw ConfigError.problem(r.key('tokenEnv'), 'one way to authenticate: basic (username, password) or a bearer token, not both');
  return { url, ...(user && password ? { basic: { username: user, password } } : {}), ...(token ? { token } : {}) };
}

function readTable(r: Reader, i: number, hasRegistry: boolean): TableConfig {
  const table = r.match('table', IDENT, 'an identifier "namespace.table"');
  const value = readValueFormat(r.child('value', KEYS.value), hasRegistry);
  const key = r.has('key') ? readKeyFormat(r.child('key', KEYS.key), hasRegistry, value) : undefined;
  // A schema-derived table needs no columns: they come from the record schema (metadata columns may be added).
  const columns = r.list('columns', KEYS.column, value.format === 'json').map(readColumn);
  if (columns.length === 0 && value.format === 'json') throw new ConfigError(`tables[${i}].columns`, 'at least one column', []);
  if (value.format !== 'json') {
    const c = columns.find((x) => (x.source ?? 'value') === 'value');
    if (c)
      throw ConfigError.problem(
        `tables[${i}].columns`,
        `column ${c.name}: with format ${value.format} the value's columns come from its schema; configure only columns from the key, headers, topic, partition, offset or timestamp`,
      );
  }
  const names = new Set<string>();
  for (const c of columns) {
    if (names.has(c.name)) throw new ConfigError(`tables[${i}].columns`, 'unique column names', c.name);
    names.add(c.name);
  }
  const partitionBy: PartitionFieldConfig[] = r.list('partitionBy', KEYS.partitionField, false).map((p, j) => {
    const column = p.str('column');
    // A derived column's name is known only from the schema: checked when the table is created.
    if (!names.has(column) && value.format === 'json')
      throw new ConfigError(`tables[${i}].partitionBy[${j}].column`, `one of the columns (${[...names].join(', ')})`, column);
    const partitioned = columns.find((c) => c.name === column);
    if (partitioned?.source === 'headers')
      throw new ConfigError(`tables[${i}].partitionBy[${j}].column`, 'a column of a primitive type (not the headers map)', column);
    if (partitioned && typeof partitioned.type !== 'string')
      throw new ConfigError(`tables[${i}].partitionBy[${j}].column`, 'a column of a primitive type (not a struct, list or map)', column);
    return {
      column,
      transform: p.match('transform', TRANSFORM, 'identity|year|month|day|hour|bucket[N]|truncate[W]|void', 'identity'),
      name: p.optStr('name'),
    };
  });
  const topics = readTopicSet(r);
  return {
    table,
    topic: topics?.names
      ? topics.names.join(',')
      : topics
        ? `/${topics.pattern}/`
        : r.match('topic', TOPIC_NAME, 'a Kafka topic name ([A-Za-z0-9._-], 249 at most)'),
    ...(topics ? { topics } : {}),
    ingestId: r.match('ingestId', /^[A-Za-z0-9_.-]+$/, 'an id of [A-Za-z0-9_.-]', 'main'),
    columns,
    partitionBy,
    deadLetterTable: r.match('deadLetterTable', IDENT, 'an identifier "namespace.table"', `${table}_dead_letters`),
    commitIntervalMs: r.durationMs('commitInterval', 10_000, {
      ms: COMMIT_INTERVAL_LIMIT_MS,
      why: "a poll lasts up to one interval; a longer one outlasts the poll activity's timeout and never commits",
    }),
    maxRecordsPerCycle: r.posInt('maxRecordsPerCycle', 500_000),
    maxBytesPerCycle: r.sizeBytes('maxBytesPerCycle', 256 * 1024 * 1024),
    targetFileSizeBytes: r.sizeBytes('targetFileSizeBytes', 128 * 1024 * 1024),
    parallelism: r.posInt('parallelism', 1),
    cyclesPerRun: r.posInt('cyclesPerRun', 200),
    properties: r.stringMap('properties'),
    maintenance: readMaintenance(r.child('maintenance', KEYS.maintenance)),
    value,
    ...(key ? { key } : {}),
    ...(r.has('route') ? { route: readRoute(r.child('route', KEYS.route), table) } : {}),
  };
}

/** `topic`, or several: `topics` (a list) or `topicPattern` (a regular expression of whole names). */
function readTopicSet(r: Reader): TopicSetConfig | undefined {
  const given = (['topic', 'topics', 'topicPattern'] as const).filter((k) => r.has(k));
  if (given.length !== 1)
    throw ConfigError.problem(
      r.key(given[1] ?? 'topic'),
      `give one of topic (a name), topics (a list of names) or topicPattern (a regular expression)${given.length > 1 ? `, not ${given.join(' and ')}` : ''}`,
    );
  if (given[0] === 'topic') {
    if (r.has('topicRefresh')) throw ConfigError.problem(r.key('topicRefresh'), 'only with topics or topicPattern');
    return undefined;
  }
  const refreshMs = r.durationMs('topicRefresh', 60_000);
  if (given[0] === 'topics') {
    const names = r.strList('topics', []);
    for (const [j, n] of names.entries()) {
      if (!TOPIC_NAME.test(n)) throw new ConfigError(`${r.key('topics')}[${j}]`, 'a Kafka topic name ([A-Za-z0-9._-], 249 at most)', n);
      if (names.indexOf(n) !== j) throw new ConfigError(`${r.key('topics')}[${j}]`, 'each topic once', n);
    }
    return { names, refreshMs };
  }
  const pattern = r.str('topicPattern');
  try {
    topicMatcher(pattern);
  } catch (e) {
    throw new ConfigError(r.key('topicPattern'), `a regular expression (${(e as Error).message})`, pattern);
  }
  return { pattern, refreshMs };
}

/** The placeholder of a route's dynamic table template. */
export const ROUTE_VALUE_PLACEHOLDER = '{value}';

function readRoute(r: Reader, base: string): RouteConfig {
  const by = r.str('by', 'field');
  if (by !== 'field' && by !== 'topic') throw new ConfigError(r.key('by'), 'field or topic', by);
  if (by === 'field' && !r.has('field')) throw ConfigError.problem(r.key('field'), 'by field needs the (dotted) path of the field');
  if (by === 'topic' && r.has('field')) throw ConfigError.problem(r.key('field'), 'only with by: field');
  const field = by === 'field' ? r.match('field', /^[^.]+(\.[^.]+)*$/, 'a dotted path like type or meta.kind') : undefined;
  const tables = r.stringMap('tables');
  for (const [v, t] of Object.entries(tables)) {
    if (!IDENT.test(t)) throw new ConfigError(r.key(`tables.${v}`), 'an identifier "namespace.table"', t);
  }
  const dynamic = r.optStr('dynamic');
  if (dynamic !== undefined) {
    const parts = dynamic.split(ROUTE_VALUE_PLACEHOLDER);
    if (parts.length !== 2 || !IDENT.test(parts.join('x')) || parts[0]!.split('.').length !== parts.join('x').split('.').length)
      throw new ConfigError(
        r.key('dynamic'),
        `a table identifier template with ${ROUTE_VALUE_PLACEHOLDER} once in its table name, like ${base}_${ROUTE_VALUE_PLACEHOLDER}`,
        dynamic,
      );
  }
  if (Object.keys(tables).length === 0 && dynamic === undefined)
    throw ConfigError.problem(r.key('tables'), 'a route needs static tables, a dynamic template, or both');
  const unmatched = r.str('unmatched', 'dead-letter');
  if (unmatched !== 'dead-letter' && unmatched !== 'skip' && unmatched !== 'base')
    throw new ConfigError(r.key('unmatched'), 'dead-letter, skip or base', unmatched);
  return { by, ...(field !== undefined ? { field } : {}), tables, ...(dynamic !== undefined ? { dynamic } : {}), unmatched };
}

/**
 * Every Iceberg table is written by one entry: the ingest workflow id, `findTable` and the
 * dead-letter cursor all key on the identifier, so a second entry for a table (even under another
 * ingest id) or a dead-letter table shared by two entries (or that is another entry's table)
 * would interleave two writers' columns and cursors.
 */
function checkDistinctTables(tables: TableConfig[]): void {
  const owner = new Map<string, string>(); // identifier -> the key that claimed it
  const claim = (id: string, key: string, what: string) => {
    const prev = owner.get(id);
    if (prev !== undefined) throw ConfigError.problem(key, `${JSON.stringify(id)} is already ${prev}; ${what}`);
    owner.set(id, key);
  };
  tables.forEach((t, i) => claim(t.table, `tables[${i}].table`, 'one entry per table'));
  // A route's static tables are written by its entry alone (several values may share one table).
  tables.forEach((t, i) => {
    for (const [v, id] of Object.entries(t.route?.tables ?? {})) {
      const prev = owner.get(id);
      if (prev === `tables[${i}].table` || prev?.startsWith(`tables[${i}].route.`)) continue;
      claim(id, `tables[${i}].route.tables.${v}`, 'a routed table belongs to one entry');
    }
  });
  tables.forEach((t, i) => {
    const prev = owner.get(t.deadLetterTable);
    const key = `tables[${i}].deadLetterTable`;
    if (prev === `tables[${i}].table`)
      throw ConfigError.problem(key, `${JSON.stringify(t.deadLetterTable)} is the entry's own table; name another`);
    claim(t.deadLetterTable, key, 'each entry needs its own dead-letter table');
  });
}

/**
 * A REST catalog's authentication by reference (OAuth2 client credentials, a bearer token) and its
 * Iceberg catalog properties (`oauth2-server-uri`, `scope`, `rest.sigv4-enabled`, `header.*`, ...).
 */
function readRestAuth(cat: Reader, type: string): Pick<CatalogConfig, 'credential' | 'tokenRef' | 'properties'> {
  const rest = ['tokenEnv', 'tokenFile', 'credentialEnv', 'credentialFile', 'properties'];
  if (type !== 'rest') {
    for (const k of rest) if (cat.has(k)) throw ConfigError.problem(cat.key(k), 'only for a catalog of type rest');
    return {};
  }
  const credential = secretRef(cat, 'credential');
  const tokenRef = secretRef(cat, 'token');
  const given = [
    cat.has('token') ? 'token' : '',
    tokenRef ? 'tokenEnv/tokenFile' : '',
    credential ? 'credentialEnv/credentialFile' : '',
  ].filter(Boolean);
  if (given.length > 1) throw ConfigError.problem(cat.key('credentialEnv'), `one way to authenticate, not ${given.join(' and ')}`);
  const properties = cat.stringMap('properties');
  for (const k of ['credential', 'token'])
    if (properties[k] !== undefined)
      throw ConfigError.problem(cat.key(`properties.${k}`), `no secret in properties: name it with catalog.${k}Env or catalog.${k}File`);
  const sigv4 = properties['rest.sigv4-enabled'];
  if (sigv4 !== undefined && sigv4 !== 'true' && sigv4 !== 'false')
    throw new ConfigError(cat.key('properties.rest.sigv4-enabled'), '"true" or "false"', sigv4);
  return {
    ...(credential ? { credential } : {}),
    ...(tokenRef ? { tokenRef } : {}),
    ...(Object.keys(properties).length > 0 ? { properties } : {}),
  };
}

/** Validates a parsed config object; defaults point at the local stack (stack/). */
export function parseConfig(raw: unknown): FloeConfig {
  if (!isObj(raw)) throw new ConfigError('(root)', 'a mapping', raw);
  const root = new Reader(raw, '', KEYS.root);
  if (root.childHas('catalog', 'credential'))
    throw ConfigError.problem(
      'catalog.credential',
      'a client secret is never written in the config: name an environment variable (credentialEnv) or a file (credentialFile)',
    );
  const cat = root.child('catalog', KEYS.catalog);
  const type = cat.str('type', 'sql');
  if (type !== 'sql' && type !== 'rest') throw new ConfigError('catalog.type', 'sql or rest', type);
  const restAuth = readRestAuth(cat, type);
  const home = env.FLOE_HOME ?? `${env.HOME}/.cache/floe`;
  const kafka = root.child('kafka', KEYS.kafka);
  const temporal = root.child('temporal', KEYS.temporal);
  for (const secret of ['password', 'token'])
    if (root.childHas('schemaRegistry', secret))
      throw ConfigError.problem(
        `schemaRegistry.${secret}`,
        `a ${secret} is never written in the config: name an environment variable (${secret}Env) or a file (${secret}File)`,
      );
  const schemaRegistry = root.has('schemaRegistry') ? readSchemaRegistry(root.child('schemaRegistry', KEYS.schemaRegistry)) : undefined;
  const tables = root.list('tables', KEYS.table, false).map((t, i) => readTable(t, i, schemaRegistry !== undefined));
  checkDistinctTables(tables);
  return {
    catalog: {
      type,
      uri: cat.str('uri', env.FLOE_CATALOG_URI ?? `sqlite:///${home}/catalog.db`), // four slashes: absolute (SQLAlchemy convention)
      // A REST catalog's warehouse may be a name the server knows (Polaris, Glue); then new tables
      // go under `location`, or where the server places them.
      warehouse:
        type === 'rest'
          ? cat.str('warehouse', env.FLOE_WAREHOUSE ?? 's3://floe/warehouse')
          : cat.match('warehouse', LOCATION_URI, 'a URI s3://bucket/prefix or file:///dir', env.FLOE_WAREHOUSE ?? 's3://floe/warehouse'),
      ...(cat.has('location') ? { location: cat.match('location', LOCATION_URI, 'a URI s3://bucket/prefix or file:///dir', '') } : {}),
      name: cat.str('name', 'floe'),
      token: cat.optStr('token'),
      ...restAuth,
    },
    s3: readS3(root),
    kafka: readKafka(kafka),
    temporal: readTemporal(temporal),
    ...(schemaRegistry ? { schemaRegistry } : {}),
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

/** Every table an entry writes that the config names: its own and its route's static tables. */
export function entryTables(t: TableConfig): string[] {
  return [...new Set([t.table, ...Object.values(t.route?.tables ?? {})])];
}

export function findTable(cfg: FloeConfig, table: string): TableConfig {
  const t = cfg.tables.find((x) => x.table === table);
  const routedBy = cfg.tables.find((x) => x.route && entryTables(x).includes(table));
  if (!t && routedBy)
    throw new Error(`table ${table} is a routed table of ${routedBy.table}: its ingest is the route's, run it as ${routedBy.table}`);
  if (!t) throw new Error(`table ${table} is not in the config (known: ${cfg.tables.map((x) => x.table).join(', ') || 'none'})`);
  return t;
}
