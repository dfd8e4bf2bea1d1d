/**
 * `floe setup`: prepares a Temporal namespace for floe, for clusters `floe stack up` did not start:
 * registers floe's search attributes (FloeTable, FloeKind, FloeIngestId; Keyword) through the
 * operator service. Idempotent. Temporal Cloud does not let a client create search attributes:
 * there the command checks which are missing and says how to add them (tcld or the Cloud UI).
 */
import type { Command } from 'commander';
import { configOf, printJson } from './common';
import { CliError, EXIT } from './exit';

// gRPC status codes of a server that will not serve operator calls to this client.
const REFUSED = new Set([7 /* PERMISSION_DENIED */, 12 /* UNIMPLEMENTED */, 16 /* UNAUTHENTICATED */]);

interface SetupResult {
  namespace: string;
  address: string;
  cloud: boolean;
  created: string[];
  existing: string[];
  /** Still missing after setup (Temporal Cloud, or a client without operator rights). */
  missing: string[];
  instructions?: string;
}

export function cloudInstructions(namespace: string, missing: string[]): string {
  const flags = missing.map((n) => `--search-attribute "${n}=Keyword"`).join(' ');
  return [
    `Namespace ${namespace} lacks floe's search attributes ${missing.join(', ')}, and this server does not let`,
    'clients create them (Temporal Cloud manages them per namespace). Add them once, then run floe setup again:',
    `  tcld namespace search-attributes add --namespace ${namespace} ${flags}`,
    'or in the Cloud UI: Namespaces -> ' + namespace + ' -> Edit -> Custom Search Attributes, each of type Keyword.',
  ].join('\n');
}

export function registerSetupCommand(program: Command): void {
  program
    .command('setup')
    .description("prepare the config's Temporal namespace for floe: register its search attributes (idempotent)")
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }, cmd: Command) => {
      const cfg = configOf(cmd);
      const { connectTemporal, isTemporalCloud, missingSearchAttributes, registerSearchAttributes } = await import('../client/connection');
      const { connection, target } = await connectTemporal(cfg.temporal);
      try {
        const cloud = isTemporalCloud(target.address);
        let result: SetupResult;
        let refused = cloud;
        if (!cloud) {
          try {
            const r = await registerSearchAttributes(connection, target.namespace);
            result = { ...r, address: target.address, cloud, missing: [] };
          } catch (e) {
            if (!REFUSED.has((e as { code?: number }).code ?? -1)) throw e;
            refused = true;
          }
        }
        if (refused) {
          const missing = await missingSearchAttributes(connection, target.namespace);
          result = { namespace: target.namespace, address: target.address, cloud, created: [], existing: [], missing };
          if (missing.length > 0) result.instructions = cloudInstructions(target.namespace, missing);
        }
        result = result!;
        if (o.json) printJson(result);
        else if (result.missing.length === 0) {
          const made = result.created.length ? `registered ${result.created.join(', ')}` : 'nothing to register';
          console.log(`namespace ${result.namespace} on ${result.address}: ${made}; floe's search attributes are ready`);
        }
        if (result.instructions) {
          if (o.json) process.exitCode = EXIT.failure;
          else throw new CliError(result.instructions, EXIT.failure);
        }
      } finally {
        await connection.close();
      }
    });
}
