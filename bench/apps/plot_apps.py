#!/usr/bin/python3
"""Plots bench/apps/app_bench CSVs: per app one PNG, throughput (Gbit/s, top) and batch latency (median
solid, p99 dotted, bottom) against batch size, one column per frame size, one line per engine (native
lane, each OpenCL device, the peer).

usage: plot_apps.py [csv dir=out/apps] [png dir=same]
"""
import csv
import glob
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

src = sys.argv[1] if len(sys.argv) > 1 else "out/apps"
dst = sys.argv[2] if len(sys.argv) > 2 else src
titles = {"64": "64 B frames", "1514": "1,514 B frames", "mix": "25% 64 B / 75% 1,514 B"}
for path in sorted(glob.glob(os.path.join(src, "*.csv"))):
    rows = list(csv.DictReader(open(path)))
    if not rows or "engine" not in rows[0]:
        continue
    app = rows[0]["app"]
    sizes = [s for s in ["64", "1514", "mix"] if any(r["size"] == s for r in rows)]
    engines = list(dict.fromkeys(r["engine"] for r in rows))
    labels = {r["engine"]: r["engine"] if r["engine"] in ("native",) or not r["engine"].startswith("cl")
              else f'{r["engine"]} ({r["device"].split("-")[0]})' for r in rows}
    fig, axes = plt.subplots(2, len(sizes), figsize=(5 * len(sizes), 7.5), squeeze=False, sharex=True)
    for col, size in enumerate(sizes):
        for eng in engines:
            sel = sorted((r for r in rows if r["engine"] == eng and r["size"] == size), key=lambda r: int(r["batch"]))
            if not sel:
                continue
            x = [int(r["batch"]) for r in sel]
            peer = not (eng == "native" or eng.startswith("cl"))
            style = dict(linestyle="--", marker="s", color="k") if peer else dict(linestyle="-", marker="o")
            line, = axes[0][col].plot(x, [float(r["gbps"]) for r in sel], label=labels[eng], markersize=3, **style)
            style["color"] = line.get_color()
            axes[1][col].plot(x, [float(r["lat_median_us"]) for r in sel], markersize=3, **style)
            axes[1][col].plot(x, [float(r["lat_p99_us"]) for r in sel], ":", color=line.get_color())
        axes[0][col].set_title(f"{app} — {titles[size]}")
        axes[0][col].set_ylabel("Gbit/s of frames (wall clock)")
        axes[0][col].set_ylim(bottom=0)
        axes[1][col].set_ylabel("batch latency, µs (median; p99 dotted)")
        axes[1][col].set_xlabel("batch size (packets)")
        axes[1][col].set_yscale("log")
        for ax in (axes[0][col], axes[1][col]):
            ax.set_xscale("log", base=2)
            ax.grid(True, alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    out = os.path.join(dst, f"{app}.png")
    fig.savefig(out, dpi=80)
    print("wrote", out)
