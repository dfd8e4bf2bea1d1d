"""Draws docs/dashboard.png from the panels bench/dashboard-plot.ts queried from Prometheus.

Usage: python bench/dashboard-plot.py panels.json out.png
panels.json: {summary, events: [{t, what}], panels: [{title, unit, series: [{legend, points: [[t, v]]}]}]}
"""
import json
import math
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

BG, PANEL, GRID, TEXT = "#111217", "#181b1f", "#2c3235", "#d8d9da"
COLORS = ["#73bf69", "#f2cc0c", "#5794f2", "#ff9830", "#b877d9", "#f2495c", "#8ab8ff", "#96d98d"]


def fmt(unit):
    def f(v, _):
        if unit == "s":
            return f"{v * 1000:.0f} ms" if 0 < abs(v) < 1 else f"{v:.3g} s"
        if unit == "bytes":
            for u in ["B", "KiB", "MiB", "GiB"]:
                if abs(v) < 1024:
                    return f"{v:.3g} {u}"
                v /= 1024
        if unit == "Bps":
            for u in ["B/s", "KiB/s", "MiB/s", "GiB/s"]:
                if abs(v) < 1024:
                    return f"{v:.3g} {u}"
                v /= 1024
        if abs(v) >= 1e6:
            return f"{v / 1e6:.3g}M"
        if abs(v) >= 1e3:
            return f"{v / 1e3:.3g}k"
        return f"{v:.3g}"

    return FuncFormatter(f)


def main(src, out):
    data = json.load(open(src))
    panels = data["panels"]
    cols = 3
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(17, 3.9 * rows + 1.0), facecolor=BG)
    fig.suptitle("floe: Kafka -> Iceberg   (docker/grafana/floe-dashboard.json panels, from a Prometheus scrape)",
                 color=TEXT, fontsize=15, x=0.01, ha="left", y=0.995)
    fig.text(0.01, 0.952, textwrap.fill(data["summary"], 190), color="#9fa7b3", fontsize=10, ha="left", va="top")
    for ax, p in zip(axes.flat, panels):
        ax.set_facecolor(PANEL)
        for s in ax.spines.values():
            s.set_color(GRID)
        ax.tick_params(colors=TEXT, labelsize=8)
        ax.grid(color=GRID, linewidth=0.6)
        ax.set_title(p["title"], color=TEXT, fontsize=11, loc="left")
        ax.yaxis.set_major_formatter(fmt(p["unit"]))
        ax.set_xlabel("seconds since start", color="#9fa7b3", fontsize=8)
        for a, b in data.get("down", []):
            ax.axvspan(a, b, color="#f2495c", alpha=0.10, linewidth=0)
        for e in data["events"]:
            c = "#f2495c" if e["what"] == "SIGKILL" else "#73bf69"
            ax.axvline(e["t"], color=c, linestyle="--", linewidth=1.2)
            ax.text(e["t"], 1.0, f" {e['what']}", color=c, fontsize=7, va="top", transform=ax.get_xaxis_transform())
        drawn = 0
        lines = []
        twin = None
        for i, s in enumerate(p["series"]):
            pts = [(t, v) for t, v in s["points"] if v is not None and not math.isnan(v)]
            if not pts:
                continue
            # Break the line where scrapes are missing (the worker was down) instead of bridging it.
            xs, ys = [pts[0][0]], [pts[0][1]]
            for (t0, _), (t, v) in zip(pts, pts[1:]):
                if t - t0 > 2.5:
                    xs.append(float("nan"))
                    ys.append(float("nan"))
                xs.append(t)
                ys.append(v)
            target = ax
            if s["legend"].endswith("bytes/commit"):
                twin = twin or ax.twinx()
                twin.tick_params(colors=TEXT, labelsize=8)
                twin.yaxis.set_major_formatter(fmt("bytes"))
                target = twin
            color = COLORS[i % len(COLORS)]
            lines += target.plot(xs, ys, color=color, linewidth=1.6, linestyle="--" if i % 2 else "-",
                                 label=s["legend"] or p["title"])
            drawn += 1
        if twin:
            twin.set_ylim(bottom=0)
        if drawn:
            ax.set_ylim(bottom=0)
            ax.legend(handles=lines, fontsize=7, facecolor=PANEL, edgecolor=GRID, labelcolor=TEXT, loc="upper left")
        else:
            ax.text(0.5, 0.5, "no data (none happened)", color="#9fa7b3", ha="center", va="center", transform=ax.transAxes)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    fig.tight_layout(rect=(0, 0, 1, 0.925))
    fig.savefig(out, dpi=100, facecolor=BG)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
