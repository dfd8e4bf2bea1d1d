/**
 * The config file's one schema (zod 4): every key, what it accepts, its default, and what the
 * parsed config holds. The TypeScript types are inferred from it (config/types.ts), `floe config
 * schema` prints its JSON Schema (editors complete and check a config with it), and loading
 * (config/load.ts) reports every problem it finds at once, each naming its key. The connection
 * sections are here, a table entry in config/table-entry.ts, the kinds of value in config/values.ts.
 *
 * A mapping refuses a key it does not declare, with the nearest valid key (`comitInterval`: did
 * you mean "commitInterval"?), so a typo fails loudly instead of silently falling back to the
 * default. A rule between keys runs whenever the keys it reads parsed, whatever else failed.
 * Defaults point at the local stack (stack/, config/local-stack.ts), some through FLOE_* variables
 * read at load. `${…}` references resolve only in connection settings (`conn`, config/references.ts).
 */
import { z } from 'zod';
import { PORTS, S3_DEFAULTS } from './local-stack';
import { checkDistinctTables, table } from './table-entry';
import {
  argv,
  bool,
  conn,
  HTTP_URL,
  HTTP_URL_WHAT,
  isMapping,
  list,
  mapOf,
  NON_EMPTY,
  notWritten,
  obj,
  oneRefEach,
  refKeys,
  refOf,
  text,
  tidy,
  withRule,
} from './values';

/** A location URI floe can read and write (the schemes of iceberg/io). */
export const LOCATION_URI = /^((s3[an]?|file|memory):\/\/|file:\/(?!\/))/i;

const env = process.env;

// ---------- catalog

const LOCATION = 'a URI s3://bucket/prefix or file:///dir';
const REST_ONLY = ['tokenEnv', 'tokenFile', 'credentialEnv', 'credentialFile', 'properties'] as const;

const catalog = withRule(
  obj(
    {
      type: z.enum(['sql', 'rest'], { error: 'sql or rest' }).default('sql'),
      uri: conn(
        'sql: sqlite:///abs/path.db or postgresql://user:pw@host:port/db; rest: http(s)://host:port. Default: SQLite under FLOE_HOME',
      ).optional(),
      warehouse: text()
        .optional()
        .describe(
          'sql: where new tables go (s3://bucket/prefix, file:///dir); rest: sent to GET /v1/config, a location or a name the server knows',
        ),
      location: text(LOCATION_URI, LOCATION).optional().describe('base location of new tables when it is not the warehouse'),
      name: text().default('floe'),
      token: text().optional(),
      ...refKeys('token'),
      ...refKeys('credential'),
      properties: mapOf()
        .optional()
        .describe(
          'rest: Iceberg catalog properties (oauth2-server-uri, scope, rest.sigv4-enabled, rest.signing-region, header.<Name>, s3.*)',
        ),
    },
    { credential: notWritten('a client secret', 'credential') },
  ),
  (c, r) => {
    if (!r.ok('type')) return;
    if (c.type === 'sql') {
      // A REST catalog's warehouse may be a name the server knows (Polaris, Glue); a SQL one places tables.
      const warehouse = c.warehouse ?? env.FLOE_WAREHOUSE;
      if (r.ok('warehouse') && warehouse !== undefined && !LOCATION_URI.test(warehouse)) r.expected(['warehouse'], LOCATION, warehouse);
      for (const k of REST_ONLY) if (c[k] !== undefined) r.problem([k], 'only for a catalog of type rest');
      return;
    }
    oneRefEach(c, r, 'token', 'credential');
    const given = [
      c.token !== undefined ? 'token' : '',
      refOf(c, 'token') ? 'tokenEnv/tokenFile' : '',
      refOf(c, 'credential') ? 'credentialEnv/credentialFile' : '',
    ].filter(Boolean);
    if (given.length > 1) r.problem(['credentialEnv'], `one way to authenticate, not ${given.join(' and ')}`);
    if (!r.ok('properties')) return;
    for (const k of ['credential', 'token'])
      if (c.properties?.[k] !== undefined)
        r.problem(['properties', k], `no secret in properties: name it with catalog.${k}Env or catalog.${k}File`);
    const sigv4 = c.properties?.['rest.sigv4-enabled'];
    if (sigv4 !== undefined && sigv4 !== 'true' && sigv4 !== 'false') r.expected(['properties', 'rest.sigv4-enabled'], '"true" or "false"');
  },
).transform((c) => {
  const home = env.FLOE_HOME ?? `${env.HOME}/.cache/floe`;
  const rest = c.type === 'rest';
  return {
    type: c.type,
    uri: c.uri ?? env.FLOE_CATALOG_URI ?? `sqlite:///${home}/catalog.db`, // four slashes: absolute (SQLAlchemy convention)
    warehouse: c.warehouse ?? env.FLOE_WAREHOUSE ?? 's3://floe/warehouse',
    name: c.name,
    ...tidy({
      location: c.location,
      token: c.token,
      credential: rest ? refOf(c, 'credential') : undefined,
      tokenRef: rest ? refOf(c, 'token') : undefined,
      properties: rest && c.properties && Object.keys(c.properties).length > 0 ? c.properties : undefined,
    }),
  };
});

