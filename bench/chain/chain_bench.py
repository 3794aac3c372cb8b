#!/usr/bin/python3
"""Chains (issue 15): what a chain of apps costs against its apps run alone, on the same lanes, in one run.

Input: the 6,000-packet mix of real captures (bench/runtime/vs_testpmd.make_mix), replayed by net_pcap
(infinite_rx) into `hpr run`, out to net_null. Lanes (--lanes): one native lane (`native`, the default: --devices
none --native 1), or one OpenCL device alone (its name, e.g. `pthread`: --devices NAME --native 0), where a chain
runs each app's kernel in turn on one gathered batch.
Routes: the real BGP table plus a default route, so that ipv4 forwards what the table does not hold (most of the
mix's private and local addresses) and the app after it in a chain sees every packet, as it does alone; without
it, ipv4,aes would encrypt only the few packets the table routes and look faster than aes alone.
Each round runs, in turn and never at once, every app of the chains alone and every chain, --seconds each; the cases
rotate from round to round so that drift hits all alike.

For each chain A,B it reports, over the rounds (median and min-max of the per-round ratios):
  chain / slower   the chain's rate against the slower of its apps alone (the issue's goal: >= 0.9)
  chain / serial   the chain's rate against 1 / (1/rate_A + 1/rate_B), what the two apps cost one after the other
                   on one core with nothing shared: above 1, the chain costs less than its apps (one receive, one
                   classification, one transmit); below 1, chaining adds a cost of its own.
Mpps counts the packets the lanes processed over the whole run (as workers_scaling.py; a chain: those its first app
was given); "steady" is the mean of
the status lines' received rate after --warm-s (what a learning build delivers once it has searched). AES keys: a
fixed master key of this script.
With --hpr given more than once (NAME=PATH), every case runs with each build in the same rounds, and the last table
gives each build's rate against the first's, round by round.
Writes every sample to --out (CSV) and prints the tables.
"""
import argparse, csv, json, os, statistics, subprocess, sys, tempfile

for d in ("runtime", "adapt"):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d))
import vs_testpmd  # noqa: E402
from learn_vs_static import steady_rates  # noqa: E402

ROOT = vs_testpmd.ROOT


def routes_with_default(path):
    """The BGP table (pyasn text) and 0.0.0.0/0, one file."""
    import gzip
    with gzip.open(os.path.join(vs_testpmd.DATA, "routes", "ipasn_20140513.dat.gz"), "rt") as f, open(path, "w") as o:
        o.write(f.read())
        o.write("0.0.0.0/0\t0\n")


def lane_args(lanes):
    return ["--devices", "none", "--native", "1"] if lanes == "native" else ["--devices", lanes, "--native", "0"]


def hpr_mpps(binary, app, capture, seconds, warm_s, routes, lanes, extra):
    """(whole run Mpps, steady Mpps after warm_s: 0 where no status line came after it)"""
    with tempfile.TemporaryDirectory() as d:
        js = os.path.join(d, "s.json")
        cmd = [binary, "run", "--app", app, "--in", "dpdk:net_pcap0", "--out", "dpdk:net_null0",
               "--vdev", f"net_pcap0,rx_pcap={capture},infinite_rx=1", "--vdev", "net_null0,no-rx=1",
               *lane_args(lanes), "--duration", str(seconds), "--summary-json", js,
               "--state-dir", "none", "--static", "--routes", routes, *extra]
        env = dict(os.environ, HPR_STATE_DIR="none", HPR_MASTER_KEY="000102030405060708090a0b0c0d0e0f")
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if r.returncode != 0:
            print(" ".join(cmd), r.stdout[-1000:], r.stderr[-2000:], file=sys.stderr)
            return None
        s = json.load(open(js))
        steady = steady_rates(r.stdout, warm_s)
        # A chain: the packets its first app was given (with apps on lanes of their own, --place-app, each packet is
        # on a lane of every stage); one app: the lanes' packets.
        handled = vs_testpmd.processed(s)
        return handled / s["seconds"] / 1e6, statistics.mean(steady) if steady else 0.0


