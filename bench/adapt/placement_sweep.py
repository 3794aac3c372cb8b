#!/usr/bin/python3
"""Placement per service: every static placement of a mix's services on the lanes, against learning mode (issue 15).

The mix is a TOML file of [[service]] entries (default: services_mix.toml beside this script: three services, three
chains). Each case is `hpr run --packets 0 --duration D` on the generator (imix, 10,000 flows) into null with every
OpenCL device (POCL_DEVICES) and one native lane, run to completion (the default on 2 cores):
  place A/B/C     --static, service i on lane A, B, C (`lanes = [...]` in its [[service]]): every combination of
                  --lanes over the services (2 lanes, 3 services: 8 placements)
  learn           the default, from nothing (--state-dir none): the learner's lane shares, and the services it
                  places (its place phase, docs/scheduler.md)
  learn, saved state   the default from the state a learning run kept (a seeding run of --seconds before the
                  rounds, into OUT/state; each round's run updates it): the search done, its figures re-checked
  native only, in place   --devices none
Rounds interleave the cases, rotated (one at a time: 2 cores). A case's rate is the mean of its status lines after
--warm-s (received Mpps) and its energy per received packet over the whole run (the summary's, with its source:
model here). Reports per case the median over rounds and the spread (max-min over median), the best placement (by
median Mpps), and learn ÷ that placement per round (both ran in the same round), median (min-max), in Mpps and in
energy per packet; the same for learn from saved state.
"""
import argparse, itertools, json, os, re, shlex, statistics, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import learn_vs_static as lvs  # noqa: E402  (run(), summarise(), write_md(), the services it runs)

ROOT = lvs.ROOT


def placed_toml(mix, names, lanes):
    """The mix's [[service]] entries, service i given `lanes = [lanes[i]]` (each entry's body, in file order)."""
    parts = re.split(r"(?m)^\[\[service\]\]\s*$", mix)
    if len(parts) - 1 != len(names):
        sys.exit(f"placement_sweep: the mix has {len(parts) - 1} [[service]] entries, {len(names)} names")
    out = parts[0]
    for body, lane in zip(parts[1:], lanes):
        out += f'[[service]]\nlanes = ["{lane}"]' + body
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hpr", default=os.path.join(ROOT, "build", "cli", "hpr"))
    ap.add_argument("--services", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "services_mix.toml"))
    ap.add_argument("--lanes", default="native0,pthread", help="the lanes a service may be placed on (name parts)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--warm-s", type=float, default=1.5)
    ap.add_argument("--run-args", default="", help="more hpr run options for every case (a GPU: --batch 8192)")
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "placement"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    mix = open(a.services).read()
    names = re.findall(r'(?m)^name\s*=\s*"([^"]+)"', mix)
    lanes = a.lanes.split(",")
    state = os.path.join(a.out, "state")
    cases = {"learn": (["--state-dir", "none"], mix), "learn, saved state": (["--state-dir", state], mix),
             "native only, in place": (["--devices", "none"], mix)}
    for combo in itertools.product(lanes, repeat=len(names)):
        cases["place " + "/".join(combo)] = (["--static"], placed_toml(mix, names, combo))
    lvs.SERVICES["mix"] = ""  # the cases give the whole TOML (run() then passes no --app)
    if lvs.run(a.hpr, "mix", a.seconds, a.warm_s, ["--state-dir", state] + shlex.split(a.run_args), mix) is None:
        sys.exit("placement_sweep: the seeding learning run failed")
    res, nj, source = lvs.rotated_rounds(
        cases, a.rounds,
        lambda name: lvs.run(a.hpr, "mix", a.seconds, a.warm_s, cases[name][0] + shlex.split(a.run_args), cases[name][1]))
    table = {n: lvs.summarise(list(v.values())) for n, v in res.items()}
    placements = [n for n in table if n.startswith("place ")]
    best = max(placements, key=lambda n: table[n][0])
    def per_round(d, case):  # case ÷ the best placement, round by round
        return lvs.per_round_ratio(d, case, best)
    mmm = lambda t: dict(zip(("median", "min", "max"), t))  # noqa: E731
    ratio, energy = per_round(res, "learn"), per_round(nj, "learn")
    saved, saved_energy = per_round(res, "learn, saved state"), per_round(nj, "learn, saved state")
    nj_med = {n: statistics.median(v.values()) for n, v in nj.items()}
    report = {"services": names, "lanes": lanes, "power_source": source,
              "cases": {n: {"mpps": m, "spread": s, "nj_per_packet": nj_med.get(n)} for n, (m, s) in table.items()},
              "best_placement": best, "learn_vs_best": mmm(ratio), "learn_vs_best_energy": mmm(energy),
              "saved_vs_best": mmm(saved), "saved_vs_best_energy": mmm(saved_energy)}
    with open(os.path.join(a.out, "placement_sweep.json"), "w") as f:
        json.dump(report, f, indent=1)
    lines = [f"services {', '.join(names)} (placements: each on one of {', '.join(lanes)})", ""] + lvs.case_rows(
        table, nj_med, best, "best placement", a.warm_s, source,
        (("learn", ratio, energy), ("learn, saved state", saved, saved_energy)))
    lvs.write_md(os.path.join(a.out, "placement_sweep.md"), lines)


if __name__ == "__main__":
    main()
