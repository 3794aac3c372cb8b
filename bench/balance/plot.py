#!/usr/bin/python3
"""Plots for the balance simulator: reads the CSVs balance_sim wrote, writes PNGs beside them.
usage: plot.py [DIR]   (default out/balance)"""
import csv
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

d = sys.argv[1] if len(sys.argv) > 1 else "out/balance"


def rows(name):
    path = os.path.join(d, name)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def save(fig, name):
    fig.tight_layout()
    fig.savefig(os.path.join(d, name), dpi=110)
    plt.close(fig)
    print("wrote", os.path.join(d, name))


# LAPS Fig. 12: throughput vs offered load
r = rows("laps_sweep.csv")
if r:
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    for pol in ["fcfs", "afs", "laps", "ideal"]:
        pts = [(float(x["offered_mpps"]), float(x["throughput_mpps"]), float(x["cold_frac"])) for x in r if x["policy"] == pol]
        ax[0].plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=pol)
        ax[1].plot([p[0] for p in pts], [p[2] for p in pts], marker="o", label=pol)
    ax[0].set_xlabel("offered (Mpps, 4 services equal)")
    ax[0].set_ylabel("throughput (Mpps)")
    ax[0].set_title("LAPS set-up: throughput (cf. Fig. 12)")
    ax[1].set_xlabel("offered (Mpps)")
    ax[1].set_ylabel("cold-cache fraction")
    ax[0].legend()
    save(fig, "laps_sweep.png")

# LAPS Fig. 11: drops, cold, out-of-order per scenario
r = rows("laps_scenarios.csv")
if r:
    fig, ax = plt.subplots(1, 3, figsize=(13, 4))
    labels = sorted({(x["set"], x["no_reorder"]) for x in r})
    pols = ["fcfs", "afs", "laps"]
    for k, (col, title) in enumerate([("drop_frac", "dropped fraction"), ("cold_frac", "cold-cache fraction"),
                                      ("ooo_frac", "out-of-order fraction")]):
        for i, pol in enumerate(pols):
            vals = []
            for (st, nr) in labels:
                v = [float(x[col]) for x in r if x["policy"] == pol and x["set"] == st and x["no_reorder"] == nr]
                vals.append(v[0] if v else 0)
            ax[k].bar([j + i * 0.27 for j in range(len(labels))], vals, width=0.27, label=pol)
        ax[k].set_xticks([j + 0.27 for j in range(len(labels))])
        ax[k].set_xticklabels([f"set{st}{' +rule' if nr == '1' else ''}" for st, nr in labels], fontsize=8)
        ax[k].set_title(title)
    ax[0].legend()
    save(fig, "laps_scenarios.png")

# AFD Fig. 13(a)
r = rows("afd.csv")
if r:
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    for tr in sorted({x["trace"] for x in r}):
        pts = [(int(x["annex_entries"]), float(x["false_positive_ratio"])) for x in r if x["trace"] == tr and x["sample_every"] == "1"]
        ax[0].plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=tr)
        pts = [(int(x["sample_every"]), float(x["false_positive_ratio"])) for x in r if x["trace"] == tr and x["annex_entries"] == "512"]
        ax[1].plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=tr)
    ax[0].set_xscale("log", base=2)
    ax[0].set_xlabel("annex entries (AFC 16)")
    ax[0].set_ylabel("false-positive ratio vs offline top-16")
    ax[1].set_xscale("log")
    ax[1].set_xlabel("sample 1 in k packets (annex 512)")
    ax[0].legend(fontsize=8)
    save(fig, "afd.png")

