import { installDebezium } from './debezium';
import { installSpark } from './spark';

// The opt-in profiles (`floe stack up --profile <name>`): never installed or started by default.
//  - spark: PySpark + Iceberg's Spark runtime (stack/spark.ts); nothing runs as a service.
//  - debezium: a Kafka Connect worker with Debezium's PostgreSQL connector and a PostgreSQL cluster
//    with wal_level=logical (stack/debezium.ts), started as the services kafka-connect and postgres-cdc.

export const PROFILES = ['spark', 'debezium'] as const;
export type Profile = (typeof PROFILES)[number];

/** Installs (and for debezium, starts) the given opt-in profiles. */
export async function installProfiles(profiles: readonly Profile[], log: (msg: string) => void = () => {}): Promise<void> {
  for (const profile of profiles) {
    if (profile === 'spark') await installSpark(log);
    else await installDebezium(log);
  }
}