// ---------- s3

const S3_KEYS = ['accessKeyId', 'secretAccessKey', 'sessionToken'] as const;

/**
 * An `s3` section is taken as written and never falls back to the local stack: no endpoint is AWS
 * S3, and keys come by reference or from the AWS SDK's default chain (env, SSO, shared files for
 * `profile`, process, web identity, container, IMDS).
 */
const s3 = withRule(
  obj(
    {
      endpoint: conn("absent: AWS S3's endpoint for the region", HTTP_URL, HTTP_URL_WHAT).optional(),
      region: conn("absent: AWS_REGION, the profile's region, else us-east-1").optional(),
      forcePathStyle: bool().optional().describe('default: true with an endpoint (S3-compatible stores), false for AWS S3'),
      profile: conn().optional(),
      ...refKeys('accessKeyId'),
      ...refKeys('secretAccessKey'),
      ...refKeys('sessionToken'),
    },
    Object.fromEntries(
      S3_KEYS.map((k) => [
        k,
        `keys are never written in the config: name an environment variable (${k}Env) or a file (${k}File), or give none to use the AWS credential chain`,
      ]),
    ),
  ),
  (s, r) => {
    oneRefEach(s, r, ...S3_KEYS);
    const id = refOf(s, 'accessKeyId'),
      secret = refOf(s, 'secretAccessKey');
    if (!id !== !secret) {
      const missing = id ? 'secretAccessKey' : 'accessKeyId';
      r.problem([`${missing}Env`], `an access key needs its id and its secret: give ${missing}Env or ${missing}File too`);
    }
    if (refOf(s, 'sessionToken') && !id) r.problem(['sessionTokenEnv'], 'a session token goes with accessKeyId and secretAccessKey');
    if (s.profile !== undefined && id) r.problem(['profile'], 'give either keys or a profile, not both');
  },
).transform((s) => {
  const accessKeyId = refOf(s, 'accessKeyId'),
    secretAccessKey = refOf(s, 'secretAccessKey');
  return {
    ...tidy({ endpoint: s.endpoint, region: s.region }),
    // S3-compatible stores (SeaweedFS, MinIO) want path-style URLs; AWS wants virtual-hosted ones.
    forcePathStyle: s.forcePathStyle ?? s.endpoint !== undefined,
    credentials:
      accessKeyId && secretAccessKey
        ? { source: 'keys' as const, accessKeyId, secretAccessKey, ...tidy({ sessionToken: refOf(s, 'sessionToken') }) }
        : { source: 'chain' as const, ...tidy({ profile: s.profile }) },
  };
});

/**
 * No `s3` section: the local stack, at FLOE_S3_ENDPOINT / FLOE_S3_REGION as `floe stack up` and
 * compose set them, else the stack's defaults, with its keys (FLOE_S3_ACCESS_KEY, ... read when
 * the client is built).
 */
const localStackS3 = () => ({
  endpoint: env.FLOE_S3_ENDPOINT ?? `http://127.0.0.1:${PORTS.s3}`,
  region: env.FLOE_S3_REGION ?? S3_DEFAULTS.region,
  forcePathStyle: true,
  credentials: { source: 'local-stack' as const },
});

// ---------- kafka

const PEM_KEYS = ['ca', 'cert', 'key'] as const;

