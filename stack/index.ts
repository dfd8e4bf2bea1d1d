// The local stack: Temporal dev server, Kafka (KRaft), SeaweedFS S3 + Iceberg REST, PostgreSQL, a
// Schema Registry (Apicurio, Confluent API) and a Python venv for reader oracles and Confluent's
// serializers, installed on first use under $FLOE_HOME (no Docker).
export { ensureStack, installStack, stackDown, stackStatus, stackLogs, type StackOptions } from './stack';
export { stackEnv, stackProcessEnv, PORTS, WORKER_ENV_VARS, OPTIONAL_ENV_VARS, type StackEnv } from './env';
export { floeHome, stackPaths } from './paths';
export { runPython, runPythonJson, pythonEnv, venvBin } from './python';
export { stackS3Client } from './services';
export { SERVICE_NAMES, StackError, type ServiceName, type ServiceStatus } from './service';
export * as versions from './versions';
