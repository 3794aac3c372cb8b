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
Reports per case the median Mpps, the spread (p90-p10 over median) and the ratio of medians to the kernel.
"""
import argparse, csv, json, os, statistics, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vs_testpmd import testpmd  # noqa: E402


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
        return sum(l["packets"] for l in s["lanes"]) / s["seconds"] / 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--apps", default="md5,aes")
    ap.add_argument("--sizes", default="1514,64", help="frame sizes (app_bench: 64 means 60-byte frames)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--alt-hpr", default="")
    ap.add_argument("--source", choices=["gen", "dpdk"], default="gen", help="where hpr run's frames come from")
    a = ap.parse_args()
    hpr = os.path.join(a.build, "cli", "hpr")
    tmp = tempfile.TemporaryDirectory()
    captures = {}
    if a.source == "dpdk":
        for size in a.sizes.split(","):
            captures[size] = frames_capture(hpr, 60 if size == "64" else int(size), os.path.join(tmp.name, f"f{size}.pcap"))
    res = {}
    for r in range(a.rounds):
        for size, cap in captures.items():
            v = testpmd(cap, a.seconds)
            res.setdefault(("-", size, "floor"), []).append(v)
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


if __name__ == "__main__":
    main()