/** TLS to the brokers. Without a CA, Node's trusted roots verify them (public CAs: MSK, Confluent Cloud). */
const kafkaSsl = withRule(
  obj(
    {
      ...refKeys('ca'),
      ...refKeys('cert'),
      ...refKeys('key'),
      rejectUnauthorized: bool().default(true),
      servername: conn('TLS server name (SNI, and the name checked), when it differs from the broker host').optional(),
    },
    Object.fromEntries(
      PEM_KEYS.map((b) => [b, `PEM is not written in the config: name a file (${b}File) or an environment variable holding it (${b}Env)`]),
    ),
  ),
  (s, r) => {
    oneRefEach(s, r, ...PEM_KEYS);
    const cert = refOf(s, 'cert'),
      key = refOf(s, 'key');
    if (!cert !== !key) {
      const missing = cert ? 'key' : 'cert';
      r.problem(
        [`${missing}File`],
        `a client certificate needs its key and a key its certificate: give ${missing}File or ${missing}Env too`,
      );
    }
  },
).transform((s) => ({
  ...tidy({ ca: refOf(s, 'ca'), cert: refOf(s, 'cert'), key: refOf(s, 'key') }),
  rejectUnauthorized: s.rejectUnauthorized,
  ...tidy({ servername: s.servername }),
}));

const SASL_MECHANISMS = ['plain', 'scram-sha-256', 'scram-sha-512', 'oauthbearer', 'aws'] as const;
const USER_PASSWORD_KEYS = ['username', 'usernameEnv', 'usernameFile', 'passwordEnv', 'passwordFile'] as const;

const kafkaSasl = withRule(
  obj(
    {
      mechanism: text()
        .transform((m) => m.toLowerCase())
        .pipe(z.enum(SASL_MECHANISMS, { error: SASL_MECHANISMS.join(', ') })),
      username: conn('plain / scram-*: the user name (or usernameEnv / usernameFile)').optional(),
      ...refKeys('username'),
      ...refKeys('password'),
      tokenCommand: argv.optional().describe('oauthbearer: a command printing a token, or JSON {"token"|"value", "expiresAt"?}'),
      region: conn("aws (MSK IAM): the cluster's region; default AWS_REGION / AWS_DEFAULT_REGION").optional(),
    },
    { password: 'a password is never written in the config: name an environment variable (passwordEnv) or a file (passwordFile)' },
  ),
  (s, r) => {
    if (!r.ok('mechanism')) return;
    const m = s.mechanism;
    const onlyFor = (k: keyof typeof s, which: string) => {
      if (s[k] !== undefined) r.problem([k], `only for mechanism ${which}, not ${m}`);
    };
    if (m === 'plain' || m.startsWith('scram-')) {
      onlyFor('tokenCommand', 'oauthbearer');
      onlyFor('region', 'aws');
      oneRefEach(s, r, 'username', 'password');
      const nameRef = refOf(s, 'username');
      if (nameRef && s.username !== undefined) r.problem(['username'], 'give one of username, usernameEnv, usernameFile');
      else if (!nameRef && s.username === undefined && r.ok('username')) r.expected(['username'], NON_EMPTY);
      if (!refOf(s, 'password'))
        r.problem(['passwordEnv'], `mechanism ${m} needs a password: name an environment variable (passwordEnv) or a file (passwordFile)`);
      return;
    }
    for (const k of USER_PASSWORD_KEYS) onlyFor(k, 'plain, scram-sha-256 or scram-sha-512');
    if (m === 'oauthbearer') {
      onlyFor('region', 'aws');
      if (s.tokenCommand === undefined && r.ok('tokenCommand'))
        r.problem(['tokenCommand'], 'mechanism oauthbearer needs a token provider: a command that prints a token');
    } else onlyFor('tokenCommand', 'oauthbearer');
  },
).transform((s) =>
  tidy({
    mechanism: s.mechanism,
    username: s.username ?? refOf(s, 'username'),
    password: refOf(s, 'password'),
    tokenCommand: s.tokenCommand,
    region: s.region,
  }),
);

const kafka = obj({
  brokers: list(conn(), conn())
    .optional()
    .describe('host:port, a list or comma-separated (each may hold references); default FLOE_KAFKA_BROKERS, else the local stack'),
  clientId: text().default('floe'),
  ssl: z
    .union([z.boolean(), kafkaSsl], { error: 'true, false or a mapping' })
    .optional()
    .transform((v) => (v === true ? { rejectUnauthorized: true } : v === false ? undefined : v)),
  sasl: kafkaSasl.optional(),
}).transform((k) => ({
  brokers: k.brokers ?? (env.FLOE_KAFKA_BROKERS ?? `127.0.0.1:${PORTS.kafka}`).split(','),
  clientId: k.clientId,
  ...tidy({ ssl: k.ssl, sasl: k.sasl }),
}));

