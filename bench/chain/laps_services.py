#!/usr/bin/python3
"""LAPS in the daemon on a mix of services (issue 15): LAPS against AFS and hash (crc16) at overload.

The generator offers the four Holt-Winters services of LAPS Table IV (--rate-model laps-set1, scaled by --scale),
and four [[service]] entries send each through a chain of its own:
  s0 ipv4,aes    s1 ipv4,md5    s2 md5    s3 ipv4
on --lanes native lane threads (--devices none; LAPS gives each service lanes of its own, so lanes >= 4). Back-
pressure is off: what the lanes cannot take is dropped as queue_full, what the generator cannot hand over is
port_missed. Each round runs every balancer in turn (rotated), --seconds each.

Reports per balancer, median (min-max) over the rounds: drops (queue_full + port_missed) as a share of what was
offered, the ratio of each balancer's drops to hash's (the LAPS paper reports about -60 % for LAPS), flow migrations,
refused moves, and reorders (0 for all: the move rule keeps order); then per service (the summary's per-service books)
its packets out in Mpps, what it lost on the way to its lanes (full queues) as a share of its packets, and its p99
rx-to-tx latency. --zipf S draws flows with Zipf exponent S (heavy flows for LAPS's aggressive-flow detector).
Writes every sample to --out (CSV).
"""
import argparse, csv, json, os, statistics, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHAINS = ["ipv4,aes", "ipv4,md5", "md5", "ipv4"]


def config(path):
    with open(path, "w") as f:
        f.write('[app]\nmaster_key = "000102030405060708090a0b0c0d0e0f"\n')
        for s, chain in enumerate(CHAINS):
            f.write(f'[[service]]\nname = "s{s}"\nchain = "{chain}"\ngen_service = {s}\n')


def run(binary, cfg, balancer, a):
    with tempfile.TemporaryDirectory() as d:
        js = os.path.join(d, "s.json")
        cmd = [binary, "run", "-q", "-c", cfg, "--in", "gen", "--out", "null", "--rate-model", "laps-set1",
               "--rate-scale", str(a.scale), "--packets", "0", "--flows", "4000", "--zipf", str(a.zipf),
               "--devices", "none", "--native", str(a.lanes),
               "--run-to-completion", "off", "--backpressure", "off", "--balancer", balancer, "--static",
               "--state-dir", "none", "--duration", str(a.seconds), "--summary-json", js]
        r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, HPR_STATE_DIR="none"))
        if r.returncode != 0:
            sys.exit(f"{' '.join(cmd)}\n{r.stdout[-1000:]}\n{r.stderr[-2000:]}")
        s = json.load(open(js))
        drops = s.get("drops", {})
        missed = s["rx"]["port_missed"]
        lost = drops.get("queue_full", 0) + missed
        offered = s["rx"]["packets"] + missed
        b = s.get("balancer", {})
        x = {"offered": offered, "lost": lost, "share": lost / max(offered, 1), "migrations": b.get("migrations", 0),
             "moves": b.get("moves", 0), "refused": b.get("blocked_moves", 0), "reorders": s["reorders"]}
        for v in s.get("services", []):
            n = v["name"]
            x[f"{n}_mpps"] = v["packets_out"] / s["seconds"] / 1e6
            x[f"{n}_lost_share"] = v["lost"] / max(v["packets_out"] + v["dropped"] + v["lost"], 1)
            x[f"{n}_p99_us"] = v["latency_ns"]["p99"] / 1e3
        return x


def med(xs):
    return f"{statistics.median(xs):.3f} ({min(xs):.3f}-{max(xs):.3f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--balancers", default="laps afs crc16")
    ap.add_argument("--scale", type=float, default=0.5, help="--rate-scale: laps-set1's rates times this (overload)")
    ap.add_argument("--lanes", type=int, default=4)
    ap.add_argument("--zipf", type=float, default=1.0, help="the generator's --zipf (1: its default)")
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--hpr", default=os.path.join(ROOT, "build", "cli", "hpr"))
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "chain", "laps_services.csv"))
    a = ap.parse_args()
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    cfg = os.path.join(os.path.dirname(a.out), "laps_services.toml")
    config(cfg)
    bals = a.balancers.split()
    rows, res = [], {b: [] for b in bals}
    for r in range(a.rounds):
        for b in bals[r % len(bals):] + bals[:r % len(bals)]:
            x = run(a.hpr, cfg, b, a)
            res[b].append(x)
            rows.append(dict(round=r, balancer=b, **x))
            print(f"round {r} {b:<6} offered {x['offered']} lost {x['lost']} ({x['share']:.3f}) migrations "
                  f"{x['migrations']} refused {x['refused']} reorders {x['reorders']}", flush=True)
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    base = "crc16" if "crc16" in bals else bals[-1]
    print(f"\n{'balancer':<8} {'lost share':<22} {'lost / ' + base:<22} {'migrations':<22} {'refused':<12} reorders")
    for b in bals:
        ratio = [res[b][i]["lost"] / max(res[base][i]["lost"], 1) for i in range(a.rounds)]
        print(f"{b:<8} {med([x['share'] for x in res[b]]):<22} {med(ratio):<22} "
              f"{med([x['migrations'] for x in res[b]]):<22} {med([x['refused'] for x in res[b]]):<12} "
              f"{max(x['reorders'] for x in res[b])}")
    services = [k[:-5] for k in rows[0] if k.endswith("_mpps")]
    print(f"\nper service, median (min-max): Mpps out | lost / its packets | p99 us")
    for b in bals:
        for n in services:
            print(f"{b:<8} {n:<4} {med([x[n + '_mpps'] for x in res[b]]):<22} "
                  f"{med([x[n + '_lost_share'] for x in res[b]]):<22} {med([x[n + '_p99_us'] for x in res[b]])}")


if __name__ == "__main__":
    main()
