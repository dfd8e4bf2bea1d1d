/**
 * `npm run build`: the production build in dist/. tsc (tsconfig.build.json) compiles the runtime
 * folders to CommonJS, the files they read at run time (the stack's pom.xml, log4j2.properties,
 * python helpers, s3.json; examples/orders.yaml for the demo) are copied beside them, and the
 * Temporal workflow bundle is made once from the compiled workflows (dist/workflow-bundle.js), so
 * neither `floe` nor a worker compiles TypeScript or runs webpack when it starts.
 * Development keeps running the sources through tsx; nothing here is needed for `npm test`.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';

const ROOT = resolve(__dirname, '..');
const DIST = join(ROOT, 'dist');

/** The folders tsconfig.build.json compiles. */
function compiledDirs(): string[] {
  const cfg = JSON.parse(readFileSync(join(ROOT, 'tsconfig.build.json'), 'utf8')) as { include: string[] };
  return cfg.include;
}

/** Every file under `dir` that is not TypeScript (and not a Python cache). */
function assetsUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (name !== '__pycache__' && name !== 'node_modules') out.push(...assetsUnder(path));
    } else if (!name.endsWith('.ts') && !name.endsWith('.pyc')) out.push(path);
  }
  return out;
}

function step(name: string, fn: () => void | Promise<void>): Promise<void> {
  const t0 = Date.now();
  return Promise.resolve(fn()).then(() => console.log(`build: ${name} (${((Date.now() - t0) / 1000).toFixed(1)} s)`));
}

async function main(): Promise<void> {
  await step('clean dist/', () => rmSync(DIST, { recursive: true, force: true }));
  await step('tsc -p tsconfig.build.json', () => {
    const r = spawnSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', join(ROOT, 'tsconfig.build.json')], {
      cwd: ROOT,
      stdio: 'inherit',
    });
    if (r.status !== 0) throw new Error(`tsc failed (exit ${r.status ?? r.signal})`);
  });
  await step('copy run-time files', () => {
    const files = [...compiledDirs().flatMap((d) => assetsUnder(join(ROOT, d))), join(ROOT, 'examples', 'orders.yaml')];
    for (const f of files) {
      const to = join(DIST, relative(ROOT, f));
      mkdirSync(dirname(to), { recursive: true });
      cpSync(f, to);
    }
  });
  await step('workflow bundle from dist/workflows', async () => {
    // The name workers/bundle.ts loads (PREBUILT_BUNDLE, resolved beside the compiled workers/).
    const { PREBUILT_BUNDLE } = require(join(DIST, 'workers', 'bundle.js')) as { PREBUILT_BUNDLE: string };
    const workflowsPath = require.resolve(join(DIST, 'workflows'));
    const { code } = await bundleWorkflowCode({ workflowsPath, logger: new DefaultLogger('WARN') });
    if (!PREBUILT_BUNDLE.startsWith(DIST) || basename(PREBUILT_BUNDLE) !== 'workflow-bundle.js')
      throw new Error(`workers/bundle.ts PREBUILT_BUNDLE: expected dist/workflow-bundle.js, found ${PREBUILT_BUNDLE}`);
    writeFileSync(PREBUILT_BUNDLE, code);
  });
  if (!existsSync(join(DIST, 'cli', 'main.js'))) throw new Error('dist/cli/main.js missing after tsc');
  console.log(`build: dist/ ready (${relative(process.cwd(), DIST) || '.'})`);
}

main().catch((e: Error) => {
  console.error(`build failed: ${e.message}`);
  process.exit(1);
});