// ---------- temporal

/**
 * The Temporal connection as the config gives it. Connecting (client/connection.ts) resolves the
 * rest like the `temporal` CLI: `address` / `namespace` here (or FLOE_TEMPORAL_ADDRESS /
 * FLOE_TEMPORAL_NAMESPACE) win, as the CLI's flags do; then TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE
 * and the profile of the CLI's config file; then the local stack's. TLS, client certificate and API
 * key come only from that environment and profile.
 */
const temporal = obj({
  address: conn().optional(),
  namespace: conn().optional(),
  taskQueue: text().optional().describe('default FLOE_TASK_QUEUE, else floe'),
  profile: conn('a profile of the Temporal CLI config file (default TEMPORAL_PROFILE, then "default")').optional(),
}).transform((t) => ({
  ...tidy({ address: t.address ?? env.FLOE_TEMPORAL_ADDRESS, namespace: t.namespace ?? env.FLOE_TEMPORAL_NAMESPACE }),
  taskQueue: t.taskQueue ?? env.FLOE_TASK_QUEUE ?? 'floe',
  ...tidy({ profile: t.profile }),
}));

// ---------- schema registry

/** A Confluent-compatible Schema Registry (Confluent, Apicurio's ccompat API, Karapace, Redpanda). */
const schemaRegistry = withRule(
  obj(
    {
      url: conn('the registry base URL', HTTP_URL, HTTP_URL_WHAT),
      username: conn('basic auth: the user name (or usernameEnv / usernameFile), with passwordEnv / passwordFile').optional(),
      ...refKeys('username'),
      ...refKeys('password'),
      ...refKeys('token'),
    },
    { password: notWritten('a password', 'password'), token: notWritten('a token', 'token') },
  ),
  (s, r) => {
    oneRefEach(s, r, 'username', 'password', 'token');
    const userRef = refOf(s, 'username'),
      password = refOf(s, 'password');
    if (s.username !== undefined && userRef) r.problem(['usernameEnv'], 'give username or usernameEnv/usernameFile, not both');
    const user = s.username !== undefined || userRef !== undefined;
    if (user !== (password !== undefined))
      r.problem([user ? 'passwordEnv' : 'username'], 'basic auth needs a username and a password (passwordEnv or passwordFile)');
    if (refOf(s, 'token') && password)
      r.problem(['tokenEnv'], 'one way to authenticate: basic (username, password) or a bearer token, not both');
  },
).transform((s) => {
  const username = s.username !== undefined ? { value: s.username } : refOf(s, 'username');
  const password = refOf(s, 'password');
  return { url: s.url, ...tidy({ basic: username && password ? { username, password } : undefined, token: refOf(s, 'token') }) };
});

export const configSchema = withRule(
  obj({
    catalog: catalog.prefault({}),
    s3: s3.optional().describe('object storage; absent: the local stack (floe stack up)'),
    kafka: kafka.prefault({}),
    temporal: temporal.prefault({}),
    schemaRegistry: schemaRegistry.optional(),
    tables: z.array(table, { error: 'a list' }).default(() => []),
  }),
  (c, r) => {
    // A registry format needs the registry, wherever the entry failed otherwise.
    (Array.isArray(c.tables) ? c.tables : []).forEach((t: unknown, i) => {
      for (const part of ['value', 'key'] as const) {
        const f = isMapping(t) ? (t[part] as { format: string; registry: boolean } | undefined) : undefined;
        if (f?.registry && c.schemaRegistry === undefined && r.ok('tables', i, part))
          r.problem(
            ['tables', i, part, 'format'],
            `format ${f.format} reads the Confluent wire format: configure schemaRegistry.url (or give an Avro schema for plain Avro)`,
          );
      }
    });
    if (Array.isArray(c.tables)) checkDistinctTables(c.tables, r);
  },
)
  .transform((c) => ({
    catalog: c.catalog,
    s3: c.s3 ?? localStackS3(),
    kafka: c.kafka,
    temporal: c.temporal,
    ...tidy({ schemaRegistry: c.schemaRegistry }),
    tables: c.tables,
  }))
  .meta({
    title: 'floe config',
    description: 'floe: Kafka -> Apache Iceberg ingestion on Temporal. `floe config validate` checks a file.',
  });

/** The config file's JSON Schema (what `floe config schema` prints), from the same declaration. */
export function configJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(configSchema, { io: 'input', unrepresentable: 'any' });
}
