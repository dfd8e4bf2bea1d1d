// npm test: alone (restarts Kafka, Temporal, S3 and Postgres; its recovery deadlines assume the CPU is its own)
/**
 * The chaos proof (bench/chaos.ts) in 2 minutes: 3 real worker processes SIGKILLed at random
 * (>= 10 kills) and restarted, Kafka, the Temporal server, SeaweedFS and Postgres (the table's
 * catalog) restarted once each, a live ingest with malformed messages, compaction and expiry on
 * Temporal Schedules, forced orphan sweeps with a short grace and a backfill into the same table.
 * Checked without floe's reader (PyIceberg and DuckDB, the topic read back, S3 listed): every good
 * message exactly once, every bad one dead-lettered exactly once, no referenced file missing, no
 * orphan older than the grace, no failed workflow.
 *
 * Budget on a loaded 2-core machine: 2 min of chaos, then at most 2 min of drain (usually seconds)
 * and 45 s for running maintenance to finish, plus the final sweep and the check (~15 s). The long
 * run is `npx tsx bench/chaos.ts` (20 minutes, 3 restarts of each service); this one is part of
 * every `npm test`, so it packs the same events into less time: a kill every ~5 s (~24, where 8 s
 * gave ~22 in 3 minutes), an orphan sweep every 40 s (2, as before) and services down 1-3 s, so
 * that the four restarts, one at a time and each waiting for its service to be back, still fit
 * in the run (a restart that would start after the chaos ends is not made, and the restart count
 * is asserted); the compaction cron (every minute, a cron's finest step) fires twice.
 *
 * The mix (bench/support/chaos-mix.ts) runs too, at 5 msg/s a topic: an entry of two topics, a
 * route into tables created on the fly (4 values, the last appearing late in the run) and Avro
 * through the Schema Registry whose schema gains an optional field at 42 s; each checked the
 * same way (rows exactly once by topic, partition and offset, in the table its value names, the
 * new column null before the change, every bad message a dead letter).
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ensureStack } from '../../stack/stack';
import { main } from '../../bench/chaos';

const quiet = (m: string) => {
  if (process.env.FLOE_TEST_VERBOSE) console.log(m);
};

describe('chaos: kills, server restarts, maintenance and a backfill (real stack)', { timeout: 9 * 60_000 }, () => {
  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3', 'postgres', 'schema-registry']);
  });

  it('2 minutes of chaos: exactly once, dead letters once, no missing file, no old orphan, no failed workflow', async () => {
    const r = await main({
      durationMs: 2 * 60_000,
      workers: 3,
      ratePerS: 50,
      killEveryMs: 5000,
      restartDelayMs: [1000, 4000],
      restarts: { kafka: 1, temporal: 1, s3: 1, postgres: 1 },
      serviceDownMs: [1000, 3000],
      backfillBlockS: 30,
      backfillAtFrac: 0.1,
      orphansEveryMs: 40_000,
      orphanGraceMs: 30_000,
      drainTimeoutMs: 2 * 60_000,
      quiesceTimeoutMs: 45_000,
      mixRatePerS: 5,
      routeValues: 4,
      schemaChangeAtFrac: 0.35,
      log: quiet,
    });
    console.log(r.summary);
    assert.deepEqual(r.problems, [], r.problems.join('\n'));
    assert.ok(r.kills >= 10, `expected >= 10 kills, found ${r.kills}`);
    assert.deepEqual(r.restarts, { kafka: 1, temporal: 1, s3: 1, postgres: 1 });
    assert.equal(r.rows, r.topic.good, 'rows == good messages in the topic');
    assert.equal(r.duplicates, 0);
    assert.equal(r.lost, 0);
    assert.equal(r.unexpected, 0);
    assert.equal(r.deadLetters, r.badMessages, 'dead letters == bad messages');
    assert.ok(r.badMessages > 0, 'some messages were malformed');
    assert.equal(r.topic.good + r.topic.bad - r.topic.resent, r.produced.good + r.produced.bad, 'the topic holds what was produced');
    assert.equal(r.missingFiles, 0);
    assert.equal(r.orphans, 0);
    assert.equal(r.failures, 0);
    assert.ok(r.ok);
    // The backfilled block and the live stream both landed, and maintenance ran under the chaos.
    assert.ok((r.workflows['backfillWorkflow']?.['COMPLETED'] ?? 0) >= 2, JSON.stringify(r.workflows));
    assert.ok((r.workflows['compactWorkflow']?.['COMPLETED'] ?? 0) >= 1, JSON.stringify(r.workflows));
    // The mix: every entry exactly once, its dead letters once each, through the same kills.
    assert.deepEqual(
      r.mix.map((m) => m.kind),
      ['multi-topic', 'route', 'registry'],
    );
    for (const m of r.mix) {
      const what = `${m.kind}: ${JSON.stringify(m)}`;
      assert.deepEqual(m.violations, [], what);
      assert.ok(m.goodMessages > 0 && m.badMessages > 0, what);
      assert.equal(m.rows, m.goodMessages, what);
      assert.equal(m.duplicates + m.lost + m.unexpected + m.wrongValue + m.missingFiles, 0, what);
      assert.equal(m.deadLetters, m.badMessages, what);
    }
    const [, route, registry] = r.mix;
    // A value's table is created when its first message is read, values joining every 30 s (and
    // all of them in the mix's last batch after the chaos, should a broker outage hold the producer).
    assert.equal(route!.tables.length, 1 + 4, `the route: its own table and one per value: ${route!.tables.join(', ')}`);
    assert.ok(registry!.versions!.v1 > 0 && registry!.versions!.v2 > 0, JSON.stringify(registry!.versions));
  });
});
