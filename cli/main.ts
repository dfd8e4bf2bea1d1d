#!/usr/bin/env -S npx tsx
/**
 * The `floe` command. Every subcommand is a thin layer over the typed API (client/, stack/).
 * Installed, `bin/floe` runs the compiled copy (dist/cli/main.js); in a checkout, `npm run floe --`
 * runs this file through tsx.
 */
import './runtime';
import { quietKafkajsTimeoutWarning } from '../observability/warnings';
import { Command, CommanderError } from 'commander';
import { registerBackfillCommand, registerIngestCommands } from './ingest';
import { registerTableCommands } from './table';
import { registerStackCommands } from './stack';
import { registerDemoCommand } from './demo';
import { registerMaintenanceCommands } from './maintenance';
import { registerWorkersCommand } from './workers';
import { registerSetupCommand } from './setup';
import { registerStatusCommand } from './status';
import { registerConfigCommands } from './config';
import { CONFIG_ORDER } from './config-path';
import { exitCodeOf, exitCodesHelp } from './exit';
// The one leaf module, not the entry: every command (--help too) would load all of iceberg (~1 s).
// eslint-disable-next-line no-restricted-imports -- iceberg/version.ts imports only node:fs/path
import { floeVersion } from '../iceberg/version';

const packageVersion = floeVersion;

quietKafkajsTimeoutWarning();

/** `--json` anywhere: every error, a usage error too, is one JSON line on stderr. */
const JSON_ERRORS = process.argv.includes('--json');

const program = new Command();
program
  // Inherited by every subcommand registered below: with --json, Commander's own error text is
  // replaced by the JSON line printed at the end (help and --version still print as text).
  .configureOutput({ outputError: (text, write) => (JSON_ERRORS ? undefined : write(text)) })
  .name('floe')
  .description('Exactly-once Kafka -> Apache Iceberg ingestion and table maintenance on Temporal')
  .version(packageVersion(), '-V, --version', 'print the floe version')
  .option('-c, --config <file>', `floe config file (YAML/JSON); found from ${CONFIG_ORDER}`)
  // Commander throws instead of exiting, so every error leaves through one place with its code.
  .exitOverride()
  .addHelpText(
    'after',
    `\nConfig: ${CONFIG_ORDER} (commands that need one).\n` +
      'Commands that print a result take --json (one JSON document on stdout; errors as JSON on stderr).\n\n' +
      exitCodesHelp(),
  );

registerIngestCommands(program);
registerBackfillCommand(program);
registerTableCommands(program);
registerStackCommands(program);
registerDemoCommand(program);
registerMaintenanceCommands(program);
registerWorkersCommand(program);
registerSetupCommand(program);
registerStatusCommand(program);
registerConfigCommands(program);

program.parseAsync(process.argv).catch((err: Error) => {
  const code = exitCodeOf(err);
  // Commander has already printed the help/version text, and its own message for a usage error
  // unless --json asked for JSON.
  const printed =
    err instanceof CommanderError &&
    (!JSON_ERRORS || ['commander.helpDisplayed', 'commander.version', 'commander.help'].includes(err.code));
  if (!printed) {
    const message = err instanceof CommanderError ? err.message.replace(/^error: /, '') : err.message;
    if (JSON_ERRORS) console.error(JSON.stringify({ error: message, exitCode: code }));
    else console.error(`floe: ${message}`);
  }
  process.exit(code);
});
