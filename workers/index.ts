/**
 * The floe worker: hosts the workflows and activities on one task queue. SIGTERM/SIGINT shut it
 * down gracefully (in-flight activities finish or are cancelled, the worker drains); SIGKILL is
 * survived by design: Temporal retries the activities and replays the workflows elsewhere.
 */
import { NativeConnection, Worker, Runtime, DefaultLogger } from '@temporalio/worker';
import { createActivities, createDeps } from '../activities';
import type { FloeConfig } from '../config';
import { workflowBundle } from './bundle';

export async function createWorker(
  cfg: FloeConfig,
  opts: { identity?: string } = {},
): Promise<{ worker: Worker; close: () => Promise<void> }> {
  const deps = await createDeps(cfg);
  const connection = await NativeConnection.connect({ address: cfg.temporal.address });
  const worker = await Worker.create({
    connection,
    namespace: cfg.temporal.namespace,
    taskQueue: cfg.temporal.taskQueue,
    workflowBundle: await workflowBundle(),
    activities: createActivities(deps),
    identity: opts.identity ?? `floe-worker@${process.pid}`,
    maxConcurrentActivityTaskExecutions: 16,
    shutdownGraceTime: '10 seconds',
  });
  return {
    worker,
    close: async () => {
      await deps.close();
      await connection.close();
    },
  };
}

/** Runs until SIGTERM/SIGINT. */
export async function runWorker(cfg: FloeConfig): Promise<void> {
  if (!process.env.FLOE_VERBOSE) Runtime.install({ logger: new DefaultLogger('WARN') });
  const { worker, close } = await createWorker(cfg);
  // The SDK's default shutdown signals include SIGTERM and SIGINT: worker.run() resolves after draining.
  console.log(`floe worker ${process.pid} polling task queue "${cfg.temporal.taskQueue}" on ${cfg.temporal.address}`);
  try {
    await worker.run();
  } finally {
    await close();
    console.log(`floe worker ${process.pid} stopped`);
  }
}
