#!/usr/bin/python3
"""Workers (issue 12): hpr run --app ipv4 on W workers beside DPDK l3fwd on W lcores, for each W of --workers, in
one run.

The 6,000-packet mix of real captures (vs_testpmd.make_mix) is split by flow into W captures (split_by_flow: the
frames each worker would get from symmetric RSS). Each round runs, in turn (never at once), for each W:
  hpr-W        hpr run, W workers, one capture per rx queue of net_pcap0 (--rx-spread queues; W=1: the mix) ->
               net_null0 with W tx queues
  hpr-W-hash   (W > 1, case "hash") W workers on the mix through one rx queue, spread by flow hash (one reader)
  l3fwd-W      (case "lpm") l3fwd LPM on the BGP table, W lcores, lcore i polls rx queue i. l3fwd loads the table
               rule by rule (tens of seconds each run): `--cases lpm --rounds 1` for a single look
  l3fwd-em-W   (case "em") l3fwd exact match on its default rules (starts in a second): the per-W peer
  hpr-W-dev    (case "dev") W workers, each with a lane on the --dev-devices OpenCL devices (default all; PoCL's
               POCL_DEVICES default "pthread basic") and a native lane, learning mode (the default: it weighs the lanes
               by what the run delivers), from nothing (--state-dir none)
  hpr-W-devsaved (case "devsaved") the same, starting from what a run of it learned before: one run of --seconds
               before the rounds (not counted) seeds a state folder of its own, and every round starts from it (and
               saves what it learns, as a restarted daemon does); with --alt-hpr also hpr-W-devsaved-alt, the same
               with that binary and a state folder of its own
--cases picks them (default hpr,hash,lpm; --devices adds dev). Reports Mpps median and spread (p90-p10 over median)
per case and, per W, hpr-W / hpr-1 (goal >= 0.8 W), l3fwd-W / l3fwd-1, hpr-W / l3fwd-W and hpr-W-dev / hpr-W (ratios
of the medians), and for the device cases over hpr-W the ratio of each round, median (min-max).
Mpps counts every packet processed (hpr: the lanes' packets; l3fwd: packets sent on either port), as vs_testpmd.py
does. Writes CSV to --out, a row per sample as it comes.
"""
import argparse, csv, json, os, shutil, statistics, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vs_testpmd  # noqa: E402

ROOT = vs_testpmd.ROOT


def l3fwd_n(binary, captures, seconds, rules, lookup="lpm"):
    """l3fwd on len(captures) lcores, lcore i polling rx queue i of net_pcap0 (and of net_null0)."""
    n = len(captures)
    rx = "net_pcap0," + ",".join(f"rx_pcap={c}" for c in captures) + ",infinite_rx=1"
    cmd = vs_testpmd.l3fwd_cmd(binary, rx, lookup, rules)
    cfg = ",".join(f"({p},{q},{q})" for p in (0, 1) for q in range(n))
    cmd[cmd.index("-l") + 1] = f"0-{n - 1}"
    cmd = [f"--config={cfg}" if a.startswith("--config=") else a for a in cmd]
    return vs_testpmd.l3fwd_mpps(cmd, seconds)


