/**
 * The floe worker: hosts the workflows and activities on one task queue. SIGTERM/SIGINT shut it
 * down gracefully (in-flight activities finish or are cancelled, the worker drains); SIGKILL is
 * survived by design: Temporal retries the activities and replays the workflows elsewhere.
 */
import { Worker, Runtime, makeTelemetryFilterString, type TelemetryOptions, type WorkerOptions } from '@temporalio/worker';
import { createActivities, createDeps } from '../activities';
import { connectTemporalNative, missingSearchAttributes, type TemporalTarget } from '../client/connection';
import type { FloeConfig } from '../config';
import { log, logLevel, routeProcessWarnings } from '../observability/log';
import { temporalCoreLevel, temporalLogger } from '../observability/log-adapters';
import { workflowBundle } from './bundle';
import { startWorkerMetrics } from './metrics';

export async function createWorker(
  cfg: FloeConfig,
  opts: { identity?: string } = {},
): Promise<{ worker: Worker; target: TemporalTarget; close: () => Promise<void> }> {
  // Temporal first: a wrong address, CA or client certificate fails before Kafka and S3 are opened.
  const { connection, target } = await connectTemporalNative(cfg.temporal);
  // Every start and child carries floe's search attributes: without them each would fail (a child's
  // failure retries its parent's workflow task forever), so a namespace not set up fails here, once.
  const missing = await missingSearchAttributes(connection, target.namespace).catch(async (e: unknown) => {
    await connection.close().catch(() => undefined);
    throw e;
  });
  if (missing.length > 0) {
    await connection.close().catch(() => undefined);
    throw new Error(
      `Temporal namespace ${target.namespace} lacks floe's search attributes ${missing.join(', ')}: run \`floe setup\` (the local stack: \`floe stack up\`)`,
    );
  }
  let deps: Awaited<ReturnType<typeof createDeps>> | undefined;
  try {
    deps = await createDeps(cfg);
    // Encoder threads load while the worker connects and bundles, not in its first cycle.
    deps.encoders?.warm();
    const opened = deps;
    const worker = await Worker.create({
      connection,
      namespace: target.namespace,
      taskQueue: cfg.temporal.taskQueue,
      workflowBundle: await workflowBundle(),
      activities: createActivities(deps),
      identity: opts.identity ?? `floe-worker@${process.pid}`,
      ...activitySlots(process.env.FLOE_ACTIVITY_SLOTS),
      shutdownGraceTime: '10 seconds',
      // A workflow's next task waits this long on the sticky queue of a worker that died before it
      // goes to any worker (SDK default 10 s): after a SIGKILL that is pure delay before rows land.
      stickyQueueScheduleToStartTimeout: '3 seconds',
    });
    return {
      worker,
      target,
      close: async () => {
        await opened.close();
        await connection.close();
      },
    };
  } catch (e) {
    await deps?.close().catch(() => undefined);
    await connection.close().catch(() => undefined);
    throw e;
  }
}

/**
 * How many activities a worker runs at once. Default: up to 16 (fixed). With
 * `FLOE_ACTIVITY_SLOTS=resource`, Temporal's resource-based tuner: 2 slots always, more only while
 * the machine's CPU and memory stay below 80% and at most one more per 300 ms, so a busy worker
 * leaves the next partition group's poll to a peer instead of taking every task of a cycle (with
 * fixed slots one process took 19 of 20 polls in bench/scale-out.ts; with this, 10/10).
 */
export function activitySlots(mode: string | undefined): Pick<WorkerOptions, 'maxConcurrentActivityTaskExecutions' | 'tuner'> {
  if (mode === undefined || mode === '' || mode === 'fixed') return { maxConcurrentActivityTaskExecutions: 16 };
  if (mode !== 'resource') throw new Error(`FLOE_ACTIVITY_SLOTS: expected fixed or resource, found ${JSON.stringify(mode)}`);
  return {
    tuner: {
      workflowTaskSlotSupplier: { type: 'fixed-size', numSlots: 100 },
      activityTaskSlotSupplier: {
        type: 'resource-based',
        minimumSlots: 2,
        maximumSlots: 16,
        rampThrottle: '300ms',
        tunerOptions: { targetCpuUsage: 0.8, targetMemoryUsage: 0.8 },
      },
      localActivityTaskSlotSupplier: { type: 'fixed-size', numSlots: 4 },
      nexusTaskSlotSupplier: { type: 'fixed-size', numSlots: 1 },
    },
  };
}

/** Runs until SIGTERM/SIGINT. */
export async function runWorker(cfg: FloeConfig): Promise<void> {
  const metrics = await startWorkerMetrics();
  installRuntime(metrics.telemetry);
  const { worker, target, close } = await createWorker(cfg);
  if (metrics.port) log().info({ metricsPort: metrics.port }, `floe worker ${process.pid} serves metrics on :${metrics.port}/metrics`);
  // The SDK's default shutdown signals include SIGTERM and SIGINT: worker.run() resolves after draining.
  const taskQueue = cfg.temporal.taskQueue;
  log().info(
    { taskQueue, temporal: target.describe },
    `floe worker ${process.pid} polling task queue "${taskQueue}" on ${target.describe}`,
  );
  try {
    await worker.run();
  } finally {
    await close();
    await metrics.close();
    log().info(`floe worker ${process.pid} stopped`);
  }
}

/**
 * The Temporal runtime logs through floe's logger: the SDK's worker logs, workflow `log` (sunk by the
 * worker), activity `log` and core's logs (forwarded at WARN by default; FLOE_VERBOSE or
 * FLOE_LOG_LEVEL=debug shows more). Once per process, before the first worker or connection;
 * `telemetry` adds the rest of the runtime's telemetry (metrics).
 */
function installRuntime(telemetry: Omit<TelemetryOptions, 'logging'> = {}): void {
  routeProcessWarnings();
  const level = process.env.FLOE_VERBOSE ? 'debug' : logLevel();
  const core = temporalCoreLevel(level);
  Runtime.install({
    logger: temporalLogger(log()),
    telemetryOptions: { ...telemetry, logging: { filter: makeTelemetryFilterString({ core, other: core }), forward: {} } },
  });
}
