// The local stack: Temporal dev server, Kafka (KRaft), SeaweedFS S3 + Iceberg REST, PostgreSQL, a
// Schema Registry (Apicurio, Confluent API) and a Python venv for reader oracles and Confluent's
// serializers, installed on first use under $FLOE_HOME (no Docker).
export { ensureStack } from './stack';
export { stackEnv, type StackEnv } from './env';
export { runPython, runPythonJson } from './python';
export * as versions from './versions';
