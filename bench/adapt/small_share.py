#!/usr/bin/python3
"""What a small share on a device lane costs the whole run (issues 12 and 13).

Static weights, run to completion (the default on 2 cores), generator traffic: native only (the in-place worker
path) against two native lanes (the lane path without a device) and a native lane beside PoCL's `pthread` device
holding 1/16 and 1/4 of the flows, for each hpr binary given (`--hpr NAME=PATH`, repeatable: e.g. the build before
and after a change). The learner's re-checks and its
mix phase run such setups, and static weights of this kind are what it holds when a device is worth a small share.
Rounds interleave every (binary, case), rotated each round. Reports Mpps per case (median and spread) and each case's
ratio to native only of the same binary in the same round (median, min-max).

  POCL_DEVICES="pthread basic" bench/adapt/small_share.py --hpr before=OLD/hpr --hpr after=build/cli/hpr
"""
import argparse, os, statistics, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from learn_vs_static import ROOT, run, summarise  # noqa: E402

CASES = {"native only": (["--devices", "none"], None),
         "2 native lanes, 1/2 each": (["--static", "--devices", "none", "--native", "2"], None)}
for num, den in ((1, 16), (1, 4)):
    CASES[f"native + pthread {num}/{den}"] = (
        ["--static", "--devices", "pthread"],
        f'[lanes.weights]\n"native0" = {den - num}\n"pthread" = {num}\n')


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hpr", action="append", default=[], help="NAME=PATH (repeatable; default: this build)")
    ap.add_argument("--apps", default="ipv4,md5")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--warm-s", type=float, default=1)
    a = ap.parse_args()
    bins = dict(h.split("=", 1) for h in a.hpr) or {"this": os.path.join(ROOT, "build", "cli", "hpr")}
    for app in a.apps.split(","):
        runs = [(b, c) for b in bins for c in CASES]
        mpps, ratio = {}, {}
        for r in range(a.rounds):
            order = runs[r % len(runs):] + runs[:r % len(runs)]
            got = {}
            for b, c in order:
                extra, toml = CASES[c]
                x = run(bins[b], app, a.seconds, a.warm_s, extra, toml)
                if x is None:
                    sys.exit(f"{app} {b} {c}: hpr run failed")
                got[(b, c)] = x["steady"]
                mpps.setdefault((b, c), []).append(x["steady"])
            for b, c in runs:
                ratio.setdefault((b, c), []).append(got[(b, c)] / got[(b, "native only")])
            print(f"{app} round {r + 1}/{a.rounds}", file=sys.stderr)
        print(f"\n{app}, {a.rounds} rounds, Mpps after {a.warm_s:g} s of {a.seconds:g} s\n")
        print("| hpr | case | Mpps (median) | spread | × native only (min–max) |\n|---|---|---|---|---|")
        for b, c in runs:
            m, sp = summarise(mpps[(b, c)])
            q = ratio[(b, c)]
            print(f"| {b} | {c} | {m:.2f} | {sp:.3f} | {statistics.median(q):.2f} ({min(q):.2f}–{max(q):.2f}) |")


if __name__ == "__main__":
    main()
