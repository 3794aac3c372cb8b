#!/usr/bin/python3
"""Learning mode of two hpr builds side by side (an A/B of a learner change, issue 13).

Per app, each build runs `hpr run --app A --packets 0 --duration D` on the generator with every OpenCL device of
POCL_DEVICES and one native lane, twice: fresh (--state-dir none) and from its own saved state (primed by one run
first). Rounds interleave the builds (their order alternates). Reports per app and case the medians of the steady
rate (mean of the status lines after --warm-s) and of the whole run for each build, and the median (min–max) of the
per-round ratio B ÷ A of the steady rates.

Usage: bench/adapt/learn_ab.py --hpr A=build-a/cli/hpr --hpr B=build/cli/hpr [--apps ipv4,dpi,md5] [--rounds 3]
                               [--seconds 6] [--warm-s 2] [--out out/learn_ab]
"""
import argparse
import os
import statistics
import sys

import learn_vs_static  # its run(): one `hpr run`, steady and whole-run rates


def run(hpr, app, seconds, warm_s, state):
    x = learn_vs_static.run(hpr, app, seconds, warm_s, ["--state-dir", state])
    if x is None:
        sys.exit(f"{hpr} run --app {app} failed (its output is above)")
    return x["steady"], x["whole"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hpr", action="append", required=True, help="NAME=PATH, twice (A, then B)")
    ap.add_argument("--apps", default="ipv4,dpi,md5")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=6)
    ap.add_argument("--warm-s", type=float, default=2)
    ap.add_argument("--out", default="out/learn_ab")
    a = ap.parse_args()
    if len(a.hpr) != 2 or any("=" not in h for h in a.hpr):
        sys.exit("--hpr NAME=PATH, exactly twice")
    builds = [tuple(h.split("=", 1)) for h in a.hpr]
    for name, path in builds:
        if not os.access(path, os.X_OK):
            sys.exit(f"--hpr {name}={path}: not an executable")
    apps = [x for x in a.apps.split(",") if x]
    os.makedirs(a.out, exist_ok=True)
    state = {name: os.path.join(a.out, f"state_{name}") for name, _ in builds}
    for name, path in builds:
        for app in apps:
            run(path, app, a.seconds, a.warm_s, state[name])  # priming run for the saved state
    res = {}
    for r in range(a.rounds):
        for app in apps:
            for name, path in (builds if r % 2 == 0 else builds[::-1]):
                for case, st in (("fresh", "none"), ("saved", state[name])):
                    x = run(path, app, a.seconds, a.warm_s, st)
                    res.setdefault((app, case, name), []).append(x)
                    print(f"round {r + 1} {app} {case} {name}: {x[0]:.3f} Mpps steady, {x[1]:.3f} whole", flush=True)
    (na, _), (nb, _) = builds
    lines = [f"| app | case | {na} steady / whole | {nb} steady / whole | {nb} ÷ {na} steady, per round: median (min–max) |",
             "|---|---|---|---|---|"]
    for app in apps:
        for case in ("fresh", "saved"):
            xa, xb = res[(app, case, na)], res[(app, case, nb)]
            ma = [statistics.median(v[i] for v in xa) for i in (0, 1)]
            mb = [statistics.median(v[i] for v in xb) for i in (0, 1)]
            rr = [y[0] / x[0] for x, y in zip(xa, xb) if x[0] > 0]
            lines.append(f"| {app} | {case} | {ma[0]:.3f} / {ma[1]:.3f} | {mb[0]:.3f} / {mb[1]:.3f} | "
                         f"{statistics.median(rr):.2f} ({min(rr):.2f}–{max(rr):.2f}) |")
    text = "\n".join(lines) + "\n"
    print(text)
    with open(os.path.join(a.out, "learn_ab.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
