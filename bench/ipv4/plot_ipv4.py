#!/usr/bin/python3
"""Plots the ipv4 benchmark CSVs (bench/ipv4/ipv4_bench): lpm.png and forward.png beside them.

usage: bench/ipv4/plot_ipv4.py [out/ipv4]
"""
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

d = sys.argv[1] if len(sys.argv) > 1 else "out/ipv4"

rows = list(csv.DictReader(open(f"{d}/lpm.csv")))
sets = sorted({r["addresses"] for r in rows}, reverse=True)
impls = list(dict.fromkeys(r["impl"] for r in rows))
fig, axes = plt.subplots(1, len(sets), figsize=(5 * len(sets), 4))
if len(sets) == 1:
    axes = [axes]
for ax, s in zip(axes, sets):
    rs = [r for r in rows if r["addresses"] == s]
    names = [r["impl"] for r in rs]
    med = [float(r["median_mlookups"]) for r in rs]
    lo = [float(r["median_mlookups"]) - float(r["p1"]) for r in rs]
    hi = [float(r["p99"]) - float(r["median_mlookups"]) for r in rs]
    colors = ["tab:gray" if n.startswith("rte_") else "tab:blue" for n in names]
    ax.bar(range(len(rs)), med, yerr=[lo, hi], color=colors, capsize=3)
    for i, r in enumerate(rs):
        ax.text(i, med[i], f"x{float(r['ratio_vs_rte_lpm_bulk']):.2f}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(rs)), names, rotation=25, ha="right", fontsize=8)
    ax.set_ylabel("Mlookups/s (CPU time, median, p1-p99)")
    ax.set_title(f"LPM, 512k RouteViews table, {s} addresses")
fig.tight_layout()
fig.savefig(f"{d}/lpm.png", dpi=120)

rows = list(csv.DictReader(open(f"{d}/forward.csv")))
by = defaultdict(list)
for r in rows:
    by[r["path"]].append((int(r["batch"]), float(r["median_mpps"]), float(r["p1"]), float(r["p99"])))
fig, ax = plt.subplots(figsize=(6, 4))
for path, pts in by.items():
    pts.sort()
    x = [p[0] for p in pts]
    ax.errorbar(x, [p[1] for p in pts], yerr=[[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]],
                marker="o", capsize=3, label=path)
ax.set_xscale("log", base=2)
ax.set_xlabel("batch size (packets)")
ax.set_ylabel("Mpps per core (CPU time)")
ax.set_title("IPv4 forwarding, native path, 64-byte frames")
ax.set_ylim(bottom=0)
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(f"{d}/forward.png", dpi=120)
print(f"wrote {d}/lpm.png {d}/forward.png")
