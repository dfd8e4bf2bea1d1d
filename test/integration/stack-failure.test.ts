// npm test: stack to itself (stops Postgres)
/**
 * A service that cannot start fails with an error naming the service and the port or step,
 * with the tail of its log — here PostgreSQL, whose port is taken by a foreign listener.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { ensureStack, stackDown } from '../../stack/stack';
import { PORTS } from '../../stack/env';

describe('stack start failures (real services)', { timeout: 5 * 60_000 }, () => {
  let squatter: Server | undefined;
  after(async () => {
    await new Promise<void>((r) => (squatter ? squatter.close(() => r()) : r()));
    await ensureStack(['postgres'], { log: () => undefined });
  });

  it('postgres with its port taken: the error names the service and the port', async () => {
    await ensureStack(['postgres'], { log: () => undefined });
    await stackDown(['postgres'], { log: () => undefined });
    squatter = createServer((s) => s.destroy());
    await new Promise<void>((resolve, reject) => {
      squatter!.once('error', reject);
      squatter!.listen(PORTS.postgres, '127.0.0.1', resolve);
    });
    await assert.rejects(ensureStack(['postgres'], { log: () => undefined }), (e: Error) => {
      assert.match(e.message, new RegExp(`^postgres: port ${PORTS.postgres} failed: the port is taken`));
      return true;
    });
  });
});
