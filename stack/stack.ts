import { join } from 'node:path';
import { stackEnv, type StackEnv } from './env';
import { withLock } from './lock';
import { stackPaths } from './paths';
import { tailFile } from './proc';
import { installPython, pythonInstalled } from './python';
import { PROFILE_SERVICE_NAMES, SERVICE_NAMES, type Service, type ServiceName, type ServiceStatus } from './service';
import { SERVICES } from './services';

export type Log = (msg: string) => void;
export interface StackOptions {
  log?: Log;
}

const defaultLog: Log = (m) => process.stderr.write(`[stack] ${m}\n`);
const secs = (t0: number) => `${((Date.now() - t0) / 1000).toFixed(1)} s`;

function pick(names?: readonly ServiceName[]): Service[] {
  const list = names && names.length > 0 ? names : SERVICE_NAMES;
  return list.map((n) => {
    const s = SERVICES[n];
    if (!s) {
      const known = [...SERVICE_NAMES, ...PROFILE_SERVICE_NAMES].join(', ');
      throw new Error(`stack: unknown service ${JSON.stringify(n)}, expected one of ${known}`);
    }
    return s;
  });
}

/** The opt-in profiles' services that are installed or running: what status and down add to the default ones. */
function profileServices(): Service[] {
  return PROFILE_SERVICE_NAMES.map((n) => SERVICES[n]).filter((s) => s.installed() || s.pid() !== undefined);
}

/** Runs every task, then throws one error listing every failure (not just the first). */
async function allOrReport(tasks: Promise<unknown>[]): Promise<void> {
  const results = await Promise.allSettled(tasks);
  const failed = results.flatMap((r) => (r.status === 'rejected' ? [(r.reason as Error).message ?? String(r.reason)] : []));
  if (failed.length > 0) throw new Error(failed.join('\n\n'));
}

/** Installs what is missing; concurrent per component (pip, maven and initdb overlap). */
export async function installStack(names?: readonly ServiceName[], opts: StackOptions = {}): Promise<void> {
  const log = opts.log ?? defaultLog;
  const services = pick(names).filter((s) => !s.external());
  const tasks: Promise<unknown>[] = [];
  const timed = async (what: string, fn: () => Promise<void>, already: boolean) => {
    if (already) return;
    const t0 = Date.now();
    log(`${what}: installing`);
    await fn();
    log(`${what}: installed in ${secs(t0)}`);
  };
  if (services.some((s) => s.needs.includes('python'))) {
    tasks.push(timed('python venv', () => installPython(), pythonInstalled()));
  }
  for (const s of services.filter((x) => !x.needs.includes('python'))) {
    tasks.push(timed(s.name, () => s.install(log), s.installed()));
  }
  await allOrReport(tasks);
}

/**
 * Installs (first use only) and starts the given services (default: all), reusing any that
 * are already healthy, and returns their endpoints. Safe to call from every test file: when
 * everything is up it costs one health check per service. Services whose endpoint is set by
 * a FLOE_* variable are external and only health-checked.
 */
export async function ensureStack(names?: readonly ServiceName[], opts: StackOptions = {}): Promise<StackEnv> {
  const log = opts.log ?? defaultLog;
  const services = pick(names);
  const health = await Promise.all(services.map((s) => s.health()));
  if (health.every((h) => h.ok)) return stackEnv();

  const external = services.filter((s, i) => s.external() && !health[i]?.ok);
  if (external.length > 0) {
    throw new Error(
      external
        .map((s) => `${s.name}: external endpoint ${s.endpoint()} (set by FLOE_*) is not healthy: ${health[services.indexOf(s)]?.detail}`)
        .join('\n'),
    );
  }
  const local = services.filter((s, i) => !s.external() && !health[i]?.ok);
  await withLock(join(stackPaths().run, 'stack.lock'), 20 * 60_000, async () => {
    const t0 = Date.now();
    await installStack(
      local.map((s) => s.name),
      { log },
    );
    await allOrReport(
      local.map(async (s) => {
        const t1 = Date.now();
        await s.start();
        log(`${s.name}: up at ${s.endpoint()} (${secs(t1)})`);
      }),
    );
    log(`stack ready in ${secs(t0)}`);
  });
  return stackEnv();
}

/**
 * Stops the given services (default: all, the opt-in profiles' first, before the Kafka and
 * PostgreSQL they use) that this stack started. External ones are left alone.
 */
export async function stackDown(names?: readonly ServiceName[], opts: StackOptions = {}): Promise<void> {
  const log = opts.log ?? defaultLog;
  const stop = (services: Service[]) =>
    allOrReport(
      services
        .filter((s) => !s.external())
        .map(async (s) => {
          const running = s.pid() !== undefined;
          await s.stop();
          if (running) log(`${s.name}: stopped`);
        }),
    );
  if (!names || names.length === 0) await stop(profileServices());
  await stop(pick(names));
}

/** The given services' state (default: all, with the opt-in profiles' ones that are installed). */
export async function stackStatus(names?: readonly ServiceName[]): Promise<ServiceStatus[]> {
  const services = names && names.length > 0 ? pick(names) : [...pick(), ...profileServices()];
  return Promise.all(
    services.map(async (s) => {
      const pid = s.pid();
      return {
        name: s.name,
        installed: s.external() || s.installed(),
        running: pid !== undefined,
        pid,
        health: await s.health(),
        endpoint: s.endpoint(),
        external: s.external(),
        logFile: s.logFile,
      };
    }),
  );
}

/** The last `lines` lines of each selected service's log. */
export function stackLogs(names?: readonly ServiceName[], lines = 50): string {
  return (names && names.length > 0 ? pick(names) : [...pick(), ...profileServices()])
    .map((s) => `==> ${s.logFile} <==\n${tailFile(s.logFile, lines)}`)
    .join('\n\n');
}
