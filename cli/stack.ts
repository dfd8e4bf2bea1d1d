import type { Command } from 'commander';
import { PROFILE_SERVICE_NAMES, SERVICE_NAMES, type ServiceName } from '../stack/service';
import { stackEnv } from '../stack/env';
import { PROFILES, type Profile } from '../stack/profiles';
import { printJson } from './common';
import { CliError, EXIT } from './exit';

function services(args: string[]): ServiceName[] {
  const known: readonly string[] = [...SERVICE_NAMES, ...PROFILE_SERVICE_NAMES];
  for (const a of args) {
    if (!known.includes(a)) {
      throw new CliError(`unknown service ${JSON.stringify(a)}, expected one of ${known.join(', ')}`, EXIT.usage);
    }
  }
  return args as ServiceName[];
}

function profiles(args: string[]): Profile[] {
  for (const a of args) {
    if (!(PROFILES as readonly string[]).includes(a)) {
      throw new CliError(`unknown profile ${JSON.stringify(a)}, expected one of ${PROFILES.join(', ')}`, EXIT.usage);
    }
  }
  return args as Profile[];
}

// Loaded by the commands (its service modules load the Temporal, Kafka and Postgres clients).
const stackApi = () => import('../stack/stack');

/** `floe stack up|down|status|logs`: the local stack without Docker (see stack/). */
export function registerStackCommands(program: Command): void {
  const stack = program.command('stack').description(`run the local stack (${SERVICE_NAMES.join(', ')}) under $FLOE_HOME, no Docker`);

  stack
    .command('up [services...]')
    .description('install on first use, then start the services (default: all); no-op for healthy ones')
    .option('--json', 'print the endpoints as JSON (passwords masked)')
    .option(
      '--profile <profiles...>',
      `also install opt-in tools (${PROFILES.join(', ')}): spark = PySpark + Iceberg's Spark runtime; debezium = Kafka Connect with Debezium's PostgreSQL connector and a wal_level=logical PostgreSQL (started)`,
    )
    .action(async (names: string[], o: { json?: boolean; profile?: string[] }) => {
      const t0 = Date.now();
      const { ensureStack } = await stackApi();
      const e = await ensureStack(services(names));
      if (o.profile) await (await import('../stack/profiles')).installProfiles(profiles(o.profile), (m) => console.error(`[stack] ${m}`));
      if (o.json) {
        printJson({
          seconds: (Date.now() - t0) / 1000,
          temporal: e.temporal,
          kafka: { brokers: e.kafka.brokers },
          s3: { endpoint: e.s3.endpoint, bucket: e.s3.bucket, accessKeyId: e.s3.accessKeyId },
          icebergRest: { uri: e.icebergRest.uri },
          postgres: { url: e.postgres.url.replace(/:[^:@/]*@/, ':***@') },
          schemaRegistry: { url: e.schemaRegistry.url },
          python: e.python.python,
        });
        return;
      }
      console.log(`stack up in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      console.log(`  temporal  ${e.temporal.address}  (UI ${e.temporal.uiUrl})`);
      console.log(`  kafka     ${e.kafka.brokers.join(',')}`);
      console.log(`  s3        ${e.s3.endpoint}  bucket ${e.s3.bucket}  key ${e.s3.accessKeyId}  (Iceberg REST ${e.icebergRest.uri})`);
      console.log(`  postgres  ${e.postgres.url.replace(/:[^:@/]*@/, ':***@')}`);
      console.log(`  registry  ${e.schemaRegistry.url}  (Confluent Schema Registry API)`);
      console.log(`  python    ${e.python.python}`);
    });

  stack
    .command('down [services...]')
    .description('stop the services (default: all); data stays in $FLOE_HOME/data')
    .action(async (names: string[]) => {
      const { stackDown } = await stackApi();
      await stackDown(services(names));
    });

  stack
    .command('status [services...]')
    .description('installed / running / healthy per service')
    .option('--json', 'print JSON')
    .action(async (names: string[], o: { json?: boolean }) => {
      const { stackStatus } = await stackApi();
      const st = await stackStatus(services(names));
      if (o.json) {
        printJson({ floeHome: stackEnv().floeHome, services: st });
      } else {
        console.log(`FLOE_HOME ${stackEnv().floeHome}`);
        for (const s of st) {
          const state = s.health.ok ? 'healthy' : s.running ? 'UNHEALTHY' : 'stopped';
          console.log(
            `${s.name.padEnd(9)} ${state.padEnd(9)} ${s.external ? 'external' : `pid ${s.pid ?? '-'}`.padEnd(10)} ${s.endpoint}  ${s.health.detail}`,
          );
        }
      }
      if (st.some((s) => !s.health.ok)) process.exitCode = EXIT.unavailable;
    });

  stack
    .command('logs [service]')
    .description('tail the log of one service (default: all)')
    .option('-n, --lines <n>', 'lines per service', '50')
    .action(async (name: string | undefined, o: { lines: string }) => {
      const { stackLogs } = await stackApi();
      console.log(stackLogs(services(name ? [name] : []), Number(o.lines)));
    });
}
