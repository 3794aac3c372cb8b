#!/usr/bin/python3
"""Plots bench/dpi/dpi_bench CSV: throughput (Gbit/s of frame bytes) and batch latency against batch
size, one panel per (pattern set, workload), one line per engine (native-ac, hyperscan, cl<N>).

usage: plot_dpi.py [csv=out/dpi/dpi_bench.csv] [png prefix=out/dpi/dpi]
"""
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

src = sys.argv[1] if len(sys.argv) > 1 else "out/dpi/dpi_bench.csv"
prefix = sys.argv[2] if len(sys.argv) > 2 else "out/dpi/dpi"
rows = list(csv.DictReader(open(src)))
sets = sorted({r["set"] for r in rows})
workloads = [w for w in ["capture", "64", "1514", "mix"] if any(r["workload"] == w for r in rows)]

for metric, ylabel, fname, log in [
    ("cpu_gbps_median", "Gbit/s (frame bytes / thread CPU time)", "throughput_cpu", False),
    ("gbps_median", "Gbit/s (frame bytes / wall time)", "throughput", False),
    ("batch_us_median", "batch latency, median (us)", "latency", True),
]:
    fig, axes = plt.subplots(len(sets), len(workloads), figsize=(4 * len(workloads), 3.3 * len(sets)), squeeze=False)
    for i, s in enumerate(sets):
        for j, w in enumerate(workloads):
            ax = axes[i][j]
            lines = defaultdict(list)
            for r in rows:
                if r["set"] == s and r["workload"] == w:
                    lines[r["engine"]].append((int(r["batch"]), float(r[metric])))
            for eng, pts in sorted(lines.items()):
                pts.sort()
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=eng)
            ax.set_xscale("log", base=2)
            if log:
                ax.set_yscale("log")
            ax.set_title(f"{s} / {w}")
            ax.set_xlabel("batch size (packets)")
            ax.set_ylabel(ylabel)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(f"{prefix}_{fname}.png", dpi=110)
    print(f"{prefix}_{fname}.png")
