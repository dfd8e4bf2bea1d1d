import type { Command } from 'commander';
import { SERVICE_NAMES, type ServiceName } from '../stack/service';
import { ensureStack, stackDown, stackLogs, stackStatus } from '../stack/stack';
import { stackEnv } from '../stack/env';

function services(args: string[]): ServiceName[] {
  for (const a of args) {
    if (!(SERVICE_NAMES as readonly string[]).includes(a)) {
      throw new Error(`unknown service ${JSON.stringify(a)}, expected one of ${SERVICE_NAMES.join(', ')}`);
    }
  }
  return args as ServiceName[];
}

/** `floe stack up|down|status|logs`: the local stack without Docker (see stack/). */
export function registerStackCommands(program: Command): void {
  const stack = program.command('stack').description(`run the local stack (${SERVICE_NAMES.join(', ')}) under $FLOE_HOME, no Docker`);

  stack
    .command('up [services...]')
    .description('install on first use, then start the services (default: all); no-op for healthy ones')
    .action(async (names: string[]) => {
      const t0 = Date.now();
      const e = await ensureStack(services(names));
      console.log(`stack up in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      console.log(`  temporal  ${e.temporal.address}  (UI ${e.temporal.uiUrl})`);
      console.log(`  kafka     ${e.kafka.brokers.join(',')}`);
      console.log(`  s3        ${e.s3.endpoint}  bucket ${e.s3.bucket}  key ${e.s3.accessKeyId}  (Iceberg REST ${e.icebergRest.uri})`);
      console.log(`  postgres  ${e.postgres.url.replace(/:[^:@/]*@/, ':***@')}`);
      console.log(`  python    ${e.python.python}`);
    });

  stack
    .command('down [services...]')
    .description('stop the services (default: all); data stays in $FLOE_HOME/data')
    .action(async (names: string[]) => {
      await stackDown(services(names));
    });

  stack
    .command('status [services...]')
    .description('installed / running / healthy per service')
    .option('--json', 'print JSON')
    .action(async (names: string[], o: { json?: boolean }) => {
      const st = await stackStatus(services(names));
      if (o.json) {
        console.log(JSON.stringify({ floeHome: stackEnv().floeHome, services: st }, null, 2));
      } else {
        console.log(`FLOE_HOME ${stackEnv().floeHome}`);
        for (const s of st) {
          const state = s.health.ok ? 'healthy' : s.running ? 'UNHEALTHY' : 'stopped';
          console.log(
            `${s.name.padEnd(9)} ${state.padEnd(9)} ${s.external ? 'external' : `pid ${s.pid ?? '-'}`.padEnd(10)} ${s.endpoint}  ${s.health.detail}`,
          );
        }
      }
      if (st.some((s) => !s.health.ok)) process.exitCode = 1;
    });

  stack
    .command('logs [service]')
    .description('tail the log of one service (default: all)')
    .option('-n, --lines <n>', 'lines per service', '50')
    .action((name: string | undefined, o: { lines: string }) => {
      console.log(stackLogs(services(name ? [name] : []), Number(o.lines)));
    });
}
