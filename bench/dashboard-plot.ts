/**
 * Renders docs/dashboard.png: the Grafana dashboard's main panels drawn from a real scrape. A
 * demo-like run (orders streamed into a fresh topic, the worker SIGKILLed mid-stream and restarted)
 * with FLOE_METRICS_PORT set, scraped every second by a real Prometheus (Debian's package, pinned in
 * stack/versions.ts DEBIAN, unpacked under $FLOE_HOME like the stack's nginx); then each panel's
 * PromQL, taken verbatim from docker/grafana/floe-dashboard.json, is run as a range query and
 * bench/dashboard-plot.py draws the result with matplotlib (pinned in PYTHON). Grafana itself
 * cannot be installed here (no Docker, not in Debian).
 *
 *   npx tsx bench/dashboard-plot.ts [--rate 30] [--duration 60s] [--kill-at 25s] [--out docs/dashboard.png]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, openSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseDuration } from '../config/units';
import { runScenario } from '../demo/scenario';
import { freeLoopbackPort } from '../observability/metrics-server';
import { installPython, venvBin } from '../stack/python';
import { ensureStack } from '../stack/stack';
import { prometheusBinDir } from '../stack/prometheus';
import { runCommand } from '../stack/proc';
import { DEBIAN } from '../stack/versions';
import { benchArgs } from './support/args';

const ROOT = resolve(__dirname, '..');

/** The panels drawn, by their dashboard title. */
const PANELS = [
  'Consumer lag (records)',
  'Throughput (rows/s)',
  'Commit latency',
  'Cycle duration',
  'Cursor age (since last commit)',
  'Files and bytes per commit',
  'Small files written (< 8 MiB, per minute)',
  'Failures by type',
  'Activity task slots used',
];

/**
 * The dashboard's rate windows are for hours of data; over a one-minute run a 1m/5m window mostly
 * averages in the time before the series existed, so the plot scales them down (named in the picture).
 */
const WINDOWS: Record<string, string> = { '[1m]': '[10s]', '[5m]': '[20s]', '[1h]': '[2m]' };

async function prometheusBin(): Promise<string> {
  return join(await prometheusBinDir(), 'prometheus');
}

