import { ensureStack } from './stack';
import { kafkaConnect, kafkaConnectUrl } from './services/kafka-connect';
import { cdcPostgresEndpoint, postgresCdc } from './services/postgres';

// The opt-in `debezium` profile: Debezium's PostgreSQL connector in a Kafka Connect worker
// (services/kafka-connect.ts) that writes change events into the stack's Kafka, reading a
// PostgreSQL cluster of its own with wal_level=logical (postgres-cdc in services/postgres.ts).
// Both run as stack services once the profile is up; `stack status` and `stack down` know them.

/** Installed with the current pins (the Connect and Debezium jars, the cluster's data dir). */
export function debeziumInstalled(): boolean {
  return kafkaConnect.installed() && postgresCdc.installed();
}

/** The profile's endpoints: Connect's REST API and the source database. */
export function debeziumEnv() {
  return { connectUrl: kafkaConnectUrl(), postgres: cdcPostgresEndpoint() };
}

/** Installs the profile on first use and starts its services (Kafka first: the worker needs it). */
export async function installDebezium(log: (msg: string) => void = () => {}): Promise<void> {
  await ensureStack(['kafka'], { log });
  await ensureStack(['postgres-cdc', 'kafka-connect'], { log });
}
