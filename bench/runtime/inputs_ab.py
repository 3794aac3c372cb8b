#!/usr/bin/python3
"""Two hpr builds on every kind of input, in the same interleaved rounds (the packet pool's stack, docs/pipeline.md,
"Buffers"): learning runs (both PoCL devices and a native lane) and one native lane from a capture (pcap, read for
ever), from the generator, and the native lane through DPDK (net_pcap infinite_rx into net_null) as a control that
uses mbufs, not hpr's pools. Input: the 6,000-packet mix of real captures (bench/runtime/vs_testpmd.make_mix).

  bench/runtime/inputs_ab.py --hpr before=/tmp/hpr_old --hpr after=build/cli/hpr [--rounds 5] [--seconds 3]

Prints each sample, then per case the medians and the second build's rate against the first's, round by round
(median and min-max). Mpps counts the packets the lanes processed.
"""
import argparse, json, os, statistics, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vs_testpmd  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hpr", action="append", required=True, metavar="NAME=PATH", help="two builds")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=3)
    a = ap.parse_args()
    bins = dict(h.split("=", 1) for h in a.hpr)
    if len(bins) != 2:
        sys.exit("inputs_ab.py: give --hpr NAME=PATH twice")
    names = list(bins)
    mix = os.path.join(vs_testpmd.ROOT, "out", "runtime", "workers", "mix.pcap")
    if not os.path.exists(mix):
        os.makedirs(os.path.dirname(mix), exist_ok=True)
        vs_testpmd.make_mix(mix)
    pcap = ["--in", f"pcap:{mix}", "--loops", "0", "--out", "null"]
    dpdk = ["--in", "dpdk:net_pcap0", "--out", "dpdk:net_null0", "--vdev", f"net_pcap0,rx_pcap={mix},infinite_rx=1",
            "--vdev", "net_null0,no-rx=1"]
    cases = {"pcap-ipv4-learn": pcap + ["--app", "ipv4"], "pcap-md5-learn": pcap + ["--app", "md5"],
             "pcap-ipv4-native": pcap + ["--app", "ipv4", "--devices", "none"],
             "gen-ipv4-learn": ["--app", "ipv4"], "gen-md5-learn": ["--app", "md5"],
             "dpdk-ipv4-native": dpdk + ["--app", "ipv4", "--devices", "none"]}
    env = dict(os.environ, HPR_STATE_DIR="none")
    env.setdefault("POCL_DEVICES", "pthread basic")
    rate, items = {}, list(cases.items())
    with tempfile.TemporaryDirectory() as d:
        js = os.path.join(d, "s.json")
        for r in range(a.rounds):
            for c, args in items[r % len(items):] + items[:r % len(items)]:
                for b in (names if r % 2 == 0 else names[::-1]):
                    cmd = [bins[b], "run", "-q", *args, "--duration", str(a.seconds), "--summary-json", js,
                           "--state-dir", "none"]
                    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
                    if p.returncode:
                        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr[-600:]}")
                    s = json.load(open(js))
                    m = vs_testpmd.processed(s) / s["seconds"] / 1e6
                    rate.setdefault((c, b), []).append(m)
                    print(r, c, b, f"{m:.3f}", flush=True)
    x, y = names
    for c in cases:
        ratios = [q / p for q, p in zip(rate[(c, y)], rate[(c, x)])]
        print(f"{c:18} {x} {statistics.median(rate[(c, x)]):.3f} {y} {statistics.median(rate[(c, y)]):.3f} "
              f"{y}/{x} {statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})")


if __name__ == "__main__":
    main()
