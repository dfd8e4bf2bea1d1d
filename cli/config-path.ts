/**
 * Which config file a command reads: `-c/--config`, else `$FLOE_CONFIG`, else `./floe.yaml` in the
 * current directory. Resolved only by commands that need a config (not `stack`, `demo`, `--help`).
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { CliError, EXIT } from './exit';

export const DEFAULT_CONFIG_FILE = 'floe.yaml';

export const CONFIG_ORDER = `-c/--config <file>, else $FLOE_CONFIG, else ./${DEFAULT_CONFIG_FILE}`;

export function resolveConfigPath(
  flag: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd(),
): { path: string; from: '--config' | 'FLOE_CONFIG' | `./${typeof DEFAULT_CONFIG_FILE}` } {
  if (flag !== undefined && flag !== '') return { path: resolve(cwd, flag), from: '--config' };
  if (env.FLOE_CONFIG) return { path: resolve(cwd, env.FLOE_CONFIG), from: 'FLOE_CONFIG' };
  const local = resolve(cwd, DEFAULT_CONFIG_FILE);
  if (existsSync(local)) return { path: local, from: `./${DEFAULT_CONFIG_FILE}` };
  throw new CliError(
    `no config file: pass -c <file>, set FLOE_CONFIG, or create ./${DEFAULT_CONFIG_FILE} in ${cwd} (see examples/orders.yaml)`,
    EXIT.usage,
  );
}