# LAP Figs. 4-6
r = rows("lap_buffer.csv")
if r:
    fig, ax = plt.subplots(1, 3, figsize=(14, 4))
    for pol in ["fcfs", "la", "lap", "topt"]:
        pts = [(int(x["buffer"]), float(x["throughput"]), float(x["cold_frac"])) for x in r
               if x["policy"] == pol and x["apps"] == "30" and x["processors"] == "16"]
        ax[0].plot([p[0] for p in pts], [p[1] * 1e6 / 1e6 for p in pts], marker="o", label=pol)
        ax[1].plot([p[0] for p in pts], [p[2] for p in pts], marker="o", label=pol)
        if pol != "topt":
            pts = [(int(x["buffer"]), float(x["delay_variation"])) for x in r
                   if x["policy"] == pol and x["apps"] == "3" and x["processors"] == "64"]
            ax[2].plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=pol)
    for a in ax:
        a.set_xscale("log", base=2)
        a.set_xlabel("selection buffer (packets)")
    ax[0].set_ylabel("throughput (bytes/us)")
    ax[0].set_title("30 apps, 16 procs (cf. Fig. 4)")
    ax[1].set_ylabel("cold-cache fraction")
    ax[1].set_title("30 apps, 16 procs (cf. Fig. 5)")
    ax[2].set_ylabel("delay variation (packets, RMS)")
    ax[2].set_title("3 apps, 64 procs (cf. Fig. 6)")
    ax[0].legend()
    save(fig, "lap_buffer.png")

r = rows("lap_dynamics.csv")
if r:
    fig, ax = plt.subplots(1, 3, figsize=(14, 3.5), sharey=True)
    for k, pol in enumerate(["fcfs", "la", "lap"]):
        pts = [x for x in r if x["policy"] == pol]
        for a in range(3):
            ax[k].plot([int(x["packet"]) for x in pts], [float(x[f"warm_app{a}"]) for x in pts], label=f"app {a}")
        ax[k].axvline(10000, color="grey", ls=":")
        ax[k].set_title(f"{pol}: processors per app (cf. Fig. 3)")
        ax[k].set_xlabel("packet")
    ax[0].set_ylabel("processors warm")
    ax[0].legend()
    save(fig, "lap_dynamics.png")

# Subflow Figs. 3-5
r = rows("subflow.csv")
if r:
    fig, ax = plt.subplots(1, 3, figsize=(14, 4), sharey=True)
    for k, tr in enumerate(["skewed", "one-core", "two-core"]):
        for pol in ["rr", "crc32", "hrw", "subflow"]:
            for nr in ["0", "1"]:
                pts = [(float(x["offered_mpps"]), float(x["loss"])) for x in r if x["traffic"] == tr and x["policy"] == pol and x["no_reorder"] == nr]
                if pts:
                    ax[k].plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                               ls="--" if nr == "1" else "-", label=pol + (" +rule" if nr == "1" else ""))
        ax[k].set_title(f"{tr} traffic, 4 workers")
        ax[k].set_xlabel("offered (Mpps, bursts of 32)")
    ax[0].set_ylabel("loss rate")
    ax[0].legend(fontsize=8)
    save(fig, "subflow.png")

r = rows("cost.csv")
if r:
    fig, ax = plt.subplots(figsize=(9, 4))
    pols = []
    for x in r:
        if x["policy"] not in pols:
            pols.append(x["policy"])
    for i, (lanes, fc) in enumerate([("4", "1"), ("16", "1"), ("4", "0"), ("16", "0")]):
        vals = [next((float(x["ns_per_packet_median"]) for x in r if x["policy"] == p and x["lanes"] == lanes and x["flow_cache"] == fc), 0) for p in pols]
        ax.bar([j + i * 0.2 for j in range(len(pols))], vals, width=0.2, label=f"{lanes} lanes{'' if fc == '1' else ', no flow cache'}")
    ax.axhline(15, color="red", ls=":", label="goal 15 ns")
    ax.set_xticks([j + 0.3 for j in range(len(pols))])
    ax.set_xticklabels(pols)
    ax.set_ylabel("ns per packet (median of 7)")
    ax.set_title("scheduling cost per packet, bursts of 32")
    ax.legend(fontsize=8)
    save(fig, "cost.png")
