/**
 * A TCP proxy that counts the connections made through it: a test asserts that a client gives up
 * after one attempt (a count) instead of asserting how fast it failed (a wall-clock threshold that
 * a loaded machine breaks and a slow retry loop can pass).
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface CountingProxy {
  /** host:port to give the client instead of the target */
  address: string;
  port: number;
  /** connections accepted so far */
  connections(): number;
  close(): Promise<void>;
}

export async function startCountingProxy(targetHost: string, targetPort: number): Promise<CountingProxy> {
  let count = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    count++;
    const upstream = connect({ host: targetHost, port: targetPort });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    address: `127.0.0.1:${port}`,
    port,
    connections: () => count,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
