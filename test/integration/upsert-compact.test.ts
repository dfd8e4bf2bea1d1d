// npm test: integration
/**
 * Compaction beside a live upsert ingest (issue 31), on format v2 (position delete files) and v3
 * (deletion vectors): once the table has deletes, compactions start every few seconds until one
 * commits over them; the first is SIGKILLed before its commit (the restarted worker retries it).
 * Compaction applies the deletes (its outputs hold fewer rows than its inputs), and the table
 * equals the source state through floe, DuckDB and PyIceberg (runScenario's checks).
 * (Split from upsert.test.ts so that neither file nears the runner's 10-minute limit per file.)
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureStack } from '../../stack/stack';
import { runScenario } from '../../demo/scenario';
import { loadConfig } from '../../config';
import { openTables } from '../../table/tables';
import { connectClient } from '../../client';
import { compactTable } from '../../client/maintenance';
import { floeHome } from '../../stack/paths';

const quiet = (m: string) => {
  if (process.env.FLOE_TEST_VERBOSE) console.log(m);
};
const uniq = (p: string) => `${p}_${Date.now().toString(36)}${Math.floor(Math.random() * 1e4)}`;

/** Whether the scenario table `demo.<name>` has live position delete files, and a compaction committed over deletes. */
async function tableState(name: string): Promise<{ hasDeletes: boolean; appliedDeletes: boolean }> {
  const cfg = loadConfig(join(floeHome(), 'runs', `${name}.yaml`));
  const tables = await openTables(cfg);
  try {
    const { metadata } = await tables.load(cfg.tables[0]!.table);
    return {
      hasDeletes: Number(metadata.snapshots.at(-1)?.summary['total-delete-files'] ?? '0') > 0,
      appliedDeletes: metadata.snapshots.some(
        (s) => s.summary.operation === 'replace' && Number(s.summary['deleted-records'] ?? '0') > Number(s.summary['added-records'] ?? '0'),
      ),
    };
  } catch {
    return { hasDeletes: false, appliedDeletes: false }; // not created yet
  } finally {
    await tables.close();
  }
}

describe('compaction beside a live upsert ingest (real stack)', { timeout: 12 * 60_000 }, () => {
  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3']);
  });

  for (const formatVersion of [2, 3] as const)
    it(`upsert, v${formatVersion}: compactions beside the live ingest, the first killed before its commit, leave the table equal to the source state`, async () => {
      const marker = join(mkdtempSync(join(tmpdir(), 'floe-kill-')), 'killed');
      const name = uniq(`it_upsert_compact_v${formatVersion}`);
      const runs: Array<Promise<unknown>> = [];
      const compact = () => {
        const cfg = loadConfig(join(floeHome(), 'runs', `${name}.yaml`));
        runs.push(
          (async () => {
            const fc = await connectClient(cfg);
            try {
              return await compactTable(fc, cfg.tables[0]!.table, { minInputFiles: 2 }, { window: new Date().toISOString() });
            } finally {
              await fc.close();
            }
          })(),
        );
      };
      let lastCheck = 0,
        lastStart = -Infinity,
        applied = false,
        waited = false;
      const r = await runScenario({
        name,
        ratePerS: 40,
        durationS: 44,
        partitions: 4,
        commitInterval: '2s',
        kills: [],
        supervise: true,
        log: quiet,
        changes: { mode: 'upsert', keys: 150 },
        tableOverrides: { formatVersion },
        workerEnv: { FLOE_TEST_KILL_AT: 'compact-before-commit', FLOE_TEST_KILL_MARKER: marker },
        onTick: async (t) => {
          // Once the table has position deletes, a compaction starts every 6 s until one has
          // committed over them: the first is killed before its commit (the restarted worker retries
          // it, after its heartbeat timeout), and a group whose inputs got new deletes from the live
          // ingest meanwhile is left for a later run.
          if (!applied && t >= 8 && t < 36 && t >= lastCheck + 1) {
            lastCheck = t;
            const s = await tableState(name);
            applied = s.appliedDeletes;
            if (!applied && s.hasDeletes && t >= lastStart + 6) {
              lastStart = t;
              compact();
            }
          }
          // The compactions end while the worker still runs; the stream waits meanwhile, the ingest goes on.
          if (t >= 36 && !waited) {
            waited = true;
            const deadline = Date.now() + 240_000;
            const settled = async () => {
              const bound = new AbortController();
              await Promise.race([
                Promise.allSettled(runs),
                sleep(Math.max(0, deadline - Date.now()), undefined, { signal: bound.signal }).catch(() => undefined),
              ]);
              bound.abort();
            };
            await settled();
            // With the stream paused no new deletes arrive: if every run so far found its group
            // given new deletes meanwhile (a loaded machine rewrites slower than a commit
            // interval), one more run now applies them.
            while (!(await tableState(name)).appliedDeletes && Date.now() < deadline) {
              compact();
              await settled();
            }
          }
        },
      });
      const results = await Promise.allSettled(runs);
      const outcomes = JSON.stringify(results.map((x) => (x.status === 'fulfilled' ? x.value : String(x.reason))));
      assert.ok(existsSync(marker), 'a compaction was killed before its commit');
      assert.deepEqual(r.problems, [], r.problems.join('; '));
      const cfg = loadConfig(r.configPath);
      const tables = await openTables(cfg);
      try {
        const { metadata } = await tables.load(r.table);
        const replaces = metadata.snapshots.filter((s) => s.summary.operation === 'replace');
        assert.ok(replaces.length >= 1, `a compaction committed beside the ingest: ${outcomes}`);
        // Its outputs hold fewer rows than its inputs: it applied the upserts' position deletes.
        assert.ok(
          replaces.some((s) => Number(s.summary['deleted-records'] ?? '0') > Number(s.summary['added-records'] ?? '0')),
          `a compaction applied deletes: ${outcomes}`,
        );
      } finally {
        await tables.close();
      }
    });
});
