/**
 * The worker's /metrics endpoint: floe's own metrics (observability/metrics.ts) followed by the
 * Temporal SDK runtime's (Core's Prometheus exporter, bound to a loopback port of its own and
 * fetched on each scrape). One port and one scrape target for both; the runtime's port never
 * leaves the host. Temporal's names all start with `temporal_`, floe's with `floe_`, Node's with
 * `process_`/`nodejs_`, so the merged exposition has no duplicate family.
 */
import { createServer, type Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { registry } from './metrics';

/** `FLOE_METRICS_PORT`: unset, empty or 0 = no metrics endpoint. A bad value fails naming the key. */
export function metricsPort(value: string | undefined): number {
  if (value === undefined || value.trim() === '') return 0;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new Error(`FLOE_METRICS_PORT: expected a port 0-65535 (0 = off), found ${JSON.stringify(value)}`);
  return n;
}

/** A free loopback port for the Temporal runtime's exporter (Core binds it itself and reports no port back). */
export async function freeLoopbackPort(): Promise<number> {
  const s = createNetServer();
  await new Promise<void>((res, rej) => s.once('error', rej).listen(0, '127.0.0.1', res));
  const { port } = s.address() as { port: number };
  await new Promise<void>((res) => s.close(() => res()));
  return port;
}

interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

/**
 * Serves GET /metrics on `port` (all interfaces: Prometheus scrapes from another host or container).
 * `temporalUrl`: the runtime exporter to append; when it does not answer in 2 s the scrape still
 * succeeds with floe's metrics and `floe_temporal_metrics_up 0`.
 */
export async function serveMetrics(opts: { port: number; host?: string; temporalUrl?: string }): Promise<MetricsServer> {
  const server: Server = createServer((req, res) => {
    if (req.method !== 'GET' || !req.url?.startsWith('/metrics')) {
      res.writeHead(404).end('not found; metrics are at /metrics\n');
      return;
    }
    void exposition(opts.temporalUrl).then(
      (body) => res.writeHead(200, { 'content-type': registry.contentType }).end(body),
      (e: Error) => res.writeHead(500).end(`metrics: ${e.message}\n`),
    );
  });
  await new Promise<void>((res, rej) => server.once('error', rej).listen(opts.port, opts.host ?? '0.0.0.0', res));
  return {
    port: (server.address() as { port: number }).port,
    close: () => new Promise<void>((res) => server.close(() => res())),
  };
}

async function exposition(temporalUrl: string | undefined): Promise<string> {
  const own = await registry.metrics();
  if (!temporalUrl) return own;
  let temporal = '';
  try {
    const r = await fetch(temporalUrl, { signal: AbortSignal.timeout(2000) });
    if (r.ok) temporal = await r.text();
  } catch {
    // Reported as floe_temporal_metrics_up 0 below.
  }
  const up = `# HELP floe_temporal_metrics_up Whether the Temporal runtime's metrics answered this scrape\n# TYPE floe_temporal_metrics_up gauge\nfloe_temporal_metrics_up ${temporal ? 1 : 0}\n`;
  return `${own}\n${up}${temporal}`;
}
