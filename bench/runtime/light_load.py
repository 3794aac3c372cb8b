#!/usr/bin/env python3
"""rx-to-tx latency at light load (issue 12): `hpr run --devices none --native 1` on generator traffic paced
at --rate-pps, default settings otherwise, each binary given with --hpr (a label=path pair; e.g. the build
before and after a change), rounds interleaved so drift hits all alike; optionally with one busy-looping
process sharing the cores (--busy). Reports p50/p99 per case: median over rounds and spread
(max - min) / median, from the summary JSON (latency_ns, histogram of 16 buckets per octave)."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def run_once(hpr, rate, packets, busy, extra):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    spinner = None
    if busy:
        spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        cmd = [hpr, "run", "--devices", "none", "--native", "1", "--rate-pps", str(rate), "--packets",
               str(packets), "-q", "--summary-json", out] + extra
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(out) as f:
            s = json.load(f)
    finally:
        if spinner:
            spinner.kill()
            spinner.wait()
        os.unlink(out)
    return s["latency_ns"]["p50"] / 1e3, s["latency_ns"]["p99"] / 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--hpr", action="append", required=True, help="LABEL=PATH of an hpr binary (repeatable)")
    ap.add_argument("--rate", type=int, default=200000, help="offered packets/s (about 10%% of the native rate)")
    ap.add_argument("--packets", type=int, default=600000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--busy", action="store_true", help="also run each case beside one busy-looping process")
    ap.add_argument("extra", nargs="*", help="more hpr run arguments (after --)")
    a = ap.parse_args()
    cases = [(h.split("=", 1)[0], h.split("=", 1)[1], b) for h in a.hpr for b in ([False, True] if a.busy else [False])]
    res = {c: [] for c in cases}
    for r in range(a.rounds):
        for c in cases:
            res[c].append(run_once(c[1], a.rate, a.packets, c[2], a.extra))
            print(f"round {r + 1} {c[0]}{' +busy' if c[2] else ''}: p50 {res[c][-1][0]:.1f} us, p99 {res[c][-1][1]:.1f} us",
                  file=sys.stderr)
    print(f"{'case':<24} {'p50 us (median)':>16} {'spread':>7} {'p99 us (median)':>16} {'spread':>7}")
    for c, v in res.items():
        line = f"{c[0] + (' +busy' if c[2] else ''):<24}"
        for k in (0, 1):
            xs = [x[k] for x in v]
            m = statistics.median(xs)
            line += f" {m:16.1f} {(max(xs) - min(xs)) / m if m else 0:7.2f}"
        print(line)


if __name__ == "__main__":
    main()
