/** floe's package.json version, found upward from here (a checkout, or dist/ when installed). */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

let cached: string | undefined;

export function floeVersion(): string {
  if (cached !== undefined) return cached;
  cached = 'unknown';
  for (let dir = __dirname; dir !== dirname(dir); dir = dirname(dir)) {
    const p = join(dir, 'package.json');
    if (!existsSync(p)) continue;
    const pkg = JSON.parse(readFileSync(p, 'utf8')) as { name?: string; version?: string };
    if (pkg.name === 'floe') {
      cached = pkg.version ?? 'unknown';
      break;
    }
  }
  return cached;
}
