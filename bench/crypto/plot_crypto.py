#!/usr/bin/python3
"""Plot crypto_bench CSV: per app, throughput (Gbit/s) and batch latency (median, p99 dashed) against
batch size, one line per implementation, one column per packet size.
Usage: plot_crypto.py [out/crypto/crypto_bench.csv] [out_dir]"""
import csv
import os
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

path = sys.argv[1] if len(sys.argv) > 1 else "out/crypto/crypto_bench.csv"
out_dir = sys.argv[2] if len(sys.argv) > 2 else os.path.dirname(path) or "."
rows = list(csv.DictReader(open(path)))
sizes = ["64", "1514", "mix"]
for app in sorted({r["app"] for r in rows}):
    fig, axes = plt.subplots(2, 3, figsize=(15, 8), sharex=True)
    impls = []
    for r in rows:
        if r["app"] == app and r["impl"] not in impls:
            impls.append(r["impl"])
    for col, size in enumerate(sizes):
        for impl in impls:
            sel = sorted((r for r in rows if r["app"] == app and r["impl"] == impl and r["packet_size"] == size),
                         key=lambda r: int(r["batch"]))
            if not sel:
                continue
            x = [int(r["batch"]) for r in sel]
            style = "k--" if impl == "openssl" else "-o"
            line, = axes[0][col].plot(x, [float(r["gbps"]) for r in sel], style, label=impl, markersize=3)
            axes[1][col].plot(x, [float(r["median_ns"]) / 1e3 for r in sel], "-o", color=line.get_color(),
                              markersize=3, label=f"{impl} median")
            axes[1][col].plot(x, [float(r["p99_ns"]) / 1e3 for r in sel], ":", color=line.get_color())
        axes[0][col].set_title(f"{app.upper()} {size} B" if size != "mix" else f"{app.upper()} 25% 64 B / 75% 1514 B")
        axes[0][col].set_ylabel("Gbit/s (1 core)")
        axes[1][col].set_ylabel("batch latency, us (median; p99 dotted)")
        axes[1][col].set_xlabel("batch size (packets)")
        for ax in (axes[0][col], axes[1][col]):
            ax.set_xscale("log", base=2)
            ax.grid(True, alpha=0.3)
        axes[1][col].set_yscale("log")
    axes[0][0].legend()
    fig.tight_layout()
    out = os.path.join(out_dir, f"crypto_{app}.png")
    fig.savefig(out, dpi=90)
    print("wrote", out)
