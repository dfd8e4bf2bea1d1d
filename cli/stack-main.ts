/**
 * `npx tsx cli/stack-main.ts stack up|down|status|logs` — the same commands as `floe stack ...`
 * without loading the rest of the CLI (scripts/test.sh and .ci/run use it).
 */
import { Command } from 'commander';
import { registerStackCommands } from './stack';

// The SDK warns on every run that future releases need Node 22; floe pins its SDK version.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const program = new Command().name('floe-stack');
registerStackCommands(program);
program.parseAsync(process.argv).catch((err: Error) => {
  console.error(`floe stack: ${err.message}`);
  process.exit(1);
});