def hpr_n(binary, captures, workers, spread, seconds, devices="none", app="ipv4", native=1, extra=(), state="none"):
    with tempfile.TemporaryDirectory() as d:
        js = os.path.join(d, "s.json")
        rx = "net_pcap0," + ",".join(f"rx_pcap={c}" for c in captures) + ",infinite_rx=1"
        cmd = [binary, "run", "-q", "--app", app, "--in", "dpdk:net_pcap0", "--out", "dpdk:net_null0",
               "--vdev", rx, "--vdev", "net_null0,no-rx=1", "--devices", devices, "--native", str(native),
               "--workers", str(workers), "--rx-spread", spread, "--duration", str(seconds), "--summary-json", js]
        env = dict(os.environ, HPR_STATE_DIR=state)
        env.setdefault("HPR_MASTER_KEY", "000102030405060708090a0b0c0d0e0f")  # aes: a test key
        env.setdefault("POCL_DEVICES", "pthread basic")
        try:
            r = subprocess.run(cmd + ["--state-dir", state] + list(extra), capture_output=True, text=True, env=env,
                               timeout=seconds + 120)
        except subprocess.TimeoutExpired:
            print(f"hpr with {workers} workers did not end within {seconds + 120} s", file=sys.stderr)
            return None
        if r.returncode != 0:
            print(r.stdout[-1000:], r.stderr[-2000:], file=sys.stderr)
            return None
        s = json.load(open(js))
        return vs_testpmd.processed(s) / s["seconds"] / 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", default="2", help="worker counts, comma-separated (1 is always run)")
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--app", default="ipv4", help="hpr's app (default ipv4; the l3fwd cases forward whatever it is)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cases", default="", help="comma-separated of hpr,hash,lpm,em,dev,devsaved,devonly (default hpr,hash,lpm)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="build folder with cli/hpr and bench/")
    ap.add_argument("--hpr", default="", help="hpr binary (default: BUILD/cli/hpr)")
    ap.add_argument("--alt-hpr", default="", help="another hpr binary for case devsaved (hpr-W-devsaved-alt, a state "
                    "folder of its own): a build before a change, in the same rounds")
    ap.add_argument("--l3fwd", default="", help="l3fwd binary (default: BUILD/bench/l3fwd; none: leave it out)")
    ap.add_argument("--devices", action="store_true", help="also case dev: lanes on OpenCL devices (learning)")
    ap.add_argument("--dev-devices", default="all", help="hpr --devices of case dev (default all)")
    ap.add_argument("--mix", default="", help="device shares, comma-separated: a case mixS per share S, static "
                    "weights native 1-S and the --dev-devices device S (a sweep for the best static split)")
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
    wanted = set((a.cases or "hpr,hash,lpm").split(",")) | ({"dev"} if a.devices else set())
    unknown = wanted - {"hpr", "hash", "lpm", "em", "dev", "devsaved", "devonly"}
    if unknown:
        sys.exit(f"workers_scaling.py: unknown --cases {','.join(sorted(unknown))} "
                 "(hpr, hash, lpm, em, dev, devsaved, devonly)")
    if a.l3fwd == "none" or not os.path.exists(l3fwd):
        wanted -= {"lpm", "em"}
    counts = sorted({1} | {int(w) for w in a.workers.split(",")})
    parts = {1: [mix]}
    for n in counts[1:]:
        parts[n] = [os.path.join(work, f"mix_{n}_{i}.pcap") for i in range(n)]
        if not all(os.path.exists(p) for p in parts[n]):
            subprocess.run([split, mix] + parts[n], check=True)
    rules = vs_testpmd.l3fwd_rules(work) if "lpm" in wanted else ""
    cases = {}
    # case devsaved: this build, and --alt-hpr's beside it
    saved_binaries = ([("", hpr)] + ([("-alt", a.alt_hpr)] if a.alt_hpr else [])) if "devsaved" in wanted else []
    for n in counts:
        rx = "auto" if n == 1 else "queues"  # --rx-spread: one rx queue per worker
        if "hpr" in wanted:
            cases[f"hpr-{n}"] = lambda n=n, rx=rx: hpr_n(hpr, parts[n], n, rx, a.seconds, app=a.app)
        if "hash" in wanted and n > 1:
            cases[f"hpr-{n}-hash"] = lambda n=n: hpr_n(hpr, [mix], n, "hash", a.seconds, app=a.app)
        if "dev" in wanted:
            cases[f"hpr-{n}-dev"] = lambda n=n, rx=rx: hpr_n(hpr, parts[n], n, rx, a.seconds, a.dev_devices, a.app)
        for tag, binary in saved_binaries:
            state = os.path.join(work, f"state-{n}{tag}")
            shutil.rmtree(state, ignore_errors=True)
            os.makedirs(state)
            print(f"seeding {state}: one learning run of {a.seconds:g} s", flush=True)
            if hpr_n(binary, parts[n], n, rx, a.seconds, a.dev_devices, a.app, state=state) is None:
                sys.exit("workers_scaling.py: the seeding run of case devsaved failed")
            cases[f"hpr-{n}-devsaved{tag}"] = lambda n=n, rx=rx, state=state, binary=binary: hpr_n(
                binary, parts[n], n, rx, a.seconds, a.dev_devices, a.app, state=state)
        if "devonly" in wanted:
            cases[f"hpr-{n}-devonly"] = lambda n=n, rx=rx: hpr_n(hpr, parts[n], n, rx, a.seconds, a.dev_devices,
                                                                 a.app, native=0)
        for share in (float(x) for x in a.mix.split(",") if x and n > 1):
            w = ["--static", "--weight", f"native={1 - share:g}", "--weight", f"{a.dev_devices}={share:g}"]
            cases[f"hpr-{n}-mix{share:g}"] = lambda n=n, rx=rx, w=w: hpr_n(hpr, parts[n], n, rx, a.seconds,
                                                                          a.dev_devices, a.app, extra=w)
        if "em" in wanted:
            cases[f"l3fwd-em-{n}"] = lambda n=n: l3fwd_n(l3fwd, parts[n], a.seconds, rules, "em")
        if "lpm" in wanted:
            cases[f"l3fwd-{n}"] = lambda n=n: l3fwd_n(l3fwd, parts[n], a.seconds, rules)
    res = {k: [] for k in cases}
    by_round = {}  # (round, case) -> Mpps
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["round", "case", "mpps"])
        w.writeheader()
        for r in range(a.rounds):
            for name, run in cases.items():
                v = run()
                print(f"round {r + 1} {name}: {v if v is None else round(v, 3)} Mpps", flush=True)
                if v is not None:
                    res[name].append(v)
                    by_round[(r, name)] = v
                    w.writerow({"round": r + 1, "case": name, "mpps": v})
                    f.flush()
    med = {k: statistics.median(v) for k, v in res.items() if v}

    def spread(v):
        v = sorted(v)
        lo, hi = v[int(0.1 * (len(v) - 1))], v[int(round(0.9 * (len(v) - 1)))]
        return (hi - lo) / statistics.median(v)

    print(f"\n{'case':<16} {'Mpps':>8} {'spread':>7} {'rounds':>6}")
    for k, v in res.items():
        if v:
            print(f"{k:<16} {med[k]:8.3f} {spread(v):7.1%} {len(v):6d}")
    print()
    for n in counts:
        for label, x, y in [(f"hpr-{n} / hpr-1", f"hpr-{n}", "hpr-1"), (f"hpr-{n}-hash / hpr-1", f"hpr-{n}-hash", "hpr-1"),
                            (f"l3fwd-{n} / l3fwd-1", f"l3fwd-{n}", "l3fwd-1"),
                            (f"l3fwd-em-{n} / l3fwd-em-1", f"l3fwd-em-{n}", "l3fwd-em-1"),
                            (f"hpr-{n} / l3fwd-{n}", f"hpr-{n}", f"l3fwd-{n}"),
                            (f"hpr-{n} / l3fwd-em-{n}", f"hpr-{n}", f"l3fwd-em-{n}"),
                            (f"hpr-{n}-dev / hpr-{n}", f"hpr-{n}-dev", f"hpr-{n}"),
                            (f"hpr-{n}-devsaved / hpr-{n}", f"hpr-{n}-devsaved", f"hpr-{n}"),
                            (f"hpr-{n}-devsaved-alt / hpr-{n}", f"hpr-{n}-devsaved-alt", f"hpr-{n}"),
                            (f"hpr-{n}-devsaved / -alt", f"hpr-{n}-devsaved", f"hpr-{n}-devsaved-alt"),
                            (f"hpr-{n}-devonly / hpr-{n}", f"hpr-{n}-devonly", f"hpr-{n}"),
                            (f"hpr-{n}-dev / hpr-{n}-devonly", f"hpr-{n}-dev", f"hpr-{n}-devonly")]:
            if x in med and y in med and x != y:
                extra = f"  (goal >= {0.8 * n:.1f})" if label == f"hpr-{n} / hpr-1" and n > 1 else ""
                rs = [by_round[(r, x)] / by_round[(r, y)] for r in range(a.rounds)
                      if (r, x) in by_round and (r, y) in by_round]
                if "-dev" in x and rs:
                    extra += f"  per round {statistics.median(rs):.2f} ({min(rs):.2f}-{max(rs):.2f})"
                print(f"{label:<24} {med[x] / med[y]:.2f}{extra}")
        mixes = [k for k in med if k.startswith(f"hpr-{n}-mix")]
        for k in mixes:
            if f"hpr-{n}" in med:
                print(f"{k + ' / hpr-' + str(n):<24} {med[k] / med[f'hpr-{n}']:.2f}")
        if mixes and f"hpr-{n}-dev" in med:
            best = max(mixes, key=lambda k: med[k])
            print(f"hpr-{n}-dev / {best} (best static) {med[f'hpr-{n}-dev'] / med[best]:.2f}")
    print(f"CSV: {a.out}")


if __name__ == "__main__":
    main()
