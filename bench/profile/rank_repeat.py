#!/usr/bin/python3
"""Are `hpr profile` rankings repeatable? (issue 13, "Measurements worth trusting")

Runs `hpr profile` twice with the same arguments (or reads two tables given with --tables), then, for every pair
of points that the FIRST table separates on a metric — medians further apart than their two spreads combined,
the rule ConfigStore uses (docs/scheduler.md) — checks whether the SECOND table ranks the pair the same way.
Points are matched by setup (devices, batch sizes, split) and traffic; pairs missing from either table are left
out. For contrast it also counts every pair with different medians (what a table of single values, which
compares all of them, would claim), and splits the separated pairs into those of one block (the batch sizes of
one device set and split: measured interleaved, round by round) and those of two blocks (measured one after the
other, seconds apart).

Usage:
  bench/profile/rank_repeat.py [--hpr build/cli/hpr] [--out out/rank_repeat] [--busy AT:FOR] -- PROFILE_ARGS...
  bench/profile/rank_repeat.py --tables A.json B.json
Example (the figure in docs/scheduler.md):
  POCL_DEVICES="pthread basic" bench/profile/rank_repeat.py -- --app ipv4 --budget-s 20
Writes OUT/table1.json, OUT/table2.json, OUT/profile{1,2}.log and OUT/pairs.csv (one row per separated pair
and metric); prints the summary. POCL_DEVICES defaults to "pthread basic". Not a test: no thresholds.
"""
import argparse
import csv
import itertools
import json
import os
import subprocess
import sys

METRICS = [  # (name, median field, spread field)
    ("throughput", "throughput_bps", "throughput_spread_bps"),
    ("power", "power_w", "power_spread_w"),
    ("latency", "latency_ns", "latency_spread_ns"),
]


def key(point, default_traffic):
    devs = tuple((d["device"], d["batch"], round(d["split"] * 1e4)) for d in point["devices"])
    return devs, point.get("traffic", default_traffic)


def load(path):
    with open(path) as f:
        t = json.load(f)
    default = t["fingerprint"]["traffic"]
    return {key(p, default): p for p in t["points"]}, t


def describe(k):
    devs, _ = k
    return "dev{%s} b=[%s] s=[%s]" % (",".join(str(d) for d, _, _ in devs), ",".join(str(b) for _, b, _ in devs),
                                     ",".join("%.2f" % (s / 1e4) for _, _, s in devs))


def block(k):
    devs, traffic = k
    return tuple((d, s) for d, _, s in devs), traffic


def compare(first, second):
    """Per metric: {"sep": [pairs, same order], "every", "within", "across"}, and the rows for the CSV."""
    common = [k for k in first if k in second]
    out, rows = {}, []
    for name, med, spr in METRICS:
        n = {"sep": [0, 0], "every": [0, 0], "within": [0, 0], "across": [0, 0]}
        for a, b in itertools.combinations(common, 2):
            d1 = first[a][med] - first[b][med]
            if d1 == 0:
                continue
            d2 = second[a][med] - second[b][med]
            same = (d1 > 0 and d2 > 0) or (d1 < 0 and d2 < 0)
            kinds = ["every"]
            if abs(d1) > first[a].get(spr, 0) + first[b].get(spr, 0):
                kinds += ["sep", "within" if block(a) == block(b) else "across"]
                rows.append([name, describe(a), describe(b), first[a][med], first[a].get(spr, 0), first[b][med],
                             first[b].get(spr, 0), second[a][med], second[b][med], int(same)])
            for kind in kinds:
                n[kind][0] += 1
                n[kind][1] += same
        out[name] = n
    return len(common), out, rows


def samples_summary(table):
    s = sorted(p.get("samples", 1) for p in table["points"])
    return (s[len(s) // 2] if s else 0), (s[-1] if s else 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hpr", default="build/cli/hpr")
    ap.add_argument("--out", default="out/rank_repeat")
    ap.add_argument("--tables", nargs=2, metavar=("FIRST", "SECOND"))
    ap.add_argument("--busy", metavar="AT:FOR",
                    help="a loaded machine: a busy loop (one process, one core's worth) from AT to AT+FOR seconds "
                         "after each profile starts")
    ap.add_argument("profile_args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    args = [x for x in a.profile_args if x != "--"] if a.profile_args else []
    if a.tables:
        paths = a.tables
    else:
        if not args:
            ap.error("give the `hpr profile` arguments after --, or --tables A B")
        os.makedirs(a.out, exist_ok=True)
        env = dict(os.environ)
        env.setdefault("POCL_DEVICES", "pthread basic")
        paths = []
        for run in (1, 2):
            path = os.path.join(a.out, "table%d.json" % run)
            cmd = [a.hpr, "profile", *args, "-q", "-o", path]
            print("run %d: %s" % (run, " ".join(cmd)), flush=True)
            with open(os.path.join(a.out, "profile%d.log" % run), "w") as log:
                busy = None
                if a.busy:
                    at, dur = (float(x) for x in a.busy.split(":"))
                    busy = subprocess.Popen([sys.executable, "-c", "import time\ntime.sleep(%f)\nt = time.time() + %f\n"
                                             "while time.time() < t:\n    pass\n" % (at, dur)])
                r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                if busy is not None:
                    busy.kill()
                    busy.wait()
                log.write(r.stdout)
            sys.stdout.write(r.stdout)
            if r.returncode != 0:
                sys.exit("hpr profile exited %d (log: %s)" % (r.returncode, log.name))
            paths.append(path)
    first, t1 = load(paths[0])
    second, t2 = load(paths[1])
    n, res, rows = compare(first, second)
    for i, t in enumerate((t1, t2), 1):
        med, mx = samples_summary(t)
        print("table %d: %d points (%s), samples per point median %d max %d" %
              (i, len(t["points"]), "complete" if t.get("complete") else "incomplete", med, mx))
    print("points in both tables: %d (%d pairs)" % (n, n * (n - 1) // 2))
    def f(pair):
        total, same = pair
        return ("%d of %d = %.1f %%" % (same, total, 100.0 * same / total)) if total else "none"

    print("Pairs in the same order in table 2, of those table 1 separates by more than their spreads combined")
    print("(all; in one block; across blocks), and of all pairs with different medians:")
    for name, _, _ in METRICS:
        n = res[name]
        print("  %-10s separated: %-22s (block: %s; across: %s)   all: %s" %
              (name, f(n["sep"]), f(n["within"]), f(n["across"]), f(n["every"])))
    out_dir = a.out if not a.tables else os.path.dirname(os.path.abspath(paths[0]))
    csv_path = os.path.join(out_dir, "pairs.csv")
    with open(csv_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["metric", "a", "b", "a_median_1", "a_spread_1", "b_median_1", "b_spread_1", "a_median_2",
                    "b_median_2", "same_order"])
        w.writerows(rows)
    print("pairs: %s" % csv_path)


if __name__ == "__main__":
    main()
