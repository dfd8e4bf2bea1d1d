/**
 * The workflow bundle, built once per workflow-source version and cached under $FLOE_HOME.
 * Bundling (webpack) takes 5–10 s on this machine; a restarted worker — the normal recovery after
 * a SIGKILL — should be polling again in about a second, so it loads the cached bundle instead.
 * The key hashes every file of the directories workflow code may import values from (workflows/,
 * the pure contract/ and maintenance/ modules; everything else reaches workflows as types, which
 * the bundle erases) and the SDK version. Missing one of them would run a stale bundle.
 * The compiled build (`npm run build`, dist/) carries the bundle made at build time beside the
 * code (PREBUILT_BUNDLE) and loads it as is: a production worker never runs webpack.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';

const BUNDLE_INPUT_DIRS = ['workflows', 'contract', 'maintenance'].map((d) => resolve(__dirname, '..', d));

/**
 * dist/workflow-bundle.js, written by scripts/build.ts; only compiled code (a .js __filename) uses it.
 * @public scripts/build.ts reads it from the compiled dist/workers/bundle.js, a require knip cannot follow.
 */
export const PREBUILT_BUNDLE = resolve(__dirname, '..', 'workflow-bundle.js');
const COMPILED = __filename.endsWith('.js');

/** $FLOE_HOME/bundles; the worker never imports the dev stack (stack/) for it. */
const bundleDir = (): string => join(resolve(process.env.FLOE_HOME ?? join(homedir(), '.cache', 'floe')), 'bundles');

function sourceHash(): string {
  const h = createHash('sha256');
  h.update(String((require('@temporalio/workflow/package.json') as { version: string }).version));
  for (const dir of BUNDLE_INPUT_DIRS) {
    for (const f of readdirSync(dir)
      .filter((n) => n.endsWith('.ts') || n.endsWith('.js'))
      .sort()) {
      h.update(join(dir, f));
      h.update(readFileSync(join(dir, f)));
    }
  }
  return h.digest('hex').slice(0, 20);
}

export async function workflowBundle(): Promise<{ codePath: string }> {
  if (COMPILED && existsSync(PREBUILT_BUNDLE)) return { codePath: PREBUILT_BUNDLE };
  const dir = bundleDir();
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
