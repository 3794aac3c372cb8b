#!/usr/bin/env python3
"""Jumbo and large frames (issue 16, item 10), two hpr binaries given as LABEL=PATH (before and after):

1. reach: for every capture of DIR holding frames over 2,048 bytes, the share of its packets that reach an app
   (not dropped at the port as frame_too_long or pool_empty), from `hpr run --in pcap:F --app md5` with the
   binary's defaults; written to reach.csv.
2. throughput of ordinary 64..1518-byte frames (the generator's uniform:60-1514 sizes, written once to a capture)
   read from a pcap port (--loops; 200,000 frames; in place on the rx burst, and through a lane thread) and from DPDK
   net_pcap (infinite_rx; 4,000) to a null output, one native lane, ipv4:
   rounds interleaved between the binaries so drift hits all alike; throughput.csv has every round, and the
   median and spread ((max - min) / median) per case are printed.
Run under `flock /work/bench.lock` on a shared machine."""
import argparse
import csv
import glob
import json
import os
import statistics
import subprocess
import tempfile


def summary(hpr, args):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    try:
        subprocess.run([hpr, "run", "-q", "--summary-json", out] + args, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)
    finally:
        os.unlink(out)


def has_large_frames(path):
    r = subprocess.run(["tcpdump", "-nr", path, "-c", "1", "greater", "2049"], capture_output=True, text=True)
    return r.returncode == 0 and r.stdout.strip() != ""


def reach(binaries, captures, out_dir):
    rows = []
    for cap in captures:
        for label, hpr in binaries:
            s = summary(hpr, ["--in", "pcap:" + cap, "--out", "null", "--devices", "none", "--native", "1", "--app",
                              "md5"])
            rx = s["rx"]["packets"]
            lost = s.get("drops", {}).get("frame_too_long", 0) + s.get("drops", {}).get("pool_empty", 0)
            rows.append({"capture": os.path.basename(cap), "binary": label, "packets": rx, "port_drops": lost,
                         "reach_share": (rx - lost) / rx if rx else 1.0})
            print(f"reach {os.path.basename(cap)} {label}: {rx - lost}/{rx}", flush=True)
    with open(os.path.join(out_dir, "reach.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def throughput(binaries, ordinary, small, rounds, loops, dpdk_s, out_dir, only):
    cases = {
        "pcap": lambda: ["--in", "pcap:" + ordinary, "--loops", str(loops), "--out", "null"],
        # the lane path (Lane::poll, batches filled by count and bytes) instead of the in-place worker path
        "pcap-lane": lambda: ["--in", "pcap:" + ordinary, "--loops", str(loops), "--out", "null",
                              "--run-to-completion", "off"],
        # infinite_rx holds the whole capture in mbufs of the port's pool (8,191): the small capture
        "dpdk": lambda: ["--in", "dpdk:net_pcap0", "--vdev", f"net_pcap0,rx_pcap={small},infinite_rx=1",
                         "--vdev", "net_null0", "--out", "dpdk:net_null0", "--duration", str(dpdk_s)],
    }
    cases = {k: v for k, v in cases.items() if k in only}
    rows = []
    for r in range(rounds):
        for case, args in cases.items():
            for label, hpr in binaries:
                s = summary(hpr, args() + ["--devices", "none", "--native", "1", "--app", "ipv4"])
                mpps = s["tx"]["packets"] / s["seconds"] / 1e6
                rows.append({"round": r, "case": case, "binary": label, "mpps": mpps, "tx": s["tx"]["packets"],
                             "dropped": s["dropped"]})
                print(f"round {r} {case} {label}: {mpps:.3f} Mpps", flush=True)
    with open(os.path.join(out_dir, "throughput.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    for case in cases:
        for label, _ in binaries:
            v = [x["mpps"] for x in rows if x["case"] == case and x["binary"] == label]
            med = statistics.median(v)
            print(f"{case} {label}: median {med:.3f} Mpps, spread {(max(v) - min(v)) / med * 100:.1f} % over {len(v)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hpr", action="append", required=True, help="LABEL=PATH of an hpr binary (repeatable)")
    ap.add_argument("--captures", default="../shared/data/pcap/ndpi", help="directory of real captures")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--packets", type=int, default=200000, help="ordinary frames in the generated capture")
    ap.add_argument("--loops", type=int, default=10, help="pcap case: times the capture is read")
    ap.add_argument("--dpdk-s", type=float, default=3, help="dpdk case: seconds per run")
    ap.add_argument("--out", default="docs/jumbo")
    ap.add_argument("--skip-reach", action="store_true")
    ap.add_argument("--cases", default="pcap,pcap-lane,dpdk", help="throughput cases to run (comma-separated)")
    a = ap.parse_args()
    binaries = [tuple(x.split("=", 1)) for x in a.hpr]
    os.makedirs(a.out, exist_ok=True)
    if not a.skip_reach:
        caps = sorted(c for c in glob.glob(os.path.join(a.captures, "*.pcap*")) if has_large_frames(c))
        reach(binaries, caps, a.out)
    caps = {}
    for name, n in (("ordinary", a.packets), ("small", 4000)):
        caps[name] = os.path.join(tempfile.gettempdir(), f"hpr_jumbo_{name}_{os.getpid()}.pcap")
        summary(binaries[0][1], ["--in", "gen", "--packets", str(n), "--sizes", "uniform:60-1514", "--out",
                                 "pcap:" + caps[name], "--devices", "none", "--native", "1", "--app", "md5"])
    try:
        throughput(binaries, caps["ordinary"], caps["small"], a.rounds, a.loops, a.dpdk_s, a.out, a.cases.split(","))
    finally:
        for p in caps.values():
            os.unlink(p)


if __name__ == "__main__":
    main()
