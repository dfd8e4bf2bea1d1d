/**
 * A bench script's command line: node:util's parseArgs in strict mode, so a mistyped option is
 * refused instead of silently running the default benchmark for minutes. An unknown option, a
 * missing value or a stray argument prints the error and the usage line and exits 2; `--help`
 * prints the usage line.
 */
import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';

/** The values parseArgs returns for `options` (strict, no positionals). */
type Values<O extends ParseArgsOptionsConfig> = ReturnType<
  typeof parseArgs<{ args: string[]; options: O; strict: true; allowPositionals: false }>
>['values'];

export function benchArgs<const O extends ParseArgsOptionsConfig>(usage: string, options: O, args = process.argv.slice(2)): Values<O> {
  let values: Record<string, unknown>;
  try {
    ({ values } = parseArgs({ args, options: { ...options, help: { type: 'boolean' } }, strict: true, allowPositionals: false }));
  } catch (e) {
    console.error(`${(e as Error).message}\nusage: ${usage}`);
    process.exit(2);
  }
  if (values.help) {
    console.log(`usage: ${usage}`);
    process.exit(0);
  }
  return values as Values<O>;
}

/**
 * `--<option> <value>` as `--<option>=<value>`: a value that starts with a dash (V8 flags) is
 * taken by parseArgs for a forgotten one unless it is attached.
 */
export function attachValue(argv: readonly string[], option: string): string[] {
  const flag = `--${option}`;
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === flag && i + 1 < argv.length) out.push(`${flag}=${argv[++i]}`);
    else out.push(argv[i]!);
  }
  return out;
}

/** A numeric option: `v` as a number, `def` when the option is absent. */
export const numberArg = (v: string | undefined, def: number): number => (v === undefined ? def : Number(v));
