/**
 * The worker's metrics endpoint (FLOE_METRICS_PORT; unset or 0 = off). Off by default: tests, the
 * demo and `floe` commands start many workers on one host, and a fixed default port would make the
 * second one fail; docker-compose sets 9464 (the port OpenTelemetry's Prometheus exporter uses).
 * The Temporal runtime's own exporter is bound to a free loopback port and merged into floe's
 * /metrics (observability/metrics-server.ts), so Prometheus scrapes one target per worker.
 */
import type { TelemetryOptions } from '@temporalio/worker';
import { freeLoopbackPort, metricsPort, serveMetrics } from '../observability/metrics-server';

interface WorkerMetrics {
  /** 0 when off. */
  port: number;
  /** For `Runtime.install({ telemetryOptions })`: the runtime's Prometheus exporter when metrics are on. */
  telemetry: Pick<TelemetryOptions, 'metrics'>;
  close(): Promise<void>;
}

/** Starts serving before the worker connects, so a taken port fails the worker at once. */
export async function startWorkerMetrics(value = process.env.FLOE_METRICS_PORT): Promise<WorkerMetrics> {
  const port = metricsPort(value);
  if (port === 0) return { port: 0, telemetry: {}, close: async () => undefined };
  const runtimePort = await freeLoopbackPort();
  const server = await serveMetrics({ port, temporalUrl: `http://127.0.0.1:${runtimePort}/metrics` });
  return {
    port: server.port,
    // Prometheus conventions for the runtime's names too: durations in seconds with a `_seconds`
    // unit suffix, counters ending in `_total`.
    telemetry: {
      metrics: {
        prometheus: { bindAddress: `127.0.0.1:${runtimePort}`, useSecondsForDurations: true, unitSuffix: true, countersTotalSuffix: true },
      },
    },
    close: server.close,
  };
}
