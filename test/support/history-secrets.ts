/**
 * Searches workflow histories for secrets the way they are stored: payloads are bytes (base64 in
 * proto JSON), so `JSON.stringify(history)` would show them as arrays of numbers and a secret in a
 * workflow input or result would go unseen. Every run visibility lists for the id (continue-as-new)
 * and the latest run (visibility may lag behind a workflow that just finished) are searched, as
 * proto JSON and as decoded payload text.
 */
import assert from 'node:assert/strict';
import type { Client } from '@temporalio/client';
import { historyToJson } from './workflow-env';

/** {json, decoded} of every run of `workflowId`. */
export async function historyTexts(client: Client, workflowId: string): Promise<{ runId: string; json: string; decoded: string }[]> {
  const runIds = new Set<string | undefined>([undefined]);
  for await (const wf of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) runIds.add(wf.runId);
  const out: { runId: string; json: string; decoded: string }[] = [];
  for (const runId of runIds) {
    const json = historyToJson(await client.workflow.getHandle(workflowId, runId).fetchHistory());
    const decoded = [...json.matchAll(/"data": "([A-Za-z0-9+/=]+)"/g)].map((m) => Buffer.from(m[1]!, 'base64').toString('utf8')).join('\n');
    out.push({ runId: runId ?? 'latest', json, decoded });
  }
  return out;
}

/**
 * Asserts that no history of `workflowIds` holds any of `secrets`; `visible` is a string every
 * history's decoded payloads must contain (the table name: proof the search sees the inputs).
 * Returns the number of histories searched.
 */
export async function assertHistoriesFreeOf(client: Client, workflowIds: string[], secrets: string[], visible: string): Promise<number> {
  let runs = 0;
  for (const id of workflowIds) {
    for (const h of await historyTexts(client, id)) {
      assert.ok(h.decoded.includes(visible), `the decoded payloads of ${id}/${h.runId} hold ${visible} (the search can see inputs)`);
      for (const secret of secrets)
        for (const text of [h.json, h.decoded]) assert.ok(!text.includes(secret), `the history of ${id}/${h.runId} holds a secret`);
      runs++;
    }
  }
  return runs;
}
