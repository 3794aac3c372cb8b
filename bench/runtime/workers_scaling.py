#!/usr/bin/python3
"""Workers (issue 12): hpr run --app ipv4 with 1 and N workers beside DPDK l3fwd on 1 and N lcores, in one run.

The 6,000-packet mix of real captures (vs_testpmd.make_mix) is split by flow into N captures (split_by_flow: the
frames each worker would get from symmetric RSS). Each round runs, in turn (never at once):
  l3fwd-1     l3fwd LPM on the BGP table, one lcore: net_pcap0 (the mix, infinite_rx) -> net_null0
  l3fwd-N     the same on N lcores, net_pcap0 with one capture per rx queue (N queues), lcore i polls queue i
  hpr-1       hpr run, 1 worker, the mix -> net_null0 (the in-place worker path)
  hpr-N       N workers, one capture per rx queue (--rx-spread queues), net_null0 with N tx queues
  hpr-N-hash  N workers on the mix through one rx queue, spread by flow hash (--rx-spread hash: one reader)
With --devices: also
  hpr-1-dev   1 worker with a lane on every OpenCL device (POCL_DEVICES, default "pthread basic") and a native lane,
              learning mode (the default: it weighs the lanes by what the run delivers)
  hpr-N-dev   N workers on their queues, each with a lane on every device and a native lane, learning
Reports Mpps median and spread (p90-p10 over median) per case, and the ratios hpr-N / hpr-1, l3fwd-N / l3fwd-1,
hpr-1 / l3fwd-1 and hpr-N / l3fwd-N of the medians. Mpps counts every packet processed (hpr: the lanes' packets;
l3fwd: packets sent on either port), as vs_testpmd.py does. Writes CSV to --out.
"""
import argparse, csv, json, os, statistics, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vs_testpmd  # noqa: E402

ROOT = vs_testpmd.ROOT


def l3fwd_n(binary, captures, seconds, rules):
    """l3fwd LPM on len(captures) lcores, lcore i polling rx queue i of net_pcap0 (and of net_null0)."""
    n = len(captures)
    rx = "net_pcap0," + ",".join(f"rx_pcap={c}" for c in captures) + ",infinite_rx=1"
    cmd = vs_testpmd.l3fwd_cmd(binary, rx, "lpm", rules)
    cfg = ",".join(f"({p},{q},{q})" for p in (0, 1) for q in range(n))
    cmd[cmd.index("-l") + 1] = f"0-{n - 1}"
    cmd = [f"--config={cfg}" if a.startswith("--config=") else a for a in cmd]
    return vs_testpmd.l3fwd_mpps(cmd, seconds)


