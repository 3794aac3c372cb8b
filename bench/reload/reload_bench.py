#!/usr/bin/env python3
"""Live reloads under traffic (issue 17): `hpr run --app ipv4` on the generator with the full BGP table, while
`hpr ctl reload routes` replaces it again and again.

1. The native rate: unpaced runs (--packets), median Mpps.
2. Half of it, offered as a line-rate port (--backpressure off: what hpr does not take in time is counted as
   port_missed, beyond a pool's worth of backlog): N reloads of
   the full table during the run; reported: every reload's time (build, device upload, swap, total) and resident memory
   (before, both tables alive, after), and the run's books: drops other than no_route (the BGP table does not cover
   every generated address), port_missed and reorders, which must all be 0. A run without reloads beside it.
3. The full native rate, line-rate: rounds with K reloads and without, interleaved; the packets a reload costs =
   (port_missed with reloads - without) / K, median and spread over rounds (the rebuild takes a core).
4. Optionally (--devices) step 2 with the OpenCL devices beside the native lane, at half of that setup's rate.
Prints a Markdown report (docs/operations.md "Live reloads" keeps the last one)."""
import argparse
import json
import os
import socket
import statistics
import subprocess
import tempfile
import time


def ctl(sock, cmd, args, timeout=300):
    """One request on the control socket, as `hpr ctl` sends it, without starting a process per reload (a 90 MB
    binary's start took the cores' time from the data path and showed as packets missed)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
        c.settimeout(timeout)
        c.connect(sock)
        c.sendall((json.dumps({"cmd": cmd, "args": args}) + "\n").encode())
        buf = b""
        while not buf.endswith(b"\n"):
            part = c.recv(65536)
            if not part:
                break
            buf += part
    return json.loads(buf)


def summary_of(path):
    with open(path) as f:
        return json.load(f)


PREFIX = []  # taskset -c LIST (--cpus)


def unpaced_mpps(hpr, extra, packets):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "s.json")
        subprocess.run(PREFIX + [hpr, "run", "--packets", str(packets), "-q", "--summary-json", out, "--state-dir", "none"] + extra,
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        s = summary_of(out)
    return s["rx"]["packets"] / s["seconds"] / 1e6


def run_with_reloads(hpr, extra, rate_pps, reloads, min_s):
    """One paced run (line-rate port) with `reloads` full-table reloads; returns (summary, [reload reports])."""
    with tempfile.TemporaryDirectory() as d:
        out, sock = os.path.join(d, "s.json"), os.path.join(d, "hpr.sock")
        run = subprocess.Popen(PREFIX + [hpr, "run", "--packets", "0", "--rate-pps", str(int(rate_pps)),
                                "--backpressure", "off", "-q", "--ctl", sock,
                                "--summary-json", out, "--state-dir", "none"] + extra,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(300):
                try:
                    if ctl(sock, "help", [], 1).get("ok"):
                        break
                except OSError:
                    pass
                time.sleep(0.1)
            time.sleep(1.0)  # past the start
            t0 = time.monotonic()
            reps = []
            for _ in range(reloads):
                j = ctl(sock, "reload", ["routes"])
                if not j.get("ok"):
                    raise SystemExit(f"reload failed: {j}")
                reps.append(j["reload"])
            while time.monotonic() - t0 < min_s:
                time.sleep(0.1)
            ctl(sock, "stop", [])
            run.wait()
        finally:
            if run.poll() is None:  # a failure above: no run is left behind to skew the next figures
                run.kill()
                run.wait()
        return summary_of(out), reps


def books(s):
    other = {k: v for k, v in s.get("drops", {}).items() if k != "no_route"}
    return {"rx": s["rx"]["packets"], "tx": s["tx"]["packets"], "no_route": s.get("drops", {}).get("no_route", 0),
            "other_drops": sum(other.values()), "other": other, "port_missed": s["rx"].get("port_missed", 0),
            "reorders": s.get("reorders", 0), "unaccounted": s.get("unaccounted", 0)}


def med_spread(xs):
    m = statistics.median(xs)
    return m, (max(xs) - min(xs)) / m if m else 0.0


def reload_table(reps):
    rows = []
    for key, label in [("build_s", "build (load + LPM)"), ("upload_s", "device upload"), ("swap_s", "swap"),
                       ("total_s", "total")]:
        xs = [r[key] * 1e3 for r in reps]
        rows.append(f"| {label} | {statistics.median(xs):.1f} | {min(xs):.1f} | {max(xs):.1f} |")
    for key, label in [("rss_before_kib", "resident before (MiB)"), ("rss_both_kib", "resident, both tables (MiB)"),
                       ("rss_after_kib", "resident after (MiB)")]:
        xs = [r[key] / 1024 for r in reps]
        rows.append(f"| {label} | {statistics.median(xs):.0f} | {min(xs):.0f} | {max(xs):.0f} |")
    freed = sum(1 for r in reps if r["old_freed"])
    return "\n".join(["| per reload | median | min | max |", "|---|---|---|---|"] + rows) + \
        f"\n\nold tables freed before the reply: {freed} of {len(reps)} reloads"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--hpr", default="build/cli/hpr")
    ap.add_argument("--reloads", type=int, default=100, help="reloads at half the native rate")
    ap.add_argument("--rounds", type=int, default=3, help="full-rate rounds (with and without reloads, interleaved)")
    ap.add_argument("--full-reloads", type=int, default=10, help="reloads per full-rate round")
    ap.add_argument("--devices", action="store_true", help="also step 4 (OpenCL devices beside the native lane)")
    ap.add_argument("--cpus", help="run hpr under taskset -c CPUS (e.g. 0: the rebuild shares the data path's core)")
    ap.add_argument("--full-only", action="store_true", help="only steps 1 and 3")
    ap.add_argument("--devices-only", action="store_true", help="only step 4")
    a = ap.parse_args()
    if a.cpus:
        PREFIX.extend(["taskset", "-c", a.cpus])
    native = ["--app", "ipv4", "--devices", "none", "--native", "1"]
    if a.devices_only:
        devices_step(a)
        return
    rates = [unpaced_mpps(a.hpr, native, 3_000_000) for _ in range(3)]
    r0, r0_spread = med_spread(rates)
    print(f"## Live reloads of the full BGP table (512,621 prefixes), `hpr run --app ipv4 --devices none --native 1`"
          f"{' under taskset -c ' + a.cpus if a.cpus else ''}\n")
    print(f"native rate (unpaced, 3 runs): {r0:.2f} Mpps median, spread {r0_spread:.1%}\n")
    half = r0 * 1e6 / 2
    if a.full_only:
        a.reloads = 0
    s, reps = run_with_reloads(a.hpr, native, half, a.reloads, 5) if a.reloads else (None, [])
    if reps:
        base, _ = run_with_reloads(a.hpr, native, half, 0, max(10, sum(r["total_s"] for r in reps)))
        print(f"### {a.reloads} reloads at half the native rate ({half / 1e6:.2f} Mpps offered, line-rate port)\n")
        print(reload_table(reps))
        print(f"\nbooks with reloads: {books(s)}\n\nbooks without (same rate, as long): {books(base)}\n")
    print(f"### The packets a reload costs at the full native rate ({r0:.2f} Mpps offered, {a.full_reloads} reloads a round)\n")
    costs = []
    for _ in range(a.rounds):
        with_r, reps_f = run_with_reloads(a.hpr, native, r0 * 1e6, a.full_reloads, 8)
        without, _ = run_with_reloads(a.hpr, native, r0 * 1e6, 0, 8)
        bw, bo = books(with_r), books(without)
        costs.append((bw["port_missed"] - bo["port_missed"]) / a.full_reloads)
        print(f"- round: missed {bw['port_missed']} with reloads (of {bw['rx'] + bw['port_missed']} offered), "
              f"{bo['port_missed']} without; reorders {bw['reorders']}/{bo['reorders']}, other drops "
              f"{bw['other_drops']}/{bo['other_drops']}; reload total median "
              f"{statistics.median(r['total_s'] for r in reps_f) * 1e3:.0f} ms")
    m = statistics.median(costs)
    print(f"\npackets a reload costs: median {m:.0f} (rounds: {', '.join(f'{c:.0f}' for c in costs)})\n")
    if a.devices:
        devices_step(a)


def devices_step(a):
    dev = ["--app", "ipv4", "--devices", "all", "--native", "1"]
    rd, _ = med_spread([unpaced_mpps(a.hpr, dev, 2_000_000) for _ in range(3)])
    s, reps = run_with_reloads(a.hpr, dev, rd * 1e6 / 2, 20, 5)
    base, _ = run_with_reloads(a.hpr, dev, rd * 1e6 / 2, 0, max(10, sum(r["total_s"] for r in reps)))
    print(f"### 20 reloads with the OpenCL devices beside the native lane (half of {rd:.2f} Mpps offered)\n")
    print(reload_table(reps))
    print(f"\nbooks with reloads: {books(s)}\n\nbooks without (same rate, as long): {books(base)}\n")


if __name__ == "__main__":
    main()
