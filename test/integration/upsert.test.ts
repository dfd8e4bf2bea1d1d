// npm test: integration
/**
 * Upsert and CDC tables (issue 31) on the real stack: a customer table's inserts, updates and
 * deletes land so that the Iceberg table equals the source state (computed from the produced
 * stream) as floe, DuckDB and PyIceberg read it, through SIGKILLs after the data write, after the
 * delete write, after the catalog CAS and on a schedule.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureStack } from '../../stack/stack';
import { runScenario } from '../../demo/scenario';
import { loadConfig } from '../../config';
import { openTables } from '../../table/tables';

const quiet = (m: string) => {
  if (process.env.FLOE_TEST_VERBOSE) console.log(m);
};
const uniq = (p: string) => `${p}_${Date.now().toString(36)}${Math.floor(Math.random() * 1e4)}`;

describe('upsert and CDC tables (real stack)', { timeout: 12 * 60_000 }, () => {
  before(async () => {
    await ensureStack(['temporal', 'kafka', 's3']);
  });

  const cases = [
    { mode: 'upsert', point: 'after-delete-write', kills: [{ atS: 12, restartAfterS: 2 }] },
    { mode: 'upsert', point: 'after-write', kills: [] },
    { mode: 'cdc', point: 'after-cas', kills: [] },
  ] as const;
  for (const c of cases) {
    it(`${c.mode}: a worker killed at "${c.point}"${c.kills.length ? ' and on a schedule' : ''} leaves the table equal to the source state`, async () => {
      const marker = join(mkdtempSync(join(tmpdir(), 'floe-kill-')), 'killed');
      const r = await runScenario({
        name: uniq(`it_${c.mode}_${c.point.replace(/-/g, '_')}`),
        ratePerS: 40,
        durationS: 20,
        partitions: 4,
        commitInterval: '2s',
        kills: [...c.kills],
        supervise: true,
        log: quiet,
        changes: { mode: c.mode, keys: 150 },
        workerEnv: { FLOE_TEST_KILL_AT: c.point, FLOE_TEST_KILL_MARKER: marker },
      });
      assert.ok(existsSync(marker), `the worker reached crash point ${c.point}`);
      assert.match(readFileSync(marker, 'utf8'), new RegExp(`^${c.point} `));
      assert.ok(r.selfExits >= 1, 'the killed worker was restarted by the supervisor');
      assert.deepEqual(r.problems, [], r.problems.join('; '));
      assert.ok(r.rows > 50, `${r.rows} live keys`);
      assert.equal(r.rows, r.distinctEventIds);
      // The table is a v2 table with the key as its identifier fields, and deletes were written.
      const cfg = loadConfig(r.configPath);
      const tables = await openTables(cfg);
      try {
        const { metadata } = await tables.load(r.table);
        const schema = metadata.schemas.find((s) => s['schema-id'] === metadata['current-schema-id'])!;
        assert.deepEqual(schema['identifier-field-ids'], [schema.fields.find((f) => f.name === 'id')!.id]);
        const deletes = metadata.snapshots.reduce((n, s) => n + Number(s.summary['added-position-deletes'] ?? '0'), 0);
        assert.ok(deletes > 0, 'position deletes were committed');
      } finally {
        await tables.close();
      }
    });
  }
});
