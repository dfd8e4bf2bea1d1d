// npm test: stack to itself (restarts Temporal and Kafka)
/**
 * The ingest loop survives a restart of the Temporal dev server (history in its SQLite file) and
 * of the Kafka broker, mid-stream, with exactly-once intact.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ensureStack, stackDown } from '../../stack/stack';
import { runScenario } from '../../demo/scenario';

const quiet = (m: string) => {
  if (process.env.FLOE_TEST_VERBOSE) console.log(m);
};

describe('ingest across server restarts (real stack)', { timeout: 20 * 60_000 }, () => {
  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3']);
  });

  it('restarting Temporal and then Kafka mid-stream: the loop continues, no loss, no duplicate', async () => {
    const done = new Set<string>();
    const r = await runScenario({
      name: `it_restart_${Date.now().toString(36)}`,
      ratePerS: 20,
      durationS: 40,
      partitions: 2,
      commitInterval: '3s',
      kills: [],
      supervise: true,
      log: quiet,
      drainTimeoutS: 300,
      onTick: async (t) => {
        if (t >= 8 && !done.has('temporal')) {
          done.add('temporal');
          await stackDown(['temporal'], { log: quiet });
          await ensureStack(['temporal'], { log: quiet });
        }
        if (t >= 22 && !done.has('kafka')) {
          done.add('kafka');
          await stackDown(['kafka'], { log: quiet });
          await ensureStack(['kafka'], { log: quiet });
        }
      },
    });
    assert.deepEqual([...done], ['temporal', 'kafka']);
    assert.deepEqual(r.problems, [], r.problems.join('; '));
    assert.equal(r.rows, r.produced);
    assert.equal(r.distinctEventIds, r.rows);
  });
});
