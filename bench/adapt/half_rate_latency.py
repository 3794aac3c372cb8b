#!/usr/bin/python3
"""Latency at half of the best static rate, learning mode against static setups (issue 13 benchmark: "IPv4 at half
of the best static rate: p99 latency <= 1 ms").

First the best static rate R: `hpr run --devices none` (one native lane in place, the best static setup of this
machine for ipv4, dpi and md5: docs/scheduler.md) unpaced, the median of --calib runs. Then rounds that interleave,
each `hpr run --app A --packets 0 --duration D --rate-pps R/2` on the generator (imix, 10,000 flows) into null with
every OpenCL device of POCL_DEVICES and one native lane:
  learn                the default (--state-dir none: from nothing, its search inside the run)
  learn, saved state   the same, from what a priming run at R/2 kept
  native only          --devices none (the best static setup)
  static-default       --static: the fixed default weights on every lane
Per case, medians over rounds (spread = (max - min) / median): the rx-to-tx p99 of the whole run (the summary's:
the search included) and of its steady state (the median of the per-quantum p99s of --adapt-csv after --warm-s), the rate
received and the packets lost for want of capacity (port_missed, queue_full, no_lane; not the app's own drops).
Each run's per-quantum CSV and output are kept in OUT (roundR_CASE.csv, .log).

Usage: bench/adapt/half_rate_latency.py [--hpr build/cli/hpr] [--app ipv4] [--rounds 3] [--seconds 8] [--warm-s 2]
                                        [--calib 3] [--rate-pps N (skip the calibration)] [--out out/half_rate]
"""
import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from learn_vs_static import summarise  # median and spread (max - min) / median, as that bench reports them

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(hpr, app, seconds, warm_s, extra, keep=None):
    """One run; `keep`: a path prefix under which its per-quantum CSV and its output are kept."""
    with tempfile.TemporaryDirectory() as d:
        js, qcsv = os.path.join(d, "s.json"), os.path.join(d, "q.csv")
        cmd = [hpr, "run", "--app", app, "--packets", "0", "--duration", str(seconds), "--summary-json", js,
               "--adapt-csv", qcsv] + extra
        env = dict(os.environ, HPR_MASTER_KEY="000102030405060708090a0b0c0d0e0f")
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if r.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed (rc {r.returncode}):\n{r.stderr[-2000:]}")
        s = json.load(open(js))
        if keep:
            shutil.copyfile(qcsv, keep + ".csv")
            with open(keep + ".log", "w") as f:
                f.write(r.stdout)
        p99 = [float(q["lat_p99_us"]) for q in csv.DictReader(open(qcsv))
               if float(q["t_s"]) > warm_s and q["lat_p99_us"] not in ("", "nan")]
    drops = s.get("drops", {})
    lost = s["rx"].get("port_missed", 0) + drops.get("queue_full", 0) + drops.get("no_lane", 0)
    return {"mpps": s["rx"]["packets"] / s["seconds"] / 1e6, "p99_us": s["latency_ns"]["p99"] / 1e3,
            "p99_steady_us": statistics.median(p99) if p99 else float("nan"), "lost": lost}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hpr", default=os.path.join(ROOT, "build", "cli", "hpr"))
    ap.add_argument("--app", default="ipv4")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--warm-s", type=float, default=2)
    ap.add_argument("--calib", type=int, default=3)
    ap.add_argument("--rate-pps", type=int)
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "half_rate"))
    a = ap.parse_args()
    if not os.access(a.hpr, os.X_OK):
        sys.exit(f"--hpr {a.hpr}: not an executable (build first: cmake --build --preset default)")
    os.makedirs(a.out, exist_ok=True)
    if a.rate_pps:
        best = a.rate_pps / 1e6
    else:
        rates = [run(a.hpr, a.app, a.seconds, a.warm_s, ["--devices", "none"])["mpps"] for _ in range(a.calib)]
        best = statistics.median(rates)
        print(f"best static (native only, unpaced): {best:.3f} Mpps, runs {', '.join(f'{r:.3f}' for r in rates)}")
    half = int(best * 1e6 / 2)
    pace = ["--rate-pps", str(half)]
    state = os.path.join(a.out, "state")
    os.makedirs(state, exist_ok=True)
    run(a.hpr, a.app, a.seconds, a.warm_s, pace + ["--state-dir", state])  # priming run for the saved state
    cases = {
        "learn": pace + ["--state-dir", "none"],
        "learn, saved state": pace + ["--state-dir", state],
        "native only": pace + ["--devices", "none"],
        "static-default": pace + ["--static"],
    }
    res = {c: [] for c in cases}
    names = list(cases)
    for r in range(a.rounds):
        for c in names[r % len(names):] + names[:r % len(names)]:  # rotated: drift hits every case alike
            keep = os.path.join(a.out, f"round{r + 1}_{c.replace(', ', '_').replace(' ', '_')}")
            x = run(a.hpr, a.app, a.seconds, a.warm_s, cases[c], keep)
            res[c].append(x)
            print(f"round {r + 1} {c}: {x['mpps']:.3f} Mpps, p99 {x['p99_us']:.0f} us (steady {x['p99_steady_us']:.0f}),"
                  f" lost {x['lost']}", flush=True)
    lines = [f"{a.app} at {half / 1e6:.3f} Mpps offered (half of {best:.3f}), {a.rounds} rounds of {a.seconds} s, "
             "medians (spread)", "",
             "| case | Mpps received | p99 whole run, µs | per-quantum p99 after warm-up (median), µs | lost (port_missed, queue_full, no_lane) |", "|---|---|---|---|---|"]
    for c in names:
        cols = [summarise([x[k] for x in res[c]]) for k in ("mpps", "p99_us", "p99_steady_us")]
        drop = statistics.median([x["lost"] for x in res[c]])
        lines.append(f"| {c} | " + " | ".join(f"{m:.3f} ({s:.0%})" if k == 0 else f"{m:.0f} ({s:.0%})"
                                              for k, (m, s) in enumerate(cols)) + f" | {drop:.0f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    with open(os.path.join(a.out, f"half_rate_{a.app}.md"), "w") as f:
        f.write(text)
    with open(os.path.join(a.out, f"half_rate_{a.app}.json"), "w") as f:
        json.dump({"best_mpps": best, "offered_pps": half, "results": res}, f, indent=1)


if __name__ == "__main__":
    main()