async function startPrometheus(metricsPort: number): Promise<{ url: string; proc: ChildProcess; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'floe-prom-'));
  const port = await freeLoopbackPort();
  writeFileSync(
    join(dir, 'prometheus.yml'),
    `global: {scrape_interval: 1s, evaluation_interval: 1s}\nscrape_configs:\n  - job_name: floe-worker\n    static_configs: [{targets: ['127.0.0.1:${metricsPort}']}]\n`,
  );
  const log = openSync(join(dir, 'prometheus.log'), 'a');
  const proc = spawn(
    await prometheusBin(),
    [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`],
    { stdio: ['ignore', log, log] },
  );
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (
      await fetch(`${url}/-/ready`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return { url, proc, dir };
    if (i > 60) throw new Error(`prometheus did not become ready; see ${join(dir, 'prometheus.log')}`);
    await sleep(500);
  }
}

interface Target {
  expr: string;
  legendFormat: string;
}
interface Panel {
  title: string;
  type: string;
  fieldConfig?: { defaults?: { unit?: string } };
  targets?: Target[];
}

async function rangeQuery(prom: string, expr: string, start: number, end: number) {
  const q = new URLSearchParams({ query: expr, start: String(start), end: String(end), step: '1' });
  const r = await fetch(`${prom}/api/v1/query_range?${q}`);
  const body = (await r.json()) as {
    status: string;
    error?: string;
    data: { result: Array<{ metric: Record<string, string>; values: Array<[number, string]> }> };
  };
  if (body.status !== 'success') throw new Error(`${expr}: ${body.error}`);
  return body.data.result;
}

/** A duration flag in seconds, in the config's and the CLI's one syntax (a bare number is milliseconds). */
function seconds(flag: string, text: string): number {
  try {
    return parseDuration(text) / 1000;
  } catch (e) {
    throw new Error(`${flag}: ${(e as Error).message}`);
  }
}

async function main(): Promise<void> {
  const values = benchArgs('npx tsx bench/dashboard-plot.ts [--rate 30] [--duration 60s] [--kill-at 25s] [--out docs/dashboard.png]', {
    rate: { type: 'string', default: '30' },
    duration: { type: 'string', default: '60s' },
    'kill-at': { type: 'string', default: '25s' },
    out: { type: 'string', default: 'docs/dashboard.png' },
  });
  // Checked before anything starts.
  const durationS = seconds('--duration', values.duration);
  const killAtS = seconds('--kill-at', values['kill-at']);
  await ensureStack(['temporal', 'kafka', 's3']);
  await installPython(); // matplotlib (PYTHON pin) in the stack's venv; a no-op when installed
  const metricsPort = await freeLoopbackPort();
  const prom = await startPrometheus(metricsPort);
  const events: Array<{ t: number; what: string }> = [];
  const start = Date.now() / 1000;
  try {
    const r = await runScenario({
      name: `dash_${Date.now().toString(36)}`,
      ratePerS: Number(values.rate),
      durationS,
      partitions: 4,
      commitInterval: '2s',
      kills: [{ atS: killAtS, restartAfterS: 5 }],
      workerEnv: { FLOE_METRICS_PORT: String(metricsPort) },
      log: (m) => {
        console.log(m);
        if (/killed with/.test(m)) events.push({ t: Date.now() / 1000, what: 'SIGKILL' });
        if (/restarted/.test(m)) events.push({ t: Date.now() / 1000, what: 'restart' });
      },
    });
    if (!r.ok) throw new Error(`exactly-once check failed: ${r.problems.join('; ')}`);
    await sleep(2000);
    const end = Date.now() / 1000;
    const dashboard = JSON.parse(readFileSync(join(ROOT, 'docker/grafana/floe-dashboard.json'), 'utf8')) as { panels: Panel[] };
    const panels = [];
    for (const title of PANELS) {
      const p = dashboard.panels.find((x) => x.title === title);
      if (!p) throw new Error(`dashboard has no panel "${title}"`);
      const series = [];
      for (const t of p.targets ?? []) {
        let expr = t.expr.replaceAll('$table', r.table);
        for (const [from, to] of Object.entries(WINDOWS)) expr = expr.replaceAll(from, to);
        for (const s of await rangeQuery(prom.url, expr, start, end)) {
          const legend = t.legendFormat.replace(/\{\{(\w+)\}\}/g, (_, k: string) => (k === 'table' ? '' : (s.metric[k] ?? ''))).trim();
          series.push({ legend, points: s.values.map(([ts, v]) => [ts - start, Number(v)]) });
        }
      }
      panels.push({ title, unit: p.fieldConfig?.defaults?.unit ?? '', series });
    }
    // Where the worker's target was down (starting, SIGKILLed, restarting): no scrape, no data.
    const up = (await rangeQuery(prom.url, 'up{job="floe-worker"}', start, end))[0]?.values ?? [];
    const down: Array<[number, number]> = [];
    let last = 0;
    for (const [ts, v] of up) {
      const t = ts - start;
      if (v === '0' || t - last > 2.5) down.push([last, t]);
      last = t;
    }
    const windows = Object.entries(WINDOWS)
      .map(([a, b]) => `${a.slice(1, -1)}->${b.slice(1, -1)}`)
      .join(', ');
    const summary = `${r.table}: ${r.produced} messages at ${values.rate}/s, worker SIGKILLed at ${killAtS} s and restarted 5 s later; ${r.rows} rows, ${r.distinctEventIds} distinct (exactly once), scraped every 1 s by Prometheus ${DEBIAN.prometheus.split('+')[0]}; rate windows scaled to the short run (${windows})`;
    const data = join(prom.dir, 'panels.json');
    writeFileSync(data, JSON.stringify({ summary, events: events.map((e) => ({ ...e, t: e.t - start })), down, panels }));
    await runCommand(venvBin('python'), [join(ROOT, 'bench/dashboard-plot.py'), data, resolve(ROOT, values.out!)], { timeoutMs: 120_000 });
    console.log(`wrote ${values.out} (data: ${data})`);
  } finally {
    prom.proc.kill('SIGTERM');
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
