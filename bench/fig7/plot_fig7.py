#!/usr/bin/python3
"""Plot the Fig. 7 replay from fig7_timeline.csv (bench/fig7/fig7_sim): per app, offered/achieved rate with the
chosen devices, power (ours vs all three devices, source "model") and latency. Usage:
    bench/fig7/plot_fig7.py [out/fig7] [output.png]"""
import csv
import sys
from collections import defaultdict

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

src = sys.argv[1] if len(sys.argv) > 1 else "out/fig7"
png = sys.argv[2] if len(sys.argv) > 2 else f"{src}/fig7.png"
rows = defaultdict(list)
with open(f"{src}/fig7_timeline.csv") as f:
    for r in csv.DictReader(f):
        rows[r["app"]].append(r)
summary = {}
with open(f"{src}/fig7_summary.csv") as f:
    for r in csv.DictReader(f):
        summary[r["app"]] = r

colors = {"CPU": "tab:blue", "iGPU": "tab:green", "GTX": "tab:red", "CPU+iGPU": "tab:cyan",
          "CPU+GTX": "tab:purple", "iGPU+GTX": "tab:orange", "CPU+iGPU+GTX": "black"}
apps = [a for a in ("ipv4", "md5", "dpi", "aes") if a in rows]
fig, axes = plt.subplots(3, len(apps), figsize=(4.6 * len(apps), 9), sharex="col")
for j, app in enumerate(apps):
    rs = rows[app]
    t = [float(r["t_s"]) for r in rs]
    ax = axes[0][j]
    ax.plot(t, [float(r["offered_gbps"]) for r in rs], "k--", lw=1, label="offered")
    ax.plot(t, [float(r["achieved_gbps"]) for r in rs], "tab:blue", lw=1.2, label="achieved")
    # chosen devices as a coloured strip at the top
    for i in range(len(rs) - 1):
        ax.axvspan(t[i], t[i + 1], ymin=0.94, ymax=1.0, color=colors.get(rs[i]["devices"], "grey"), lw=0)
    dpi_hi = [float(r["match_rate"]) > 0.5 for r in rs]
    for i in range(len(rs) - 1):
        if dpi_hi[i]:
            ax.axvspan(t[i], t[i + 1], color="gold", alpha=0.15, lw=0)
    ax.set_ylim(0, 47)
    ax.set_title(f"{app}: energy saving {float(summary[app]['saving_ratio']):.2f}x"
                 + (f" (paper {summary[app]['paper_ratio']}x)" if summary[app]["paper_ratio"] else ""))
    if j == 0:
        ax.set_ylabel("Gbit/s")
    ax.legend(loc="center left", fontsize=7)
    ax = axes[1][j]
    ax.plot(t, [float(r["power_w"]) for r in rs], "tab:green", lw=1.2, label="adaptive (model)")
    ax.plot(t, [float(r["all_three_power_w"]) for r in rs], "k--", lw=1, label="all three devices (model)")
    if j == 0:
        ax.set_ylabel("power, W (source: model)")
    ax.legend(loc="upper left", fontsize=7)
    ax = axes[2][j]
    ax.semilogy(t, [max(float(r["latency_us"]), 1) for r in rs], "tab:purple", lw=1)
    ax.set_xlabel("time, s")
    if j == 0:
        ax.set_ylabel("latency, µs")
handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in colors.values()]
fig.legend(handles, list(colors.keys()) + [], loc="lower center", ncol=7, fontsize=8, title="devices (top strip)")
fig.suptitle("Fig. 7 replay on model devices (i7-3770 / HD Graphics 4000 / GTX 480 calibrated from the paper), "
             "energy-critical policy; gold = DPI match-heavy traffic", fontsize=10)
fig.tight_layout(rect=(0, 0.05, 1, 0.96))
fig.savefig(png, dpi=90)
print(png)
