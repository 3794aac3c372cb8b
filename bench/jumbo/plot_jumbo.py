#!/usr/bin/python3
"""Plots jumbo_bench.py's CSVs (DIR/reach.csv, DIR/throughput.csv) into DIR/jumbo.png: per capture, the share of
packets that reach an app before and after; per case, the throughput of ordinary frames per binary (median, with
the range of the rounds). Needs Debian's python3-matplotlib (/usr/bin/python3)."""
import csv
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "docs/jumbo"
    reach = list(csv.DictReader(open(os.path.join(d, "reach.csv"))))
    thr = list(csv.DictReader(open(os.path.join(d, "throughput.csv"))))
    binaries = list(dict.fromkeys(r["binary"] for r in reach))
    caps = list(dict.fromkeys(r["capture"] for r in reach))
    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4.5), gridspec_kw={"width_ratios": [3, 1]})
    w = 0.8 / len(binaries)
    for i, label in enumerate(binaries):
        v = [100 * float(next(r for r in reach if r["capture"] == c and r["binary"] == label)["reach_share"])
             for c in caps]
        a.bar([x + i * w for x in range(len(caps))], v, w, label=label)
    a.set_xticks([x + w * (len(binaries) - 1) / 2 for x in range(len(caps))])
    a.set_xticklabels([c.replace(".pcap", "") for c in caps], rotation=45, ha="right", fontsize=8)
    a.set_ylabel("packets that reach an app (%)")
    a.set_ylim(50, 100.5)
    a.set_title("real captures with frames over 2,048 bytes (nDPI)")
    a.legend(loc="lower left")
    cases = list(dict.fromkeys(r["case"] for r in thr))
    for i, label in enumerate(binaries):
        med, lo, hi = [], [], []
        for c in cases:
            v = [float(r["mpps"]) for r in thr if r["case"] == c and r["binary"] == label]
            m = statistics.median(v)
            med.append(m)
            lo.append(m - min(v))
            hi.append(max(v) - m)
        b.bar([x + i * w for x in range(len(cases))], med, w, yerr=[lo, hi], capsize=4, label=label)
    b.set_xticks([x + w * (len(binaries) - 1) / 2 for x in range(len(cases))])
    b.set_xticklabels([f"{c} in" for c in cases])
    b.set_ylabel("Mpps (median, range of rounds)")
    b.set_title("ordinary 64..1518 B frames, ipv4, native", fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(d, "jumbo.png"), dpi=110)


if __name__ == "__main__":
    main()
