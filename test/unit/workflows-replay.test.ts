/**
 * Replays every recorded history in test/fixtures/histories (scripts/record-histories.ts) against
 * the current workflows bundle: a change to workflows/ that would make executions already in
 * flight nondeterministic fails here. Fix the change (patched(), a new workflow type), do not
 * re-record; see the script's header for when re-recording is right. No server needed.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { HistoryAndWorkflowId } from '@temporalio/client';
import { DeterminismViolationError } from '@temporalio/workflow';
import { Worker, type WorkflowBundle } from '@temporalio/worker';
import * as workflows from '../../workflows';
import { historyFromJson, quietRuntime, testWorkflowBundle } from '../support/workflow-env';

const HISTORIES_DIR = resolve(__dirname, '../fixtures/histories');

interface Recorded {
  file: string;
  workflowType: string;
  workflowId: string;
  history: HistoryAndWorkflowId;
}

function loadHistories(): Recorded[] {
  const recorded = readdirSync(HISTORIES_DIR)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => {
      const history = historyFromJson(readFileSync(join(HISTORIES_DIR, file), 'utf8'));
      const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
      assert.ok(started, `${file}: expected a history starting with WorkflowExecutionStarted`);
      // The recorded id (maintain derives its children's ids from it); servers before 1.27 do not record it.
      return {
        file,
        workflowType: started.workflowType?.name ?? '',
        workflowId: started.workflowId || file,
        history: { workflowId: started.workflowId || file, history },
      };
    });
  const ids = recorded.map((r) => r.workflowId);
  assert.deepEqual(
    ids.filter((id, i) => ids.indexOf(id) !== i),
    [],
    'results are matched by workflow id: record each history under its own',
  );
  return recorded;
}

async function replayAll(bundle: WorkflowBundle, histories: HistoryAndWorkflowId[]): Promise<Map<string, Error | undefined>> {
  const out = new Map<string, Error | undefined>();
  for await (const r of Worker.runReplayHistories({ workflowBundle: bundle, replayName: 'floe-replay-test' }, histories)) {
    out.set(r.workflowId, r.error);
  }
  return out;
}

describe('recorded workflow histories replay against the current workflows', () => {
  let bundle: WorkflowBundle;
  let recorded: Recorded[];
  before(async () => {
    quietRuntime();
    bundle = await testWorkflowBundle();
    recorded = loadHistories();
  });

  it('every exported workflow has at least one recorded history', () => {
    const exported = Object.entries(workflows)
      .filter(([name, v]) => typeof v === 'function' && name.endsWith('Workflow'))
      .map(([name]) => name);
    const covered = new Set(recorded.map((r) => r.workflowType));
    assert.deepEqual(
      exported.filter((w) => !covered.has(w)),
      [],
      'record them: npm run record-histories -- <scenario>',
    );
  });

  it('every history replays without nondeterminism', async () => {
    assert.ok(recorded.length > 0, `no histories under ${HISTORIES_DIR}`);
    const results = await replayAll(
      bundle,
      recorded.map((r) => r.history),
    );
    const failures = recorded
      .filter((r) => results.get(r.workflowId) !== undefined)
      .map((r) => `${r.file}: ${results.get(r.workflowId)!.name}: ${results.get(r.workflowId)!.message}`);
    assert.deepEqual(failures, []);
    assert.deepEqual(
      recorded.filter((r) => !results.has(r.workflowId)).map((r) => r.file),
      [],
      'every history was replayed',
    );
  });

  it('the replay detects nondeterminism (a history whose activity was renamed fails)', async () => {
    const ingest = recorded.find((r) => r.file === 'ingest.json');
    assert.ok(ingest, 'expected ingest.json');
    const tampered = historyFromJson(readFileSync(join(HISTORIES_DIR, ingest.file), 'utf8'));
    const scheduled = tampered.events?.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'pollAndWrite');
    assert.ok(scheduled?.activityTaskScheduledEventAttributes?.activityType);
    scheduled.activityTaskScheduledEventAttributes.activityType.name = 'pollAndWriteV0';
    const results = await replayAll(bundle, [{ workflowId: 'tampered-ingest', history: tampered }]);
    const err = results.get('tampered-ingest');
    assert.ok(err instanceof DeterminismViolationError, `expected a DeterminismViolationError, found ${String(err)}`);
  });
});
