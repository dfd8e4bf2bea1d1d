/**
 * The workflow bundle, built once per workflow-source version and cached under $FLOE_HOME.
 * Bundling (webpack) takes 5–10 s on this machine; a restarted worker — the normal recovery after
 * a SIGKILL — should be polling again in about a second, so it loads the cached bundle instead.
 * The key hashes every file under workflows/ (lint allows workflows to import nothing else but
 * types, which the bundle erases) and the SDK version.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { floeHome } from '../stack/paths';

const WORKFLOWS_DIR = resolve(__dirname, '../workflows');

function sourceHash(): string {
  const h = createHash('sha256');
  h.update(String((require('@temporalio/workflow/package.json') as { version: string }).version));
  for (const f of readdirSync(WORKFLOWS_DIR).sort()) {
    h.update(f);
    h.update(readFileSync(join(WORKFLOWS_DIR, f)));
  }
  return h.digest('hex').slice(0, 20);
}

export async function workflowBundle(): Promise<{ codePath: string }> {
  const dir = join(floeHome(), 'bundles');
  const codePath = join(dir, `workflows-${sourceHash()}.js`);
  if (!existsSync(codePath)) {
    const { code } = await bundleWorkflowCode({ workflowsPath: require.resolve('../workflows'), logger: undefined });
    mkdirSync(dir, { recursive: true });
    // temp + rename: workers starting together never read a half-written bundle
    const tmp = `${codePath}.${process.pid}.tmp`;
    writeFileSync(tmp, code);
    renameSync(tmp, codePath);
  }
  return { codePath };
}
