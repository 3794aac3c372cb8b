#!/usr/bin/python3
"""Placement per app of a chain: every static placement against `--place-app learned` and learning mode (issue 15).

First each app of the chain runs alone in learning mode for --seed-s seconds into OUT/state (its learned state,
learned-<app>.json), and one short run prints what `--place-app learned` decides from those states. Then rounds of
`hpr run --app CHAIN --packets 0 --duration D` on the generator (imix, 10,000 flows) into null, with the lanes
--lanes-args (default: the PoCL pthread device and one native lane; run to completion, the default on 2 cores):
  place A/B       --place-app app=lane for each app (static weights), every assignment of the chain's apps to the
                  lanes of --lanes that plan_stages accepts; all apps on one lane: the chain on that lane alone
  learned         --place-app learned --state-dir OUT/state: placed from the apps' states, or (not placed) the whole
                  chain learning from the chain's own state in the same folder
  learn           the whole chain, learning from nothing (--state-dir none)
Rounds interleave the cases, rotated (one at a time: 2 cores). A case's rate is the mean of its status lines after
--warm-s (received Mpps), its energy per received packet the summary's (with its source: model here). Reports per
case the median over rounds and the spread (max-min over median), the best static placement by median, and learned
÷ that placement and learn ÷ it per round (both ran in the same round): median (min-max). Writes OUT/place_sweep.md.
"""
import argparse, itertools, os, shlex, statistics, subprocess, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "adapt"))
import learn_vs_static as lvs  # noqa: E402  (run(), summarise(), write_md())

ROOT = lvs.ROOT
SOLO = {"native": ["--devices", "none", "--native", "1"], "pthread": ["--devices", "pthread", "--native", "0"],
        "basic": ["--devices", "basic", "--native", "0"]}


def placements(apps, lanes, lane_args):
    """(name, hpr options) of every assignment of apps to lanes whose same-lane apps are consecutive."""
    out = []
    for combo in itertools.product(lanes, repeat=len(apps)):
        groups = [k for k, _ in itertools.groupby(combo)]
        if len(groups) != len(set(groups)):
            continue  # one lane for two apps that are not next to each other: refused by plan_stages
        if len(groups) == 1:
            out.append((f"place {combo[0]} (whole chain alone)", SOLO[combo[0]]))
        elif len(groups) == len(lanes):  # every lane runs an app (plan_stages refuses an idle lane)
            out.append(("place " + "/".join(combo),
                        lane_args + [x for a, l in zip(apps, combo) for x in ("--place-app", f"{a}={l}")]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hpr", default=os.path.join(ROOT, "build", "cli", "hpr"))
    ap.add_argument("--chain", default="ipv4,md5")
    ap.add_argument("--lanes", default="native,pthread", help="lane name parts an app may be placed on")
    ap.add_argument("--lanes-args", default="--devices pthread --native 1", help="the lanes of every chain run")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--warm-s", type=float, default=1.0)
    ap.add_argument("--seed-s", type=float, default=8, help="each app's learning run before the rounds")
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "place_sweep"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    apps, lanes, lane_args = a.chain.split(","), a.lanes.split(","), shlex.split(a.lanes_args)
    state = os.path.join(a.out, "state")
    os.makedirs(state, exist_ok=True)
    for app in apps:
        if lvs.run(a.hpr, app, a.seed_s, a.warm_s, ["--state-dir", state] + lane_args) is None:
            sys.exit(f"place_sweep: the learning run of {app} failed")
    r = subprocess.run([a.hpr, "run", "--app", a.chain, "--packets", "0", "--duration", "0.3", "--state-dir", state,
                        "--ctl", "none", "--place-app", "learned"] + lane_args, capture_output=True, text=True,
                       env=dict(os.environ, HPR_MASTER_KEY="000102030405060708090a0b0c0d0e0f"))
    decided = [l.strip() for l in r.stdout.splitlines() if "apps placed from the learned state" in l]
    print(decided[0] if decided else r.stderr[-800:], file=sys.stderr)
    cases = dict(placements(apps, lanes, lane_args))
    cases["learned"] = ["--place-app", "learned", "--state-dir", state] + lane_args
    cases["learn"] = ["--state-dir", "none"] + lane_args
    res, nj, source = lvs.rotated_rounds(
        cases, a.rounds, lambda name: lvs.run(a.hpr, a.chain, a.seconds, a.warm_s, ["--ctl", "none"] + cases[name]))
    table = {n: lvs.summarise(list(v.values())) for n, v in res.items()}
    best = max((n for n in table if n.startswith("place ")), key=lambda n: table[n][0])
    nj_med = {n: statistics.median(v.values()) for n, v in nj.items()}
    ratios = [(x, lvs.per_round_ratio(res, x, best), lvs.per_round_ratio(nj, x, best)) for x in ("learned", "learn")]
    lines = [f"chain {a.chain}, lanes `{a.lanes_args}`; {decided[0] if decided else 'no decision line'}", ""] + \
        lvs.case_rows(table, nj_med, best, "best static", a.warm_s, source, ratios)
    lvs.write_md(os.path.join(a.out, "place_sweep.md"), lines)


if __name__ == "__main__":
    main()
