/**
 * `${NAME}` and `${file:/path}` inside a string value, substituted at load, as Kafka Connect's
 * config providers substitute `${env:NAME}` and `${file:/path:key}`: `uri:
 * postgresql://floe:${PGPASSWORD}@db:5432/floe`. `$${` is a literal `${`. A variable that is not
 * set (or empty), a file that cannot be read: a config problem naming the key and the reference.
 *
 * Where (config/values.ts `conn`): only in connection settings, the values the process that
 * connects reads to reach a service (catalog.uri, s3.endpoint, kafka.brokers, schemaRegistry.url,
 * temporal.address, ...) and never copies into workflow inputs or results. Everywhere else a
 * reference is refused: those values (table entries, the warehouse, the task queue) name tables,
 * files and workflows, and reach workflow ids, inputs, histories, search attributes and table
 * metadata, where nothing read from the environment or a file may end up (a token command is
 * taken literally: its shell expands its own `${VAR}`). A secret goes by a
 * `…Env` / `…File` key (config/secrets.ts), read only
 * when the client is built, never into the parsed config; the one secret a reference may place in
 * the parsed config is the password of catalog.uri, which every message and log line that quotes
 * the URI masks (iceberg/catalog/redact.ts), as for FLOE_CATALOG_URI. Problems quote the value as
 * written (`${PGPASSWORD}`), never what it resolved to.
 */
import { readFileSync } from 'node:fs';

const REFERENCE = /\$\$\{|\$\{([^}]*)\}?/g;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Whether `text` holds a reference (not counting an escaped `$${`). */
export function hasReference(text: string): boolean {
  return [...text.matchAll(REFERENCE)].some((m) => m[0] !== '$${');
}

/** What is told where a reference is not resolved. */
export const REFERENCE_REFUSED =
  '${…} references are resolved only in connection settings (catalog.uri, s3.endpoint, kafka.brokers, schemaRegistry.url, temporal.address and the like), ' +
  'not in values that reach workflow inputs, histories or table metadata; name a secret with a …Env or …File key ($${ is a literal ${)';

/** `text` with each escaped `$${` as the literal `${` it stands for (where references are not resolved). */
export function unescapeReferences(text: string): string {
  return text.replaceAll('$${', '${');
}

/** `text` with its references substituted, or every reference that could not be. */
export function resolveReferences(text: string, env: NodeJS.ProcessEnv = process.env): { value: string } | { problems: string[] } {
  const problems: string[] = [];
  const value = text.replace(REFERENCE, (whole: string, inner: string | undefined) => {
    if (whole === '$${') return '${';
    if (inner === undefined || !whole.endsWith('}')) {
      problems.push(`${whole}: expected \${NAME} or \${file:/path}, with its closing "}"`);
      return whole;
    }
    if (inner.startsWith('file:')) {
      const path = inner.slice('file:'.length);
      try {
        const content = readFileSync(path, 'utf8').replace(/\r?\n$/, '');
        if (content === '') problems.push(`${whole}: ${path} is empty`);
        return content;
      } catch (e) {
        problems.push(`${whole}: cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
        return whole;
      }
    }
    if (!ENV_NAME.test(inner)) {
      problems.push(`${whole}: expected \${NAME} (an environment variable, [A-Za-z_][A-Za-z0-9_]*) or \${file:/path}`);
      return whole;
    }
    const v = env[inner];
    if (v === undefined || v === '') problems.push(`${whole}: environment variable ${inner} is not set`);
    return v ?? whole;
  });
  return problems.length > 0 ? { problems } : { value };
}
