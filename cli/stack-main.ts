/**
 * `npx tsx cli/stack-main.ts stack up|down|status|logs` — the same commands as `floe stack ...`
 * without loading the rest of the CLI (scripts/test.sh and .ci/run use it).
 */
import './runtime';
import { Command } from 'commander';
import { registerStackCommands } from './stack';

const program = new Command().name('floe-stack');
registerStackCommands(program);
program.parseAsync(process.argv).catch((err: Error) => {
  console.error(`floe stack: ${err.message}`);
  process.exit(1);
});
