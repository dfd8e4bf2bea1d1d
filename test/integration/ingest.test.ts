/**
 * Exactly-once ingest against the real stack (Temporal dev server, Kafka KRaft, SeaweedFS S3,
 * SQLite catalog), with real worker processes that are SIGKILLed at random and at chosen points.
 * Invariant checked every time: rows + dead letters == messages in the topic, no duplicate event
 * ids, and DuckDB reads the same counts.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureStack } from '../../stack/stack';
import { runScenario, type ScenarioResult } from '../../demo/scenario';
import { loadConfig } from '../../config';
import { openTables } from '../../table/tables';
import { tableCommitRows } from '../../client/tables';
import { connectClient } from '../../client';
import { ingestWorkflowId } from '../../workflows';
import { unreferencedDataFiles } from '../support/orphans';
import type { ProgressSample } from '../../demo/progress';

const quiet = (m: string) => {
  if (process.env.FLOE_TEST_VERBOSE) console.log(m);
};
const uniq = (p: string) => `${p}_${Date.now().toString(36)}`;

function assertExactlyOnce(r: ScenarioResult): void {
  assert.deepEqual(r.problems, [], r.problems.join('; '));
  assert.equal(r.messagesInTopic, r.produced, 'every produced message is in the topic');
  assert.equal(r.rows + r.deadLetters, r.messagesInTopic);
  assert.equal(r.distinctEventIds, r.rows);
  assert.equal(r.deadLetters, r.malformed);
}

async function commitIdsAreUnique(r: ScenarioResult): Promise<void> {
  const rows = await tableCommitRows(loadConfig(r.configPath), r.table);
  const ids = rows.map((x) => x.commit_id).filter(Boolean);
  assert.equal(new Set(ids).size, ids.length, 'no commit id landed twice');
}

async function orphansOf(r: ScenarioResult): Promise<string[]> {
  const tables = await openTables(loadConfig(r.configPath));
  try {
    return await unreferencedDataFiles(tables, r.table);
  } finally {
    await tables.close();
  }
}

describe('exactly-once ingest under SIGKILL (real stack)', { timeout: 30 * 60_000 }, () => {
  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3']);
  });

  it('a worker SIGKILLed mid-stream and restarted: no loss, no duplicate; malformed messages dead-lettered; history bounded by continueAsNew; the demo progress sees it', async () => {
    const progress: ProgressSample[] = [];
    const r = await runScenario({
      onProgress: (s) => progress.push(s),
      progressEveryMs: 1000,
      name: uniq('it_kill'),
      ratePerS: 20,
      durationS: 30,
      partitions: 3,
      commitInterval: '3s',
      kills: [{ atS: 12, restartAfterS: 3 }],
      malformedEvery: 37,
      log: quiet,
      tableOverrides: { cyclesPerRun: 1 },
    });
    assert.equal(r.kills, 1);
    // cyclesPerRun 1: every cycle continues as new, carrying status; the cursor lives in the table.
    const fc = await connectClient(loadConfig(r.configPath));
    try {
      let runs = 0;
      for await (const _ of fc.client.workflow.list({ query: `WorkflowId = '${ingestWorkflowId(r.table, 'main')}'` })) runs++;
      assert.ok(runs >= 2, `expected >= 2 runs of the ingest workflow, found ${runs}`);
    } finally {
      await fc.close();
    }
    assert.ok(r.malformed > 10);
    assertExactlyOnce(r);
    await commitIdsAreUnique(r);
    // The demo's progress (the ingest's status query while streaming): counts never go back, the
    // killed worker shows as down, and the last sample has every message committed (rows + dead letters).
    assert.ok(progress.length >= 10, `${progress.length} progress samples`);
    for (let i = 1; i < progress.length; i++) {
      assert.ok(progress[i]!.produced >= progress[i - 1]!.produced, `produced goes back at sample ${i}`);
      assert.ok(progress[i]!.committed >= progress[i - 1]!.committed, `committed goes back at sample ${i}`);
    }
    assert.ok(
      progress.some((p) => !p.workerUp),
      'a sample while the worker was killed',
    );
    assert.equal(progress.at(-1)!.committed, r.produced);
  });

  for (const point of ['poll', 'after-write', 'after-cas'] as const) {
    it(`a worker killed at "${point}" recovers exactly once`, async () => {
      const marker = join(mkdtempSync(join(tmpdir(), 'floe-kill-')), 'killed');
      const r = await runScenario({
        name: uniq(`it_${point.replace('-', '_')}`),
        ratePerS: 20,
        durationS: 15,
        partitions: 2,
        commitInterval: '2s',
        kills: [],
        supervise: true,
        log: quiet,
        workerEnv: { FLOE_TEST_KILL_AT: point, FLOE_TEST_KILL_MARKER: marker },
      });
      assert.ok(existsSync(marker), `the worker reached crash point ${point}`);
      assert.match(readFileSync(marker, 'utf8'), new RegExp(`^${point} `));
      assert.ok(r.selfExits >= 1, 'the killed worker was restarted by the supervisor');
      assertExactlyOnce(r);
      await commitIdsAreUnique(r);
      const orphans = await orphansOf(r);
      if (point === 'after-write') {
        // The dead attempt wrote files that were never committed: they are orphans, not rows.
        assert.ok(orphans.length >= 1, 'files of the killed attempt are left as orphans');
      }
      if (point === 'after-cas') {
        // The commit landed before the kill; the retried activity found its commit id.
        assert.equal(orphans.length, 0, `no orphan after a kill past the CAS, found ${orphans.join(', ')}`);
      }
    });
  }
});
