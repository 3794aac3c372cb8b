#!/usr/bin/python3
"""The daemon's rate against the kernel-only rate of the same app on frames of the same size (issue 12).

For each round, in turn (never at once: the machine has 2 cores), for each app and frame size:
  kernel  bench/apps/app_bench --no-devices --no-peer: the native engine alone on frames of that size, batch 32
          (the worker path's burst), no ports, no classification
  hpr     hpr run --devices none --native 1 (the in-place worker path) on frames of that size: from the generator
          into null (--source gen, the default), or (--source dpdk) through DPDK's net_pcap (infinite_rx: it copies
          each frame from memory into an mbuf, as a NIC's DMA would write it) into net_null, the frames being 6,000
          generated ones of that size (10,000 flows) written once to a capture
  alt     the same with another hpr binary (--alt-hpr, e.g. a build before a change)
  floor   (--source dpdk) dpdk-testpmd --forward-mode=io on the same capture and vdevs: the port's own cost per
          packet, which the kernel alone does not pay; "above floor" = 1000/Mpps - 1000/floor Mpps (ns a packet), and
          "x kernel above floor" = the kernel's ns a packet over that
md5 and aes do work in proportion to the payload, so frames of one size cost the same whatever their bytes.
Reports per case the median Mpps, the spread (p90-p10 over median) and the ratio of medians to the kernel; then the
ratio hpr / kernel of each round (the two ran one after the other in it), median (min-max), per size and at the mix
(25 % 60 B, 75 % 1,514 B, as app_bench's mix: the harmonic mean of the round's two rates), which is the issue's
figure: a ratio of medians mixes rounds the machine ran at different speeds. --csv writes every sample.
"""
import argparse, csv, json, os, statistics, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vs_testpmd import processed, testpmd  # noqa: E402


def kernel(build, app, size):
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([os.path.join(build, "bench", "apps", "app_bench"), "--apps", app, "--sizes", str(size),
                        "--batches", "32", "--no-devices", "--no-peer", "--out", d], check=True, capture_output=True)
        with open(os.path.join(d, f"{app}.csv")) as f:
            return float(next(csv.DictReader(f))["mpps"])


def frames_capture(binary, size, path):
    """6,000 generated frames of `size` bytes as a capture (md5 leaves the frames as they are)."""
    subprocess.run([binary, "run", "-q", "--app", "md5", "--in", "gen", "--sizes", f"fixed:{size}", "--packets", "6000",
                    "--out", f"pcap:{path}", "--devices", "none", "--native", "1"], check=True, capture_output=True)
    return path