def spread(xs):
    return f"{statistics.median(xs):.3f} ({min(xs):.3f}-{max(xs):.3f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chains", default="ipv4,aes ipv4,dpi dpi,md5", help="chains, separated by spaces")
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warm-s", type=float, default=1, help="steady state: the status lines after this many seconds")
    ap.add_argument("--lanes", default="native", help="native (one native lane) or an OpenCL device's name, alone")
    ap.add_argument("--run-args", default="", help="more hpr run options for every case, e.g. \"--batch 8192 "
                    "--timeout-us 2000\" (a discrete GPU: the static default of 256 packets leaves it waiting on "
                    "each batch's copies and launches)")
    ap.add_argument("--hpr", action="append", metavar="[NAME=]PATH",
                    help="binary (default build/cli/hpr); repeat to compare builds in the same rounds")
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "chain", "chain_bench.csv"))
    a = ap.parse_args()
    bins = [h.split("=", 1) if "=" in h else [os.path.basename(os.path.dirname(os.path.dirname(h))) or h, h]
            for h in (a.hpr or [os.path.join(ROOT, "build", "cli", "hpr")])]
    work = os.path.join(ROOT, "out", "runtime", "workers")
    os.makedirs(work, exist_ok=True)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    mix = os.path.join(work, "mix.pcap")
    if not os.path.exists(mix):
        vs_testpmd.make_mix(mix)
    routes = os.path.join(os.path.dirname(a.out), "routes_default.dat")
    if not os.path.exists(routes):
        routes_with_default(routes)
    chains = a.chains.split()
    cases = [(b, c) for b, _ in bins for c in sorted({x for c in chains for x in c.split(",")}) + chains]
    path = dict(bins)
    rows, rate, steady = [], {c: [] for c in cases}, {c: [] for c in cases}
    for r in range(a.rounds):
        order = cases[r % len(cases):] + cases[:r % len(cases)]
        for b, c in order:
            m = hpr_mpps(path[b], c, mix, a.seconds, a.warm_s, routes, a.lanes, a.run_args.split())
            if m is None:
                sys.exit(f"{path[b]} run --app {c} failed")
            rate[(b, c)].append(m[0])
            steady[(b, c)].append(m[1])
            rows.append({"round": r, "hpr": b, "case": c, "mpps": m[0], "steady_mpps": m[1]})
            print(f"round {r} {b} {c:<14} {m[0]:.3f} Mpps, {m[1]:.3f} after {a.warm_s:g} s", flush=True)
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["round", "hpr", "case", "mpps", "steady_mpps"])
        w.writeheader()
        w.writerows(rows)
    print(f"\nlanes: {a.lanes} {a.run_args}\n{'hpr':<12} {'case':<14} Mpps median (min-max) over {a.rounds} rounds of {a.seconds} s, "
          f"whole run / after {a.warm_s:g} s")
    for b, c in cases:
        print(f"{b:<12} {c:<14} {spread(rate[(b, c)]):<24} {spread(steady[(b, c)])}")
    print(f"\n{'hpr':<12} {'chain':<14} {'chain / slower app':<26} chain / serial (1 / sum of 1/rate)")
    for b, _ in bins:
        for c in chains:
            apps = c.split(",")
            slower = [min(rate[(b, x)][r] for x in apps) for r in range(a.rounds)]
            serial = [1 / sum(1 / rate[(b, x)][r] for x in apps) for r in range(a.rounds)]
            print(f"{b:<12} {c:<14} {spread([rate[(b, c)][r] / slower[r] for r in range(a.rounds)]):<26} "
                  f"{spread([rate[(b, c)][r] / serial[r] for r in range(a.rounds)])}")
    if len(bins) > 1:
        base = bins[0][0]
        for what, v in (("whole run", rate), (f"after {a.warm_s:g} s", steady)):
            print(f"\n{'case':<14} " + "  ".join(f"{b} / {base}" for b, _ in bins[1:]) + f"  (same round, {what})")
            for c in sorted({c for _, c in cases}, key=lambda c: (c in chains, c)):
                print(f"{c:<14} " + "  ".join(spread([v[(b, c)][r] / v[(base, c)][r] if v[(base, c)][r] else 0.0
                                                      for r in range(a.rounds)]) for b, _ in bins[1:]))


if __name__ == "__main__":
    main()
