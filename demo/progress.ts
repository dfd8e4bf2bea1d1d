/**
 * The demo's progress while it streams: a sample every ~2 s (produced, committed, lag, commits,
 * whether the worker answered), the kill and the restart as the scenario does them, and the
 * recovery read from the samples: the first commit after the restart, then the moment the lag is
 * back to where it was before the kill. Pure (test/unit/demo-progress.test.ts); the scenario feeds
 * it, the CLI prints its lines and, at the end, the chart.
 */
import { brailleChart, type ChartMarker } from './chart';

export interface ProgressSample {
  /** seconds since streaming began */
  tS: number;
  produced: number;
  /** rows + dead letters committed to the table (the ingest's status) */
  committed: number;
  commits: number;
  /** the worker answered the status query (a killed worker cannot) */
  workerUp: boolean;
}

export type ProgressEvent = { tS: number; kind: 'kill' | 'restart'; pid: number };

export class ProgressTracker {
  readonly samples: ProgressSample[] = [];
  readonly events: ProgressEvent[] = [];
  private killedAt: number | null = null;
  private commitsAtKill = 0;
  private lagBeforeKill = 0;
  private recovered = false;

  /** The line for a kill or restart event. */
  event(e: ProgressEvent): string {
    this.events.push(e);
    if (e.kind === 'kill') {
      this.killedAt = e.tS;
      this.recovered = false;
      const last = this.samples.at(-1);
      this.commitsAtKill = last?.commits ?? 0;
      // The lag of a live stream before the kill: what "caught up" means afterwards (none when
      // nothing had been committed yet: then only the first commit after the restart is reported).
      this.lagBeforeKill = this.commitsAtKill > 0 ? Math.max(0, ...this.samples.slice(-5).map(lagOf)) : -1;
      return `t=${e.tS.toFixed(1)}s  worker ${e.pid} KILLED (SIGKILL); no commits until a worker is back`;
    }
    return `t=${e.tS.toFixed(1)}s  worker ${e.pid} started again; it resumes from the table's cursor`;
  }

  /** The progress line for a sample, then any recovery it shows. */
  sample(s: ProgressSample): string[] {
    this.samples.push(s);
    const lines = [
      `t=${s.tS.toFixed(0).padStart(3)}s  produced ${String(s.produced).padStart(6)}  committed ${String(s.committed).padStart(6)}  lag ${String(lagOf(s)).padStart(5)}  commits ${String(s.commits).padStart(4)}${s.workerUp ? '' : '  (worker down)'}`,
    ];
    const caughtUp = this.lagBeforeKill >= 0 && lagOf(s) <= Math.max(this.lagBeforeKill, 1);
    if (this.killedAt !== null && s.commits > this.commitsAtKill && this.events.at(-1)?.kind === 'restart' && !this.recovered) {
      this.recovered = true;
      const after = (s.tS - this.killedAt).toFixed(0);
      // One commit may take the whole backlog: then it recovered and caught up at once.
      lines.push(
        caughtUp
          ? `t=${s.tS.toFixed(1)}s  RECOVERED and CAUGHT UP: first commit ${after} s after the kill took the backlog (lag ${lagOf(s)})`
          : `t=${s.tS.toFixed(1)}s  RECOVERED: first commit ${after} s after the kill; catching up on a lag of ${lagOf(s)}`,
      );
      if (caughtUp) this.killedAt = null;
    } else if (this.recovered && this.killedAt !== null && caughtUp) {
      lines.push(`t=${s.tS.toFixed(1)}s  CAUGHT UP: lag ${lagOf(s)} again, ${(s.tS - this.killedAt).toFixed(0)} s after the kill`);
      this.killedAt = null;
    }
    return lines;
  }

  /** Lag and committed rows over time, the kill (✕) and the restart (↑) marked under each. */
  chart(width = 60): string[] {
    const endS = Math.max(1, this.samples.at(-1)?.tS ?? 1);
    const markers: ChartMarker[] = this.events.map((e) => ({ atS: e.tS, char: e.kind === 'kill' ? '✕' : '↑' }));
    return [
      ...brailleChart(
        'lag (messages produced, not yet committed)',
        this.samples.map((s) => [s.tS, lagOf(s)]),
        { width, endS, markers },
      ),
      '',
      ...brailleChart(
        'committed rows',
        this.samples.map((s) => [s.tS, s.committed]),
        { width, endS, markers },
      ),
      `${' '.repeat(9)}✕ worker killed   ↑ worker restarted`,
    ];
  }
}

const lagOf = (s: ProgressSample): number => Math.max(0, s.produced - s.committed);
