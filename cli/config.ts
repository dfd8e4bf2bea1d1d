/**
 * `floe config validate`: checks the config file offline (no service is contacted; `${…}`
 * references and Avro schema files are read as loading would) and prints either one OK line (exit
 * 0) or every problem, each as `<file>:<line>: <key>: <message>` (exit 2). Values are never printed,
 * so a secret a reference resolved cannot show.
 *
 * `floe config schema`: the config file's JSON Schema, from the same schema that loads it. For an
 * editor (the YAML language server): `floe config schema > floe.schema.json`, and in the config
 * `# yaml-language-server: $schema=./floe.schema.json`.
 */
import type { Command } from 'commander';
import { checkConfigFile, configJsonSchema, type ConfigProblem } from '../config';
import { printJson } from './common';
import { resolveConfigPath } from './config-path';
import { CliError, EXIT } from './exit';

export function registerConfigCommands(program: Command): void {
  const config = program.command('config').description('check a config file offline; print its JSON Schema');
  config
    .command('validate')
    .description('check the config file without contacting any service: every problem, with its key and line')
    .option('--json', 'print JSON: {file, ok, problems: [{key, line, message}]}')
    .action((o: { json?: boolean }, cmd: Command) => {
      const { path, from } = resolveConfigPath(cmd.optsWithGlobals().config as string | undefined);
      let problems: readonly ConfigProblem[];
      let tables = 0;
      try {
        const r = checkConfigFile(path);
        problems = r.problems ?? [];
        tables = r.config?.tables.length ?? 0;
      } catch (e) {
        // Unreadable, or not YAML: no key to name.
        throw new CliError(`${(e as Error).message} (config file from ${from})`, EXIT.usage, { cause: e });
      }
      if (problems.length > 0) process.exitCode = EXIT.usage;
      if (o.json) {
        printJson({ file: path, ok: problems.length === 0, problems: problems.map(({ key, line, message }) => ({ key, line, message })) });
        return;
      }
      if (problems.length === 0) {
        console.log(`${path}: OK (${tables} table${tables === 1 ? '' : 's'})`);
        return;
      }
      for (const p of problems) console.error(`${path}${p.line !== undefined ? `:${p.line}` : ''}: ${p.key}: ${p.message}`);
      console.error(`${path}: ${problems.length} problem${problems.length === 1 ? '' : 's'}`);
    });
  config
    .command('schema')
    .description('print the JSON Schema of the config file (editors: floe config schema > floe.schema.json)')
    .action(() => printJson(configJsonSchema()));
}
