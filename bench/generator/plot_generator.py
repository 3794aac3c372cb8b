#!/usr/bin/python3
"""Plot generator throughput from generator_bench's CSV: median Mpps per scenario (p10-p90 bars),
generator beside the replay peer, wall clock and per CPU-second.

usage: bench/generator/plot_generator.py [out/generator]   -> out/generator/generator_mpps.png
"""
import csv
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

out = sys.argv[1] if len(sys.argv) > 1 else "out/generator"
runs = defaultdict(lambda: defaultdict(list))
order = []
with open(f"{out}/generator_runs.csv") as f:
    for row in csv.DictReader(f):
        if row["scenario"] not in order:
            order.append(row["scenario"])
        runs[row["scenario"]][row["impl"] + "_wall"].append(float(row["mpps"]))
        runs[row["scenario"]][row["impl"] + "_cpu"].append(float(row["cpu_mpps"]))


def q(v, p):
    v = sorted(v)
    k = (len(v) - 1) * p
    lo, hi = int(k), min(int(k) + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


fig, axes = plt.subplots(1, 2, figsize=(13, 4.5), sharey=True)
for ax, clock in zip(axes, ["wall", "cpu"]):
    w = 0.38
    for j, impl in enumerate(["generator", "replay"]):
        med = [statistics.median(runs[s][f"{impl}_{clock}"]) for s in order]
        lo = [m - q(runs[s][f"{impl}_{clock}"], 0.1) for s, m in zip(order, med)]
        hi = [q(runs[s][f"{impl}_{clock}"], 0.9) - m for s, m in zip(order, med)]
        xs = [i + (j - 0.5) * w for i in range(len(order))]
        ax.bar(xs, med, w, yerr=[lo, hi], capsize=3, label=impl)
    ax.set_xticks(range(len(order)))
    ax.set_xticklabels(order, rotation=30, ha="right", fontsize=8)
    ax.set_title(f"Mpps per {'wall-clock second' if clock == 'wall' else 'CPU second'} (one core)")
    ax.grid(axis="y", alpha=0.3)
axes[0].set_ylabel("Mpps (median, p10-p90)")
axes[0].legend()
fig.tight_layout()
fig.savefig(f"{out}/generator_mpps.png", dpi=120)
print(f"{out}/generator_mpps.png")
