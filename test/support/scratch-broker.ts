/**
 * A throwaway single-node KRaft broker from the stack's Kafka jars, with its own log dir and free
 * ports: a fresh cluster for tests that need what only a new broker does (its internal
 * __consumer_offsets topic created, and its coordinators loading, on the first group).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SINGLE_NODE_PROPERTIES, java, javaArgs, newClusterId } from '../../stack/services/kafka';
import { runCommand, spawnDaemon, stopProcessGroup, tcpOpen, waitFor } from '../../stack/proc';

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

export interface ScratchBroker {
  brokers: string[];
  /**
   * Stops the broker and starts it again on the same ports and log dir: a clean shutdown
   * (SIGTERM), or with `crash` a SIGKILL (no controlled shutdown; the log is recovered on start).
   */
  restart(opts?: { downMs?: number; crash?: boolean }): Promise<void>;
  stop(): Promise<void>;
}

export async function startScratchBroker(): Promise<ScratchBroker> {
  const dir = mkdtempSync(join(tmpdir(), 'floe-scratch-kafka-'));
  const [port, controller] = [await freePort(), await freePort()];
  const props = join(dir, 'server.properties');
  const listeners = `PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controller}`;
  writeFileSync(
    props,
    [
      'process.roles=broker,controller',
      'node.id=1',
      `controller.quorum.bootstrap.servers=127.0.0.1:${controller}`,
      `listeners=${listeners}`,
      `advertised.listeners=PLAINTEXT://127.0.0.1:${port}`,
      'controller.listener.names=CONTROLLER',
      'inter.broker.listener.name=PLAINTEXT',
      'listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
      `log.dirs=${join(dir, 'data')}`,
      'num.partitions=1',
      ...SINGLE_NODE_PROPERTIES,
      '',
    ].join('\n'),
  );
  await runCommand(java(), javaArgs('kafka.tools.StorageTool', ['format', '-t', newClusterId(), '-c', props, '--standalone']), {
    timeoutMs: 120_000,
  });
  const logFile = join(dir, 'kafka.log');
  const spawn = () =>
    spawnDaemon({ cmd: java(), args: javaArgs('kafka.Kafka', [props]), cwd: dir, logFile, pidFile: join(dir, 'kafka.pid') });
  let pid = spawn();
  // A test process that ends without its `after` (a failure, a timeout) takes the broker along.
  const onExit = () => {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* gone */
    }
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', onExit);
  const stop = async () => {
    process.off('exit', onExit);
    await stopProcessGroup(pid, 10_000);
    rmSync(dir, { recursive: true, force: true });
  };
  const untilListening = async () => {
    const ready = await waitFor(() => tcpOpen('127.0.0.1', port), { timeoutMs: 120_000, intervalMs: 300 });
    if (!ready.ok) {
      await stop();
      throw new Error(`scratch broker on ${port}: ${ready.reason} (log ${logFile})`);
    }
  };
  await untilListening();
  const restart = async ({ downMs = 0, crash = false } = {}) => {
    await stopProcessGroup(pid, crash ? 0 : 30_000);
    await waitFor(async () => !(await tcpOpen('127.0.0.1', port)), { timeoutMs: 30_000, intervalMs: 200 });
    if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
    pid = spawn();
    await untilListening();
  };
  return { brokers: [`127.0.0.1:${port}`], restart, stop };
}