def daemon(binary, app, size, seconds, capture=None):
    with tempfile.TemporaryDirectory() as d:
        js = os.path.join(d, "s.json")
        if capture:
            io = ["--in", "dpdk:net_pcap0", "--out", "dpdk:net_null0", "--vdev", f"net_pcap0,rx_pcap={capture},infinite_rx=1",
                  "--vdev", "net_null0,no-rx=1"]
        else:
            io = ["--in", "gen", "--sizes", f"fixed:{size}", "--packets", "0", "--out", "null"]
        cmd = [binary, "run", "-q", "--app", app, *io, "--devices", "none", "--native", "1", "--duration", str(seconds),
               "--summary-json", js, "--master-key", "000102030405060708090a0b0c0d0e0f"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode not in (0, 1):
            print(r.stderr, file=sys.stderr)
            return None
        s = json.load(open(js))
        return processed(s) / s["seconds"] / 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--apps", default="md5,aes")
    ap.add_argument("--sizes", default="1514,64", help="frame sizes (app_bench: 64 means 60-byte frames)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--alt-hpr", default="")
    ap.add_argument("--source", choices=["gen", "dpdk"], default="gen", help="where hpr run's frames come from")
    ap.add_argument("--csv", default="", help="write every sample here (round, app, size, case, mpps)")
    a = ap.parse_args()
    hpr = os.path.join(a.build, "cli", "hpr")
    tmp = tempfile.TemporaryDirectory()
    captures = {}
    if a.source == "dpdk":
        for size in a.sizes.split(","):
            captures[size] = frames_capture(hpr, 60 if size == "64" else int(size), os.path.join(tmp.name, f"f{size}.pcap"))
    res = {}
    by_round = {}  # (round, app, size, case) -> Mpps
    for r in range(a.rounds):
        for size, cap in captures.items():
            v = testpmd(cap, a.seconds)
            res.setdefault(("-", size, "floor"), []).append(v)
            by_round[(r, "-", size, "floor")] = v
            print(f"round {r} -   {size} floor  {v:8.3f} Mpps", flush=True)
        for app in a.apps.split(","):
            for size in a.sizes.split(","):
                gen_size = 60 if size == "64" else int(size)
                cap = captures.get(size)
                cases = [("kernel", lambda: kernel(a.build, app, size)),
                         ("hpr", lambda: daemon(hpr, app, gen_size, a.seconds, cap))]
                if a.alt_hpr:
                    cases.append(("alt", lambda: daemon(a.alt_hpr, app, gen_size, a.seconds, cap)))
                for name, fn in cases:
                    v = fn()
                    if v is None:
                        continue
                    res.setdefault((app, size, name), []).append(v)
                    by_round[(r, app, size, name)] = v
                    print(f"round {r} {app} {size} {name:<6} {v:8.3f} Mpps", flush=True)
    print(f"\n{'app':<5} {'size':>5} {'case':<7} {'median Mpps':>12} {'spread':>7} {'x kernel':>9} {'ns above floor':>15}"
          f" {'x kernel above floor':>21}")
    for (app, size, name), vals in res.items():
        vs = sorted(vals)
        med = statistics.median(vs)
        p10, p90 = vs[int(0.1 * (len(vs) - 1))], vs[int(round(0.9 * (len(vs) - 1)))]
        k = statistics.median(res.get((app, size, "kernel"), [0]))
        floor = statistics.median(res.get(("-", size, "floor"), [0]))
        above = ""
        if floor and med and name in ("hpr", "alt"):
            ns = 1000 / med - 1000 / floor
            above = f"{ns:15.1f} {1000 / k / ns if k and ns > 0 else 0:21.3f}"
        print(f"{app:<5} {size:>5} {name:<7} {med:12.3f} {(p90 - p10) / med if med else 0:7.3f} "
              f"{med / k if k else 0:9.3f} {above}")
    per_round_ratios(by_round, a)
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["round", "app", "size", "case", "mpps"])
            for (r, app, size, name), v in sorted(by_round.items()):
                w.writerow([r, app, size, name, f"{v:.4f}"])


def per_round_ratios(by_round, a):
    """hpr (and alt) over the kernel of the same round, per size and at the mix: median (min-max) over the rounds."""
    sizes = a.sizes.split(",")
    mix = "1514" in sizes and "64" in sizes

    def rate(r, app, size, name):
        return by_round.get((r, app, size, name))

    def mix_rate(r, app, name):
        hi, lo = rate(r, app, "1514", name), rate(r, app, "64", name)
        return 1 / (0.25 / lo + 0.75 / hi) if hi and lo else None

    print(f"\n{'app':<5} {'size':>5} {'case':<5} {'per-round x kernel: median (min-max)':>38} {'rounds':>6}")
    for app in a.apps.split(","):
        for name in ("hpr", "alt"):
            for size in sizes + (["mix"] if mix else []):
                rs = []
                for r in range(a.rounds):
                    if size == "mix":
                        d, k = mix_rate(r, app, name), mix_rate(r, app, "kernel")
                    else:
                        d, k = rate(r, app, size, name), rate(r, app, size, "kernel")
                    if d and k:
                        rs.append(d / k)
                if rs:
                    print(f"{app:<5} {size:>5} {name:<5} {statistics.median(rs):18.3f} ({min(rs):.3f}-{max(rs):.3f})"
                          f"{'':>6} {len(rs):6d}")


if __name__ == "__main__":
    main()