def hpr_n(binary, captures, workers, spread, seconds, devices="none"):
    with tempfile.TemporaryDirectory() as d:
        js = os.path.join(d, "s.json")
        rx = "net_pcap0," + ",".join(f"rx_pcap={c}" for c in captures) + ",infinite_rx=1"
        cmd = [binary, "run", "-q", "--app", "ipv4", "--in", "dpdk:net_pcap0", "--out", "dpdk:net_null0",
               "--vdev", rx, "--vdev", "net_null0,no-rx=1", "--devices", devices, "--native", "1",
               "--workers", str(workers), "--rx-spread", spread, "--duration", str(seconds), "--summary-json", js]
        env = dict(os.environ, HPR_STATE_DIR="none")
        env.setdefault("POCL_DEVICES", "pthread basic")
        r = subprocess.run(cmd + ["--state-dir", "none"], capture_output=True, text=True, env=env)
        if r.returncode != 0:
            print(r.stdout[-1000:], r.stderr[-2000:], file=sys.stderr)
            return None
        s = json.load(open(js))
        return sum(l["packets"] for l in s["lanes"]) / s["seconds"] / 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="build folder with cli/hpr and bench/")
    ap.add_argument("--hpr", default="", help="hpr binary (default: BUILD/cli/hpr)")
    ap.add_argument("--l3fwd", default="", help="l3fwd binary (default: BUILD/bench/l3fwd; none: leave it out)")
    ap.add_argument("--devices", action="store_true", help="also the cases with a lane on every OpenCL device (learning)")
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "runtime", "workers_scaling.csv"))
    a = ap.parse_args()
    hpr = a.hpr or os.path.join(a.build, "cli", "hpr")
    l3fwd = a.l3fwd or os.path.join(a.build, "bench", "l3fwd")
    split = os.path.join(a.build, "bench", "runtime", "split_by_flow")
    work = os.path.join(ROOT, "out", "runtime", "workers")
    os.makedirs(work, exist_ok=True)
    mix = os.path.join(work, "mix.pcap")
    if not os.path.exists(mix):
        vs_testpmd.make_mix(mix)
    n = a.workers
    parts = [os.path.join(work, f"mix_{n}_{i}.pcap") for i in range(n)]
    subprocess.run([split, mix] + parts, check=True)
    rules = vs_testpmd.l3fwd_rules(work)
    cases = {"hpr-1": lambda: hpr_n(hpr, [mix], 1, "auto", a.seconds),
             f"hpr-{n}": lambda: hpr_n(hpr, parts, n, "queues", a.seconds),
             f"hpr-{n}-hash": lambda: hpr_n(hpr, [mix], n, "hash", a.seconds)}
    if a.devices:
        cases["hpr-1-dev"] = lambda: hpr_n(hpr, [mix], 1, "auto", a.seconds, "all")
        cases[f"hpr-{n}-dev"] = lambda: hpr_n(hpr, parts, n, "queues", a.seconds, "all")
    if a.l3fwd != "none" and os.path.exists(l3fwd):
        cases["l3fwd-1"] = lambda: vs_testpmd.l3fwd(l3fwd, mix, a.seconds, "lpm", rules)
        cases[f"l3fwd-{n}"] = lambda: l3fwd_n(l3fwd, parts, a.seconds, rules)
    res = {k: [] for k in cases}
    rows = []
    for r in range(a.rounds):
        for name, f in cases.items():
            v = f()
            print(f"round {r + 1} {name}: {v if v is None else round(v, 3)} Mpps", flush=True)
            if v is not None:
                res[name].append(v)
                rows.append({"round": r + 1, "case": name, "mpps": v})
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["round", "case", "mpps"])
        w.writeheader()
        w.writerows(rows)
    med = {k: statistics.median(v) for k, v in res.items() if v}

    def spread(v):
        v = sorted(v)
        lo, hi = v[int(0.1 * (len(v) - 1))], v[int(round(0.9 * (len(v) - 1)))]
        return (hi - lo) / statistics.median(v)

    print(f"\n{'case':<14} {'Mpps':>8} {'spread':>7} {'rounds':>6}")
    for k, v in res.items():
        if v:
            print(f"{k:<14} {med[k]:8.3f} {spread(v):7.1%} {len(v):6d}")
    ratios = [(f"hpr-{n} / hpr-1", f"hpr-{n}", "hpr-1"), (f"hpr-{n}-hash / hpr-1", f"hpr-{n}-hash", "hpr-1"),
              (f"l3fwd-{n} / l3fwd-1", f"l3fwd-{n}", "l3fwd-1"), ("hpr-1 / l3fwd-1", "hpr-1", "l3fwd-1"),
              (f"hpr-{n} / l3fwd-{n}", f"hpr-{n}", f"l3fwd-{n}"), ("hpr-1-dev / hpr-1", "hpr-1-dev", "hpr-1"),
              (f"hpr-{n}-dev / hpr-{n}", f"hpr-{n}-dev", f"hpr-{n}"), (f"hpr-{n}-dev / hpr-1-dev", f"hpr-{n}-dev", "hpr-1-dev")]
    for label, x, y in ratios:
        if x in med and y in med:
            print(f"{label:<22} {med[x] / med[y]:.2f}")
    print(f"CSV: {a.out}")


if __name__ == "__main__":
    main()
