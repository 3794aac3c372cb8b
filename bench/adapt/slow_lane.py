#!/usr/bin/python3
"""A lane that slows down mid-run and recovers, under learning mode (issue 13 benchmark).

hpr run learns on unlimited generated traffic; [faults.slow_lane_us] makes LANE sleep US microseconds before each
batch from FROM s to UNTIL s into the run ([faults] slow_from_s / slow_until_s). From the per-quantum CSV
(--adapt-csv) it reports, per round:
  * lost_s: from FROM until LANE's share (the median of its shares over the last second) is below half of what
    it was in the second before FROM — "loses its load within 1 s";
  * back_s: from UNTIL until that share is back to at least half of what it was (nan: not within the run);
  * Mpps before / during / after (medians of the quanta of each phase, its first second left out).
The learner's own decisions only: there is no peer to compare with. Rounds repeat the run (ROUNDS).

Usage: bench/adapt/slow_lane.py [--hpr build/cli/hpr] [--app ipv4] [--lane native0] [--lane-index -1] [--us 5000]
                                [--from-s 6] [--until-s 12] [--duration-s 24] [--rounds 3] [--out out/slow_lane]
"""
import argparse
import csv
import os
import re
import statistics
import subprocess
import sys


def share_of(setup, index):
    """The share of lane INDEX in the learner's setup description ("w 0.00/0.00/1.00 b 256/256/64")."""
    m = re.match(r"w ([0-9./]+)", setup)
    if not m:
        return float("nan")
    w = [float(x) for x in m.group(1).split("/")]
    return w[index] / sum(w) if sum(w) > 0 else 0.0


def analyse(path, index, t_from, t_until, hold_s=1.0):
    """LANE's share is taken as the median of its shares over the last hold_s (a setup visited while the learner
    searches is not a share it was given)."""
    rows = list(csv.DictReader(open(path)))
    t = [float(r["t_s"]) for r in rows]
    raw = [share_of(r["setup"], index) for r in rows]
    share = [statistics.median([s for tj, s in zip(t, raw) if ti - hold_s < tj <= ti]) for ti in t]
    bps = [float(r["achieved_bps"]) for r in rows]
    before = [s for ti, s in zip(t, share) if t_from - 1 <= ti < t_from]
    ref = statistics.median(before) if before else 0.0
    nan = float("nan")
    if ref == 0:  # the lane had no share before it slowed down: nothing to lose or get back
        lost = back = nan
    else:
        lost = next((ti - t_from for ti, s in zip(t, share) if ti >= t_from and s < ref / 2), nan)
        back = next((ti - t_until for ti, s in zip(t, share) if ti >= t_until + hold_s and s >= ref / 2), nan)

    def phase(a, b):
        v = [x for ti, x in zip(t, bps) if a + 1 <= ti < b]
        return statistics.median(v) / 1e9 if v else float("nan")

    return ref, lost, back, phase(0, t_from), phase(t_from, t_until), phase(t_until, t[-1] if t else 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hpr", default="build/cli/hpr")
    ap.add_argument("--app", default="ipv4")
    ap.add_argument("--lane", default="native0")
    ap.add_argument("--lane-index", type=int, default=-1, help="its place in the lane list (native lanes last)")
    ap.add_argument("--us", type=int, default=5000)
    ap.add_argument("--from-s", type=float, default=6)
    ap.add_argument("--until-s", type=float, default=12)
    ap.add_argument("--duration-s", type=float, default=24)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="out/slow_lane")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    cfg = os.path.join(a.out, "slow.toml")
    with open(cfg, "w") as f:
        f.write(f"[faults]\nslow_from_s = {a.from_s}\nslow_until_s = {a.until_s}\n"
                f"[faults.slow_lane_us]\n{a.lane} = {a.us}\n")
    env = dict(os.environ, POCL_DEVICES=os.environ.get("POCL_DEVICES", "pthread basic"), HPR_STATE_DIR="none")
    print(f"{a.app}: {a.lane} slowed by {a.us} us a batch from {a.from_s} s to {a.until_s} s of {a.duration_s} s "
          f"(learning mode, Gbit/s achieved; power: model)")
    print("round  share_before  lost_s  back_s  Gbps_before  Gbps_slow  Gbps_after")
    results = []
    for r in range(a.rounds):
        path = os.path.join(a.out, f"round{r}.csv")
        cmd = [a.hpr, "run", "-c", cfg, "--app", a.app, "--packets", "0", "--duration", str(a.duration_s),
               "--adapt-csv", path]
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        with open(os.path.join(a.out, f"round{r}.log"), "w") as f:
            f.write(p.stdout)
        if p.returncode != 0:
            sys.exit(f"round {r}: {' '.join(cmd)} exited {p.returncode}; see {a.out}/round{r}.log")
        res = analyse(path, a.lane_index, a.from_s, a.until_s)
        results.append(res)
        print(f"{r:5d}  {res[0]:12.2f}  {res[1]:6.2f}  {res[2]:6.2f}  {res[3]:11.2f}  {res[4]:9.2f}  {res[5]:10.2f}")
    for name, i in (("lost_s", 1), ("back_s", 2)):
        v = [x[i] for x in results if x[i] == x[i]]
        if v:
            print(f"{name}: median {statistics.median(v):.2f} (min {min(v):.2f}, max {max(v):.2f}) over {len(v)} "
                  f"of {len(results)} rounds")
        else:
            print(f"{name}: never, in {len(results)} rounds")


if __name__ == "__main__":
    main()
