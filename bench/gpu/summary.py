#!/usr/bin/env python3
"""The figures issue 14 asks of a GPU run, from what bench/gpu/run.sh wrote (in a bundle: bench/gpu-summary.py).

Usage: summary.py RUN_DIR APP...   (RUN_DIR: docs/gpu/<gpu-name>/; markdown to stdout)
- selftest-batch-B.json: Mpps, Gbit/s, copy share and the link's measured rate per engine, app and batch size;
- selftest-serial-B.json (one batch in flight) beside them: what two batches in flight (copies of one overlapping
  the kernel of the other) buy;
- report/APP/points.csv: the best Gbit/s per lane set and batch, the smallest batch at which a set with an OpenCL
  device beats the native lane alone, and power (with its source) at each point.
"""
import csv
import glob
import json
import os
import re
import sys


def load(pattern):
    """(app, engine, batch) -> the row of the run with the median Mpps, its "runs" the Mpps of every run
    (selftest-batch-B.json and its repeats selftest-batch-B-rN.json, each a median pass of its own)."""
    runs = {}
    for f in sorted(glob.glob(pattern)):
        for r in json.load(open(f)).get("results", []):
            runs.setdefault((r["app"], r["engine"], r["batch"]), []).append(r)
    rows = {}
    for k, rs in runs.items():
        timed = sorted((r for r in rs if "mpps" in r), key=lambda r: r["mpps"])
        r = dict(timed[(len(timed) - 1) // 2] if timed else rs[0])
        r["runs"] = [x["mpps"] for x in timed]
        r["result"] = "FAIL" if any(x["result"] == "FAIL" for x in rs) else r["result"]
        rows[k] = r
    return rows


def mpps(r):
    """Median Mpps, and the range over the runs where there were several."""
    runs = r.get("runs", [])
    if len(runs) > 1:
        return f"{r['mpps']:.3f} ({min(runs):.2f}–{max(runs):.2f}, {len(runs)} runs)"
    return f"{r.get('mpps', 0):.3f}"


def selftest(run):
    par = load(os.path.join(run, "selftest-batch-*.json"))
    ser = load(os.path.join(run, "selftest-serial-*.json"))
    if not par:
        return
    print("## selftest: rate, copies and the link by batch size\n")
    print("Median pass over the sample (65,536 packets of real captures, 4,096 at most from each); `copy`: time to")
    print("copy one batch's bytes in and out over the time per batch, which is also the bytes moved per second over")
    print("the link's measured rate (`link`: pinned host memory to the device and back, one batch's bytes).")
    print("Where a batch size was run several times (interleaved with the others), Mpps is the median run's, with")
    print("the range; the other columns are that run's. A batch above the sample's size runs at the sample's size.\n")
    print("| app | engine | batch | result | Mpps | Gbit/s | spread | copy | link Gbit/s | power |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for k in sorted(par, key=lambda k: (k[0], k[1], k[2])):
        r = par[k]
        copy = f"{100 * r['copy_share']:.0f}%" if "copy_share" in r else r.get("memory", "")
        link = f"{r['link_gbps']:.1f}" if "link_gbps" in r else ""
        print(f"| {r['app']} | {r['engine']} | {r['batch']} | {r['result']} | {mpps(r)} | "
              f"{r.get('gbps', 0):.2f} | {r.get('spread', 0):.2f} | {copy} | {link} | {r.get('power_source', '')} |")
    print()
    both = [k for k in sorted(ser) if k in par and "mpps" in ser[k] and "mpps" in par[k] and ser[k]["result"] == "PASS"]
    if both:
        print("## Overlap: two batches in flight against one\n")
        print("With one batch in flight each batch's copies, kernel and the host's work run one after the other;")
        print("with two, one batch's copies run while the other's kernel does. The gain is the overlap's.\n")
        print("| app | engine | batch | Mpps, 1 in flight | Mpps, 2 in flight | gain |\n|---|---|---|---|---|---|")
        for k in both:
            s, p = ser[k]["mpps"], par[k]["mpps"]
            print(f"| {k[0]} | {k[1]} | {k[2]} | {mpps(ser[k])} | {mpps(par[k])} | {p / s:.2f}× |")
        print()
    # Where the device passes the native lane, per app (selftest rates: kernels and copies, no pipeline).
    print("## Where the device passes the native lane (selftest)\n")
    for app in sorted({k[0] for k in par}):
        nat = [par[k] for k in par if k[0] == app and k[1] == "native" and "mpps" in par[k]]
        if not nat:
            continue
        best_nat = max(r["mpps"] for r in nat)
        for eng in sorted({k[1] for k in par if k[0] == app and k[1] != "native"}):
            pts = sorted((k[2], par[k]) for k in par if k[0] == app and k[1] == eng and "mpps" in par[k])
            over = [b for b, r in pts if r["mpps"] > best_nat]
            best = max(pts, key=lambda x: x[1]["mpps"]) if pts else None
            if best:
                print(f"- {app}, {eng}: best {best[1]['mpps']:.2f} Mpps at batch {best[0]} = "
                      f"{best[1]['mpps'] / best_nat:.2f}× the native lane's best ({best_nat:.2f} Mpps); " +
                      (f"passes it from batch {over[0]}" if over else "does not pass it"))
    print()


def report(run, apps):
    root = os.path.join(run, "report")
    if not os.path.isdir(root):
        return
    print("## hpr profile (through the pipeline, generator input): best Gbit/s per lane set and batch\n")
    for app in apps:
        p = os.path.join(root, app, "points.csv")
        if not os.path.exists(p):
            print(f"### {app}\n\nno points ({p} missing)\n")
            continue
        rows = list(csv.DictReader(open(p)))
        quanta = os.path.join(root, app, "adaptive.csv")  # the runs name the whole source ("mixed: nvml+model")
        srcs = sorted({q["power_source"] for q in csv.DictReader(open(quanta))}) if os.path.exists(quanta) else []
        print(f"### {app}\n\npower source: {'/'.join(srcs) or 'see points.csv'}\n")
        print("| lanes | split | batch | Gbit/s | power W | mJ/Mbit |\n|---|---|---|---|---|---|")
        for r in sorted(rows, key=lambda r: (r["set"], r["split"], int(r["batch"]))):
            print(f"| {r['set']} | {r['split']} | {r['batch']} | {float(r['gbps']):.2f} ± {float(r['gbps_spread']):.2f} | "
                  f"{float(r['power_w']):.1f} ± {float(r['power_spread_w']):.1f} | {1e3 * float(r['j_per_mbit']):.2f} |")
        # Beaten only beyond both spreads: a lane set whose throughput less its spread is above the native lane's
        # best plus its spread.
        nat = [r for r in rows if re.fullmatch(r"native\d*", r["set"])]
        best = max(nat, key=lambda r: float(r["gbps"]), default=None)
        if best is None:
            print("\nno native lane in the table\n")
            continue
        top = float(best["gbps"]) + float(best["gbps_spread"])
        dev = sorted((int(r["batch"]), r["set"]) for r in rows if not re.fullmatch(r"native\d*", r["set"])
                     and float(r["gbps"]) - float(r["gbps_spread"]) > top)
        print(f"\nnative alone: {float(best['gbps']):.2f} ± {float(best['gbps_spread']):.2f} Gbit/s; " +
              (f"first beaten beyond both spreads at batch {dev[0][0]} by {dev[0][1]}\n" if dev else
               "no set with an OpenCL device beats it beyond both spreads\n"))


def main():
    run, apps = sys.argv[1], sys.argv[2:]
    print("# GPU run summary\n")
    print("From bench/gpu/run.sh's files in this folder; machine.txt names the device, driver and date.\n")
    selftest(run)
    report(run, apps)


if __name__ == "__main__":
    main()
