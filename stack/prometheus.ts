/**
 * Prometheus from Debian's package (pinned in versions.ts DEBIAN), unpacked under
 * $FLOE_HOME/prometheus like the stack's nginx: not a service of `floe stack up` (the local stack
 * runs none); bench/dashboard-plot.ts runs the server and the alert-rule tests run its `promtool`.
 */
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { floeHome } from './paths';
import { runCommand } from './proc';
import { markerMatches, writeMarker } from './service';
import { DEBIAN } from './versions';

/** Installs on first use; returns the directory holding `prometheus` and `promtool`. */
export async function prometheusBinDir(): Promise<string> {
  const dir = join(floeHome(), 'prometheus');
  const bin = join(dir, 'root', 'usr', 'bin');
  const marker = join(dir, '.installed');
  if (markerMatches(marker, { prometheus: DEBIAN.prometheus }) && existsSync(join(bin, 'promtool'))) return bin;
  const debs = join(dir, 'debs');
  mkdirSync(debs, { recursive: true });
  await runCommand('apt-get', ['download', '-q', `prometheus=${DEBIAN.prometheus}`], { cwd: debs, timeoutMs: 10 * 60_000 });
  const deb = readdirSync(debs).find((f) => f.startsWith('prometheus_') && f.endsWith('.deb'));
  if (!deb) throw new Error(`apt-get download prometheus=${DEBIAN.prometheus}: no .deb in ${debs}`);
  await runCommand('dpkg-deb', ['-x', join(debs, deb), join(dir, 'root')], { timeoutMs: 120_000 });
  writeMarker(marker, { prometheus: DEBIAN.prometheus });
  return bin;
}
