#!/usr/bin/env -S npx tsx
/**
 * The `floe` command. Every subcommand is a thin layer over the typed API (client/, stack/).
 */
import './runtime';
import { Command } from 'commander';
import { registerBackfillCommand, registerIngestCommands } from './ingest';
import { registerTableCommands } from './table';
import { registerStackCommands } from './stack';
import { registerDemoCommand } from './demo';
import { registerMaintenanceCommands } from './maintenance';

const program = new Command();
program
  .name('floe')
  .description('Exactly-once Kafka -> Apache Iceberg ingestion and table maintenance on Temporal')
  .option('-c, --config <file>', 'floe config file (YAML/JSON)', process.env.FLOE_CONFIG ?? 'examples/orders.yaml');

registerIngestCommands(program);
registerBackfillCommand(program);
registerTableCommands(program);
registerStackCommands(program);
registerDemoCommand(program);
registerMaintenanceCommands(program);

program.parseAsync(process.argv).catch((err: Error) => {
  console.error(`floe: ${err.message}`);
  process.exit(1);
});
